/*
 * capture_rows.c - placeholder rows for cores the hook stored, what became
 * of them, and the directory ingest's memory of files it has seen (see
 * capture_rows.h).
 * Each call is one statement, so each is its own transaction.
 *
 * Invariants (asserted): every statement is prepared before it is stepped,
 * and the placeholder binds every parameter its statement names.
 */
#include "libcore/store/capture_rows.h"

#include <assert.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "libcore/capture/capture.h"
#include "libcore/db/bind.h"
#include "libcore/model/core.h"
#include "libcore/store/store.h"
#include "libcore/store/store_db.h"

static struct cq_error *db_fail(sqlite3 *db, sqlite3_stmt *st, const char *what)
{
	struct cq_error *err = cq_error_create(CQ_ERR_DB, "%s: %s", what, sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return err;
}

static struct cq_error *prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
	if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK)
		return db_fail(db, NULL, "prepare");
	return NULL;
}

/*
 * Steps st once and finalizes it.  *found says whether it gave a row, and
 * *value is that row's first column (both may be NULL).
 */
static struct cq_error *step_once(sqlite3 *db, sqlite3_stmt *st, const char *what, bool *found,
                                  int64_t *value)
{
	assert(db && st && what);
	int rc = sqlite3_step(st);
	if (found)
		*found = rc == SQLITE_ROW;
	if (value)
		*value = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return db_fail(db, st, what);
	sqlite3_finalize(st);
	return NULL;
}

/* Prepares sql with path bound to ?1. */
static struct cq_error *prepare_path(sqlite3 *db, const char *sql, const char *path,
                                     sqlite3_stmt **st)
{
	struct cq_error *err = prepare(db, sql, st);
	if (!err)
		sqlite3_bind_text(*st, 1, path, -1, SQLITE_TRANSIENT);
	return err;
}

static void bind_opt_int(sqlite3_stmt *st, int i, const struct cq_capture *cap, unsigned bit,
                         int64_t v)
{
	cq_db_bind_int_if(st, i, cap->known & bit, v);
}

/* Capture text fields use "" for unknown. */
static void bind_opt_text(sqlite3_stmt *st, int i, const char *s)
{
	cq_db_bind_text(st, i, cq_db_text_or_null(s));
}

struct cq_error *cq_store_placeholder(struct cq_store *store, const struct cq_capture *cap,
                                      const char *stored_path, uint64_t size, const char *status,
                                      const char *message, int64_t *id)
{
	static const char sql[] =
	    "INSERT INTO cores (identity, path, size, pid, exe, uid, gid, signal, crashed_tid, "
	    "nthreads, timestamp, hostname, ingested_at, status, message, comm, boot_id, rlimit, "
	    "source, stored_path, signal_name) VALUES ('stored:' || ?1, ?1, ?2, ?3, ?4, ?5, ?6, "
	    "?7, 0, 0, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?1, ?17) "
	    "ON CONFLICT (identity) DO UPDATE SET status = excluded.status, "
	    "message = excluded.message RETURNING id";
	assert(store && cap && stored_path && status && id);
	sqlite3 *db = cq_store_db(store);
	sqlite3_stmt *st;
	struct cq_error *err = prepare_path(db, sql, stored_path, &st);
	if (err)
		return err;
	assert(sqlite3_bind_parameter_count(st) == 17);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)size);
	bind_opt_int(st, 3, cap, CQ_CAPTURE_PID, cap->pid);
	bind_opt_text(st, 4, cap->exe);
	bind_opt_int(st, 5, cap, CQ_CAPTURE_UID, cap->uid);
	bind_opt_int(st, 6, cap, CQ_CAPTURE_GID, cap->gid);
	bind_opt_int(st, 7, cap, CQ_CAPTURE_SIGNAL, cap->signal);
	bind_opt_int(st, 8, cap, CQ_CAPTURE_TIMESTAMP, cap->timestamp_us / 1000000);
	bind_opt_text(st, 9, cap->hostname);
	sqlite3_bind_int64(st, 10, (sqlite3_int64)time(NULL));
	sqlite3_bind_text(st, 11, status, -1, SQLITE_TRANSIENT);
	bind_opt_text(st, 12, message);
	bind_opt_text(st, 13, cap->comm);
	bind_opt_text(st, 14, cap->boot_id);
	bind_opt_int(st, 15, cap, CQ_CAPTURE_RLIMIT, cap->rlimit);
	bind_opt_text(st, 16, cap->source);
	bind_opt_text(
	    st, 17, cap->known & CQ_CAPTURE_SIGNAL ? cq_core_signal_name((int)cap->signal) : NULL);
	bool found;
	if ((err = step_once(db, st, "store placeholder", &found, id)))
		return err;
	return found ? NULL : cq_error_create(CQ_ERR_DB, "store placeholder: no row");
}

