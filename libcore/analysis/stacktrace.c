/*
 * stacktrace.c - unwind and symbolize every thread of a core
 * (see stacktrace.h).
 *
 * Each native frame from the unwinder becomes one or more named frames
 * (frame_list.h).  With async on, the async runtimes (unwind/async/
 * runtime.h) are detected first; when one of them needs every thread's
 * native frames (folly's merged stacks may continue on another thread's
 * stack) those are kept until all threads are unwound.  Then the runtimes
 * splice their frames into threads' stacks and append suspended stacks.
 */
#include "libcore/analysis/stacktrace.h"

#include <stdlib.h>
#include <string.h>

#include "libcore/analysis/frame_list.h"
#include "libcore/analysis/stack_pool.h"
#include "libcore/analysis/unwind_target.h"
#include "libcore/model/core.h"
#include "libcore/symbols/symbolizer.h"
#include "unwind/async/runtime.h"

/* How often (in threads) to drop touched core pages from the resident set. */
#define TRIM_EVERY_THREADS    256
#define DEFAULT_MAX_SUSPENDED 1024

struct cq_stacks_private {
	struct cq_stacks pub;
	struct cq_symbolizer *symbolizer;
	struct cq_async_states *async; /* own the async frames' strings */
	struct cq_stack_pool pool;     /* threads' native stacks, each distinct one once */
};

void cq_stack_options_default(struct cq_stack_options *o)
{
	memset(o, 0, sizeof(*o));
	cq_unwind_options_default(&o->unwind);
	o->symbolize = true;
	o->async = true;
	o->max_suspended = DEFAULT_MAX_SUSPENDED;
}

/* Unwinds thread t into raw; keeps a copy when keep is set. */
static struct cq_error *unwind_one(struct cq_stacks_private *p, struct cq_core *core,
                                   struct cq_core_target *ct, const struct cq_stack_options *o,
                                   size_t t, struct cq_unwind_frame *raw,
                                   struct cq_async_native *keep)
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
		*keep = (struct cq_async_native){.frames = copy, .nframes = n, .end = ts->end};
	}
	struct cq_frame_list fl = {0};
	struct cq_error *err = NULL;
	for (size_t i = 0; i < n && !err; i++)
		err = cq_frame_list_add(&fl, core, p->symbolizer, &raw[i], CQ_FRAME_NATIVE);
	if (err) {
		free(fl.frames);
		return err;
	}
	const struct cq_stack_frame *pooled;
	if ((err = cq_stack_pool_intern(&p->pool, fl.frames, fl.n, &pooled)))
		return err;
	ts->frames = (struct cq_stack_frame *)pooled;
	ts->nframes = fl.n;
	ts->owns_frames = false;
	return NULL;
}

struct cq_error *cq_core_stacks(struct cq_core *core, const struct cq_stack_options *o,
                                struct cq_stacks **out)
{
	*out = NULL;
	struct cq_stacks_private *p = calloc(1, sizeof(*p));
	struct cq_unwind_frame *raw =
	    calloc(o->unwind.max_frames ? o->unwind.max_frames : 1, sizeof(*raw));
	struct cq_async_native *native = NULL;
	struct cq_error *err = NULL;
	struct cq_core_target ct;
	bool have_target = false;
	if (!p || !raw || !(p->pub.threads = calloc(core->nthreads, sizeof(*p->pub.threads)))) {
		err = &cq_error_nomem;
		goto out;
	}
	if (o->symbolize &&
	    (err = cq_symbolizer_create(core, o->debug_dirs, o->cache, &p->symbolizer)))
		goto out;
	if ((err = cq_core_target_init(&ct, core, o, p->symbolizer)))
		goto out;
	have_target = true;
	struct cq_async_ctx actx = {.target = &ct.target,
	                            .unwind = &o->unwind,
	                            .max_suspended = o->max_suspended,
	                            .named = p->symbolizer != NULL,
	                            .stacks = &p->pub};
	bool keep_native = false;
	cq_stats_bool(&p->pub.async, "searched", o->async);
	if (o->async && (err = cq_async_detect(&actx, &p->async, &keep_native)))
		goto out;
	cq_core_target_close_dwarf(&ct); /* the runtimes read DWARF in detect only */
	if (keep_native &&
	    !(native = calloc(core->nthreads ? core->nthreads : 1, sizeof(*native)))) {
		err = &cq_error_nomem;
		goto out;
	}
	for (size_t t = 0; t < core->nthreads && !err; t++) {
		err = unwind_one(p, core, &ct, o, t, raw, native ? &native[t] : NULL);
		if (t % TRIM_EVERY_THREADS == TRIM_EVERY_THREADS - 1)
			cq_core_trim(core);
	}
	actx.native = native;
	if (!err && p->async)
		err = cq_async_stacks(&actx, p->async);
	else if (!err)
		cq_async_report_unsearched(&actx);
	/*
	 * A crash message says why the process died (frames.h).  One stopped
	 * from outside (a snapshot, a watchdog's signal) died of that, whatever
	 * its first thread was doing (a Python except block): it has none.
	 */
	if (!err && cq_core_stopped_from_outside(core))
		p->pub.crash_message = NULL;
	if (!err)
		cq_core_target_store_tables(&ct);
	if (!err && (ct.out_of_memory || !cq_symbolizer_ok(p->symbolizer)))
		err = &cq_error_nomem;
out:
	if (have_target)
		cq_core_target_destroy(&ct);
	if (native) {
		for (size_t t = 0; t < core->nthreads; t++)
			free((void *)native[t].frames);
		free(native);
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
		if (stacks->threads[i].owns_frames)
			free(stacks->threads[i].frames);
	cq_stack_pool_free(&p->pool);
	free(stacks->threads);
	for (size_t i = 0; i < stacks->nsuspended; i++)
		free(stacks->suspended[i].frames);
	free(stacks->suspended);
	cq_stats_free(&stacks->async);
	cq_stats_free(&stacks->warnings);
	cq_async_states_free(p->async);
	if (p->symbolizer)
		cq_symbolizer_destroy(p->symbolizer);
	free(p);
}
