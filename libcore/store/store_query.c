/*
 * store_query.c - the read side of the analysis database (see
 * store_query.h).  Frames are loaded per stack into a small array whose
 * strings are copied out of SQLite, so a callback can look at a stack's
 * frames while the outer query is still stepping.
 */
#include "libcore/store/store_query.h"

#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/store/store.h"
#include "libcore/store/sender_claimed.h"
#include "libcore/store/store_db.h"
#include "libcore/db/bind.h"
#include "libcore/db/db_error.h"

/*
 * The row id of the bucket a key names (SQL, over the parameter p): a
 * 16-hex-digit key is a hash, anything else a decimal row id.  Each form
 * is its own branch so that each uses its index (hash, rowid).
 */
#define BUCKET_BY_KEY(p)                                                                           \
	"(SELECT id FROM buckets WHERE length(" p ") = 16 AND hash = lower(" p ") UNION ALL "      \
	"SELECT id FROM buckets WHERE length(" p ") < 16 AND id = CAST(" p " AS INTEGER) AND "     \
	"CAST(id AS TEXT) = " p " LIMIT 1)"

/*
 * A WHERE clause of only the filters given.  A filter written as
 * "(?1 = 0 OR id = ?1)" keeps SQLite from using any index for it: at a
 * million cores every query became a full scan.  So each query is built
 * with the clauses its filters need; parameters keep their numbers (a
 * number the text no longer uses is simply not bound).
 */
struct where {
	char sql[1024];
	size_t len;
	bool overflow;
};

static void where_add(struct where *w, bool on, const char *clause)
{
	if (!on)
		return;
	int n = snprintf(w->sql + w->len, sizeof(w->sql) - w->len, "%s%s", w->len ? " AND " : "",
	                 clause);
	if (n < 0 || (size_t)n >= sizeof(w->sql) - w->len)
		w->overflow = true;
	else
		w->len += (size_t)n;
}

/* The clause's text, "1" when no filter was given. */
static const char *where_text(const struct where *w)
{
	return w->len ? w->sql : "1";
}

/*
 * With $COREQ_EXPLAIN set, the query plan of each query the read commands
 * build goes to stderr ("coreq: plan: ..."), as SQLite's EXPLAIN QUERY PLAN
 * gives it: how to see that a query uses its indexes.
 */
static void explain(sqlite3 *db, const char *q)
{
	const char *e = getenv("COREQ_EXPLAIN");
	if (!e || !*e)
		return;
	char *sql = sqlite3_mprintf("EXPLAIN QUERY PLAN %s", q);
	sqlite3_stmt *st;
	if (sql && sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
		while (sqlite3_step(st) == SQLITE_ROW)
			fprintf(stderr, "coreq: plan: %s\n",
			        (const char *)sqlite3_column_text(st, 3));
		sqlite3_finalize(st);
	}
	sqlite3_free(sql);
}

/* Prepares the query made by printf(fmt, ...) */
static struct cq_error *prepare_built(sqlite3 *db, const char *what, sqlite3_stmt **st,
                                      const struct where *w, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static struct cq_error *prepare_built(sqlite3 *db, const char *what, sqlite3_stmt **st,
                                      const struct where *w, const char *fmt, ...)
{
	char q[4096];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	if (w->overflow || n < 0 || (size_t)n >= sizeof(q))
		return cq_error_create(CQ_ERR_LIMIT, "%s: query too long", what);
	explain(db, q);
	if (sqlite3_prepare_v2(db, q, -1, st, NULL) != SQLITE_OK)
		return cq_error_create(CQ_ERR_DB, "%s: %s", what, sqlite3_errmsg(db));
	return NULL;
}

bool cq_store_bucket_key_valid(const char *key)
{
	size_t n = strlen(key);
	if (n == 16 && strspn(key, "0123456789abcdefABCDEF") == 16)
		return true;
	return n > 0 && n < 16 && strspn(key, "0123456789") == n && key[0] != '0';
}

struct frame_list {
	struct cq_store_frame_row *rows;
	char **strings;
	size_t n, nstrings;
};

static void frame_list_free(struct frame_list *fl)
{
	for (size_t i = 0; i < fl->nstrings; i++)
		free(fl->strings[i]);
	free(fl->strings);
	free(fl->rows);
	memset(fl, 0, sizeof(*fl));
}

/* A copy of a text column (NULL stays NULL), remembered for freeing. */
static const char *keep_text(struct frame_list *fl, sqlite3_stmt *st, int col, bool *ok)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	if (!t)
		return NULL;
	char *copy = strdup((const char *)t);
	if (!copy) {
		*ok = false;
		return NULL;
	}
	fl->strings[fl->nstrings++] = copy;
	return copy;
}

