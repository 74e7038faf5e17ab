/*
 * ingest.c - the ingest pipeline (see ingest.h).
 */
#include "libcore/pipeline/ingest.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/analysis/stacktrace.h"
#include "libcore/capture/capture.h"
#include "libcore/model/core.h"
#include "libcore/pipeline/analyse.h"
#include "libcore/store/capture_rows.h"
#include "libcore/triage/frame_names.h"

/* What the analysis's opened step needs: a stored core's identity, and whether it is stored. */
struct ingest_step {
	struct cq_store *store;
	const struct cq_ingest_options *o;
	struct cq_ingest_result *out;
	char identity[CQ_STORE_IDENTITY_MAX];
	struct cq_bucket_namer *namer;
};

/* The analysis's opened: a core already stored needs no stacks (only its placeholder dropped). */
static struct cq_error *ingest_opened(void *arg, const char *path, const struct cq_analysis *a,
                                      bool *stop)
{
	struct ingest_step *st = arg;
	if (st->o->opened)
		st->o->opened(st->o->opened_arg, path, a->core);
	cq_store_identity(a->core, st->identity);
	struct cq_error *err = cq_store_find_core(st->store, st->identity, &st->out->store.core_id);
	if (!err)
		err = cq_bucket_namer_create(a->core, &st->namer);
	*stop = st->out->store.core_id != 0;
	return err;
}

/*
 * The crash signature of an analysed core.  A process killed from outside
 * (a watchdog's signal, or none: a snapshot, gcore) while its threads wait
 * on locks buckets by why it hung.  The sender is what the signal claims
 * (cq_core_sender_claimed): a process that queues itself a watchdog's
 * SIGABRT moves only its own core, which its own code shapes anyway, into
 * a hang bucket.
 */
static struct cq_error *signature(const struct cq_ingest_options *o, struct ingest_step *st,
                                  const struct cq_analysis *a)
{
	struct cq_error *err =
	    cq_bucket_signature(o->rules, st->namer, &a->stacks->threads[0],
	                        cq_core_signal(a->core), o->signature_frames, &st->out->signature);
	if (!err && a->waits && cq_core_stopped_from_outside(a->core)) {
		bool made;
		err = cq_bucket_wait_signature(o->rules, st->namer, a->stacks, a->waits,
		                               &st->out->signature, &made);
	}
	return err;
}

struct cq_error *cq_ingest_core(struct cq_store *store, const char *path,
                                const struct cq_ingest_options *o, struct cq_ingest_result *out)
{
	assert(store && path && o && o->stacks);
	memset(out, 0, sizeof(*out));
	bool stdin_core = strcmp(path, "-") == 0;
	char *abs =
	    stdin_core ? (o->stored_path ? strdup(o->stored_path) : NULL) : realpath(path, NULL);
	struct ingest_step st = {.store = store, .o = o, .out = out};
	struct cq_analyse_options ao = {.core = o->core,
	                                .stacks = o->stacks,
	                                .waits = true,
	                                .capture = o->capture_override,
	                                .opened = ingest_opened,
	                                .opened_arg = &st};
	struct cq_analysis a;
	struct cq_error *err = cq_analyse(path, &ao, &a);
	bool duplicate = !err && out->store.core_id;
	if (!err && !duplicate)
		err = signature(o, &st, &a);
	if (stdin_core && o->await_stored) {
		/* Nothing is written before the core is stored, a failure included. */
		free(abs);
		abs = NULL;
		struct cq_error *werr = o->await_stored(o->await_arg, &abs);
		if (werr) {
			cq_error_free(err);
			err = werr;
			free(abs);
			abs = NULL;
		}
	}
	struct cq_store_meta meta = {.capture = &a.capture,
	                             .stored_path = abs,
	                             .signature = &out->signature,
	                             .namer = st.namer,
	                             .waits = a.waits};
	if (!err) {
		/* A duplicate drops a placeholder the hook left for this copy, if any. */
		err = cq_store_ingest(store, a.core, st.identity, duplicate ? NULL : a.stacks,
		                      &meta, &out->store);
		if (duplicate)
			out->store.duplicate = true;
	}
	if (err && abs)
		out->record_error =
		    cq_store_placeholder_failed(store, abs, err->message, false, &out->failed_row);
	free(abs);
	cq_bucket_namer_destroy(st.namer);
	cq_analysis_free(&a);
	return err;
}

void cq_ingest_result_free(struct cq_ingest_result *r)
{
	cq_bucket_signature_free(&r->signature);
	cq_error_free(r->record_error);
	r->record_error = NULL;
}
