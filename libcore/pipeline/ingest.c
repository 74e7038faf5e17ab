/*
 * ingest.c - the ingest pipeline (see ingest.h).
 */
#include "libcore/pipeline/ingest.h"

#include <stdlib.h>
#include <string.h>

#include "libcore/analysis/analyse_core.h"
#include "libcore/analysis/stacktrace.h"
#include "libcore/analysis/waits.h"
#include "libcore/capture/capture.h"
#include "libcore/model/core.h"
#include "libcore/model/stream_image.h"
#include "libcore/store/capture_rows.h"
#include "libcore/triage/frame_names.h"
#include "libcore/triage/go_hang.h"

struct cq_error *cq_ingest_core(struct cq_store *store, const char *path,
                                const struct cq_ingest_options *o, struct cq_ingest_result *out)
{
	memset(out, 0, sizeof(*out));
	struct cq_core *core = NULL;
	struct cq_stacks *stacks = NULL;
	struct cq_capture cap;
	char identity[CQ_STORE_IDENTITY_MAX];
	bool stdin_core = strcmp(path, "-") == 0;
	char *abs =
	    stdin_core ? (o->stored_path ? strdup(o->stored_path) : NULL) : realpath(path, NULL);
	cq_capture_init(&cap);
	if (!stdin_core)
		cq_capture_from_file(path, &cap);
	if (o->capture_override)
		cap = *o->capture_override;
	/* A one-stream core of a build whose analysis read its heap before is kept whole. */
	struct cq_core_options co = o->core ? *o->core : (struct cq_core_options){0};
	struct cq_stream_hint hint;
	struct cq_analyse_hint harg = {o->core, o->stacks};
	cq_analyse_stream_hint(&harg, &hint);
	if (!co.stream_hint)
		co.stream_hint = &hint;
	struct cq_error *err = cq_core_open(path, &co, &core);
	if (!err) {
		if (o->opened)
			o->opened(o->opened_arg, path, core);
		cq_capture_reconcile(core, &cap);
		cq_store_identity(core, identity);
		err = cq_store_find_core(store, identity, &out->store.core_id);
	}
	struct cq_bucket_namer *namer = NULL;
	if (!err)
		err = cq_bucket_namer_create(core, &namer);
	bool duplicate = !err && out->store.core_id;
	if (!err && !duplicate && !(err = cq_core_stacks(core, o->stacks, &stacks)))
		err =
		    cq_bucket_signature(o->rules, namer, &stacks->threads[0], cq_core_signal(core),
		                        o->signature_frames, &out->signature);
	struct cq_waits *waits = NULL;
	if (!err && !duplicate)
		err = cq_waits_find(core, stacks, &waits);
	if (!err && !duplicate)
		cq_analyse_note_heap_read(o->stacks ? o->stacks->cache : NULL, core);
	/*
	 * A process killed from outside (a watchdog's signal, or none: a
	 * snapshot, gcore)
	 * while its threads wait on locks buckets by why it hung.  The sender
	 * is what the signal claims (cq_core_sender_claimed): a process that
	 * queues itself a watchdog's SIGABRT moves only its own core, which its
	 * own code shapes anyway, into a hang bucket.
	 */
	if (!err && waits && cq_core_stopped_from_outside(core)) {
		bool made;
		err = cq_bucket_wait_signature(o->rules, namer, stacks, waits, &out->signature,
		                               &made);
	}
	/* A Go runtime that died of a signal it was sent, not of a panic (go_hang.h). */
	if (!err && !duplicate && cq_bucket_go_signalled(&stacks->threads[0]))
		err = cq_bucket_go_hang_signature(o->rules, namer, stacks, &out->signature);
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
	struct cq_store_meta meta = {.capture = &cap,
	                             .stored_path = abs,
	                             .signature = &out->signature,
	                             .namer = namer,
	                             .waits = waits};
	if (!err) {
		/* A duplicate drops a placeholder the hook left for this copy, if any. */
		err = cq_store_ingest(store, core, identity, duplicate ? NULL : stacks, &meta,
		                      &out->store);
		if (duplicate)
			out->store.duplicate = true;
	}
	if (err && abs)
		out->record_error =
		    cq_store_placeholder_failed(store, abs, err->message, false, &out->failed_row);
	free(abs);
	cq_bucket_namer_destroy(namer);
	cq_waits_free(waits);
	cq_stacks_free(stacks);
	cq_core_close(core);
	return err;
}

void cq_ingest_result_free(struct cq_ingest_result *r)
{
	cq_bucket_signature_free(&r->signature);
	cq_error_free(r->record_error);
	r->record_error = NULL;
}
