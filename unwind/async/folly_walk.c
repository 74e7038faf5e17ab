/*
 * folly_walk.c - walk folly async stacks over native frames (see
 * folly_walk.h).
 *
 * One walk is a small state machine: a position in some thread's native
 * frames (thread, index) and the root whose registering frame ends the run
 * of native frames there.  Cycle detection keeps every root and every async
 * frame visited in this walk; both lists are bounded by max_steps, since
 * each visit emits a step or ends the walk.
 */
#include "unwind/async/folly_walk.h"

#include <stdlib.h>

/* A walk's state. */
struct walk {
	const struct cq_unwind_target *tg;
	const struct cq_folly_thread *threads;
	size_t nthreads;
	uint64_t cookie;
	struct cq_folly_out *out;
	uint64_t *seen; /* roots and frames visited, max_steps + MAX_ROOTS entries */
	size_t nseen, seen_cap;
	size_t cur_thread; /* the thread of the last native step (SIZE_MAX: none yet) */
};

/* Blocking roots one walk may pass through (each also costs a lookup on every thread). */
#define MAX_ROOTS 64
/* Chain frames matched with native frames, and native frames looked at, per splice. */
#define MAX_JOIN_FRAMES 32
#define MAX_JOIN_NATIVE 128
/* Words of one native frame searched for a coroutine frame's address. */
#define MAX_SLOT_WORDS 512
/*
 * A coroutine frame starts this many bytes or fewer before the
 * AsyncStackFrame in its promise (g++ and clang: two function pointers,
 * then the promise, whose record folly puts near its start).  Kept small:
 * glibc's smallest chunk is 32 bytes, so no other block's address lies
 * within 32 bytes before a record 16 bytes into its own block.
 */
#define MAX_RECORD_OFFSET 32

struct root {
	uint64_t top, next, frame_ptr;
};

struct frame {
	uint64_t parent, ip, stack_root;
};

static uint64_t le64(const uint8_t *b)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

static bool read_root(const struct walk *w, uint64_t addr, struct root *r)
{
	uint8_t b[CQ_FOLLY_ROOT_SIZE];
	if (addr == 0 || addr & 7 || !w->tg->ops->read(w->tg->ctx, addr, b, sizeof(b)))
		return false;
	r->top = le64(b);
	r->next = le64(b + 8);
	r->frame_ptr = le64(b + 16);
	return true;
}

static bool read_frame(const struct walk *w, uint64_t addr, struct frame *f)
{
	uint8_t b[CQ_FOLLY_FRAME_SIZE];
	if (addr == 0 || addr & 7 || !w->tg->ops->read(w->tg->ctx, addr, b, sizeof(b)))
		return false;
	f->parent = le64(b);
	f->ip = le64(b + 8);
	f->stack_root = le64(b + 16);
	return true;
}

/* Records addr as visited; false if it was already (a cycle) or the list is full. */
static bool visit(struct walk *w, uint64_t addr)
{
	for (size_t i = 0; i < w->nseen; i++)
		if (w->seen[i] == addr)
			return false;
	if (w->nseen == w->seen_cap)
		return false;
	w->seen[w->nseen++] = addr;
	return true;
}

static bool emit(struct walk *w, struct cq_folly_step step)
{
	struct cq_folly_out *o = w->out;
	if (o->nsteps == o->max_steps) {
		o->end = CQ_END_MAX_FRAMES;
		return false;
	}
	o->steps[o->nsteps++] = step;
	return true;
}

const char *cq_folly_join_name(enum cq_folly_join join)
{
	switch (join) {
	case CQ_FOLLY_JOIN_ASYNC_FRAME:
		return "async_frame";
	case CQ_FOLLY_JOIN_FRAME_ADDRESS:
		return "frame_address";
	case CQ_FOLLY_JOIN_FUNCTION:
		return "function";
	case CQ_FOLLY_JOIN_NONE:
		break;
	}
	return NULL;
}

/*
 * Emits native frames [from, to) of thread th; join (NULL: none) holds the
 * join rule of frames from .. from + MAX_JOIN_NATIVE.
 */