static struct cq_error *load_frames(sqlite3 *db, int64_t stack_id, struct frame_list *fl)
{
	static const char q[] =
	    "SELECT f.idx, f.kind, f.trust, m.path, m.build_id, f.offset, f.function, "
	    "f.file, f.line, f.state FROM frames f LEFT JOIN modules m ON m.id = f.module_id "
	    "WHERE f.stack_id = ? ORDER BY f.idx";
	sqlite3_stmt *st;
	memset(fl, 0, sizeof(*fl));
	if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
		return cq_error_create(CQ_ERR_DB, "frames: %s", sqlite3_errmsg(db));
	sqlite3_bind_int64(st, 1, stack_id);
	size_t cap = 0;
	bool ok = true;
	int rc;
	while (ok && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (fl->n == cap) {
			cap = cap ? cap * 2 : 16;
			void *r = realloc(fl->rows, cap * sizeof(*fl->rows));
			void *s = r ? realloc(fl->strings, cap * 7 * sizeof(*fl->strings)) : NULL;
			if (r)
				fl->rows = r;
			if (s)
				fl->strings = s;
			if (!r || !s) {
				ok = false;
				break;
			}
		}
		const char *build_id = NULL, *module = keep_text(fl, st, 3, &ok);
		if (module) {
			build_id = keep_text(fl, st, 4, &ok);
			if (build_id && strncmp(build_id, "path:", 5) == 0)
				build_id = NULL; /* a module without a build-id */
		}
		fl->rows[fl->n] = (struct cq_store_frame_row){
		    .index = (size_t)sqlite3_column_int64(st, 0),
		    .kind = keep_text(fl, st, 1, &ok),
		    .trust = keep_text(fl, st, 2, &ok),
		    .module = module,
		    .build_id = build_id,
		    .offset = (uint64_t)sqlite3_column_int64(st, 5),
		    .function = keep_text(fl, st, 6, &ok),
		    .file = keep_text(fl, st, 7, &ok),
		    .line = sqlite3_column_int(st, 8),
		    .state = keep_text(fl, st, 9, &ok),
		};
		fl->n++;
	}
	sqlite3_finalize(st);
	if (!ok) {
		frame_list_free(fl);
		return &cq_error_nomem;
	}
	return NULL;
}

/*
 * Steps st, whose rows start with a stack id; for each row loads that
 * stack's frames and calls emit.  Finalizes st.
 */
typedef void (*stack_row_emit)(sqlite3_stmt *st, int64_t id, const struct frame_list *fl,
                               void *ctx);

static struct cq_error *each_stack_row(sqlite3 *db, sqlite3_stmt *st, const char *what,
                                       stack_row_emit emit, void *ctx)
{
	struct cq_error *err = NULL;
	int rc;
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct frame_list fl;
		int64_t id = sqlite3_column_int64(st, 0);
		if ((err = load_frames(db, id, &fl)))
			break;
		emit(st, id, &fl, ctx);
		frame_list_free(&fl);
	}
	if (!err && rc != SQLITE_DONE)
		err = cq_error_create(CQ_ERR_DB, "%s: %s", what, sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return err;
}

struct stack_emit {
	cq_store_stack_fn fn;
	void *ctx;
};

