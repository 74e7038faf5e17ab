/*
 * rebucket.c - recompute crash signatures from stored frames (see
 * rebucket.h).
 *
 * A frame's signature name is what was stored: its function, or sig_name
 * (the ifunc's public name, the covering export, the "[soname]"
 * placeholder) where the module files gave one at ingest.  The main
 * executable is the module whose path is the core's exe.
 *
 * Invariants (asserted): buckets are written inside the re-bucketing's
 * transaction, from rows sorted by hash, each core filed once.
 */
#include "libcore/store/rebucket.h"

#include <assert.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/db/bind.h"
#include "libcore/store/store.h"
#include "libcore/store/store_db.h"
#include "libcore/store/store_query.h"
#include "libcore/triage/bucket.h"
#include "libcore/triage/rules.h"

#define MAX_FRAMES 4096

struct row {
	int64_t core_id, old_bucket, when;
	char hash[CQ_BUCKET_HASH_LEN + 1];
	char *text;
};

static struct cq_error *db_fail(sqlite3 *db, const char *what)
{
	return cq_error_create(CQ_ERR_DB, "rebucket: %s: %s", what, sqlite3_errmsg(db));
}

/* The signature of one core: its crashed thread's stored frames and its signal. */
static struct cq_error *sign(sqlite3 *db, sqlite3_stmt *fst, const struct cq_bucket_rules *rules,
                             unsigned nframes, int64_t stack_id, int signo, const char *exe,
                             struct cq_bucket_signature *sig)
{
	struct cq_bucket_frame *f = calloc(MAX_FRAMES, sizeof(*f));
	char **strings = calloc(MAX_FRAMES * 4, sizeof(*strings));
	struct cq_error *err = NULL;
	size_t n = 0;
	if (!f || !strings) {
		err = &cq_error_nomem;
		goto out;
	}
	sqlite3_bind_int64(fst, 1, stack_id);
	int rc;
	while (n < MAX_FRAMES && (rc = sqlite3_step(fst)) == SQLITE_ROW) {
		bool python = cq_store_text_is((const char *)sqlite3_column_text(fst, 5), "python");
		const char *cols[4];
		for (int c = 0; c < 4; c++) {
			const unsigned char *t = sqlite3_column_text(fst, c < 3 ? c : 6);
			cols[c] = NULL;
			if (t &&
			    !(cols[c] = strings[4 * n + (size_t)c] = strdup((const char *)t))) {
				err = &cq_error_nomem;
				break;
			}
		}
		if (err)
			break;
		f[n] = (struct cq_bucket_frame){
		    .function = cols[0],
		    .alt_name = cols[1],
		    .module = cols[2],
		    .offset = (uint64_t)sqlite3_column_int64(fst, 3),
		    .main = cols[2] && exe && strcmp(cols[2], exe) == 0,
		    .scanned = cq_store_text_is((const char *)sqlite3_column_text(fst, 4), "scan"),
		    .python = python,
		    .file = python ? cols[3] : NULL};
		n++;
	}
	if (!err && n < MAX_FRAMES && rc != SQLITE_DONE)
		err = db_fail(db, "read frames");
	sqlite3_reset(fst);
	if (!err)
		err = cq_bucket_signature_of(rules, f, n, signo, nframes, sig);
out:
	for (size_t i = 0; strings && i < MAX_FRAMES * 4; i++)
		free(strings[i]);
	free(strings);
	free(f);
	return err;
}

static int by_hash(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	int c = strcmp(x->hash, y->hash);
	if (c)
		return c;
	return (x->old_bucket > y->old_bucket) - (x->old_bucket < y->old_bucket);
}

static int by_old(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->old_bucket != y->old_bucket)
		return x->old_bucket < y->old_bucket ? -1 : 1;
	return strcmp(x->hash, y->hash);
}

static const char *const sql_cores =
    "SELECT c.id, c.signal, c.exe, coalesce(c.bucket_id, 0), "
    "coalesce(c.timestamp, c.ingested_at), t.stack_id FROM cores c "
    "JOIN threads t ON t.core_id = c.id AND t.idx = 0 "
    /* A hang's bucket (deadlock, possible deadlock, hang: bucket.h) is the graph's. */
    "WHERE NOT EXISTS (SELECT 1 FROM buckets b WHERE b.id = c.bucket_id AND "
    "(b.signature LIKE 'deadlock: %' OR b.signature LIKE 'deadlock (inferred, confirmed): %' "
    "OR b.signature LIKE 'possible deadlock: %' OR b.signature LIKE 'hang: %')) ORDER BY c.id";
