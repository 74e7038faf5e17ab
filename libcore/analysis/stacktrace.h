/*
 * stacktrace.h - every thread's stack, unwound and symbolized.
 *
 * This is where the core model meets the unwinder: it gives unwind/ its view
 * of the core (memory reads, code test, stack bounds, CFI table per module),
 * builds each module's CFI table at most once per process (and once per
 * build-id across processes, through the cache), walks every thread, and
 * names each frame with the symbolizer, inline frames expanded.
 *
 * Async stacks: the async runtimes (unwind/async/runtime.h) see the core
 * through struct cq_unwind_target (analysis/unwind_target.h).  A runtime
 * may splice async frames (kind "async", trust "async") into threads'
 * stacks (folly's merged stacks, possibly continuing on another thread's
 * stack), and report chains of suspended async frames, on no thread, as
 * struct cq_suspended_stack entries whose kind the runtime's descriptor
 * names; their statistics go to stacks->async and what a person should be
 * warned of to stacks->warnings.  A program that uses no runtime costs
 * nothing extra: nothing is read or scanned.
 *
 * Layer: analysis (libcore/analysis/): stacks of a core, and the one struct cq_unwind_target
 * over it that unwind/ and unwind/async/ (below, on base) see it through; above symbols.
 * The layer order is in docs/internals.md (Layout) and tests/check-layers.
 */
#ifndef CQ_STACKTRACE_H
#define CQ_STACKTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"
#include "unwind/frames.h"
#include "unwind/unwind.h"

struct cq_core;
struct cq_cache;

struct cq_stack_options {
	struct cq_unwind_options unwind;
	struct cq_cache *cache;        /* may be NULL */
	const char *const *debug_dirs; /* NULL-terminated, may be NULL */
	bool symbolize;
	bool async;           /* merge async stacks, find suspended ones (default) */
	size_t max_suspended; /* bound on suspended stacks (default 1024) */
};

void cq_stack_options_default(struct cq_stack_options *o);

struct cq_error *cq_core_stacks(struct cq_core *core, const struct cq_stack_options *o,
                                struct cq_stacks **out);
void cq_stacks_free(struct cq_stacks *stacks);

#endif