static void emit_stack(sqlite3_stmt *st, int64_t id, const struct frame_list *fl, void *ctx)
{
	const struct stack_emit *e = ctx;
	struct cq_store_stack_row row = {
	    .id = id,
	    .hash = (const char *)sqlite3_column_text(st, 1),
	    .threads = sqlite3_column_int64(st, 2),
	    .cores = sqlite3_column_int64(st, 3),
	    .first_seen = sqlite3_column_int64(st, 4),
	    .last_seen = sqlite3_column_int64(st, 5),
	    .suspended = sqlite3_column_int64(st, 6),
	    .frames = fl->rows,
	    .nframes = fl->n,
	};
	e->fn(e->ctx, &row);
}

struct lws_site_emit {
	cq_store_lws_site_fn fn;
	void *ctx;
};

static void emit_lws_site(sqlite3_stmt *st, int64_t id, const struct frame_list *fl, void *ctx)
{
	const struct lws_site_emit *e = ctx;
	struct cq_store_lws_site_row row = {
	    .id = id,
	    .hash = (const char *)sqlite3_column_text(st, 1),
	    .allocations = sqlite3_column_int64(st, 2),
	    .bytes = sqlite3_column_int64(st, 3),
	    .logs = sqlite3_column_int64(st, 4),
	    .min_size = sqlite3_column_int64(st, 5),
	    .max_size = sqlite3_column_int64(st, 6),
	    .frames = fl->rows,
	    .nframes = fl->n,
	};
	e->fn(e->ctx, &row);
}

struct cq_error *cq_store_each_stack(struct cq_store *store,
                                     const struct cq_store_stack_filter *filter,
                                     cq_store_stack_fn fn, void *ctx)
{
	/*
	 * Filtered: the cores first (by id, bucket, exe, through their
	 * indexes), then only their threads and suspended chains.
	 */
	struct where w = {.len = 0};
	where_add(&w, filter && filter->core_id, "id = ?1");
	where_add(&w, filter && filter->exe, "(exe = ?2 OR exe LIKE '%/' || ?2)");
	where_add(&w, filter && filter->bucket, "bucket_id = " BUCKET_BY_KEY("?4"));
	sqlite3 *db = cq_store_db(store);
	sqlite3_stmt *st;
	struct cq_error *err = prepare_built(
	    db, "stacks", &st, &w,
	    "WITH sel AS (SELECT id, coalesce(timestamp, ingested_at) AS t FROM cores WHERE %s), "
	    "uses (stack_id, core_id, thread, suspended, t) AS ("
	    "SELECT x.stack_id, x.core_id, 1, 0, sel.t FROM sel CROSS JOIN threads x "
	    "ON x.core_id = sel.id "
	    "UNION ALL SELECT x.stack_id, x.core_id, 0, 1, sel.t FROM sel CROSS JOIN suspended x "
	    "ON x.core_id = sel.id) "
	    "SELECT s.id, s.hash, sum(u.thread) AS nthreads, count(DISTINCT u.core_id) AS ncores, "
	    "min(u.t), max(u.t), sum(u.suspended) AS nsuspended "
	    "FROM uses u JOIN stacks s ON s.id = u.stack_id "
	    "GROUP BY s.id ORDER BY nthreads DESC, nsuspended DESC, ncores DESC, s.id "
	    "LIMIT CASE WHEN ?3 > 0 THEN ?3 ELSE -1 END",
	    where_text(&w));
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, filter ? filter->core_id : 0);
	if (filter && filter->exe)
		sqlite3_bind_text(st, 2, filter->exe, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 3, filter ? filter->limit : 0);
	cq_db_bind_text(st, 4, filter ? filter->bucket : NULL);
	struct stack_emit e = {.fn = fn, .ctx = ctx};
	return each_stack_row(db, st, "stacks", emit_stack, &e);
}

