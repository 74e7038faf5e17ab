/*
 * stacktrace.c - unwind and symbolize every thread of a core
 * (see stacktrace.h).
 *
 * Each native frame from the unwinder becomes one or more frames here: the
 * inlined calls at its pc (innermost first, kind "inline") and then the
 * function that contains them (kind "native").  Names and lines point into
 * the symbolizer, which the result keeps alive.
 *
 * When the program has folly's async-stack symbols, every thread's native
 * frames are kept until all threads are unwound, because a merged stack
 * may continue on another thread's stack; then each thread's steps
 * (unwind/async/folly_walk.h) become frames, an async step symbolized like a
 * return address.
 *
 * Then, with async on, the suspended Rust futures (unwind/async/rust_dyn.h)
 * join the same suspended list, kind "rust", after folly's.
 */
#include "libcore/analysis/stacktrace.h"

#include <stdlib.h>
#include <string.h>

#include "unwind/async/folly.h"
#include "libcore/model/core.h"
#include "libcore/model/module.h"
#include "unwind/async/rust_dyn.h"
#include "libcore/symbols/symbolizer.h"
#include "unwind/async/folly_walk.h"

/* How often (in threads) to drop touched core pages from the resident set. */
#define TRIM_EVERY_THREADS    256
#define DEFAULT_MAX_SUSPENDED 1024

struct cq_stacks_private {
	struct cq_stacks pub;
	struct cq_symbolizer *symbolizer;
	struct cq_rust_tasks *rust_tasks; /* owns the Rust suspended frames' strings */
};

void cq_stack_options_default(struct cq_stack_options *o)
{
	memset(o, 0, sizeof(*o));
	cq_unwind_options_default(&o->unwind);
	o->symbolize = true;
	o->async = true;
	o->max_suspended = DEFAULT_MAX_SUSPENDED;
}

const char *cq_frame_kind_name(enum cq_frame_kind kind)
{
	switch (kind) {
	case CQ_FRAME_INLINE:
		return "inline";
	case CQ_FRAME_ASYNC:
		return "async";
	case CQ_FRAME_NATIVE:
	default:
		return "native";
	}
}

static struct cq_stack_frame frame_at(struct cq_core *core, const struct cq_unwind_frame *uf)
{
	struct cq_stack_frame f = {.pc = uf->pc, .kind = CQ_FRAME_NATIVE, .trust = uf->trust};
	const struct cq_module *mod = cq_core_module_at(core, uf->pc);
	if (mod) {
		f.module = mod;
		f.offset = uf->pc - mod->bias;
	}
	return f;
}

/* A growing array of frames. */
struct frame_list {
	struct cq_stack_frame *frames;
	size_t n, cap;
};

/*
 * Appends the frames for one unwound frame: its inline chain, then the
 * function, which gets kind (native, or async for an async frame).
 */
static struct cq_error *add_frames(struct frame_list *fl, struct cq_core *core,
                                   struct cq_symbolizer *sym, const struct cq_unwind_frame *uf,
                                   enum cq_frame_kind kind)
{
	const struct cq_symbol_frame *names = NULL;
	size_t n = sym ? cq_symbolizer_lookup(sym, uf->pc, uf->is_return_address, &names) : 1;
	if (fl->n + n > fl->cap) {
		size_t ncap = fl->cap ? fl->cap * 2 : 16;
		while (ncap < fl->n + n)
			ncap *= 2;
		struct cq_stack_frame *f = realloc(fl->frames, ncap * sizeof(*f));
		if (!f)
			return &cq_error_nomem;
		fl->frames = f;
		fl->cap = ncap;
	}
	for (size_t i = 0; i < n; i++) {
		struct cq_stack_frame f = frame_at(core, uf);
		f.kind = kind;
		if (names) {
			f.function = names[i].function;
			if (!f.function && uf->is_signal_frame)
				f.function = "<signal handler called>";
			f.file = names[i].file;
			f.line = names[i].line;
			if (names[i].inlined)
				f.kind = CQ_FRAME_INLINE;
		}
		fl->frames[fl->n++] = f;
	}
	return NULL;
}

