/*
 * analyse.h - the one analysis of a core, the library's one entry point to
 * it: `coreq stack`, `info` and `flame` call it, and so does the ingest
 * pipeline (ingest.h: `coreq ingest` and the hook).
 *
 *   capture (the file's name and xattrs, or the caller's) -> open the core
 *   (its stream hints asked of the cache) -> reconcile the capture with the
 *   notes -> opened (the caller may stop here) -> every thread's stack and
 *   the async chains -> the wait-for graph -> the cache told what this
 *   core's stream read taught (its stream hints).
 *
 * The stream hints live here, and only here: a one-stream compressed core
 * asks, as it opens, whether its build's analysis reads the heap, for the
 * scan note an earlier core of its build left, or else for a probe of its
 * head (libcore/model/stream_image.h, libcore/analysis/scan_probe.h); once
 * its stacks are made, the cache is told what this core's read needed
 * (cq_source_read: a second pass, a new scan note).
 *
 * The cache is the caller's already open one (stacks->cache: `ingest`
 * keeps one for every core), or opened through open_cache the first time
 * the analysis needs it (a stream hint, or the stacks of a core that
 * opened), so a file that is not a core never opens it.
 *
 * Why the pipeline layer: the result holds the capture reconciled with the
 * notes (libcore/capture, above analysis and triage), and the capture is
 * the file's record of where a core came from, not an analysis of it; the
 * pipeline layer is where the library's flows that commands call live.
 * The stacks themselves are made below, in libcore/analysis (stacktrace.h).
 *
 * Layer: pipeline (libcore/pipeline/): the top library layer, what commands call; above store.
 * The layer order is in the README (Layout) and tests/check-layers.
 */
#ifndef CQ_ANALYSE_H
#define CQ_ANALYSE_H

#include <stdbool.h>

#include "libcore/analysis/stacktrace.h"
#include "libcore/base/error.h"
#include "libcore/capture/capture.h"
#include "libcore/model/core.h"
#include "libcore/model/stream_image.h"

struct cq_analysis;
struct cq_cache;
struct cq_waits;

struct cq_analyse_options {
	const struct cq_core_options
	    *core; /* NULL: the defaults; its stream_hint, if set, is used */
	/* How the stacks are made.  Its cache: the caller's, open (may be NULL). */
	const struct cq_stack_options *stacks;
	bool waits; /* find the wait-for graph too (libcore/analysis/waits.h) */
	/* What the capture says, instead of the file's name and xattrs; may be NULL. */
	const struct cq_capture *capture;
	/*
	 * May be NULL (then stacks->cache is used as it is).  Else stacks->cache
	 * must be NULL: called at most once, the first time the analysis needs
	 * the cache; its result (NULL: none) is out->opened_cache, which the
	 * caller closes after cq_analysis_free.
	 */
	struct cq_cache *(*open_cache)(void *arg);
	void *open_cache_arg;
	/*
	 * May be NULL.  Called once the core is open and its capture reconciled,
	 * before its stacks are made: to warn that the core is damaged, or to
	 * end the analysis there (*stop = true: a core already stored needs no
	 * stacks).  An error it returns ends the analysis.
	 */
	struct cq_error *(*opened)(void *arg, const char *path, const struct cq_analysis *a,
	                           bool *stop);
	void *opened_arg;
};

struct cq_analysis {
	struct cq_core *core; /* NULL: the core could not be opened */
	/*
	 * What the capture says (source "file", or the caller's), reconciled
	 * with the core's notes once the core opened: capture.conflicts lists
	 * where they disagree (cq_capture_reconcile).
	 */
	struct cq_capture capture;
	struct cq_stacks *stacks; /* NULL: not made (no core, opened stopped, or an error) */
	struct cq_waits *waits;   /* NULL: no thread blocked in a futex wait, or not asked */
	/* What open_cache gave (NULL: none, or not asked); the caller closes it. */
	struct cq_cache *opened_cache;

	/* The analysis's own state, for its stream hints. */
	struct cq_core_options core_options;
	struct cq_stack_options stack_options;
	struct cq_stream_hint hint;
	struct cq_cache *(*open_cache)(void *arg);
	void *open_cache_arg;
	bool cache_asked;
};

/*
 * Analyses path ("-": standard input).  The result may be partial, so a
 * caller can still show what the notes say.  On error: out->core NULL, the
 * core did not open; else out->stacks NULL, opened or the stacks failed
 * (the wait-for graph is then still found, from no stacks, if asked for);
 * else only the wait-for graph failed.  Free out with cq_analysis_free in
 * every case.
 */
struct cq_error *cq_analyse(const char *path, const struct cq_analyse_options *o,
                            struct cq_analysis *out);
void cq_analysis_free(struct cq_analysis *a);

#endif