struct cq_error *cq_store_each_core(struct cq_store *store, const struct cq_store_core_filter *f,
                                    cq_store_core_fn fn, void *ctx)
{
	int64_t only_id = f ? f->id : 0;
	struct where w = {.len = 0};
	where_add(&w, only_id, "id = ?1");
	where_add(&w, f && f->bucket, "bucket_id = " BUCKET_BY_KEY("?2"));
	where_add(&w, f && f->since, "coalesce(timestamp, ingested_at) >= ?3");
	where_add(&w, f && f->until, "coalesce(timestamp, ingested_at) < ?4");
	where_add(&w, f && f->exe, "(exe = ?5 OR exe LIKE '%/' || ?5)");
	where_add(&w, f && f->pid, "pid = ?6");
	where_add(&w, f && f->signal, "signal = ?7");
	sqlite3 *db = cq_store_db(store);
	sqlite3_stmt *st;
	struct cq_error *perr = prepare_built(
	    db, "cores", &st, &w,
	    "SELECT id, path, exe, cmdline, signal_name, hostname, status, message, pid, signal, "
	    "crashed_tid, nthreads, ingested_at, uid, si_code, fault_address, timestamp, "
	    "bucket_id, comm, source, stored_path, meta_conflicts, "
	    "(SELECT hash FROM buckets WHERE id = c.bucket_id), size, sender_pid, "
	    "sender_uid, " CQ_SENDER_CLAIMED_SQL ", "
	    "time_source, snapshot, crash_message "
	    /* the newest ?8 of them (-1: all), then in the order asked for */
	    " FROM cores c WHERE id IN (SELECT id FROM cores WHERE %s "
	    "ORDER BY coalesce(timestamp, ingested_at) DESC, id DESC LIMIT ?8) "
	    "ORDER BY CASE WHEN ?9 THEN -coalesce(timestamp, ingested_at) ELSE "
	    "coalesce(timestamp, ingested_at) END, CASE WHEN ?9 THEN -id ELSE id END",
	    where_text(&w));
	if (perr)
		return perr;
	sqlite3_bind_int64(st, 1, only_id);
	cq_db_bind_text(st, 2, f ? f->bucket : NULL);
	sqlite3_bind_int64(st, 3, f ? f->since : 0);
	sqlite3_bind_int64(st, 4, f ? f->until : 0);
	cq_db_bind_text(st, 5, f ? f->exe : NULL);
	sqlite3_bind_int64(st, 6, f ? f->pid : 0);
	sqlite3_bind_int64(st, 7, f ? f->signal : 0);
	sqlite3_bind_int64(st, 8, f && f->limit > 0 ? f->limit : -1);
	sqlite3_bind_int(st, 9, f && f->newest_first);
	size_t n = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *text[8];
		for (int i = 0; i < 8; i++)
			text[i] = (const char *)sqlite3_column_text(st, i + 1);
		struct cq_store_core_row row = {
		    .id = sqlite3_column_int64(st, 0),
		    .path = text[0],
		    .exe = text[1],
		    .cmdline = text[2],
		    .signal_name = text[3],
		    .hostname = text[4],
		    .status = text[5],
		    .message = text[6],
		    .pid = sqlite3_column_int64(st, 8),
		    .signal = sqlite3_column_int64(st, 9),
		    .crashed_tid = sqlite3_column_int64(st, 10),
		    .nthreads = sqlite3_column_int64(st, 11),
		    .ingested_at = sqlite3_column_int64(st, 12),
		    .has_uid = sqlite3_column_type(st, 13) != SQLITE_NULL,
		    .uid = sqlite3_column_int64(st, 13),
		    .has_si_code = sqlite3_column_type(st, 14) != SQLITE_NULL,
		    .si_code = sqlite3_column_int64(st, 14),
		    .has_fault_address = sqlite3_column_type(st, 15) != SQLITE_NULL,
		    .fault_address = (uint64_t)sqlite3_column_int64(st, 15),
		    .has_timestamp = sqlite3_column_type(st, 16) != SQLITE_NULL,
		    .timestamp = sqlite3_column_int64(st, 16),
		    .bucket_id = sqlite3_column_int64(st, 17),
		    .comm = (const char *)sqlite3_column_text(st, 18),
		    .source = (const char *)sqlite3_column_text(st, 19),
		    .stored_path = (const char *)sqlite3_column_text(st, 20),
		    .meta_conflicts = (const char *)sqlite3_column_text(st, 21),
		    .bucket_hash = (const char *)sqlite3_column_text(st, 22),
		    .size = sqlite3_column_int64(st, 23),
		    .has_sender = sqlite3_column_type(st, 24) != SQLITE_NULL,
		    .sender_pid = sqlite3_column_int64(st, 24),
		    .sender_uid = sqlite3_column_int64(st, 25),
		    .sender_claimed = sqlite3_column_int64(st, 26) != 0,
		    .time_source = (const char *)sqlite3_column_text(st, 27),
		    .snapshot = (const char *)sqlite3_column_text(st, 28),
		    .crash_message = (const char *)sqlite3_column_text(st, 29),
		};
		if (fn)
			fn(ctx, &row);
		n++;
	}
	struct cq_error *err = NULL;
	if (rc != SQLITE_DONE)
		err = cq_error_create(CQ_ERR_DB, "cores: %s", sqlite3_errmsg(db));
	else if (only_id && n == 0)
		err = cq_error_create(CQ_ERR_NOT_FOUND, "no core with id %lld", (long long)only_id);
	sqlite3_finalize(st);
	return err;
}