/* Everything the async part of one run needs. */
struct async_run {
	struct cq_stacks_private *p;
	struct cq_core *core;
	struct cq_core_target *ct;
	const struct cq_stack_options *o;
	struct cq_folly folly;
	struct cq_async_thread *threads; /* native frames of every thread, kept */
	struct cq_async_step *steps;     /* one walk's output */
	size_t max_steps;
};

/* Turns a walk's steps into symbolized frames. */
static struct cq_error *add_steps(struct async_run *r, struct frame_list *fl,
                                  const struct cq_async_out *out)
{
	struct cq_error *err = NULL;
	for (size_t i = 0; i < out->nsteps && !err; i++) {
		const struct cq_async_step *s = &out->steps[i];
		if (s->kind == CQ_ASYNC_STEP_NATIVE) {
			err = add_frames(fl, r->core, r->p->symbolizer,
			                 &r->threads[s->thread].frames[s->frame], CQ_FRAME_NATIVE);
		} else {
			struct cq_unwind_frame uf = {
			    .pc = s->pc, .is_return_address = true, .trust = CQ_TRUST_ASYNC};
			err = add_frames(fl, r->core, r->p->symbolizer, &uf, CQ_FRAME_ASYNC);
		}
	}
	return err;
}

static struct cq_error *merge_threads(struct async_run *r)
{
	struct cq_stacks *st = &r->p->pub;
	for (size_t t = 0; t < st->nthreads; t++) {
		r->threads[t].root = cq_folly_thread_root(r->core, &r->folly, &r->core->threads[t]);
		st->async.threads_with_roots += r->threads[t].root != 0;
	}
	struct cq_error *err = NULL;
	for (size_t t = 0; t < st->nthreads && !err; t++) {
		struct cq_thread_stack *ts = &st->threads[t];
		struct cq_async_out out = {.steps = r->steps, .max_steps = r->max_steps};
		cq_async_merge(&r->ct->target, r->threads, st->nthreads, t, r->folly.cookie, &out);
		struct frame_list fl = {0};
		err = add_steps(r, &fl, &out);
		ts->frames = fl.frames;
		ts->nframes = fl.n;
		ts->end = out.end;
	}
	return err;
}

static struct cq_error *suspended_stacks(struct async_run *r)
{
	struct cq_stacks *st = &r->p->pub;
	uint64_t *leaves;
	size_t n;
	struct cq_folly_scan_stats stats;
	struct cq_error *err =
	    cq_folly_suspended_leaves(r->core, &r->folly, r->o->max_suspended, &leaves, &n, &stats);
	if (err)
		return err;
	st->async.scanned = r->folly.cookie != 0;
	st->async.scanned_bytes = stats.bytes;
	st->async.scan_seconds = stats.seconds;
	if (n && !(st->suspended = calloc(n, sizeof(*st->suspended))))
		err = &cq_error_nomem;
	for (size_t i = 0; i < n && !err; i++) {
		struct cq_async_out out = {.steps = r->steps, .max_steps = r->max_steps};
		cq_async_walk_suspended(&r->ct->target, r->threads, st->nthreads, leaves[i],
		                        r->folly.cookie, &out);
		struct frame_list fl = {0};
		err = add_steps(r, &fl, &out);
		struct cq_suspended_stack *ss = &st->suspended[st->nsuspended++];
		*ss = (struct cq_suspended_stack){.kind = "folly",
		                                  .leaf = leaves[i],
		                                  .frames = fl.frames,
		                                  .nframes = fl.n,
		                                  .end = out.end};
	}
	free(leaves);
	return err;
}

static struct cq_error *async_stacks(struct async_run *r)
{
	struct cq_stacks *st = &r->p->pub;
	st->async.has_tls_key = r->folly.has_key;
	st->async.tls_key = r->folly.key;
	st->async.tls_layout_from_libc = r->folly.has_key && r->folly.tls.from_libc;
	r->max_steps = r->o->unwind.max_frames ? r->o->unwind.max_frames : 1;
	if (!(r->steps = calloc(r->max_steps, sizeof(*r->steps))))
		return &cq_error_nomem;
	struct cq_error *err = merge_threads(r);
	if (!err)
		err = suspended_stacks(r);
	free(r->steps);
	return err;
}

