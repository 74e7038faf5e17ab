/*
 * merge.c - folding crash databases into one (see merge.h).
 *
 * Each source is attached (as srcN; it is only read); temporary tables map its row
 * ids to the target's (modules by build-id, stacks and buckets by hash, cores
 * by identity) and plain INSERT ... SELECT statements copy what is new.  The
 * stack blobs (stacks.frames_blob) hold module ids, so new stacks get theirs
 * encoded again from their frames with the target's ids.
 *
 * Invariants (asserted): the sources are attached outside any transaction
 * (SQLite refuses ATTACH inside one), and merged inside the one that makes
 * the merge all or nothing.
 */
#include "libcore/store/merge.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unwind/frames.h"
#include "libcore/base/build_id.h"
#include "libcore/db/guard.h"
#include "libcore/db/db_error.h"
#include "libcore/db/schema.h"
#include "libcore/formats/stack_blob.h"
#include "libcore/store/sender_claimed.h"
#include "libcore/store/stack_hash.h"
#include "libcore/store/store_db.h"
#include "libcore/triage/bucket.h"

/*
 * What would be copied: analysed cores the target does not hold, the stacks
 * and buckets of theirs it does not hold either (by hash); the checks then
 * fill the *_bad tables (merge_check below).
 */
static const char select_sql[] =
    "CREATE TEMP TABLE m_map AS SELECT 0 AS src, 0 AS dst WHERE 0;"
    "CREATE TEMP TABLE s_new AS SELECT 0 AS src WHERE 0;"
    "CREATE TEMP TABLE s_map AS SELECT 0 AS src, 0 AS dst WHERE 0;"
    "CREATE TEMP TABLE b_map AS SELECT 0 AS src, 0 AS dst WHERE 0;"
    "CREATE TEMP TABLE c_new AS SELECT 0 AS src WHERE 0;"
    "CREATE TEMP TABLE c_map AS SELECT 0 AS src, 0 AS dst WHERE 0;"
    "CREATE TEMP TABLE m_bad AS SELECT 0 AS src WHERE 0;"
    "CREATE TEMP TABLE s_bad AS SELECT 0 AS src WHERE 0;"
    "CREATE TEMP TABLE b_bad AS SELECT 0 AS src WHERE 0;"
    "INSERT INTO c_new SELECT id FROM src.cores WHERE status IN ('ok', 'partial') "
    " AND identity NOT IN (SELECT identity FROM main.cores);"
    "INSERT INTO s_new SELECT id FROM src.stacks WHERE hash NOT IN (SELECT hash FROM main.stacks)"
    " AND id IN (SELECT stack_id FROM src.threads WHERE core_id IN (SELECT src FROM c_new)"
    "  UNION SELECT stack_id FROM src.suspended WHERE core_id IN (SELECT src FROM c_new));";

/* Cores that would bring a refused stack, bucket or module are not copied. */
static const char refuse_sql[] =
    "DELETE FROM c_new WHERE src IN ("
    " SELECT core_id FROM src.threads WHERE stack_id IN (SELECT src FROM s_bad)"
    " UNION SELECT core_id FROM src.suspended WHERE stack_id IN (SELECT src FROM s_bad)"
    " UNION SELECT id FROM src.cores WHERE bucket_id IN (SELECT src FROM b_bad)"
    " UNION SELECT core_id FROM src.core_modules WHERE module_id IN (SELECT src FROM m_bad));"
    "DELETE FROM s_new WHERE src NOT IN (SELECT stack_id FROM src.threads WHERE core_id IN "
    " (SELECT src FROM c_new) UNION SELECT stack_id FROM src.suspended WHERE core_id IN "
    " (SELECT src FROM c_new));";