struct cq_error *cq_store_each_module(struct cq_store *store, int64_t core_id,
                                      cq_store_module_fn fn, void *ctx)
{
	static const char q[] = "SELECT cm.path, m.build_id, cm.status, cm.start, cm.end "
	                        "FROM core_modules cm JOIN modules m ON m.id = cm.module_id "
	                        "WHERE cm.core_id = ? ORDER BY cm.start";
	sqlite3 *db = cq_store_db(store);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
		return cq_error_create(CQ_ERR_DB, "modules: %s", sqlite3_errmsg(db));
	sqlite3_bind_int64(st, 1, core_id);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *build_id = (const char *)sqlite3_column_text(st, 1);
		struct cq_store_module_row row = {
		    .path = (const char *)sqlite3_column_text(st, 0),
		    .build_id = build_id && strncmp(build_id, "path:", 5) ? build_id : NULL,
		    .status = (const char *)sqlite3_column_text(st, 2),
		    .start = (uint64_t)sqlite3_column_int64(st, 3),
		    .end = (uint64_t)sqlite3_column_int64(st, 4),
		};
		fn(ctx, &row);
	}
	struct cq_error *err = NULL;
	if (rc != SQLITE_DONE)
		err = cq_error_create(CQ_ERR_DB, "modules: %s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return err;
}

struct cq_error *cq_store_each_thread(struct cq_store *store, int64_t core_id,
                                      cq_store_thread_fn fn, void *ctx)
{
	static const char q[] = "SELECT tid, stack_id, name, end, crashed, idx FROM threads "
	                        "WHERE core_id = ? ORDER BY idx";
	sqlite3 *db = cq_store_db(store);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
		return cq_error_create(CQ_ERR_DB, "threads: %s", sqlite3_errmsg(db));
	sqlite3_bind_int64(st, 1, core_id);
	struct cq_error *err = NULL;
	int rc;
	int64_t last_idx = INT64_MIN;
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct frame_list fl;
		int64_t stack_id = sqlite3_column_int64(st, 1), idx = sqlite3_column_int64(st, 5);
		/* Rows come by idx, each once: a damaged index can return them again and again. */
		if (idx <= last_idx) {
			err =
			    cq_error_create(CQ_ERR_DB,
			                    "threads of core %lld: damaged database (rows repeat); "
			                    "recover it with `sqlite3 FILE .recover`",
			                    (long long)core_id);
			break;
		}
		last_idx = idx;
		if ((err = load_frames(db, stack_id, &fl)))
			break;
		struct cq_store_thread_row row = {
		    .tid = sqlite3_column_int64(st, 0),
		    .stack_id = stack_id,
		    .name = (const char *)sqlite3_column_text(st, 2),
		    .end = (const char *)sqlite3_column_text(st, 3),
		    .crashed = sqlite3_column_int(st, 4) != 0,
		    .frames = fl.rows,
		    .nframes = fl.n,
		};
		fn(ctx, &row);
		frame_list_free(&fl);
	}
	if (!err && rc != SQLITE_DONE)
		err = cq_error_create(CQ_ERR_DB, "threads: %s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return err;
}

