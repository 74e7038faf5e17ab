/*
 * export.c - the crash database as NDJSON records (see export.h).
 *
 * The selected cores go into a temporary table first; each record type is
 * then one query joined to it, all inside one read transaction, so the
 * records of one export are consistent with each other.
 */
#include "libcore/store/export.h"

#include <sqlite3.h>
#include <string.h>

#include "libcore/base/build_id.h"
#include "libcore/base/json.h"
#include "libcore/db/db_error.h"
#include "libcore/model/si_code.h"
#include "libcore/store/sender_claimed.h"
#include "libcore/store/store_db.h"

static const char select_cores[] =
    "CREATE TEMP TABLE IF NOT EXISTS export_cores (id INTEGER PRIMARY KEY);"
    "DELETE FROM temp.export_cores;";

static const char insert_cores[] =
    "INSERT INTO temp.export_cores SELECT id FROM cores WHERE id > ?1 "
    "AND (?4 = 0 OR id <= ?4) "
    "AND coalesce(timestamp, ingested_at) >= ?2 AND status IN ('ok', 'partial') "
    "ORDER BY id LIMIT ?3";

static const char core_rows[] =
    "SELECT c.id, c.identity, c.hostname, c.boot_id, c.exe, c.cmdline, c.comm, c.pid, c.uid, "
    "c.gid, c.signal, c.signal_name, c.si_code, c.fault_address, c.crashed_tid, c.nthreads, "
    "coalesce(c.timestamp, c.ingested_at), c.timestamp IS NOT NULL, c.ingested_at, c.status, "
    "b.hash, c.source, c.size, c.sender_pid, c.sender_uid, " CQ_SENDER_CLAIMED_SQL
    ", c.time_source, c.snapshot, c.crash_message FROM cores c JOIN temp.export_cores e ON e.id = "
    "c.id "
    "LEFT JOIN buckets b ON b.id = c.bucket_id ORDER BY c.id";

static const char thread_rows[] =
    "SELECT c.identity, coalesce(c.timestamp, c.ingested_at), u.kind, u.idx, u.tid, u.name, "
    "u.crashed, s.hash, u.end FROM ("
    " SELECT core_id, 'thread' AS kind, idx, tid, name, crashed, stack_id, end FROM threads"
    " UNION ALL SELECT core_id, kind, idx, NULL, NULL, 0, stack_id, end FROM suspended) u "
    "JOIN temp.export_cores e ON e.id = u.core_id JOIN cores c ON c.id = u.core_id "
    "JOIN stacks s ON s.id = u.stack_id ORDER BY u.core_id, u.kind, u.idx";

static const char stack_rows[] =
    "SELECT s.id, s.hash, s.nframes FROM stacks s WHERE s.id IN ("
    " SELECT stack_id FROM threads WHERE core_id IN (SELECT id FROM temp.export_cores)"
    " UNION SELECT stack_id FROM suspended WHERE core_id IN (SELECT id FROM temp.export_cores))"
    " ORDER BY s.id";

static const char frame_rows[] =
    "SELECT m.build_id, f.offset, f.kind, f.trust, f.function, f.file, f.line "
    "FROM frames f LEFT JOIN modules m ON m.id = f.module_id WHERE f.stack_id = ? ORDER BY f.idx";

static const char bucket_rows[] =
    "SELECT b.hash, b.signature, b.rules_version, min(coalesce(c.timestamp, c.ingested_at)) "
    "FROM buckets b JOIN cores c ON c.bucket_id = b.id "
    "JOIN temp.export_cores e ON e.id = c.id GROUP BY b.id ORDER BY b.id";

/*
 * One row per thread blocked on a lock (migrations 011, 013; read-only opens
 * need the latest schema).  A row stored before 013 on a cycle has no
 * verdict: its cycle was called a deadlock then.
 */
static const char wait_rows[] =
    "SELECT c.identity, coalesce(c.timestamp, c.ingested_at), w.idx, w.tid, w.kind, w.write, "
    "w.object, w.futex, w.function, w.owner, w.owner_tid, w.count, w.deadlock, "
    "CASE WHEN w.deadlock IS NULL THEN 'waits' ELSE coalesce(w.verdict, 'deadlock') END, "
    "w.owner_confirmed_by "
    "FROM waits w JOIN temp.export_cores e ON e.id = w.core_id JOIN cores c ON c.id = w.core_id "
    "ORDER BY w.core_id, w.idx";