static const char copy_sql[] =
    /* Modules by build-id. */
    "INSERT OR IGNORE INTO main.modules (build_id, path) SELECT build_id, path FROM src.modules "
    " WHERE id NOT IN (SELECT src FROM m_bad);"
    "INSERT INTO m_map SELECT s.id, d.id FROM src.modules s JOIN main.modules d "
    " ON d.build_id = s.build_id;"
    /* Stacks by hash, with their frames. */
    "INSERT INTO main.stacks (hash, nframes, frames_blob) SELECT hash, nframes, NULL "
    " FROM src.stacks WHERE id IN (SELECT src FROM s_new);"
    "INSERT INTO s_map SELECT s.id, d.id FROM src.stacks s JOIN main.stacks d ON d.hash = s.hash;"
    "INSERT INTO main.frames (stack_id, idx, module_id, offset, kind, trust, function, file, "
    " line, state, sig_name) SELECT sm.dst, f.idx, mm.dst, f.offset, f.kind, f.trust, "
    " f.function, f.file, f.line, f.state, f.sig_name FROM src.frames f "
    " JOIN s_map sm ON sm.src = f.stack_id LEFT JOIN m_map mm ON mm.src = f.module_id "
    " WHERE f.stack_id IN (SELECT src FROM s_new);"
    /* Buckets by hash; their counts are recomputed below. */
    "INSERT OR IGNORE INTO main.buckets (hash, signature, count, first_seen, last_seen, "
    " example_core, rules_version) SELECT hash, signature, 0, first_seen, last_seen, NULL, "
    " rules_version FROM src.buckets WHERE id IN (SELECT bucket_id FROM src.cores "
    "  WHERE id IN (SELECT src FROM c_new));"
    "INSERT INTO b_map SELECT s.id, d.id FROM src.buckets s JOIN main.buckets d ON d.hash = s.hash;"
    /* The cores and what hangs off them. */
    "INSERT INTO main.cores (identity, path, size, pid, exe, cmdline, uid, gid, signal, "
    " signal_name, si_code, fault_address, crashed_tid, nthreads, timestamp, hostname, "
    " ingested_at, status, message, bucket_id, comm, boot_id, rlimit, source, stored_path, "
    " meta_conflicts, sender_pid, sender_uid, time_source, snapshot, sender_claimed, "
    " crash_message) SELECT "
    "c.identity, c.path, c.size, "
    "c.pid, c.exe, "
    " c.cmdline, c.uid, c.gid, c.signal, c.signal_name, c.si_code, c.fault_address, "
    " c.crashed_tid, c.nthreads, c.timestamp, c.hostname, c.ingested_at, c.status, c.message, "
    " bm.dst, c.comm, c.boot_id, c.rlimit, c.source, c.stored_path, c.meta_conflicts, "
    " c.sender_pid, c.sender_uid, c.time_source, c.snapshot, " CQ_SENDER_CLAIMED_SQL
    ", c.crash_message FROM src.cores c "
    " LEFT JOIN b_map bm ON bm.src = c.bucket_id WHERE c.id IN (SELECT src FROM c_new) "
    " ORDER BY c.id;"
    "INSERT INTO c_map SELECT s.id, d.id FROM src.cores s JOIN main.cores d "
    " ON d.identity = s.identity WHERE s.id IN (SELECT src FROM c_new);"
    "INSERT INTO main.core_modules (core_id, module_id, path, start, end, status, deleted) "
    " SELECT cm.dst, mm.dst, x.path, x.start, x.end, x.status, x.deleted "
    " FROM src.core_modules x JOIN c_map cm ON cm.src = x.core_id "
    " JOIN m_map mm ON mm.src = x.module_id;"
    "INSERT INTO main.threads (core_id, tid, idx, name, crashed, stack_id, end) "
    " SELECT cm.dst, t.tid, t.idx, t.name, t.crashed, sm.dst, t.end FROM src.threads t "
    " JOIN c_map cm ON cm.src = t.core_id JOIN s_map sm ON sm.src = t.stack_id;"
    "INSERT INTO main.suspended (core_id, idx, kind, stack_id, end) "
    " SELECT cm.dst, u.idx, u.kind, sm.dst, u.end FROM src.suspended u "
    " JOIN c_map cm ON cm.src = u.core_id JOIN s_map sm ON sm.src = u.stack_id;"
    "INSERT INTO main.waits (core_id, idx, tid, kind, write, object, futex, function, owner, "
    " owner_tid, count, deadlock, verdict, owner_confirmed_by) "
    " SELECT cm.dst, w.idx, w.tid, w.kind, w.write, w.object, w.futex, w.function, w.owner, "
    " w.owner_tid, w.count, w.deadlock, w.verdict, w.owner_confirmed_by "
    " FROM src.waits w JOIN c_map cm ON cm.src = w.core_id;"
    "UPDATE main.buckets SET "
    " count = (SELECT count(*) FROM main.cores c WHERE c.bucket_id = buckets.id), "
    " first_seen = (SELECT min(coalesce(c.timestamp, c.ingested_at)) FROM main.cores c "
    "  WHERE c.bucket_id = buckets.id), "
    " last_seen = (SELECT max(coalesce(c.timestamp, c.ingested_at)) FROM main.cores c "
    "  WHERE c.bucket_id = buckets.id), "
    " example_core = coalesce(example_core, (SELECT min(c.id) FROM main.cores c "
    "  WHERE c.bucket_id = buckets.id)) "
    " WHERE id IN (SELECT dst FROM b_map);";