struct cq_error *cq_store_each_suspended(struct cq_store *store, int64_t core_id,
                                         cq_store_suspended_fn fn, void *ctx)
{
	static const char q[] = "SELECT idx, stack_id, kind, end FROM suspended "
	                        "WHERE core_id = ? ORDER BY idx";
	sqlite3 *db = cq_store_db(store);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
		return cq_db_error(db, "suspended");
	sqlite3_bind_int64(st, 1, core_id);
	struct cq_error *err = NULL;
	int64_t last_idx = INT64_MIN;
	int rc;
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct cq_store_suspended_row row = {
		    .idx = sqlite3_column_int64(st, 0),
		    .stack_id = sqlite3_column_int64(st, 1),
		    .kind = (const char *)sqlite3_column_text(st, 2),
		    .end = (const char *)sqlite3_column_text(st, 3),
		};
		if (row.idx <= last_idx) { /* a damaged index repeating rows */
			err = cq_db_error(db, "suspended: rows repeat");
			break;
		}
		last_idx = row.idx;
		struct frame_list fl;
		if ((err = load_frames(db, row.stack_id, &fl)))
			break;
		row.frames = fl.rows;
		row.nframes = fl.n;
		fn(ctx, &row);
		frame_list_free(&fl);
	}
	if (!err && rc != SQLITE_DONE)
		err = cq_db_error(db, "suspended");
	sqlite3_finalize(st);
	return err;
}

#define MAX_BUCKET_EXES 4096

/*
 * The distinct executables of a bucket's cores (at most MAX_BUCKET_EXES),
 * NULL-terminated, malloc'd:
 * one index seek per executable (cores_bucket_exe), not a walk over every
 * core of the bucket.
 */