static void put_text(struct cq_json *j, const char *key, sqlite3_stmt *st, int col)
{
	cq_json_key(j, key);
	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		cq_json_null(j);
	else
		cq_json_string(j, (const char *)sqlite3_column_text(st, col));
}

static void put_int(struct cq_json *j, const char *key, sqlite3_stmt *st, int col)
{
	cq_json_key(j, key);
	if (sqlite3_column_type(st, col) == SQLITE_NULL)
		cq_json_null(j);
	else
		cq_json_int(j, sqlite3_column_int64(st, col));
}

/* The kernel's name for the si_code in column code of the signal in column sig, or NULL. */
static const char *si_code_name(sqlite3_stmt *st, int sig, int code)
{
	if (sqlite3_column_type(st, sig) == SQLITE_NULL ||
	    sqlite3_column_type(st, code) == SQLITE_NULL)
		return NULL;
	const struct cq_si_code *what =
	    cq_si_code_find(sqlite3_column_int64(st, sig), sqlite3_column_int64(st, code));
	return what ? what->name : NULL;
}

static void put_type(struct cq_json *j, FILE *out, const char *type)
{
	cq_json_init(j, out);
	cq_json_object_begin(j);
	cq_json_key(j, "type");
	cq_json_string(j, type);
}

static void end_record(struct cq_json *j)
{
	cq_json_object_end(j);
	cq_json_finish(j);
}

static struct cq_error *prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
	return sqlite3_prepare_v2(db, sql, -1, st, NULL) == SQLITE_OK ? NULL
	                                                              : cq_db_error(db, "export");
}

static struct cq_error *step_error(sqlite3 *db, int rc)
{
	return rc == SQLITE_DONE ? NULL : cq_db_error(db, "export");
}

static struct cq_error *export_cores(sqlite3 *db, const struct cq_export_options *o, FILE *out,
                                     struct cq_export_result *r)
{
	sqlite3_stmt *st;
	struct cq_error *err = prepare(db, core_rows, &st);
	int rc;
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		if (id > r->last_id)
			r->last_id = id;
		if (!(o->types & CQ_EXPORT_CORES))
			continue;
		struct cq_json j;
		put_type(&j, out, "core");
		put_text(&j, "identity", st, 1);
		cq_json_key(&j, "host");
		if (sqlite3_column_type(st, 2) != SQLITE_NULL)
			cq_json_string(&j, (const char *)sqlite3_column_text(st, 2));
		else
			cq_json_string(&j, o->host ? o->host : "");
		cq_json_key(&j, "machine_id");
		cq_json_string(&j, o->machine_id);
		put_text(&j, "boot_id", st, 3);
		cq_json_key(&j, "coreq_version");
		cq_json_string(&j, COREQ_VERSION);
		cq_json_key(&j, "local_id");
		cq_json_int(&j, id);
		static const char *const texts[] = {"exe", "cmdline", "comm"};
		for (int i = 0; i < 3; i++)
			put_text(&j, texts[i], st, 4 + i);
		static const char *const ints[] = {"pid", "uid", "gid", "signal"};
		for (int i = 0; i < 4; i++)
			put_int(&j, ints[i], st, 7 + i);
		put_text(&j, "signal_name", st, 11);
		put_int(&j, "si_code", st, 12);
		cq_json_key(&j, "si_code_name");
		cq_json_string(&j, si_code_name(st, 10, 12));
		put_int(&j, "sender_pid", st, 23);
		put_int(&j, "sender_uid", st, 24);
		put_int(&j, "sender_claimed", st, 25);
		put_int(&j, "fault_address", st, 13);
		put_int(&j, "crashed_tid", st, 14);
		put_int(&j, "nthreads", st, 15);
		put_int(&j, "crash_time", st, 16);
		cq_json_key(&j, "time_source");
		/* 'file': the core file's modification time (schema/012_time_source.sql). */
		const char *ts = (const char *)sqlite3_column_text(st, 26);
		cq_json_string(&j, ts ? ts : sqlite3_column_int(st, 17) ? "capture" : "ingest");
		put_int(&j, "ingested_at", st, 18);
		put_text(&j, "status", st, 19);
		put_text(&j, "bucket", st, 20);
		put_text(&j, "source", st, 21);
		put_int(&j, "size", st, 22);
		/* A snapshot of a live process (014_snapshot.sql): its crashed_tid is 0. */
		put_text(&j, "snapshot", st, 27);
		/* What the runtime said the crash was (016_crash_message.sql), bounded. */
		put_text(&j, "crash_message", st, 28);
		end_record(&j);
		r->cores++;
	}
	if (!err)
		err = step_error(db, rc);
	sqlite3_finalize(st);
	return err;
}