static const char *const sql_frames =
    "SELECT f.function, f.sig_name, m.path, f.offset, f.trust, f.kind, f.file FROM frames f "
    "LEFT JOIN modules m ON m.id = f.module_id WHERE f.stack_id = ? ORDER BY f.idx";

/* Reads every core and signs it under the rules. */
static struct cq_error *read_rows(sqlite3 *db, const struct cq_bucket_rules *rules,
                                  unsigned nframes, struct row **out, size_t *nout)
{
	sqlite3_stmt *cst = NULL, *fst = NULL;
	struct row *rows = NULL;
	size_t n = 0, cap = 0;
	struct cq_error *err = NULL;
	if (sqlite3_prepare_v2(db, sql_cores, -1, &cst, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, sql_frames, -1, &fst, NULL) != SQLITE_OK) {
		err = db_fail(db, "prepare");
		goto out;
	}
	int rc;
	while (!err && (rc = sqlite3_step(cst)) == SQLITE_ROW) {
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			struct row *p = realloc(rows, ncap * sizeof(*p));
			if (!p) {
				err = &cq_error_nomem;
				break;
			}
			rows = p;
			cap = ncap;
		}
		struct row *r = &rows[n];
		memset(r, 0, sizeof(*r));
		r->core_id = sqlite3_column_int64(cst, 0);
		r->old_bucket = sqlite3_column_int64(cst, 3);
		r->when = sqlite3_column_int64(cst, 4);
		struct cq_bucket_signature sig;
		err = sign(db, fst, rules, nframes, sqlite3_column_int64(cst, 5),
		           sqlite3_column_int(cst, 1), (const char *)sqlite3_column_text(cst, 2),
		           &sig);
		if (err)
			break;
		memcpy(r->hash, sig.hash, sizeof(r->hash));
		r->text = sig.text;
		n++;
	}
	if (!err && rc != SQLITE_DONE)
		err = db_fail(db, "read cores");
out:
	sqlite3_finalize(cst);
	sqlite3_finalize(fst);
	*out = rows;
	*nout = n;
	return err;
}

