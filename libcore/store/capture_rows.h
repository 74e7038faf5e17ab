/*
 * capture_rows.h - the database's record of how cores arrived: placeholder
 * rows for cores the hook has stored but not (yet) analysed, and the files
 * a directory ingest has already looked at.
 *
 * A placeholder has identity "stored:<path>", the outside metadata of the
 * crash, crashed_tid 0, nthreads 0 and no threads; its status is "pending"
 * (stored, analysis running or interrupted), "failed" (message says why) or
 * "not_stored" (RLIMIT_CORE was 0).  cq_store_ingest of the stored file
 * replaces it under the same id.
 */
#ifndef CQ_STORE_CAPTURE_H
#define CQ_STORE_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "libcore/base/error.h"

struct cq_store;
struct cq_capture;

/*
 * Inserts (or updates) the placeholder for stored_path: size bytes on disk,
 * status and message as above.  *id is its row id.
 */
struct cq_error *cq_store_placeholder(struct cq_store *store, const struct cq_capture *cap,
                                      const char *stored_path, uint64_t size, const char *status,
                                      const char *message, int64_t *id);

/*
 * Marks the placeholder of stored_path "failed" with message, if there is
 * one (*id = its id, else 0).  A pending or failed placeholder only: a core
 * analysed since is left alone.  keep_reason keeps the message of a
 * placeholder already marked failed (a more precise reason).
 */
struct cq_error *cq_store_placeholder_failed(struct cq_store *store, const char *stored_path,
                                             const char *message, bool keep_reason, int64_t *id);

/*
 * *seen: path was looked at before with this size and mtime.  *unfinished:
 * that analysis started and never recorded an outcome (the process was
 * killed, or hung and was stopped): such a file is not retried forever.
 */
struct cq_error *cq_store_file_seen(struct cq_store *store, const char *path, int64_t size,
                                    int64_t mtime_ns, bool *seen, bool *unfinished);

/*
 * Records what became of path: status "started" (before its analysis, so a
 * core that kills or hangs the analysis cannot block the files after it),
 * "ingested", "duplicate" or "failed".
 */
struct cq_error *cq_store_file_record(struct cq_store *store, const char *path, int64_t size,
                                      int64_t mtime_ns, int64_t core_id, const char *status,
                                      const char *message);

/* What the database says of a core the hook stored at stored_path. */
struct cq_store_outcome {
	int64_t core_id; /* 0: no row (the core was a duplicate of one stored before) */
	char status[16];
	char message[256];
	char bucket[32];
	char signature[256];
};

/* The newest row for stored_path (its own, or its placeholder); *o zeroed if none. */
struct cq_error *cq_store_stored_outcome(struct cq_store *store, const char *stored_path,
                                         struct cq_store_outcome *o);

#endif