static const char drop_sql[] = "DROP TABLE IF EXISTS temp.m_map; DROP TABLE IF EXISTS temp.s_new;"
                               "DROP TABLE IF EXISTS temp.s_map; DROP TABLE IF EXISTS temp.b_map;"
                               "DROP TABLE IF EXISTS temp.c_new; DROP TABLE IF EXISTS temp.c_map;"
                               "DROP TABLE IF EXISTS temp.m_bad; DROP TABLE IF EXISTS temp.s_bad;"
                               "DROP TABLE IF EXISTS temp.b_bad;";

static struct cq_error *exec(sqlite3 *db, const char *sql, const char *what)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? NULL : cq_db_error(db, what);
}

static struct cq_error *count(sqlite3 *db, const char *sql, int64_t *out)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return cq_db_error(db, "merge");
	*out = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_finalize(st);
	return NULL;
}

/* frames_blob for every stack the merge added, from its frames and the target's module ids. */
static struct cq_error *encode_new_blobs(sqlite3 *db)
{
	sqlite3_stmt *stacks, *frames, *put;
	if (sqlite3_prepare_v2(db, "SELECT dst FROM s_map WHERE src IN (SELECT src FROM s_new)", -1,
	                       &stacks, NULL) != SQLITE_OK)
		return cq_db_error(db, "merge");
	if (sqlite3_prepare_v2(db,
	                       "SELECT coalesce(module_id, 0), offset, kind FROM main.frames "
	                       "WHERE stack_id = ? ORDER BY idx",
	                       -1, &frames, NULL) != SQLITE_OK) {
		sqlite3_finalize(stacks);
		return cq_db_error(db, "merge");
	}
	if (sqlite3_prepare_v2(db, "UPDATE main.stacks SET frames_blob = ? WHERE id = ?", -1, &put,
	                       NULL) != SQLITE_OK) {
		sqlite3_finalize(stacks);
		sqlite3_finalize(frames);
		return cq_db_error(db, "merge");
	}
	struct cq_error *err = NULL;
	struct cq_stack_blob_frame *f = NULL;
	size_t cap = 0;
	while (!err && sqlite3_step(stacks) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(stacks, 0);
		size_t n = 0;
		sqlite3_bind_int64(frames, 1, id);
		while (!err && sqlite3_step(frames) == SQLITE_ROW) {
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 64;
				struct cq_stack_blob_frame *g = realloc(f, ncap * sizeof(*f));
				if (!g) {
					err = &cq_error_nomem;
					break;
				}
				f = g;
				cap = ncap;
			}
			const char *kind = (const char *)sqlite3_column_text(frames, 2);
			f[n++] = (struct cq_stack_blob_frame){
			    .module_id = sqlite3_column_int64(frames, 0),
			    .offset = (uint64_t)sqlite3_column_int64(frames, 1),
			    .kind = (uint8_t)(kind && strcmp(kind, "inline") == 0  ? 1
			                      : kind && strcmp(kind, "async") == 0 ? 2
			                                                           : 0)};
		}
		sqlite3_reset(frames);
		uint8_t *blob = NULL;
		size_t len = 0;
		struct cq_error *e = err ? NULL : cq_stack_blob_encode(f, n, &blob, &len);
		if (e == &cq_error_nomem)
			err = e;
		else
			cq_error_free(e); /* a stack the format cannot hold keeps no blob */
		if (!err && blob) {
			sqlite3_bind_blob64(put, 1, blob, len, SQLITE_TRANSIENT);
			sqlite3_bind_int64(put, 2, id);
			if (sqlite3_step(put) != SQLITE_DONE)
				err = cq_db_error(db, "merge: stack blob");
			sqlite3_reset(put);
		}
		free(blob);
	}
	free(f);
	sqlite3_finalize(put);
	sqlite3_finalize(frames);
	sqlite3_finalize(stacks);
	return err;
}