struct cq_error *cq_store_placeholder_failed(struct cq_store *store, const char *stored_path,
                                             const char *message, bool keep_reason, int64_t *id)
{
	static const char sql[] =
	    "UPDATE cores SET status = 'failed', message = CASE WHEN ?3 AND status = 'failed' "
	    "THEN message ELSE ?2 END WHERE identity = 'stored:' || ?1 AND status IN ('pending', "
	    "'failed') RETURNING id";
	sqlite3 *db = cq_store_db(store);
	sqlite3_stmt *st;
	struct cq_error *err = prepare_path(db, sql, stored_path, &st);
	if (err)
		return err;
	sqlite3_bind_text(st, 2, message, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int(st, 3, keep_reason);
	return step_once(db, st, "record failure", NULL, id);
}

/* Prepares sql with a file's (path, size, mtime_ns) bound to ?1..?3. */
static struct cq_error *prepare_file(sqlite3 *db, const char *sql, const char *path, int64_t size,
                                     int64_t mtime_ns, sqlite3_stmt **st)
{
	struct cq_error *err = prepare_path(db, sql, path, st);
	if (err)
		return err;
	sqlite3_bind_int64(*st, 2, size);
	sqlite3_bind_int64(*st, 3, mtime_ns);
	return NULL;
}

struct cq_error *cq_store_file_seen(struct cq_store *store, const char *path, int64_t size,
                                    int64_t mtime_ns, bool *seen, bool *unfinished)
{
	static const char sql[] = "SELECT status = 'started' FROM seen_files "
	                          "WHERE path = ? AND size = ? AND mtime_ns = ?";
	sqlite3 *db = cq_store_db(store);
	sqlite3_stmt *st;
	struct cq_error *err = prepare_file(db, sql, path, size, mtime_ns, &st);
	if (err)
		return err;
	int64_t started = 0;
	err = step_once(db, st, "lookup", seen, &started);
	*unfinished = started != 0;
	return err;
}

struct cq_error *cq_store_file_record(struct cq_store *store, const char *path, int64_t size,
                                      int64_t mtime_ns, int64_t core_id, const char *status,
                                      const char *message)
{
	static const char sql[] = "INSERT OR REPLACE INTO seen_files (path, size, mtime_ns, "
	                          "core_id, status, message, seen_at) VALUES (?, ?, ?, ?, ?, ?, ?)";
	assert(store && path && status);
	sqlite3 *db = cq_store_db(store);
	sqlite3_stmt *st;
	struct cq_error *err = prepare_file(db, sql, path, size, mtime_ns, &st);
	if (err)
		return err;
	assert(sqlite3_bind_parameter_count(st) == 7);
	if (core_id)
		sqlite3_bind_int64(st, 4, core_id);
	else
		sqlite3_bind_null(st, 4);
	sqlite3_bind_text(st, 5, status, -1, SQLITE_TRANSIENT);
	bind_opt_text(st, 6, message);
	sqlite3_bind_int64(st, 7, (sqlite3_int64)time(NULL));
	return step_once(db, st, "record file", NULL, NULL);
}

struct cq_error *cq_store_stored_outcome(struct cq_store *store, const char *stored_path,
                                         struct cq_store_outcome *o)
{
	static const char sql[] =
	    "SELECT c.id, c.status, c.message, b.hash, b.signature FROM cores c "
	    "LEFT JOIN buckets b ON b.id = c.bucket_id "
	    "WHERE c.stored_path = ?1 OR c.identity = 'stored:' || ?1 ORDER BY c.id DESC LIMIT 1";
	memset(o, 0, sizeof(*o));
	sqlite3 *db = cq_store_db(store);
	sqlite3_stmt *st;
	struct cq_error *err = prepare_path(db, sql, stored_path, &st);
	if (err)
		return err;
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		o->core_id = sqlite3_column_int64(st, 0);
		const char *cols[] = {(const char *)sqlite3_column_text(st, 1),
		                      (const char *)sqlite3_column_text(st, 2),
		                      (const char *)sqlite3_column_text(st, 3),
		                      (const char *)sqlite3_column_text(st, 4)};
		snprintf(o->status, sizeof(o->status), "%s", cols[0] ? cols[0] : "");
		snprintf(o->message, sizeof(o->message), "%s", cols[1] ? cols[1] : "");
		snprintf(o->bucket, sizeof(o->bucket), "%s", cols[2] ? cols[2] : "");
		snprintf(o->signature, sizeof(o->signature), "%s", cols[3] ? cols[3] : "");
	} else if (rc != SQLITE_DONE) {
		return db_fail(db, st, "read the stored core's row");
	}
	sqlite3_finalize(st);
	return NULL;
}