static char **bucket_exes(sqlite3 *db, int64_t bucket_id)
{
	static const char q[] = "SELECT exe FROM cores WHERE bucket_id = ?1 AND exe > ?2 "
	                        "ORDER BY exe LIMIT 1";
	sqlite3_stmt *st;
	explain(db, q);
	if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
		return NULL;
	size_t n = 0, cap = 4;
	char **exes = calloc(cap + 1, sizeof(*exes));
	const char *after = "";
	/*
	 * Each answer must sort strictly after the one before: a damaged file
	 * (a BLOB exe, an index out of step with its table) must not loop.
	 */
	while (exes && n < MAX_BUCKET_EXES) {
		sqlite3_bind_int64(st, 1, bucket_id);
		sqlite3_bind_text(st, 2, after, -1, SQLITE_TRANSIENT);
		const unsigned char *exe =
		    sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_TEXT
		        ? sqlite3_column_text(st, 0)
		        : NULL;
		if (!exe || strcmp((const char *)exe, after) <= 0)
			break;
		if (n == cap) {
			char **more = realloc(exes, (cap * 2 + 1) * sizeof(*exes));
			if (!more)
				break;
			exes = more;
			cap *= 2;
		}
		if (!(exes[n] = strdup((const char *)exe)))
			break;
		after = exes[n];
		exes[++n] = NULL;
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	return exes;
}

struct cq_error *cq_store_each_bucket(struct cq_store *store,
                                      const struct cq_store_bucket_filter *filter,
                                      cq_store_bucket_fn fn, void *ctx)
{
	/*
	 * Unfiltered, each bucket's own counters answer (kept by ingest,
	 * rebucket and merge): no core is read.  Filtered by time or
	 * executable, its cores are counted.
	 */
	static const char all[] =
	    "SELECT id, hash, signature, count, first_seen, last_seen, example_core, rules_version "
	    "FROM buckets WHERE count > 0 ORDER BY count DESC, id";
	static const char some[] =
	    "SELECT b.id, b.hash, b.signature, count(*) AS n, "
	    "min(coalesce(c.timestamp, c.ingested_at)), max(coalesce(c.timestamp, c.ingested_at)), "
	    "min(c.id), b.rules_version FROM buckets b JOIN cores c ON c.bucket_id = b.id "
	    "WHERE (?1 = 0 OR coalesce(c.timestamp, c.ingested_at) >= ?1) "
	    "AND (?3 = 0 OR coalesce(c.timestamp, c.ingested_at) < ?3) "
	    "AND (?2 IS NULL OR c.exe = ?2 OR c.exe LIKE '%/' || ?2) "
	    "GROUP BY b.id ORDER BY n DESC, b.id";
	bool filtered = filter && (filter->since || filter->until || filter->exe);
	sqlite3 *db = cq_store_db(store);
	sqlite3_stmt *st;
	explain(db, filtered ? some : all);
	if (sqlite3_prepare_v2(db, filtered ? some : all, -1, &st, NULL) != SQLITE_OK)
		return cq_error_create(CQ_ERR_DB, "buckets: %s", sqlite3_errmsg(db));
	sqlite3_bind_int64(st, 1, filter ? filter->since : 0);
	sqlite3_bind_int64(st, 3, filter ? filter->until : 0);
	if (filter && filter->exe)
		sqlite3_bind_text(st, 2, filter->exe, -1, SQLITE_TRANSIENT);
	int rc;
	struct cq_error *err = NULL;
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		char **exes = bucket_exes(db, id);
		if (!exes) {
			err = &cq_error_nomem;
			break;
		}
		struct cq_store_bucket_row row = {
		    .id = id,
		    .hash = (const char *)sqlite3_column_text(st, 1),
		    .signature = (const char *)sqlite3_column_text(st, 2),
		    .count = sqlite3_column_int64(st, 3),
		    .first_seen = sqlite3_column_int64(st, 4),
		    .last_seen = sqlite3_column_int64(st, 5),
		    .example_core = sqlite3_column_int64(st, 6),
		    .exes = (const char *const *)exes,
		    .rules_version = (const char *)sqlite3_column_text(st, 7),
		};
		fn(ctx, &row);
		for (size_t i = 0; exes[i]; i++)
			free(exes[i]);
		free(exes);
	}
	if (!err && rc != SQLITE_DONE)
		err = cq_error_create(CQ_ERR_DB, "buckets: %s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return err;
}

struct cq_error *cq_store_each_lws_site(struct cq_store *store,
                                        const struct cq_store_stack_filter *filter,
                                        cq_store_lws_site_fn fn, void *ctx)
{
	static const char q[] =
	    "SELECT s.id, s.hash, sum(a.count) AS n, CAST(total(a.count * a.size) AS INTEGER) "
	    "AS bytes, count(DISTINCT a.log_id), min(a.size), max(a.size) "
	    "FROM lws_allocations a JOIN stacks s ON s.id = a.stack_id "
	    "JOIN lws_logs l ON l.id = a.log_id JOIN modules m ON m.id = l.module_id "
	    "WHERE (?1 IS NULL OR m.path = ?1 OR m.path LIKE '%/' || ?1) "
	    "GROUP BY s.id ORDER BY bytes DESC, n DESC, s.id "
	    "LIMIT CASE WHEN ?2 > 0 THEN ?2 ELSE -1 END";
	sqlite3 *db = cq_store_db(store);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
		return cq_error_create(CQ_ERR_DB, "lws sites: %s", sqlite3_errmsg(db));
	if (filter && filter->exe)
		sqlite3_bind_text(st, 1, filter->exe, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 2, filter ? filter->limit : 0);
	struct lws_site_emit e = {.fn = fn, .ctx = ctx};
	return each_stack_row(db, st, "lws sites", emit_lws_site, &e);
}
