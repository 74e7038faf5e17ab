/*
 * folly_walk.h - merged async stacks under folly's AsyncStackRoot ABI
 * (folly/tracing/AsyncStack.h; FACTS.md section 4), for every thread and
 * for suspended coroutines, computed from native frames the unwinder
 * already found.
 *
 *   AsyncStackFrame { parentFrame; instructionPointer; stackRoot; }        24 bytes
 *   AsyncStackRoot  { topFrame; nextRoot; stackFramePtr; returnAddress; }  32 bytes
 *
 * A merged stack is a list of steps: native frames of some thread (by
 * index), and async frames (an instructionPointer, a return address into
 * the awaiting coroutine).  The walk for a thread whose current root is R:
 *
 *   1. native frames from the thread's pc up to, not including, the frame
 *      that registered R: the one whose frame holds R.stackFramePtr
 *      (sp <= stackFramePtr < caller's sp) and whose frame-pointer register,
 *      when known, equals it.  With -fomit-frame-pointer the callees of the
 *      registering function often keep the same rbp, so the frame-pointer
 *      value alone does not identify it.
 *   2. async frames from R.topFrame along parentFrame.
 *   3. at the frame with no parent: a NULL stackRoot (or the cookie, or R
 *      itself) means a detached chain: the stack ends, "async_detached".
 *      Otherwise stackRoot is a blocking root B (blockingWait's): native
 *      frames resume on whichever thread's stack holds B.stackFramePtr,
 *      after B's registering frame.  That last frame's instructionPointer
 *      is the registering function's return address: when the native frame
 *      that follows is at that pc it is shown native (it is that frame),
 *      otherwise as an async frame before it.  A native run on another
 *      thread than the one before it starts with thread_switch set.  Then
 *      R = B.nextRoot and step 1 repeats on that stack.
 *
 * Coroutines still on the native stack (no symmetric-transfer tail call:
 * -O0, -Og, some clang builds) would appear twice: as the native frames
 * in step 1 and as the async frames of step 2.  Before step 2, the chain's
 * first frames are matched, in order, with the native frames of step 1:
 * coroutine k owns the k-th AsyncStackFrame of the chain and is what the
 * (k-1)-th frame's instructionPointer names.  A native frame is coroutine
 * k's activation when its stack slots hold the address of that
 * AsyncStackFrame ("async_frame": the promise's record itself) or a
 * coroutine-frame address just before it ("frame_address": the frame
 * pointer the actor was called with, which -O0 code keeps in its frame),
 * and its function is the one the instructionPointer is in (when the
 * caller's same_function hook can tell); failing both, when its function
 * is that one ("function").  The async frames of matched coroutines are
 * left out and the native frame says which rule joined it (join).
 * Everything read is untrusted: every read is checked, a root or frame seen
 * twice ends the stack with "loop", an unreadable one with "bad_memory", and
 * no walk emits more than max_steps steps ("max_frames").  Memory is read
 * only through struct cq_unwind_target, so tests run it on synthetic stacks.
 */
#ifndef CQ_ASYNC_STACK_H
#define CQ_ASYNC_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind/unwind.h"

#define CQ_FOLLY_FRAME_SIZE 24
#define CQ_FOLLY_ROOT_SIZE  32

/* One thread as the walker sees it: its native frames and current root. */
struct cq_folly_thread {
	const struct cq_unwind_frame *frames;
	size_t nframes;
	enum cq_unwind_end end; /* why the native walk stopped */
	uint64_t root;          /* its current AsyncStackRoot *, 0 for none */
};

enum cq_folly_step_kind {
	CQ_FOLLY_STEP_NATIVE, /* threads[thread].frames[frame] */
	CQ_FOLLY_STEP_ASYNC,  /* an async frame's instructionPointer, in pc */
};

/* Which rule found a native frame to be the activation of an async frame. */
enum cq_folly_join {
	CQ_FOLLY_JOIN_NONE,
	CQ_FOLLY_JOIN_ASYNC_FRAME,   /* its frame holds the AsyncStackFrame's address */
	CQ_FOLLY_JOIN_FRAME_ADDRESS, /* its frame holds the coroutine frame's address */
	CQ_FOLLY_JOIN_FUNCTION,      /* the same function, in the same order */
};

const char *cq_folly_join_name(enum cq_folly_join join);

/* Same-function answers: yes, no, or cannot tell (no symbols). */
enum cq_folly_same { CQ_FOLLY_SAME_UNKNOWN, CQ_FOLLY_SAME_YES, CQ_FOLLY_SAME_NO };

struct cq_folly_step {
	uint8_t kind;       /* enum cq_folly_step_kind */
	uint8_t join;       /* native steps: enum cq_folly_join */
	bool thread_switch; /* native steps: the first of a run on another thread */
	uint32_t thread;
	uint32_t frame;
	uint64_t pc;
};

/*
 * Where a walk writes: steps holds max_steps entries.  same_function
 * (optional, input) says whether the native frame at native_pc (a return
 * address unless it is the innermost frame: is_ra) is in the function that
 * holds the return address async_ip.
 */
struct cq_folly_out {
	enum cq_folly_same (*same_function)(void *ctx, uint64_t native_pc, bool is_ra,
	                                    uint64_t async_ip);
	void *same_ctx;
	struct cq_folly_step *steps;
	size_t max_steps;
	size_t nsteps;
	enum cq_unwind_end end;
};

/*
 * The merged stack of threads[t]; cookie is the suspended-frame cookie (0
 * if unknown).  A thread without a root gets its native frames unchanged,
 * as does one whose root is unreadable or not on its stack.
 */
void cq_folly_merge(const struct cq_unwind_target *tg, const struct cq_folly_thread *threads,
                    size_t nthreads, size_t t, uint64_t cookie, struct cq_folly_out *out);

/*
 * The stack of a suspended chain from its leaf frame (an AsyncStackFrame
 * whose stackRoot is the cookie): async frames along parentFrame, then, if
 * the chain is awaited by a blocking wait, that thread's native frames.
 */
void cq_folly_walk_suspended(const struct cq_unwind_target *tg,
                             const struct cq_folly_thread *threads, size_t nthreads, uint64_t leaf,
                             uint64_t cookie, struct cq_folly_out *out);

#endif
