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
	const struct cq_async_thread *threads;
	size_t nthreads;
	uint64_t cookie;
	struct cq_async_out *out;
	uint64_t *seen; /* roots and frames visited, max_steps + MAX_ROOTS entries */
	size_t nseen, seen_cap;
};

/* Blocking roots one walk may pass through (each also costs a lookup on every thread). */
#define MAX_ROOTS 64

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
	uint8_t b[CQ_ASYNC_ROOT_SIZE];
	if (addr == 0 || addr & 7 || !w->tg->ops->read(w->tg->ctx, addr, b, sizeof(b)))
		return false;
	r->top = le64(b);
	r->next = le64(b + 8);
	r->frame_ptr = le64(b + 16);
	return true;
}

static bool read_frame(const struct walk *w, uint64_t addr, struct frame *f)
{
	uint8_t b[CQ_ASYNC_FRAME_SIZE];
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

static bool emit(struct walk *w, struct cq_async_step step)
{
	struct cq_async_out *o = w->out;
	if (o->nsteps == o->max_steps) {
		o->end = CQ_END_MAX_FRAMES;
		return false;
	}
	o->steps[o->nsteps++] = step;
	return true;
}

/* Emits native frames [from, to) of thread th. */
static bool emit_native(struct walk *w, size_t th, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++) {
		struct cq_async_step s = {
		    .kind = CQ_ASYNC_STEP_NATIVE, .thread = (uint32_t)th, .frame = (uint32_t)i};
		if (!emit(w, s))
			return false;
	}
	return true;
}

/*
 * Does native frame i of th hold frame_ptr, i.e. did it register the root?
 * The outermost frame has no caller's sp to bound it: its stack mapping does.
 */
static bool registered_here(const struct walk *w, const struct cq_async_thread *th, size_t i,
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

static bool find_registering(const struct walk *w, const struct cq_async_thread *th, size_t from,
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
		const struct cq_async_thread *at = &w->threads[t];
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
 * Follows an async chain from frame addr, emitting each instructionPointer.
 * Returns the blocking root the chain hangs from, or 0 with out->end set
 * when the walk is over.  current is the root being walked (0: none).
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
		struct cq_async_step s = {.kind = CQ_ASYNC_STEP_ASYNC, .pc = f.ip};
		if (f.ip && !emit(w, s))
			return 0;
		*last_ip = f.ip;
		if (f.parent) {
			addr = f.parent;
			continue;
		}
		if (f.stack_root == 0 || f.stack_root == current ||
		    (w->cookie && f.stack_root == w->cookie)) {
			w->out->end = CQ_END_ASYNC_DETACHED;
			return 0;
		}
		return f.stack_root;
	}
}

/*
 * Where native frames resume below a blocking root: after its registering
 * frame, on whichever thread's stack holds it, and after that frame's caller
 * too when the chain's last instructionPointer (the dummy frame's) already
 * named it.  Sets *next to the root's nextRoot.  False with out->end set
 * when the root is unreadable, repeated or on no stack.
 */
static bool resume_at(struct walk *w, uint64_t blocking, uint64_t last_ip, size_t *th, size_t *pos,
                      uint64_t *next)
{
	struct root b;
	size_t idx;
	if (!read_root(w, blocking, &b)) {
		w->out->end = CQ_END_BAD_MEMORY;
		return false;
	}
	if (!visit(w, blocking)) {
		w->out->end = CQ_END_LOOP;
		return false;
	}
	if (!find_on_any_thread(w, b.frame_ptr, th, &idx)) {
		w->out->end = CQ_END_ASYNC_DETACHED;
		return false;
	}
	*pos = idx + 1;
	if (*pos < w->threads[*th].nframes && w->threads[*th].frames[*pos].pc == last_ip)
		(*pos)++;
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
		const struct cq_async_thread *at = &w->threads[th];
		struct root r;
		size_t reg;
		if (hops == MAX_ROOTS) {
			w->out->end = CQ_END_MAX_FRAMES;
			return;
		}
		/* No (usable) root: the rest of this stack is native. */
		if (!root || !read_root(w, root, &r) ||
		    !find_registering(w, at, pos, r.frame_ptr, &reg)) {
			if (emit_native(w, th, pos, at->nframes))
				w->out->end = at->end;
			return;
		}
		if (!visit(w, root)) {
			w->out->end = CQ_END_LOOP;
			return;
		}
		if (!emit_native(w, th, pos, reg))
			return;
		if (!r.top) {
			/* A root with no active frame: keep the registering frame. */
			pos = reg;
			root = r.next;
			continue;
		}
		uint64_t last_ip = 0;
		uint64_t blocking = walk_chain(w, r.top, root, &last_ip);
		if (!blocking || !resume_at(w, blocking, last_ip, &th, &pos, &root))
			return;
	}
}

static bool walk_init(struct walk *w, const struct cq_unwind_target *tg,
                      const struct cq_async_thread *threads, size_t nthreads, uint64_t cookie,
                      struct cq_async_out *out)
{
	*w = (struct walk){
	    .tg = tg, .threads = threads, .nthreads = nthreads, .cookie = cookie, .out = out};
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

void cq_async_merge(const struct cq_unwind_target *tg, const struct cq_async_thread *threads,
                    size_t nthreads, size_t t, uint64_t cookie, struct cq_async_out *out)
{
	struct walk w;
	if (t >= nthreads || !walk_init(&w, tg, threads, nthreads, cookie, out))
		return;
	walk_from(&w, t, 0, threads[t].root);
	free(w.seen);
}

void cq_async_walk_suspended(const struct cq_unwind_target *tg,
                             const struct cq_async_thread *threads, size_t nthreads, uint64_t leaf,
                             uint64_t cookie, struct cq_async_out *out)
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