static bool emit_native(struct walk *w, size_t th, size_t from, size_t to, const uint8_t *join)
{
	for (size_t i = from; i < to; i++) {
		struct cq_folly_step s = {
		    .kind = CQ_FOLLY_STEP_NATIVE, .thread = (uint32_t)th, .frame = (uint32_t)i};
		if (join && i - from < MAX_JOIN_NATIVE)
			s.join = join[i - from];
		s.thread_switch = w->cur_thread != SIZE_MAX && w->cur_thread != th;
		if (w->cur_thread == SIZE_MAX && w->out->nsteps > 0)
			s.thread_switch = true; /* a suspended chain's blocking thread */
		if (!emit(w, s))
			return false;
		w->cur_thread = th;
	}
	return true;
}

/*
 * Does native frame i of th hold, in its stack slots, the address of the
 * AsyncStackFrame rec or of a coroutine frame starting just before it?
 */
static enum cq_folly_join slot_rule(const struct walk *w, const struct cq_folly_thread *th,
                                    size_t i, uint64_t rec)
{
	uint64_t buf[MAX_SLOT_WORDS];
	const struct cq_unwind_frame *f = &th->frames[i];
	if (i + 1 >= th->nframes || th->frames[i + 1].sp <= f->sp || (f->sp & 7))
		return CQ_FOLLY_JOIN_NONE;
	uint64_t words = (th->frames[i + 1].sp - f->sp) / 8;
	if (words > MAX_SLOT_WORDS)
		words = MAX_SLOT_WORDS;
	if (words == 0 || !w->tg->ops->read(w->tg->ctx, f->sp, buf, words * 8))
		return CQ_FOLLY_JOIN_NONE;
	enum cq_folly_join best = CQ_FOLLY_JOIN_NONE;
	for (uint64_t k = 0; k < words; k++) {
		uint64_t v = le64((const uint8_t *)&buf[k]);
		if (v == rec)
			return CQ_FOLLY_JOIN_ASYNC_FRAME;
		if (v < rec && rec - v <= MAX_RECORD_OFFSET && !(v & 7))
			best = CQ_FOLLY_JOIN_FRAME_ADDRESS;
	}
	return best;
}

/* The rule, if any, by which native frame i is the activation owning record rec. */
static enum cq_folly_join join_rule(const struct walk *w, const struct cq_folly_thread *th,
                                    size_t i, uint64_t rec, uint64_t named_by)
{
	const struct cq_unwind_frame *f = &th->frames[i];
	enum cq_folly_same same = CQ_FOLLY_SAME_UNKNOWN;
	if (w->out->same_function)
		same =
		    w->out->same_function(w->out->same_ctx, f->pc, f->is_return_address, named_by);
	if (same == CQ_FOLLY_SAME_NO)
		return CQ_FOLLY_JOIN_NONE;
	enum cq_folly_join slot = slot_rule(w, th, i, rec);
	if (slot != CQ_FOLLY_JOIN_NONE)
		return slot;
	return same == CQ_FOLLY_SAME_YES ? CQ_FOLLY_JOIN_FUNCTION : CQ_FOLLY_JOIN_NONE;
}

/*
 * Coroutines of the chain from top that are still on the native stack in
 * frames [pos, reg) of th (see folly_walk.h): marks those native frames in
 * join[] and returns the chain frame where the async frames start, after
 * the ones that would repeat them.
 */
static uint64_t join_activations(const struct walk *w, const struct cq_folly_thread *th, size_t pos,
                                 size_t reg, uint64_t top, uint8_t *join)
{
	uint64_t rec[MAX_JOIN_FRAMES], ip[MAX_JOIN_FRAMES];
	size_t n = 0;
	for (uint64_t a = top; a && n < MAX_JOIN_FRAMES; n++) {
		struct frame f;
		if (!read_frame(w, a, &f))
			break;
		rec[n] = a;
		ip[n] = f.ip;
		a = f.parent;
	}
	size_t end = reg - pos > MAX_JOIN_NATIVE ? pos + MAX_JOIN_NATIVE : reg;
	size_t next = pos; /* native frames before next are taken */
	size_t k;
	/* Coroutine k owns rec[k]; ip[k - 1], in its body, names it. */
	for (k = 1; k < n; k++) {
		size_t i;
		uint8_t rule = CQ_FOLLY_JOIN_NONE;
		for (i = next; i < end && !rule; i++)
			rule = (uint8_t)join_rule(w, th, i, rec[k], ip[k - 1]);
		if (!rule)
			break;
		join[i - 1 - pos] = rule;
		next = i;
	}
	return n ? rec[k - 1] : top;
}