/* sql with every "src." replaced by alias and "." (a malloc'd copy). */
static char *with_alias(const char *sql, const char *alias)
{
	size_t n = 0, alen = strlen(alias);
	for (const char *p = sql; (p = strstr(p, "src.")); p += 4)
		n++;
	char *out = malloc(strlen(sql) + n * alen + 1), *o = out;
	if (!out)
		return NULL;
	for (const char *p = sql;;) {
		const char *hit = strstr(p, "src.");
		size_t run = hit ? (size_t)(hit - p) : strlen(p);
		memcpy(o, p, run);
		o += run;
		if (!hit)
			break;
		memcpy(o, alias, alen);
		o += alen;
		*o++ = '.';
		p = hit + 4;
	}
	*o = '\0';
	return out;
}

/* Runs sql (with "src." meaning alias) and counts what it returns, if count is set. */
static struct cq_error *run_aliased(sqlite3 *db, const char *sql, const char *alias, int64_t *value)
{
	char *q = with_alias(sql, alias);
	if (!q)
		return &cq_error_nomem;
	struct cq_error *err = value ? count(db, q, value) : exec(db, q, "merge");
	free(q);
	return err;
}

/* ---- checks: what a source claims, recomputed ------------------------------- */

/* Whether text is a module key: "path:..." (no build-id) or a build-id (build_id.h). */
static bool module_key_valid(const char *key)
{
	if (!key)
		return false;
	if (strncmp(key, "path:", 5) == 0)
		return true;
	struct cq_error *err = cq_build_id_check(key);
	cq_error_free(err);
	return err == NULL;
}

/* Runs sql (with "src." meaning alias) prepared into *st. */
static struct cq_error *prepare_aliased(sqlite3 *db, const char *sql, const char *alias,
                                        sqlite3_stmt **st)
{
	char *q = with_alias(sql, alias);
	if (!q)
		return &cq_error_nomem;
	int rc = sqlite3_prepare_v2(db, q, -1, st, NULL);
	free(q);
	return rc == SQLITE_OK ? NULL : cq_db_error(db, "merge");
}

/* Inserts id into the temp table of refused rows bad (a prepared INSERT). */
static struct cq_error *refuse(sqlite3 *db, sqlite3_stmt *bad, int64_t id)
{
	sqlite3_bind_int64(bad, 1, id);
	int rc = sqlite3_step(bad);
	sqlite3_reset(bad);
	return rc == SQLITE_DONE ? NULL : cq_db_error(db, "merge");
}

/* Every module of the source whose key is neither a build-id nor "path:...": m_bad. */
static struct cq_error *check_modules(sqlite3 *db, const char *alias)
{
	sqlite3_stmt *st = NULL, *bad = NULL;
	struct cq_error *err =
	    prepare_aliased(db, "SELECT id, build_id FROM src.modules", alias, &st);
	if (!err &&
	    sqlite3_prepare_v2(db, "INSERT INTO m_bad VALUES (?)", -1, &bad, NULL) != SQLITE_OK)
		err = cq_db_error(db, "merge");
	int rc = SQLITE_DONE;
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *key = sqlite3_column_type(st, 1) == SQLITE_TEXT
		                      ? (const char *)sqlite3_column_text(st, 1)
		                      : NULL;
		if (!module_key_valid(key))
			err = refuse(db, bad, sqlite3_column_int64(st, 0));
	}
	if (!err && rc != SQLITE_DONE)
		err = cq_db_error(db, "merge");
	sqlite3_finalize(st);
	sqlite3_finalize(bad);
	return err;
}