/* Unwinds thread t into raw; keeps a copy when keep is set. */
static struct cq_error *unwind_one(struct cq_stacks_private *p, struct cq_core *core,
                                   struct cq_core_target *ct, const struct cq_stack_options *o,
                                   size_t t, struct cq_unwind_frame *raw,
                                   struct cq_async_thread *keep)
{
	struct cq_thread_stack *ts = &p->pub.threads[t];
	ts->thread = &core->threads[t];
	p->pub.nthreads++;
	size_t n = 0;
	cq_unwind_thread(&ct->target, &ts->thread->regs, &o->unwind, raw, &n, &ts->end);
	if (keep) {
		struct cq_unwind_frame *copy = malloc((n ? n : 1) * sizeof(*copy));
		if (!copy)
			return &cq_error_nomem;
		memcpy(copy, raw, n * sizeof(*copy));
		*keep = (struct cq_async_thread){.frames = copy, .nframes = n, .end = ts->end};
		return NULL;
	}
	struct frame_list fl = {0};
	struct cq_error *err = NULL;
	for (size_t i = 0; i < n && !err; i++)
		err = add_frames(&fl, core, p->symbolizer, &raw[i], CQ_FRAME_NATIVE);
	ts->frames = fl.frames;
	ts->nframes = fl.n;
	return err;
}

struct cq_error *cq_core_stacks(struct cq_core *core, const struct cq_stack_options *o,
                                struct cq_stacks **out)
{
	*out = NULL;
	struct cq_stacks_private *p = calloc(1, sizeof(*p));
	struct cq_unwind_frame *raw =
	    calloc(o->unwind.max_frames ? o->unwind.max_frames : 1, sizeof(*raw));
	struct async_run ar = {.p = p, .core = core, .o = o};
	struct cq_error *err = NULL;
	if (!p || !raw || !(p->pub.threads = calloc(core->nthreads, sizeof(*p->pub.threads)))) {
		err = &cq_error_nomem;
		goto out;
	}
	if (o->symbolize &&
	    (err = cq_symbolizer_create(core, o->debug_dirs, o->cache, &p->symbolizer)))
		goto out;
	struct cq_core_target ct;
	cq_core_target_init(&ct, core, o);
	ar.ct = &ct;
	p->pub.async.searched = o->async;
	if (o->async) {
		cq_folly_locate(core, &ar.folly);
		p->pub.async.folly = ar.folly.present;
	}
	if (ar.folly.present &&
	    !(ar.threads = calloc(core->nthreads ? core->nthreads : 1, sizeof(*ar.threads)))) {
		err = &cq_error_nomem;
		goto out;
	}
	for (size_t t = 0; t < core->nthreads && !err; t++) {
		err = unwind_one(p, core, &ct, o, t, raw, ar.threads ? &ar.threads[t] : NULL);
		if (t % TRIM_EVERY_THREADS == TRIM_EVERY_THREADS - 1)
			cq_core_trim(core);
	}
	if (!err && ar.threads)
		err = async_stacks(&ar);
	if (!err && o->async)
		err = cq_rust_tasks_find(core, o->debug_dirs, o->max_suspended, &p->pub,
		                         &p->pub.async.rust, &p->rust_tasks);
out:
	if (ar.threads) {
		for (size_t t = 0; t < core->nthreads; t++)
			free((void *)ar.threads[t].frames);
		free(ar.threads);
	}
	free(raw);
	if (err) {
		cq_stacks_free(p ? &p->pub : NULL);
		return err;
	}
	*out = &p->pub;
	return NULL;
}

void cq_stacks_free(struct cq_stacks *stacks)
{
	if (!stacks)
		return;
	struct cq_stacks_private *p = (struct cq_stacks_private *)stacks;
	for (size_t i = 0; i < stacks->nthreads; i++)
		free(stacks->threads[i].frames);
	free(stacks->threads);
	for (size_t i = 0; i < stacks->nsuspended; i++)
		free(stacks->suspended[i].frames);
	free(stacks->suspended);
	cq_rust_tasks_free(p->rust_tasks);
	if (p->symbolizer)
		cq_symbolizer_destroy(p->symbolizer);
	free(p);
}