/*
 * Does native frame i of th hold frame_ptr, i.e. did it register the root?
 * The outermost frame has no caller's sp to bound it: its stack mapping does.
 */
static bool registered_here(const struct walk *w, const struct cq_folly_thread *th, size_t i,
                            uint64_t frame_ptr)
{
	const struct cq_unwind_frame *f = &th->frames[i];
	uint64_t lo, hi;
	if (frame_ptr < f->sp)
		return false;
	/* The caller's sp is this frame's CFA, except across a stack switch. */
	if (i + 1 < th->nframes && th->frames[i + 1].sp > f->sp) {
		if (frame_ptr >= th->frames[i + 1].sp)
			return false;
	} else if (!w->tg->ops->stack_bounds(w->tg->ctx, f->sp, &lo, &hi) || frame_ptr >= hi) {
		return false;
	}
	return !f->has_fp || f->fp == frame_ptr;
}

static bool find_registering(const struct walk *w, const struct cq_folly_thread *th, size_t from,
                             uint64_t frame_ptr, size_t *idx)
{
	for (size_t i = from; i < th->nframes; i++) {
		if (registered_here(w, th, i, frame_ptr)) {
			*idx = i;
			return true;
		}
	}
	return false;
}

/* The thread and frame that registered a root with this frame_ptr, on any stack. */
static bool find_on_any_thread(const struct walk *w, uint64_t frame_ptr, size_t *th, size_t *idx)
{
	uint64_t lo, hi;
	if (!w->tg->ops->stack_bounds(w->tg->ctx, frame_ptr, &lo, &hi))
		return false;
	for (size_t t = 0; t < w->nthreads; t++) {
		const struct cq_folly_thread *at = &w->threads[t];
		/* Only threads whose innermost frame is on that mapping. */
		if (at->nframes == 0 || at->frames[0].sp < lo || at->frames[0].sp >= hi)
			continue;
		if (find_registering(w, at, 0, frame_ptr, idx)) {
			*th = t;
			return true;
		}
	}
	return false;
}

/*
 * Follows an async chain from frame addr, emitting each instructionPointer
 * but that of a frame hanging from a blocking root, which is left in
 * *last_ip for resume_at.  Returns the blocking root the chain hangs from,
 * or 0 with out->end set when the walk is over.  current is the root being
 * walked (0: none).
 */
static uint64_t walk_chain(struct walk *w, uint64_t addr, uint64_t current, uint64_t *last_ip)
{
	for (;;) {
		struct frame f;
		if (!visit(w, addr)) {
			w->out->end = w->nseen == w->seen_cap ? CQ_END_MAX_FRAMES : CQ_END_LOOP;
			return 0;
		}
		if (!read_frame(w, addr, &f)) {
			w->out->end = CQ_END_BAD_MEMORY;
			return 0;
		}
		struct cq_folly_step s = {.kind = CQ_FOLLY_STEP_ASYNC, .pc = f.ip};
		bool detached = f.stack_root == 0 || f.stack_root == current ||
		                (w->cookie && f.stack_root == w->cookie);
		if (f.ip && (f.parent || detached) && !emit(w, s))
			return 0;
		*last_ip = f.ip;
		if (f.parent) {
			addr = f.parent;
			continue;
		}
		if (detached) {
			w->out->end = CQ_END_ASYNC_DETACHED;
			return 0;
		}
		return f.stack_root;
	}
}

/* Emits the held-back instructionPointer of a chain's last frame as async. */
static bool emit_last(struct walk *w, uint64_t last_ip)
{
	struct cq_folly_step s = {.kind = CQ_FOLLY_STEP_ASYNC, .pc = last_ip};
	return !last_ip || emit(w, s);
}

/*
 * Where native frames resume below a blocking root: after its registering
 * frame, on whichever thread's stack holds it.  The chain's last
 * instructionPointer (the registering function's return address) is that
 * next native frame when its pc is the same, and is emitted as an async
 * frame otherwise.  Sets *next to the root's nextRoot.  False with out->end
 * set when the root is unreadable, repeated or on no stack.
 */
