/*
 * analyse_core.h - one call from a core's path to every thread's stack:
 * open the core (model), then unwind, merge and name every thread
 * (stacktrace.h).  `coreq info`, `stack` and `flame` run it; the ingest
 * pipeline has its own order (it skips the stacks of a core already stored).
 *
 * The result may be partial: a core that opened but whose stacks could not
 * be made keeps its core, so a caller can still show what the notes say.
 *
 * Layer: analysis (libcore/analysis/): stacks of a core; above symbols.
 * The layer order is in docs/internals.md (Layout) and tests/check-layers.
 */
#ifndef CQ_ANALYSE_CORE_H
#define CQ_ANALYSE_CORE_H

#include "libcore/base/error.h"

struct cq_core;
struct cq_core_options;
struct cq_stack_options;
struct cq_stacks;

struct cq_analyse_options {
	const struct cq_core_options *core;
	/* How the stacks are made; opened may still set what it points to (the cache). */
	struct cq_stack_options *stacks;
	/*
	 * May be NULL.  Called once the core is open and before its stacks are
	 * made: to warn that it is damaged, and to open the cache (stacks->cache)
	 * only for a core that opened.
	 */
	void (*opened)(void *arg, const char *path, const struct cq_core *core,
	               struct cq_stack_options *stacks);
	void *opened_arg;
};

struct cq_analysed_core {
	struct cq_core *core;     /* NULL: the core could not be opened */
	struct cq_stacks *stacks; /* NULL: the stacks could not be made (or no core) */
};

/*
 * Opens path ("-": standard input) and makes every thread's stack.  On
 * error, out->core is still set when the core opened and only the stacks
 * failed.  Free out with cq_analysed_core_free in every case.
 */
struct cq_error *cq_analyse_core(const char *path, const struct cq_analyse_options *o,
                                 struct cq_analysed_core *out);
void cq_analysed_core_free(struct cq_analysed_core *a);

struct cq_cache;
struct cq_stream_hint;

/*
 * The memory of which programs read their heap (the cache's stream_hints):
 * hint set up to ask the cache of h's stack options (none: never), and
 * without a note to probe the core's head (libcore/analysis/scan_probe.h)
 * with h's options, for cq_core_options.stream_hint;
 * and, once a core's stacks are made, cache told when its one-stream read
 * needed a second pass (its analysis read pages the keep plan dropped), and
 * what its heap scan looked for when that is new (scan_notes).
 */
struct cq_analyse_hint {
	const struct cq_core_options *core;    /* may be NULL */
	const struct cq_stack_options *stacks; /* its cache (may be NULL); NULL: no probe */
};
void cq_analyse_stream_hint(const struct cq_analyse_hint *h, struct cq_stream_hint *hint);
void cq_analyse_note_heap_read(struct cq_cache *cache, const struct cq_core *core);

#endif
