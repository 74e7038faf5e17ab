/*
 * ingest.h - the ingest pipeline: one core file from disk (or stdin) into
 * the crash database.  `coreq ingest` and `coreq hook` both run it; the
 * hook after it has stored the core it was handed.
 *
 *   the analysis (analyse.h: capture metadata, open, reconcile it with the
 *   notes, then identity -> already stored? (then no stacks: only drop the
 *   hook's placeholder) -> every thread's stack, the wait-for graph) ->
 *   crash signature -> one store transaction.
 *
 * A core that cannot be analysed is recorded as a failed row under its
 * absolute path (so a stored copy is never lost without a trace), and the
 * error is returned.
 *
 * Layer: pipeline (libcore/pipeline/): the top library layer, what commands call; above store.
 * The layer order is in docs/internals.md (Layout) and tests/check-layers.
 */
#ifndef CQ_INGEST_H
#define CQ_INGEST_H

#include <stdbool.h>
#include <stdint.h>

#include "libcore/base/error.h"
#include "libcore/store/store.h"
#include "libcore/triage/bucket.h"

struct cq_bucket_rules;
struct cq_capture;
struct cq_core;
struct cq_core_options;
struct cq_stack_options;

struct cq_ingest_options {
	const struct cq_core_options *core;
	const struct cq_stack_options
	    *stacks; /* its cache: open, kept by the caller (may be NULL) */
	unsigned signature_frames;
	const struct cq_bucket_rules *rules; /* how signatures are made (cq_bucket_rules_load) */
	/* With path "-": the stored file standard input holds (its rows are replaced). */
	const char *stored_path;
	/* Metadata to use instead of what the file's name and xattrs say; may be NULL. */
	const struct cq_capture *capture_override;
	/*
	 * May be NULL.  Called after the analysis and before anything is written
	 * to the store, with path "-": waits until the core that standard input
	 * holds (the hook's raw copy in memory) is stored, and sets *stored_path
	 * (malloc'd) to the stored file.  An error ends the ingest with nothing
	 * written, no failed row either: there is no stored core to name.
	 */
	struct cq_error *(*await_stored)(void *arg, char **stored_path);
	void *await_arg;
	/* Called once the core is open, e.g. to warn that it is truncated; may be NULL. */
	void (*opened)(void *arg, const char *path, const struct cq_core *core);
	void *opened_arg;
};

struct cq_ingest_result {
	struct cq_store_result store;         /* store.duplicate: nothing new stored */
	struct cq_bucket_signature signature; /* set when stored anew */
	/* On failure: the failed row recorded (0: none), or why it could not be. */
	int64_t failed_row;
	struct cq_error *record_error;
};

/* Runs the pipeline for path ("-": standard input).  Free out in every case. */
struct cq_error *cq_ingest_core(struct cq_store *store, const char *path,
                                const struct cq_ingest_options *o, struct cq_ingest_result *out);
void cq_ingest_result_free(struct cq_ingest_result *r);

#endif
