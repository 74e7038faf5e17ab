/*
 * stacktrace.h - every thread's stack, unwound and symbolized.
 *
 * This is where the core model meets the unwinder: it gives unwind/ its view
 * of the core (memory reads, code test, stack bounds, CFI table per module),
 * builds each module's CFI table at most once per process (and once per
 * build-id across processes, through the cache), walks every thread, and
 * names each frame with the symbolizer, inline frames expanded.
 *
 * Async stacks: when the program has folly's async-stack symbols
 * (unwind/async/folly.h), each thread with a current AsyncStackRoot gets
 * its merged stack (unwind/async/folly_walk.h): async frames (kind "async",
 * trust "async") spliced into its native frames, possibly continuing on
 * another thread's stack.  Chains of suspended async frames, on no thread,
 * become struct cq_suspended_stack entries.  Their kind names the runtime
 * so consumers need not care which one found them: "folly" for suspended
 * coroutines found by folly's cookie, "rust" for the await chains of
 * suspended Rust futures (unwind/async/rust_dyn.h).  A program with neither
 * runtime's symbols costs nothing extra: nothing is read or scanned.
 *
 * Layer: analysis (libcore/analysis/ and unwind/async/): stacks of a core; above symbols.
 * The layer order is in the README (Layout) and tests/check-layers.
 */
#ifndef CQ_STACKTRACE_H
#define CQ_STACKTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/analysis/frames.h"
#include "libcore/base/error.h"
#include "unwind/async/rust_dyn.h"
#include "unwind/async/tokio.h"
#include "unwind/unwind.h"

struct cq_core;
struct cq_cache;

/* What the search for async stacks found and did. */
struct cq_async_summary {
	bool searched;    /* false with async off */
	bool folly;       /* the program has folly's async-stack symbols */
	bool has_tls_key; /* ... and a live TLS key */
	uint32_t tls_key;
	bool tls_layout_from_libc; /* false: glibc layout guessed (Debian 12 values) */
	size_t threads_with_roots;
	bool scanned; /* the cookie scan ran */
	uint64_t scanned_bytes;
	double scan_seconds;
	struct cq_rust_stats rust;   /* the search for suspended Rust futures */
	struct cq_tokio_stats tokio; /* the search for tokio's tasks */
};

struct cq_stacks {
	struct cq_thread_stack *threads; /* in core order: the crashed thread first */
	size_t nthreads;
	struct cq_suspended_stack *suspended;
	size_t nsuspended;
	struct cq_async_summary async;
};

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
