/*
 * coro_dispatch.h - where gcc's coroutine actor resumes, read from its
 * x86-64 machine code (unwind/async/coro_dispatch.c).
 */
#ifndef CQ_CORO_DISPATCH_H
#define CQ_CORO_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

/*
 * The address the actor whose code (n bytes) starts at base and ends at end
 * jumps to for resume index index: after the dispatch's load of the index
 * (movzwl index_off(%reg)), the first `cmp $index, %reg; je target` whose
 * target lies in (base, end); 0 when none.  *load: the load's offset in
 * code (n when there is none).
 */
uint64_t cq_coro_dispatch_target(const uint8_t *code, size_t n, uint64_t base, uint64_t end,
                                 uint64_t index_off, unsigned index, size_t *load);

/*
 * The offset in code, from from on, of the actor's store of index into
 * _Coro_resume_index at index_off: `mov $index, %reg32` followed within 96
 * bytes by `mov %reg16, index_off(...)`, or `movw $index, index_off(...)`;
 * SIZE_MAX when none.
 */
size_t cq_coro_index_store(const uint8_t *code, size_t n, size_t from, uint64_t index_off,
                           unsigned index);

#endif