/* Writes the buckets of rows (sorted by hash) and files every core in its own. */
static struct cq_error *write_buckets(sqlite3 *db, const char *version, struct row *rows, size_t n,
                                      struct cq_store_rebucket_result *res)
{
	static const char *const sql[] = {
	    "UPDATE cores SET bucket_id = NULL WHERE NOT EXISTS (SELECT 1 FROM buckets b WHERE "
	    "b.id = cores.bucket_id AND (b.signature LIKE 'deadlock: %' OR "
	    "b.signature LIKE 'deadlock (inferred, confirmed): %' OR "
	    "b.signature LIKE 'possible deadlock: %' OR b.signature LIKE 'hang: %'))",
	    "SELECT id FROM buckets WHERE hash = ?",
	    "UPDATE buckets SET signature = ?2, count = ?3, first_seen = ?4, last_seen = ?5, "
	    "example_core = ?6, rules_version = ?7 WHERE id = ?1",
	    "INSERT INTO buckets (hash, signature, count, first_seen, last_seen, example_core, "
	    "rules_version) VALUES (?, ?, ?, ?, ?, ?, ?)",
	    "UPDATE cores SET bucket_id = ? WHERE id = ?",
	    "DELETE FROM buckets WHERE id NOT IN "
	    "(SELECT bucket_id FROM cores WHERE bucket_id IS NOT NULL)",
	};
	enum { CLEAR, FIND, UPDATE, INSERT, FILE_CORE, DROP, NSQL };
	_Static_assert(sizeof(sql) / sizeof(sql[0]) == NSQL, "a statement per name");
	assert(!sqlite3_get_autocommit(db) && (rows || n == 0) && res);
	for (size_t i = 1; i < n; i++)
		assert(strcmp(rows[i - 1].hash, rows[i].hash) <= 0);
	sqlite3_stmt *st[NSQL] = {0};
	struct cq_error *err = NULL;
	for (int i = 0; i < NSQL && !err; i++)
		if (sqlite3_prepare_v2(db, sql[i], -1, &st[i], NULL) != SQLITE_OK)
			err = db_fail(db, "prepare");
	if (!err && sqlite3_step(st[CLEAR]) != SQLITE_DONE)
		err = db_fail(db, "clear");
	for (size_t i = 0; i < n && !err;) {
		size_t j = i;
		int64_t first = rows[i].when, last = rows[i].when, example = rows[i].core_id;
		size_t olds = 0;
		for (; j < n && strcmp(rows[j].hash, rows[i].hash) == 0; j++) {
			first = rows[j].when < first ? rows[j].when : first;
			last = rows[j].when > last ? rows[j].when : last;
			example = rows[j].core_id < example ? rows[j].core_id : example;
			olds += j == i || rows[j].old_bucket != rows[j - 1].old_bucket;
		}
		res->merged += olds > 1;
		res->after++;
		int64_t id = 0;
		sqlite3_bind_text(st[FIND], 1, rows[i].hash, -1, SQLITE_STATIC);
		if (sqlite3_step(st[FIND]) == SQLITE_ROW)
			id = sqlite3_column_int64(st[FIND], 0);
		sqlite3_reset(st[FIND]);
		sqlite3_stmt *w = id ? st[UPDATE] : st[INSERT];
		int k = 1;
		if (id)
			sqlite3_bind_int64(w, k++, id);
		else
			sqlite3_bind_text(w, k++, rows[i].hash, -1, SQLITE_STATIC);
		sqlite3_bind_text(w, k++, rows[i].text, -1, SQLITE_STATIC);
		sqlite3_bind_int64(w, k++, (sqlite3_int64)(j - i));
		sqlite3_bind_int64(w, k++, first);
		sqlite3_bind_int64(w, k++, last);
		sqlite3_bind_int64(w, k++, example);
		assert(k == sqlite3_bind_parameter_count(w));
		cq_db_bind_text(w, k, version);
		if (sqlite3_step(w) != SQLITE_DONE)
			err = db_fail(db, "write bucket");
		sqlite3_reset(w);
		if (!id)
			id = sqlite3_last_insert_rowid(db);
		for (size_t c = i; c < j && !err; c++) {
			sqlite3_bind_int64(st[FILE_CORE], 1, id);
			sqlite3_bind_int64(st[FILE_CORE], 2, rows[c].core_id);
			if (sqlite3_step(st[FILE_CORE]) != SQLITE_DONE)
				err = db_fail(db, "file core");
			sqlite3_reset(st[FILE_CORE]);
			res->moved += rows[c].old_bucket != id;
		}
		assert(j > i);
		i = j;
	}
	if (!err && sqlite3_step(st[DROP]) != SQLITE_DONE)
		err = db_fail(db, "drop empty buckets");
	for (int i = 0; i < NSQL; i++)
		sqlite3_finalize(st[i]);
	return err;
}

struct cq_error *cq_store_rebucket(struct cq_store *store, const struct cq_bucket_rules *rules,
                                   unsigned nframes, struct cq_store_rebucket_result *out)
{
	assert(store && rules && out);
	memset(out, 0, sizeof(*out));
	sqlite3 *db = cq_store_db(store);
	assert(sqlite3_get_autocommit(db)); /* the re-bucketing is its own transaction */
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return db_fail(db, "begin");
	struct row *rows;
	size_t n;
	struct cq_error *err = read_rows(db, rules, nframes, &rows, &n);
	if (!err) {
		out->cores = n;
		if (n) /* every core may be a hang's, which keeps its bucket */
			qsort(rows, n, sizeof(*rows), by_old);
		for (size_t i = 0; i < n;) {
			size_t j = i, news = 0;
			for (; j < n && rows[j].old_bucket == rows[i].old_bucket; j++)
				news += j == i || strcmp(rows[j].hash, rows[j - 1].hash) != 0;
			out->before += rows[i].old_bucket != 0;
			out->split += rows[i].old_bucket != 0 && news > 1;
			i = j;
		}
		if (n)
			qsort(rows, n, sizeof(*rows), by_hash);
		err = write_buckets(db, rules->version, rows, n, out);
	}
	for (size_t i = 0; i < n; i++)
		free(rows[i].text);
	free(rows);
	if (!err && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		err = db_fail(db, "commit");
	if (err)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return err;
}