/*
 * The records of one query whose rows need no other query: put_row writes
 * the fields of one row after its type; *count counts the records.
 */
static struct cq_error *export_rows(sqlite3 *db, FILE *out, const char *sql, const char *type,
                                    void (*put_row)(struct cq_json *, sqlite3_stmt *),
                                    int64_t *count)
{
	sqlite3_stmt *st;
	struct cq_error *err = prepare(db, sql, &st);
	int rc;
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct cq_json j;
		put_type(&j, out, type);
		put_row(&j, st);
		end_record(&j);
		(*count)++;
	}
	if (!err)
		err = step_error(db, rc);
	sqlite3_finalize(st);
	return err;
}

static void put_thread(struct cq_json *j, sqlite3_stmt *st)
{
	put_text(j, "core", st, 0);
	put_int(j, "crash_time", st, 1);
	put_text(j, "kind", st, 2);
	put_int(j, "idx", st, 3);
	put_int(j, "tid", st, 4);
	put_text(j, "name", st, 5);
	cq_json_key(j, "crashed");
	cq_json_int(j, sqlite3_column_int(st, 6) != 0);
	put_text(j, "stack", st, 7);
	put_text(j, "end", st, 8);
}

/*
 * A stored module key as exported: a valid build-id or a "path:" key (a
 * module without one) as it is, anything else (a handed-over database's
 * "../x") as "", like a frame outside any module.
 */
static bool exportable_module_key(const char *key)
{
	return key && (cq_build_id_hex_valid(key) || strncmp(key, "path:", 5) == 0);
}

/* One array of a stack's frames: column col of every frame row. */
static struct cq_error *frame_array(sqlite3 *db, sqlite3_stmt *fr, struct cq_json *j,
                                    const char *key, int col, bool hex)
{
	cq_json_key(j, key);
	cq_json_array_begin(j);
	int rc;
	while ((rc = sqlite3_step(fr)) == SQLITE_ROW) {
		if (sqlite3_column_type(fr, col) == SQLITE_NULL ||
		    (hex && !exportable_module_key((const char *)sqlite3_column_text(fr, col))))
			hex ? cq_json_string(j, "") : cq_json_null(j);
		else if (col == 1 || col == 6)
			cq_json_int(j, sqlite3_column_int64(fr, col));
		else
			cq_json_string(j, (const char *)sqlite3_column_text(fr, col));
	}
	cq_json_array_end(j);
	sqlite3_reset(fr);
	return step_error(db, rc);
}

static struct cq_error *export_stacks(sqlite3 *db, FILE *out, struct cq_export_result *r)
{
	sqlite3_stmt *st, *fr = NULL;
	struct cq_error *err = prepare(db, stack_rows, &st);
	if (!err && (err = prepare(db, frame_rows, &fr)))
		sqlite3_finalize(st);
	if (err)
		return err;
	static const char *const arrays[] = {"build_ids", "offsets", "kinds", "trusts",
	                                     "functions", "files",   "lines"};
	int rc;
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct cq_json j;
		put_type(&j, out, "stack");
		put_text(&j, "hash", st, 1);
		put_int(&j, "nframes", st, 2);
		sqlite3_bind_int64(fr, 1, sqlite3_column_int64(st, 0));
		/* Parallel arrays, innermost frame first: what ClickHouse's Array columns load. */
		for (int a = 0; a < 7 && !err; a++)
			err = frame_array(db, fr, &j, arrays[a], a, a == 0);
		end_record(&j);
		r->stacks++;
	}
	if (!err)
		err = step_error(db, rc);
	sqlite3_finalize(fr);
	sqlite3_finalize(st);
	return err;
}

