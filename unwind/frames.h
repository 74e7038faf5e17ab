/*
 * frames.h - the frame model: what a stack is made of, for every layer
 * above the unwinder.
 *
 * A cq_thread_stack is one thread's frames, innermost first: each native
 * frame the unwinder found, preceded by the calls inlined at its pc (kind
 * inline), with async frames (kind async) spliced in where an async runtime
 * merged a coroutine chain, and interpreted frames (kind python) in front of
 * the interpreter's native frame that runs them.  A cq_suspended_stack is a chain of async
 * frames that runs on no thread: a suspended coroutine, future or task.
 *
 * Ownership: frames arrays belong to the stack that holds them; the
 * strings (function, file, state) and module pointers point into the
 * symbolizer, the core or an async runtime's state, all of which the
 * struct cq_stacks that holds the stacks keeps alive (analysis/stacktrace.h).
 *
 * struct cq_module and struct cq_core_thread are the core model's
 * (libcore/model/): here they are handles, never looked into.  The unwinder
 * and the async runtimes learn about modules and threads through
 * struct cq_unwind_target (unwind/target.h).
 *
 * Layer: unwind.
 */
#ifndef CQ_FRAMES_H
#define CQ_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/stats.h"
#include "unwind/unwind.h"

struct cq_core_thread; /* a handle: libcore/model/core.h */
struct cq_module;      /* a handle: libcore/model/module.h */

enum cq_frame_kind {
	CQ_FRAME_NATIVE,
	CQ_FRAME_INLINE,
	CQ_FRAME_ASYNC,
	/*
	 * An interpreter's frame (CPython's _PyInterpreterFrame), pc 0: its
	 * function (the qualified name), file and line are the interpreted
	 * code's, object the frame record's address; state a mark such as
	 * "holds the GIL".  Spliced in front of the native frame that runs it.
	 */
	CQ_FRAME_PYTHON,
};

struct cq_stack_frame {
	uint64_t pc;
	enum cq_frame_kind kind;
	uint8_t trust;                  /* enum cq_unwind_trust */
	const struct cq_module *module; /* NULL when pc is in no module */
	uint64_t offset;                /* pc - module bias: the link-time address */
	const char *function;           /* demangled, NULL when unknown */
	/* The symbol table's name where it differs from function (the DWARF
	 * name): `foo.constprop.0` for `foo`; NULL when the same or none. */
	const char *symbol;
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
	/*
	 * Merged async stacks (unwind/async/folly_walk.h).  repeat: an async
	 * frame that stands for this many consecutive async frames in the same
	 * function (sender adapters returning into one caller); 0 or 1: one.
	 * joined: a native frame that is also the chain's async frame of the
	 * same coroutine activation, and the rule that found it ("async_frame",
	 * "frame_address", "function"; a static string), NULL otherwise.
	 * thread_switch: the first frame of a run of native frames on another
	 * thread than the frames before it (the thread blocked on the chain):
	 * that thread's tid, 0 otherwise.
	 */
	uint32_t repeat;
	const char *joined;
	int64_t thread_switch;
};

struct cq_thread_stack {
	const struct cq_core_thread *thread;
	/* Threads with the same stack share one array (stack_pool.h) until an
	 * async runtime gives a thread its own merged stack (owns_frames). */
	struct cq_stack_frame *frames;
	size_t nframes;
	enum cq_unwind_end end;
	bool owns_frames;
};

/*
 * A chain of suspended async frames, innermost first: for folly, the leaf's
 * caller first; for Rust, the leaf future first, then each async fn that
 * awaits it, out to the task's outermost future.
 */
struct cq_suspended_stack {
	const char *kind; /* the async runtime: "folly", "rust", ... (a static string) */
	uint64_t leaf;    /* folly: the leaf's frame record; rust: the leaf future */
	struct cq_stack_frame *frames;
	size_t nframes;
	enum cq_unwind_end end;
	/*
	 * A runtime's own task, where it has one (has_task): its id, its state
	 * (a static string such as "idle" or "running") and the tid of the
	 * thread running it (0: none).  All zero for a plain chain.
	 */
	bool has_task;
	uint64_t task_id;
	const char *task_state;
	int64_t thread;
	/*
	 * How many of the outermost frames are the executor's own wrapper
	 * around the task's future (async-executor's spawn block): a task
	 * list names the task by the frame inside them.  0 for most.
	 */
	size_t executor_frames;
	/*
	 * A goroutine (kind "go"): the object it waits on where the runtime
	 * records one (a channel's hchan, a semaphore's address; 0: none), when
	 * it started waiting (the runtime's nanotime; 0: not recorded), and the
	 * go statement that created it (a frame its runtime owns; NULL: none).
	 */
	uint64_t wait_object;
	int64_t wait_since;
	const struct cq_stack_frame *created_by;
};

/* A growing array of frames; the caller owns frames (free()). */
struct cq_frame_list {
	struct cq_stack_frame *frames;
	size_t n, cap;
};

/*
 * Every thread's stack and the suspended stacks of one core.  async holds
 * what the async runtimes found and did, as named values each runtime adds
 * under its own keys (printed as the "async" object of `coreq stack --format
 * json`); warnings, what a person should be told about the search (printed
 * as `coreq: PATH: warning: ...`).
 */
struct cq_stacks {
	struct cq_thread_stack *threads; /* in core order: the crashed thread first */
	size_t nthreads;
	struct cq_suspended_stack *suspended;
	size_t nsuspended;
	size_t suspended_cap;     /* room in suspended */
	size_t suspended_dropped; /* found over the bound (max_suspended): counted, not kept */
	struct cq_stats async;
	struct cq_stats warnings; /* values are strings; keys are unused */
	/*
	 * What the program's runtime said the crash was, read from the core
	 * (Go: "panic: assignment to entry in nil map"; Python: "ValueError:
	 * bad job 7"); NULL when none said, and for a process stopped from
	 * outside (libcore/analysis/stacktrace.c).  Owned by the runtime's
	 * state, like frames' strings.
	 */
	const char *crash_message;
};

const char *cq_frame_kind_name(enum cq_frame_kind kind);

#endif