static int hex_digit(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c - 'A' + 10;
}

/*
 * Folds one stored frame (a row of frames_sql) into *h, or says it cannot
 * be a frame coreq stored: a kind it does not write, a malformed build-id,
 * values of the wrong type.
 */
static bool hash_stored_frame(sqlite3_stmt *st, int64_t idx, uint64_t *h)
{
	if (sqlite3_column_type(st, 0) != SQLITE_INTEGER || sqlite3_column_int64(st, 0) != idx ||
	    sqlite3_column_type(st, 3) != SQLITE_INTEGER ||
	    sqlite3_column_type(st, 4) != SQLITE_TEXT ||
	    (sqlite3_column_type(st, 7) != SQLITE_INTEGER &&
	     sqlite3_column_type(st, 7) != SQLITE_NULL))
		return false;
	for (int col = 5; col <= 6; col++)
		if (sqlite3_column_type(st, col) != SQLITE_TEXT &&
		    sqlite3_column_type(st, col) != SQLITE_NULL)
			return false;
	const char *kind = (const char *)sqlite3_column_text(st, 4);
	int k = 0;
	while (k <= CQ_FRAME_PYTHON && strcmp(kind, cq_frame_kind_name((enum cq_frame_kind)k)) != 0)
		k++;
	if (k > CQ_FRAME_PYTHON)
		return false;
	uint8_t build_id[CQ_BUILD_ID_HEX_MAX / 2];
	struct cq_stack_hash_frame f = {
	    .where = (uint64_t)sqlite3_column_int64(st, 3),
	    .kind = (uint8_t)k,
	    .function = (const char *)sqlite3_column_text(st, 5),
	    .state = (const char *)sqlite3_column_text(st, 6),
	    .line = sqlite3_column_int64(st, 7),
	};
	/* A suspended future's frame or a Python frame: no code address (frames.h). */
	f.future = (k == CQ_FRAME_ASYNC || k == CQ_FRAME_PYTHON) && f.where == 0;
	if (sqlite3_column_type(st, 1) != SQLITE_NULL) {
		const char *key = sqlite3_column_type(st, 2) == SQLITE_TEXT
		                      ? (const char *)sqlite3_column_text(st, 2)
		                      : NULL;
		if (!module_key_valid(key))
			return false;
		if (strncmp(key, "path:", 5) != 0) {
			f.build_id_len = strlen(key) / 2;
			for (size_t i = 0; i < f.build_id_len; i++)
				build_id[i] = (uint8_t)(hex_digit(key[2 * i]) << 4 |
				                        hex_digit(key[2 * i + 1]));
			f.build_id = build_id;
		}
	}
	*h = cq_stack_hash_add(*h, &f);
	return true;
}

