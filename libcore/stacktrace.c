/*
 * stacktrace.c - unwind and symbolize every thread of a core
 * (see stacktrace.h).
 *
 * Each native frame from the unwinder becomes one or more frames here: the
 * inlined calls at its pc (innermost first, kind "inline") and then the
 * function that contains them (kind "native").  Names and lines point into
 * the symbolizer, which the result keeps alive.
 */
#include "libcore/stacktrace.h"

#include <stdlib.h>
#include <string.h>

#include "libcore/core.h"
#include "libcore/module.h"
#include "libcore/symbolizer.h"

/* How often (in threads) to drop touched core pages from the resident set. */
#define TRIM_EVERY_THREADS 256

struct cq_stacks_private {
	struct cq_stacks pub;
	struct cq_symbolizer *symbolizer;
};

void cq_stack_options_default(struct cq_stack_options *o)
{
	memset(o, 0, sizeof(*o));
	cq_unwind_options_default(&o->unwind);
	o->symbolize = true;
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

/* Appends the frames for one unwound frame (inline chain + native). */
static struct cq_error *add_frames(struct cq_thread_stack *ts, size_t *cap, struct cq_core *core,
                                   struct cq_symbolizer *sym, const struct cq_unwind_frame *uf)
{
	const struct cq_symbol_frame *names = NULL;
	size_t n = sym ? cq_symbolizer_lookup(sym, uf->pc, uf->is_return_address, &names) : 1;
	if (ts->nframes + n > *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		while (ncap < ts->nframes + n)
			ncap *= 2;
		struct cq_stack_frame *f = realloc(ts->frames, ncap * sizeof(*f));
		if (!f)
			return &cq_error_nomem;
		ts->frames = f;
		*cap = ncap;
	}
	for (size_t i = 0; i < n; i++) {
		struct cq_stack_frame f = frame_at(core, uf);
		if (names) {
			f.function = names[i].function;
			if (!f.function && uf->is_signal_frame)
				f.function = "<signal handler called>";
			f.file = names[i].file;
			f.line = names[i].line;
			if (names[i].inlined)
				f.kind = CQ_FRAME_INLINE;
		}
		ts->frames[ts->nframes++] = f;
	}
	return NULL;
}

struct cq_error *cq_core_stacks(struct cq_core *core, const struct cq_stack_options *o,
                                struct cq_stacks **out)
{
	*out = NULL;
	struct cq_stacks_private *p = calloc(1, sizeof(*p));
	struct cq_unwind_frame *raw =
	    calloc(o->unwind.max_frames ? o->unwind.max_frames : 1, sizeof(*raw));
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
	for (size_t t = 0; t < core->nthreads && !err; t++) {
		struct cq_thread_stack *ts = &p->pub.threads[t];
		ts->thread = &core->threads[t];
		p->pub.nthreads++;
		size_t n = 0, cap = 0;
		cq_unwind_thread(&ct.target, &ts->thread->regs, &o->unwind, raw, &n, &ts->end);
		for (size_t i = 0; i < n && !err; i++)
			err = add_frames(ts, &cap, core, p->symbolizer, &raw[i]);
		if (t % TRIM_EVERY_THREADS == TRIM_EVERY_THREADS - 1)
			cq_core_trim(core);
	}
out:
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
	if (p->symbolizer)
		cq_symbolizer_destroy(p->symbolizer);
	free(p);
}
