/*
 * analyse.c - the one analysis of a core, and its stream hints (see
 * analyse.h).
 *
 * Invariants: the cache is asked of open_cache at most once per analysis,
 * and only when the caller gave no cache of its own; the stacks are made
 * only for a core that opened; the stream hints point into the analysis,
 * which outlives every question the core's open asks.
 */
#include "libcore/pipeline/analyse.h"

#include <assert.h>
#include <string.h>

#include "libcore/analysis/scan_probe.h"
#include "libcore/analysis/waits.h"
#include "libcore/db/cache.h"

/* The cache the analysis uses, opened the first time it is needed. */
static struct cq_cache *analysis_cache(struct cq_analysis *a)
{
	if (a->open_cache && !a->cache_asked) {
		assert(!a->stack_options.cache);
		a->cache_asked = true;
		a->opened_cache = a->open_cache(a->open_cache_arg);
		a->stack_options.cache = a->opened_cache;
	}
	return a->stack_options.cache;
}

/* Whether the cache remembers that this build's analysis reads its heap. */
static bool hint_reads_heap(void *arg, const char *exe_build_id)
{
	return cq_cache_reads_heap(analysis_cache(arg), exe_build_id);
}

/* The scan note an earlier core of this build left in the cache. */
static char *hint_scan_note(void *arg, const char *exe_build_id)
{
	return cq_cache_scan_note(analysis_cache(arg), exe_build_id);
}

/* Without a note: what the scan will look for, from the core's head (scan_probe.h). */
static size_t hint_probe(void *arg, const uint8_t *head, uint64_t len, struct cq_feed_words *out,
                         size_t max)
{
	struct cq_analysis *a = arg;
	analysis_cache(a);
	return cq_scan_probe(head, len, &a->core_options, &a->stack_options, out, max);
}

/*
 * Once the analysis has read what it needs: tell the cache when this
 * core's one-stream read needed a second pass (its analysis read pages the
 * keep plan dropped), and what its heap scan looked for when that is new.
 */
static void note_stream_read(struct cq_analysis *a)
{
	struct cq_cache *cache = a->stack_options.cache;
	if (!cache)
		return;
	struct cq_source_read rd = cq_source_read(&a->core->source);
	if (rd.second_pass && rd.exe_build_id && rd.exe_build_id[0])
		cq_cache_put_reads_heap(cache, rd.exe_build_id);
	if (rd.scan_note && rd.exe_build_id)
		cq_cache_put_scan_note(cache, rd.exe_build_id, rd.scan_note);
}

/* Sets up out: the options' copies its stream hints ask with, and the capture to reconcile. */
static void analysis_init(const char *path, const struct cq_analyse_options *o,
                          struct cq_analysis *out)
{
	memset(out, 0, sizeof(*out));
	out->core_options = o->core ? *o->core : (struct cq_core_options){0};
	out->stack_options = *o->stacks;
	out->open_cache = o->open_cache;
	out->open_cache_arg = o->open_cache_arg;
	out->hint = (struct cq_stream_hint){hint_reads_heap, out, hint_scan_note,
	                                    o->stacks->async ? hint_probe : NULL};
	if (!out->core_options.stream_hint)
		out->core_options.stream_hint = &out->hint;
	cq_capture_init(&out->capture);
	if (strcmp(path, "-") != 0)
		cq_capture_from_file(path, &out->capture);
	if (o->capture)
		out->capture = *o->capture;
}

struct cq_error *cq_analyse(const char *path, const struct cq_analyse_options *o,
                            struct cq_analysis *out)
{
	assert(path && o && o->stacks && out);
	assert(!o->open_cache || !o->stacks->cache);
	analysis_init(path, o, out);
	struct cq_error *err = cq_core_open(path, &out->core_options, &out->core);
	if (err)
		return err;
	assert(out->core);
	cq_capture_reconcile(out->core, &out->capture);
	bool stop = false;
	if (o->opened && (err = o->opened(o->opened_arg, path, out, &stop)))
		return err;
	if (stop)
		return NULL;
	analysis_cache(out);
	err = cq_core_stacks(out->core, &out->stack_options, &out->stacks);
	assert(!err == !!out->stacks);
	if (o->waits) {
		struct cq_error *werr = cq_waits_find(out->core, out->stacks, &out->waits);
		if (werr && !err)
			err = werr;
		else
			cq_error_free(werr);
	}
	/* Waits read memory too: the stream read is final only now. */
	if (out->stacks)
		note_stream_read(out);
	return err;
}

void cq_analysis_free(struct cq_analysis *a)
{
	cq_waits_free(a->waits);
	cq_stacks_free(a->stacks);
	cq_core_close(a->core);
	a->waits = NULL;
	a->stacks = NULL;
	a->core = NULL;
}