/* Every stack to be copied whose stored hash is not its frames' (stack_hash.h): s_bad. */
static struct cq_error *check_stacks(sqlite3 *db, const char *alias)
{
	static const char stacks_sql[] =
	    "SELECT id, hash, nframes FROM src.stacks WHERE id IN (SELECT src FROM s_new)";
	static const char frames_sql[] =
	    "SELECT f.idx, f.module_id, m.build_id, f.offset, f.kind, f.function, f.state, f.line "
	    "FROM src.frames f LEFT JOIN src.modules m ON m.id = f.module_id "
	    "WHERE f.stack_id = ? ORDER BY f.idx";
	sqlite3_stmt *stacks = NULL, *frames = NULL, *bad = NULL;
	struct cq_error *err = prepare_aliased(db, stacks_sql, alias, &stacks);
	if (!err)
		err = prepare_aliased(db, frames_sql, alias, &frames);
	if (!err &&
	    sqlite3_prepare_v2(db, "INSERT INTO s_bad VALUES (?)", -1, &bad, NULL) != SQLITE_OK)
		err = cq_db_error(db, "merge");
	int rc = SQLITE_DONE;
	while (!err && (rc = sqlite3_step(stacks)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(stacks, 0), n = 0;
		uint64_t h = CQ_STACK_HASH_INIT;
		bool good = sqlite3_column_type(stacks, 1) == SQLITE_TEXT;
		sqlite3_bind_int64(frames, 1, id);
		int frc;
		while (good && (frc = sqlite3_step(frames)) == SQLITE_ROW)
			good = hash_stored_frame(frames, n++, &h);
		if (good && frc != SQLITE_DONE)
			err = cq_db_error(db, "merge");
		sqlite3_reset(frames);
		char text[CQ_STACK_HASH_TEXT_LEN + 1];
		cq_stack_hash_text(h, text);
		good = good && sqlite3_column_type(stacks, 2) == SQLITE_INTEGER &&
		       sqlite3_column_int64(stacks, 2) == n &&
		       strcmp((const char *)sqlite3_column_text(stacks, 1), text) == 0;
		if (!err && !good)
			err = refuse(db, bad, id);
	}
	if (!err && rc != SQLITE_DONE)
		err = cq_db_error(db, "merge");
	sqlite3_finalize(stacks);
	sqlite3_finalize(frames);
	sqlite3_finalize(bad);
	return err;
}

/* Every bucket to be copied whose stored hash is not its signature's (bucket.h): b_bad. */
static struct cq_error *check_buckets(sqlite3 *db, const char *alias)
{
	static const char buckets_sql[] =
	    "SELECT id, hash, signature FROM src.buckets WHERE id IN (SELECT bucket_id FROM "
	    "src.cores WHERE id IN (SELECT src FROM c_new)) AND hash NOT IN "
	    "(SELECT hash FROM main.buckets)";
	sqlite3_stmt *st = NULL, *bad = NULL;
	struct cq_error *err = prepare_aliased(db, buckets_sql, alias, &st);
	if (!err &&
	    sqlite3_prepare_v2(db, "INSERT INTO b_bad VALUES (?)", -1, &bad, NULL) != SQLITE_OK)
		err = cq_db_error(db, "merge");
	int rc = SQLITE_DONE;
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		char want[CQ_BUCKET_HASH_LEN + 1] = "";
		bool good = sqlite3_column_type(st, 1) == SQLITE_TEXT &&
		            sqlite3_column_type(st, 2) == SQLITE_TEXT;
		if (good) {
			cq_bucket_hash_of((const char *)sqlite3_column_text(st, 2), want);
			good = strcmp((const char *)sqlite3_column_text(st, 1), want) == 0;
		}
		if (!good)
			err = refuse(db, bad, sqlite3_column_int64(st, 0));
	}
	if (!err && rc != SQLITE_DONE)
		err = cq_db_error(db, "merge");
	sqlite3_finalize(st);
	sqlite3_finalize(bad);
	return err;
}

static struct cq_error *merge_one(sqlite3 *db, const char *path, const char *alias,
                                  struct cq_merge_result *r)
{
	assert(!sqlite3_get_autocommit(db)); /* every source in the one transaction */
	int64_t version = 0, latest = cq_schema_latest("db");
	struct cq_error *err = run_aliased(db, "PRAGMA src.user_version", alias, &version);
	if (!err && version != latest)
		err =
		    version > latest
		        ? cq_error_create(CQ_ERR_UNSUPPORTED,
		                          "schema version %lld is newer than this coreq's (%lld): "
		                          "upgrade coreq",
		                          (long long)version, (long long)latest)
		        : cq_error_create(CQ_ERR_UNSUPPORTED,
		                          "schema version %lld, this coreq writes %lld: upgrade it "
		                          "first (coreq merge --db %s)",
		                          (long long)version, (long long)latest, path);
	if (!err)
		err = cq_db_schema_check(db, alias, "db", (unsigned)latest);
	int64_t before = 0, after = 0, analysed = 0, candidates = 0, copied = 0, stacks = 0;
	if (!err)
		err = count(db, "SELECT count(*) FROM main.cores", &before);
	if (!err)
		err = exec(db, drop_sql, "merge");
	if (!err)
		err = run_aliased(db, select_sql, alias, NULL);
	if (!err)
		err = count(db, "SELECT count(*) FROM c_new", &candidates);
	if (!err)
		err = check_modules(db, alias);
	if (!err)
		err = check_stacks(db, alias);
	if (!err)
		err = check_buckets(db, alias);
	if (!err)
		err = run_aliased(db, refuse_sql, alias, NULL);
	if (!err)
		err = count(db, "SELECT count(*) FROM c_new", &copied);
	if (!err)
		err = run_aliased(db, copy_sql, alias, NULL);
	if (!err)
		err = encode_new_blobs(db);
	if (!err)
		err = count(db, "SELECT count(*) FROM main.cores", &after);
	if (!err)
		err = run_aliased(
		    db, "SELECT count(*) FROM src.cores WHERE status IN ('ok', 'partial')", alias,
		    &analysed);
	if (!err)
		err = count(db, "SELECT count(*) FROM s_new", &stacks);
	if (!err) {
		r->cores += after - before;
		r->skipped += analysed - candidates;
		r->refused += candidates - copied;
		r->stacks += stacks;
	}
	cq_error_free(exec(db, drop_sql, "merge"));
	return err ? cq_error_prefix(err, "%s", path) : NULL;
}

