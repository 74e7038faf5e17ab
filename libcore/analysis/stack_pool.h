/*
 * stack_pool.h - identical thread stacks stored once.
 *
 * Thousands of threads of a real service park in the same few places, and a
 * forged core can repeat one thread a hundred thousand times.  Each thread's
 * named frames are handed to the pool, which keeps one array per distinct
 * stack (compared frame by frame) and gives back the shared copy, so memory
 * grows with the distinct stacks, not with the threads.  Shared arrays
 * belong to the pool: a thread whose stack is later replaced (an async
 * runtime merging it) gets its own array and must not free the pooled one.
 */
#ifndef CQ_STACK_POOL_H
#define CQ_STACK_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "unwind/frames.h"
#include "libcore/base/error.h"

struct cq_stack_pool {
	struct cq_stack_frame **arrays; /* the distinct stacks */
	size_t *lengths;
	uint64_t *hashes;
	size_t n, cap;
	uint32_t *slots; /* open addressing: index + 1 into arrays, 0 = empty */
	size_t nslots;   /* 0 or a power of two */
};

/*
 * Interns frames[0..n) (malloc'd, taken over in every case): *out is the
 * pooled array equal to it, owned by the pool.  frames may be NULL when n is 0.
 */
struct cq_error *cq_stack_pool_intern(struct cq_stack_pool *pool, struct cq_stack_frame *frames,
                                      size_t n, const struct cq_stack_frame **out);
void cq_stack_pool_free(struct cq_stack_pool *pool);

#endif
