/*
 * coro_dispatch.h - where gcc's coroutine actor resumes, read from its
 * x86-64 machine code, and where clang's resume function stores the index
 * it suspends at (unwind/async/coro_dispatch.c).
 */
#ifndef CQ_CORO_DISPATCH_H
#define CQ_CORO_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

/* How far after a load of the index its dispatch's compares are looked for. */
#define CQ_CORO_WINDOW 192u

/*
 * The address the actor whose code (n bytes) starts at base and ends at end
 * jumps to for resume index index: after the dispatch's load of the index
 * (movzwl index_off(%reg)), the first `cmp $index, %reg; je target` within
 * CQ_CORO_WINDOW bytes of a load whose target lies in (base, end); 0 when
 * none.  *load: the load's offset in
 * code (n when there is none).
 */
uint64_t cq_coro_dispatch_target(const uint8_t *code, size_t n, uint64_t base, uint64_t end,
                                 uint64_t index_off, unsigned index, size_t *load);

/*
 * The same search from offset from on, with no load needed first (code
 * reached by a branch of the dispatch, the index still in its register);
 * code starts at base, inside the actor that starts at actor.
 */
uint64_t cq_coro_branch_target(const uint8_t *code, size_t n, uint64_t base, uint64_t actor,
                               uint64_t end, uint64_t index_off, size_t from, unsigned index);

/*
 * Where the dispatch sends even indexes (the resume points) when it first
 * splits on the low bit: `test $1, %al; je target` within CQ_CORO_WINDOW
 * bytes of load (g++ -O2; the resume half may lie far from the load), the
 * target in (base, end); 0 when none.
 */
uint64_t cq_coro_even_branch(const uint8_t *code, size_t n, uint64_t base, uint64_t end,
                             size_t load);

/*
 * The offset in code, from from on, of the actor's store of index into
 * _Coro_resume_index at index_off: `mov $index, %reg32` followed within 96
 * bytes by `mov %reg16, index_off(...)`, or `movw $index, index_off(...)`;
 * SIZE_MAX when none.
 */
size_t cq_coro_index_store(const uint8_t *code, size_t n, size_t from, uint64_t index_off,
                           unsigned index);

/*
 * The offset in code of clang's store of index into its one-byte
 * __coro_index at index_off on the way to suspend (x86-64: `movb $index,
 * index_off(%reg)`, disp8 or disp32, maybe behind a REX or SIB byte), the
 * first one in the n bytes; SIZE_MAX when none.
 */
size_t cq_coro_byte_store(const uint8_t *code, size_t n, uint64_t index_off, unsigned index);

/* Reads n bytes of the program's image at addr into buf; how many it read. */
typedef size_t (*cq_coro_read_fn)(void *ctx, uint64_t addr, uint8_t *buf, size_t n);

/* The highest index a jump table is read for. */
#define CQ_CORO_MAX_TABLE 512u

/*
 * The same target when the dispatch is a jump table (many suspend points;
 * g++ 12 at -O0 and -O2): within CQ_CORO_WINDOW bytes of a load of
 * index_off (the first at load in code), `cmp $bound, %reg; ja`, then within 48 bytes `lea
 * table(%rip), %reg` and within 32 more `jmp *%reg`, the table holding int32 offsets from itself,
 * read through read.  Of the tables found (the resume and destroy dispatches), the one whose even
 * entries from 2 to bound are distinct labels is the resume table; its entry for index, when it
 * lands in (base, end), is the target; 0 otherwise.  At most CQ_CORO_MAX_TABLE + 1 entries are
 * read.
 */
uint64_t cq_coro_jump_table_target(const uint8_t *code, size_t n, uint64_t base, uint64_t actor,
                                   uint64_t end, uint64_t index_off, size_t load, unsigned index,
                                   cq_coro_read_fn read, void *ctx);

#endif