static void put_bucket(struct cq_json *j, sqlite3_stmt *st)
{
	put_text(j, "hash", st, 0);
	put_text(j, "signature", st, 1);
	put_text(j, "rules_version", st, 2);
	put_int(j, "first_seen", st, 3);
}

static void put_wait(struct cq_json *j, sqlite3_stmt *st)
{
	put_text(j, "core", st, 0);
	put_int(j, "crash_time", st, 1);
	put_int(j, "idx", st, 2);
	put_int(j, "tid", st, 3);
	put_text(j, "kind", st, 4);
	cq_json_key(j, "write");
	cq_json_int(j, sqlite3_column_int(st, 5) != 0);
	put_int(j, "object", st, 6);
	put_int(j, "futex", st, 7);
	put_text(j, "function", st, 8);
	put_text(j, "owner", st, 9);
	put_int(j, "owner_tid", st, 10);
	put_int(j, "count", st, 11);
	put_int(j, "deadlock", st, 12);
	put_text(j, "verdict", st, 13);
	put_text(j, "owner_confirmed_by", st, 14);
}

struct cq_error *cq_store_export_window(struct cq_store *store, int64_t after_id, int64_t limit,
                                        int64_t *until_id)
{
	sqlite3 *db = cq_store_db(store);
	sqlite3_stmt *st;
	*until_id = after_id;
	struct cq_error *err =
	    prepare(db,
	            "SELECT max(id) FROM (SELECT id FROM cores WHERE id > ?1 AND status IN "
	            "('ok', 'partial') ORDER BY id LIMIT ?2)",
	            &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, after_id);
	sqlite3_bind_int64(st, 2, limit > 0 ? limit : -1);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		*until_id = sqlite3_column_int64(st, 0);
	err = rc == SQLITE_ROW ? NULL : cq_db_error(db, "export");
	sqlite3_finalize(st);
	return err;
}

struct cq_error *cq_store_export(struct cq_store *store, const struct cq_export_options *o,
                                 FILE *out, struct cq_export_result *r)
{
	memset(r, 0, sizeof(*r));
	r->last_id = o->after_id;
	sqlite3 *db = cq_store_db(store);
	unsigned types = o->types ? o->types : CQ_EXPORT_ALL;
	struct cq_export_options opts = *o;
	opts.types = types;
	if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return cq_db_error(db, "export");
	struct cq_error *err = NULL;
	sqlite3_stmt *st = NULL;
	if (sqlite3_exec(db, select_cores, NULL, NULL, NULL) != SQLITE_OK)
		err = cq_db_error(db, "export");
	if (!err && !(err = prepare(db, insert_cores, &st))) {
		sqlite3_bind_int64(st, 1, o->after_id);
		sqlite3_bind_int64(st, 2, o->since);
		sqlite3_bind_int64(st, 3, o->limit > 0 ? o->limit : -1);
		sqlite3_bind_int64(st, 4, o->until_id);
		err = step_error(db, sqlite3_step(st));
		sqlite3_finalize(st);
	}
	if (!err)
		err = export_cores(db, &opts, out, r);
	if (!err && (types & CQ_EXPORT_THREADS))
		err = export_rows(db, out, thread_rows, "thread", put_thread, &r->threads);
	if (!err && (types & CQ_EXPORT_STACKS))
		err = export_stacks(db, out, r);
	if (!err && (types & CQ_EXPORT_BUCKETS))
		err = export_rows(db, out, bucket_rows, "bucket", put_bucket, &r->buckets);
	if (!err && (types & CQ_EXPORT_WAITS))
		err = export_rows(db, out, wait_rows, "wait", put_wait, &r->waits);
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	if (!err && (fflush(out) != 0 || ferror(out)))
		err = cq_error_create(CQ_ERR_IO, "cannot write the records");
	return err;
}
