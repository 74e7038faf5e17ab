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
 */
#ifndef CQ_STACKTRACE_H
#define CQ_STACKTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"
#include "unwind/async/rust_dyn.h"
#include "unwind/unwind.h"

struct cq_core;
struct cq_cache;
struct cq_module;

enum cq_frame_kind {
	CQ_FRAME_NATIVE,
	CQ_FRAME_INLINE,
	CQ_FRAME_ASYNC,
};

struct cq_stack_frame {
	uint64_t pc;
	enum cq_frame_kind kind;
	uint8_t trust;                  /* enum cq_unwind_trust */
	const struct cq_module *module; /* NULL when pc is in no module */
	uint64_t offset;                /* pc - module bias: the link-time address */
	const char *function;           /* demangled, NULL when unknown */
	const char *file;
	int line;
	/*
	 * Frames of a suspended Rust future (kind async, pc 0): the future's
	 * state ("Suspend0", "Unresumed", ...; NULL for a leaf future) and the
	 * address of the future, the object the frame describes.  NULL and 0
	 * for every other frame.
	 */
	const char *state;
	uint64_t object;
};

struct cq_thread_stack {
	const struct cq_core_thread *thread;
	struct cq_stack_frame *frames;
	size_t nframes;
	enum cq_unwind_end end;
};

/*
 * A chain of suspended async frames, innermost first: for folly, the leaf's
 * caller first; for Rust, the leaf future first, then each async fn that
 * awaits it, out to the task's outermost future.
 */
struct cq_suspended_stack {
	const char *kind; /* the async runtime: "folly" or "rust" */
	uint64_t leaf;    /* folly: the leaf's frame record; rust: the leaf future */
	struct cq_stack_frame *frames;
	size_t nframes;
	enum cq_unwind_end end;
};

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
	struct cq_rust_stats rust; /* the search for suspended Rust futures */
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

/* The unwinder's view of a core; valid while core and options live. */
struct cq_core_target {
	struct cq_unwind_target target;
	struct cq_core *core;
	const struct cq_stack_options *options;
};

void cq_core_target_init(struct cq_core_target *ct, struct cq_core *core,
                         const struct cq_stack_options *o);

const char *cq_frame_kind_name(enum cq_frame_kind kind);

#endif
