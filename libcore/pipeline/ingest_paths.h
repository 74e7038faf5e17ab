/*
 * ingest_paths.h - `coreq ingest`'s whole flow: the paths a person or a
 * service names (cores, "-", directories) into the crash database, one core
 * at a time through the ingest pipeline (ingest.h), each outcome reported
 * through a callback as it happens.
 *
 *   expand every path (a directory: its core-looking files, sniffed by
 *   content, down to max_depth levels, hidden names passed by, in path
 *   order) -> for each file: ask the seen-files record -> ingest -> record
 *   what became of it.
 *
 * The seen-files protocol (capture_rows.h) is for files found in a
 * directory, which a path unit or a cron job hands over again and again:
 *   - a file seen before with the same size and mtime is "unchanged" and
 *     skipped;
 *   - before its analysis a file is recorded "started", so a core that
 *     kills or hangs the analysis cannot block the files after it: the next
 *     run finds "started" without an outcome and reports the file failed
 *     once ("an earlier analysis of this file did not finish") instead of
 *     trying it forever;
 *   - after it, its outcome (ingested, duplicate, failed) is recorded.
 * A path named directly is always analysed and never recorded.
 *
 * Layer: pipeline (libcore/pipeline/): the top library layer, what commands call; above store.
 * The layer order is in docs/internals.md (Layout) and tests/check-layers.
 */
#ifndef CQ_INGEST_PATHS_H
#define CQ_INGEST_PATHS_H

#include <signal.h>
#include <stddef.h>

#include "libcore/base/error.h"
#include "libcore/pipeline/ingest.h"

struct cq_store;

enum cq_ingest_event_kind {
	CQ_INGEST_EV_BAD_PATH,  /* a named path could not be expanded (error); its other files go on
	                         */
	CQ_INGEST_EV_EMPTY_DIR, /* a named directory holds no core-looking file */
	CQ_INGEST_EV_NEXT,      /* input index of total is about to be looked at */
	CQ_INGEST_EV_WARNING,   /* the seen-files record could not be read or written (error) */
	CQ_INGEST_EV_DONE,      /* what became of input index (status) */
};

enum cq_ingest_status {
	CQ_INGEST_INGESTED,  /* stored anew: result */
	CQ_INGEST_DUPLICATE, /* stored before: result->store.core_id */
	CQ_INGEST_FAILED,    /* error says why (and whether that could be recorded) */
	CQ_INGEST_UNCHANGED, /* a directory's file seen before with this size and mtime */
};

struct cq_ingest_event {
	enum cq_ingest_event_kind kind;
	const char *path;
	size_t index, total;          /* NEXT, WARNING and DONE: which input, of how many */
	enum cq_ingest_status status; /* DONE */
	const struct cq_ingest_result *result; /* DONE, INGESTED or DUPLICATE */
	const struct cq_error *error;          /* BAD_PATH, WARNING, DONE FAILED */
};

struct cq_ingest_paths_options {
	struct cq_ingest_options ingest; /* for each core */
	unsigned max_depth;              /* levels of subdirectories of a named directory */
	void (*report)(void *arg, const struct cq_ingest_event *ev);
	void *report_arg;
	/* When not NULL and set (by a signal handler), no further file is begun:
	 * the run ends between two files, leaving the rest for the next run
	 * instead of one half-analysed file that would then count as failed. */
	const volatile sig_atomic_t *stop;
};

struct cq_ingest_totals {
	size_t inputs; /* files looked at */
	size_t ingested, duplicates, failed, unchanged;
	size_t bad_paths; /* named paths that could not be expanded */
	size_t left;      /* files not begun because stop was set */
};

/*
 * Ingests paths ("-": standard input; a directory: its core files) into
 * store, reporting each event to o->report, and counts the outcomes.
 * Nothing here stops the run: each failure is one event.  The named
 * directories are read again after their files are done, and again, until
 * a reading finds no file the run has not looked at (cores that arrived
 * meanwhile are taken in the same run).
 */
void cq_ingest_paths(struct cq_store *store, const char *const *paths, size_t npaths,
                     const struct cq_ingest_paths_options *o, struct cq_ingest_totals *totals);

#endif