struct cq_error *cq_store_merge(struct cq_store *store, const char *const *paths, size_t n,
                                struct cq_merge_result *r)
{
	assert(store && (paths || n == 0) && r);
	memset(r, 0, sizeof(*r));
	sqlite3 *db = cq_store_db(store);
	assert(sqlite3_get_autocommit(db)); /* ATTACH needs no transaction open */
	/*
	 * ATTACH is refused inside a transaction: every source is attached
	 * first, read-only, by a URI that names exactly its file (guard.h).
	 * The connection allows no attachment until here.
	 */
	int most = sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, INT_MAX);
	most = sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, -1);
	if ((int64_t)n > most)
		return cq_error_create(
		    CQ_ERR_LIMIT,
		    "at most %d databases per merge (SQLite's attach limit); merge "
		    "the rest in another run, which adds only what is new",
		    most);
	struct cq_error *err = NULL;
	size_t attached = 0;
	for (; attached < n && !err; attached++) {
		/* ATTACH would create a missing file: only existing ones are read. */
		if (access(paths[attached], R_OK) != 0) {
			err = errno == ENOENT
			          ? cq_error_create(CQ_ERR_NOT_FOUND, "%s: no such database",
			                            paths[attached])
			          : cq_error_errno(errno, "%s", paths[attached]);
			break;
		}
		sqlite3_stmt *st;
		char alias[32];
		snprintf(alias, sizeof(alias), "src%zu", attached);
		char *sql = sqlite3_mprintf("ATTACH DATABASE ? AS %s", alias);
		if (!sql || sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
			sqlite3_free(sql);
			err = cq_db_error(db, "merge");
			break;
		}
		sqlite3_free(sql);
		char *uri = cq_db_uri(paths[attached], "mode=ro");
		if (!uri) {
			sqlite3_finalize(st);
			err = &cq_error_nomem;
			break;
		}
		sqlite3_bind_text(st, 1, uri, -1, sqlite3_free);
		int rc = sqlite3_step(st);
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE) {
			err = cq_error_create(CQ_ERR_DB, "%s: %s", paths[attached],
			                      sqlite3_errmsg(db));
			break;
		}
		int64_t tables = 0;
		char q[96];
		snprintf(q, sizeof(q), "SELECT count(*) FROM %s.sqlite_master", alias);
		if ((err = count(db, q, &tables)))
			err = cq_error_prefix(err, "%s", paths[attached]);
		else if (tables == 0)
			err = cq_error_create(CQ_ERR_NOT_FOUND, "%s: no such database",
			                      paths[attached]);
	}
	if (!err)
		err = exec(db, "BEGIN IMMEDIATE", "merge");
	for (size_t i = 0; i < n && !err; i++) {
		char alias[32];
		snprintf(alias, sizeof(alias), "src%zu", i);
		err = merge_one(db, paths[i], alias, r);
	}
	if (!err)
		err = exec(db, "COMMIT", "merge");
	if (err)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	for (size_t i = 0; i < attached; i++) {
		char q[48];
		snprintf(q, sizeof(q), "DETACH DATABASE src%zu", i);
		sqlite3_exec(db, q, NULL, NULL, NULL);
	}
	return err;
}