static bool resume_at(struct walk *w, uint64_t blocking, uint64_t last_ip, size_t *th, size_t *pos,
                      uint64_t *next)
{
	struct root b;
	size_t idx;
	if (!read_root(w, blocking, &b)) {
		if (emit_last(w, last_ip))
			w->out->end = CQ_END_BAD_MEMORY;
		return false;
	}
	if (!visit(w, blocking)) {
		if (emit_last(w, last_ip))
			w->out->end = CQ_END_LOOP;
		return false;
	}
	if (!find_on_any_thread(w, b.frame_ptr, th, &idx)) {
		if (emit_last(w, last_ip))
			w->out->end = CQ_END_ASYNC_DETACHED;
		return false;
	}
	*pos = idx + 1;
	if (!(*pos < w->threads[*th].nframes && w->threads[*th].frames[*pos].pc == last_ip) &&
	    !emit_last(w, last_ip))
		return false;
	*next = b.next;
	return true;
}

/*
 * Native frames of thread th from pos, switching to root's async chain at
 * its registering frame, and so on through blocking roots.
 */
static void walk_from(struct walk *w, size_t th, size_t pos, uint64_t root)
{
	for (unsigned hops = 0;; hops++) {
		const struct cq_folly_thread *at = &w->threads[th];
		struct root r;
		size_t reg;
		if (hops == MAX_ROOTS) {
			w->out->end = CQ_END_MAX_FRAMES;
			return;
		}
		/* No (usable) root: the rest of this stack is native. */
		if (!root || !read_root(w, root, &r) ||
		    !find_registering(w, at, pos, r.frame_ptr, &reg)) {
			if (emit_native(w, th, pos, at->nframes, NULL))
				w->out->end = at->end;
			return;
		}
		if (!visit(w, root)) {
			w->out->end = CQ_END_LOOP;
			return;
		}
		if (!r.top) {
			/* A root with no active frame: keep the registering frame. */
			if (!emit_native(w, th, pos, reg, NULL))
				return;
			pos = reg;
			root = r.next;
			continue;
		}
		uint8_t join[MAX_JOIN_NATIVE] = {0};
		uint64_t start = join_activations(w, at, pos, reg, r.top, join);
		if (!emit_native(w, th, pos, reg, join))
			return;
		uint64_t last_ip = 0;
		uint64_t blocking = walk_chain(w, start, root, &last_ip);
		if (!blocking || !resume_at(w, blocking, last_ip, &th, &pos, &root))
			return;
	}
}

static bool walk_init(struct walk *w, const struct cq_unwind_target *tg,
                      const struct cq_folly_thread *threads, size_t nthreads, uint64_t cookie,
                      struct cq_folly_out *out)
{
	*w = (struct walk){.tg = tg,
	                   .threads = threads,
	                   .nthreads = nthreads,
	                   .cookie = cookie,
	                   .out = out,
	                   .cur_thread = SIZE_MAX};
	out->nsteps = 0;
	out->end = CQ_END_OUTERMOST;
	w->seen_cap = out->max_steps + 2 * MAX_ROOTS;
	w->seen = malloc(w->seen_cap * sizeof(*w->seen));
	if (!w->seen) {
		out->end = CQ_END_MAX_FRAMES;
		return false;
	}
	return true;
}

void cq_folly_merge(const struct cq_unwind_target *tg, const struct cq_folly_thread *threads,
                    size_t nthreads, size_t t, uint64_t cookie, struct cq_folly_out *out)
{
	struct walk w;
	if (t >= nthreads || !walk_init(&w, tg, threads, nthreads, cookie, out))
		return;
	w.cur_thread = t;
	walk_from(&w, t, 0, threads[t].root);
	free(w.seen);
}

void cq_folly_walk_suspended(const struct cq_unwind_target *tg,
                             const struct cq_folly_thread *threads, size_t nthreads, uint64_t leaf,
                             uint64_t cookie, struct cq_folly_out *out)
{
	struct walk w;
	if (!walk_init(&w, tg, threads, nthreads, cookie, out))
		return;
	uint64_t last_ip = 0, next;
	size_t th, pos;
	uint64_t blocking = walk_chain(&w, leaf, 0, &last_ip);
	if (blocking && resume_at(&w, blocking, last_ip, &th, &pos, &next))
		walk_from(&w, th, pos, next);
	free(w.seen);
}
