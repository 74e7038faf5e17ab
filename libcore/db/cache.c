/*
 * cache.c - the SQLite cache of per-build-id work (see cache.h).
 */
#include "libcore/db/cache.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "libcore/base/own_file.h"
#include "libcore/base/paths.h"
#include "libcore/db/schema.h"

#define BUSY_TIMEOUT_MS 10000

struct cq_cache {
	sqlite3 *db;
	sqlite3_stmt *get_table, *put_table, *get_symbols, *put_symbols, *get_blob, *put_blob;
	sqlite3_stmt *get_source, *put_source, *get_hint, *put_hint;
	sqlite3_stmt *get_note, *put_note;
	int in_transaction; /* writes since open are batched in one transaction */
	size_t rejected;    /* rows a reader found damaged (cq_cache_reject) */
	size_t failed;      /* writes SQLite refused (the batch's COMMIT included) */
	char why[160];      /* the first refusal's message */
	char *path;
};

static const char *const statements[] = {
    "SELECT blob FROM unwind_tables WHERE source = ? AND format = ?",
    "INSERT OR REPLACE INTO unwind_tables (source, build_id, format, rows, blob, created) "
    "VALUES (?, ?, ?, ?, ?, ?)",
    "SELECT frames FROM symbols WHERE source = ? AND address = ? AND debuginfo = ? "
    "AND format = ?",
    "INSERT OR REPLACE INTO symbols (source, build_id, address, debuginfo, format, frames) "
    "VALUES (?, ?, ?, ?, ?, ?)",
    "SELECT blob FROM runtime_blobs WHERE source = ? AND runtime = ? AND name = ? "
    "AND format = ?",
    "INSERT OR REPLACE INTO runtime_blobs (source, build_id, runtime, name, format, blob, "
    "created) VALUES (?, ?, ?, ?, ?, ?, ?)",
    "SELECT id FROM sources WHERE build_id = ? AND identity = ?",
    "INSERT OR IGNORE INTO sources (build_id, identity, created) VALUES (?, ?, ?)",
    "SELECT reads_heap FROM stream_hints WHERE build_id = ?",
    "INSERT OR REPLACE INTO stream_hints (build_id, reads_heap, created) VALUES (?, 1, ?)",
    "SELECT note FROM scan_notes WHERE build_id = ?",
    "INSERT OR REPLACE INTO scan_notes (build_id, note, created) VALUES (?, ?, ?)",
};

char *cq_cache_default_path(void)
{
	return cq_path_default("COREQ_CACHE", "cache", "XDG_CACHE_HOME", ".cache", "cache.db");
}

struct cq_error *cq_cache_open(const char *path, struct cq_cache **out)
{
	*out = NULL;
	struct cq_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return &cq_error_nomem;
	if (!(c->path = strdup(path))) {
		free(c);
		return &cq_error_nomem;
	}
	/* A cache someone else could write may name any file's functions: not read. */
	struct cq_error *err = cq_path_make_parent_dirs(path);
	char *real = NULL;
	if (!err && (err = cq_own_file_check(path, &real)))
		err = cq_error_prefix(err, "not your own cache");
	if (!err)
		err = cq_db_open(real, "cache", BUSY_TIMEOUT_MS, &c->db);
	free(real);
	if (err) {
		free(c->path);
		free(c);
		return err;
	}
	sqlite3_stmt **slots[] = {&c->get_table, &c->put_table, &c->get_symbols, &c->put_symbols,
	                          &c->get_blob,  &c->put_blob,  &c->get_source,  &c->put_source,
	                          &c->get_hint,  &c->put_hint,  &c->get_note,    &c->put_note};
	for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
		if (sqlite3_prepare_v2(c->db, statements[i], -1, slots[i], NULL) != SQLITE_OK) {
			err =
			    cq_error_create(CQ_ERR_DB, "cache %s: %s", path, sqlite3_errmsg(c->db));
			goto fail;
		}
	}
	*out = c;
	return NULL;
fail:
	cq_error_free(cq_cache_close(c));
	return err;
}

/* Counts a write SQLite refused, keeping the first reason. */
static void write_failed(struct cq_cache *c)
{
	if (c->failed++ == 0)
		snprintf(c->why, sizeof(c->why), "%s", sqlite3_errmsg(c->db));
}

struct cq_error *cq_cache_close(struct cq_cache *c)
{
	if (!c)
		return NULL;
	if (c->in_transaction && sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		write_failed(c);
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
	}
	struct cq_error *err =
	    c->failed
	        ? cq_error_create(CQ_ERR_DB, "%zu cache write%s failed (%s): entries not kept",
	                          c->failed, c->failed == 1 ? "" : "s", c->why)
	        : NULL;
	sqlite3_finalize(c->get_table);
	sqlite3_finalize(c->put_table);
	sqlite3_finalize(c->get_symbols);
	sqlite3_finalize(c->put_symbols);
	sqlite3_finalize(c->get_blob);
	sqlite3_finalize(c->put_blob);
	sqlite3_finalize(c->get_source);
	sqlite3_finalize(c->put_source);
	sqlite3_finalize(c->get_hint);
	sqlite3_finalize(c->put_hint);
	sqlite3_finalize(c->get_note);
	sqlite3_finalize(c->put_note);
	sqlite3_close(c->db);
	free(c->path);
	free(c);
	return err;
}

void cq_cache_reject(struct cq_cache *c)
{
	if (c)
		c->rejected++;
}

size_t cq_cache_rejected(const struct cq_cache *c)
{
	return c ? c->rejected : 0;
}

const char *cq_cache_path(const struct cq_cache *c)
{
	return c->path;
}

/* Runs a bound SELECT of one blob column; a malloc'd copy or NULL. */
static uint8_t *fetch_blob(struct cq_cache *c, sqlite3_stmt *st, size_t *len)
{
	uint8_t *copy = NULL;
	if (sqlite3_step(st) == SQLITE_ROW) {
		int n = sqlite3_column_bytes(st, 0);
		const void *blob = sqlite3_column_blob(st, 0);
		if (sqlite3_column_type(st, 0) != SQLITE_BLOB || !blob || n <= 0)
			c->rejected++; /* a row that is no blob: rebuilt by the caller */
		else if ((copy = malloc((size_t)n))) {
			memcpy(copy, blob, (size_t)n);
			*len = (size_t)n;
		}
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return copy;
}

/* Runs a bound write inside the handle's batch transaction; false if it failed. */
static bool run_write(struct cq_cache *c, sqlite3_stmt *st)
{
	if (!c->in_transaction)
		c->in_transaction = sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
	bool done = sqlite3_step(st) == SQLITE_DONE;
	if (!done)
		write_failed(c);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return done;
}

/*
 * The sources row of key, looked up once (key->source then holds it, or -1
 * when there is none); with create, a missing row is added.  False when
 * there is no row to read or write under.
 */
static bool key_source(struct cq_cache *c, struct cq_cache_key *key, bool create)
{
	if (!key->build_id || !key->build_id[0] || !key->identity || !key->identity_len ||
	    key->identity_len > INT_MAX)
		return false;
	for (int pass = 0; key->source <= 0 && pass < 2; pass++) {
		if (key->source == 0 || pass == 1) {
			sqlite3_stmt *st = c->get_source;
			sqlite3_bind_text(st, 1, key->build_id, -1, SQLITE_STATIC);
			sqlite3_bind_blob(st, 2, key->identity, (int)key->identity_len,
			                  SQLITE_STATIC);
			key->source =
			    sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
			sqlite3_reset(st);
			sqlite3_clear_bindings(st);
			if (key->source <= 0)
				key->source = -1;
		}
		if (key->source > 0 || !create || pass == 1)
			break;
		/* Added here, or by another handle since the lookup: found by the second pass. */
		sqlite3_stmt *st = c->put_source;
		sqlite3_bind_text(st, 1, key->build_id, -1, SQLITE_STATIC);
		sqlite3_bind_blob(st, 2, key->identity, (int)key->identity_len, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, (sqlite3_int64)time(NULL));
		if (!run_write(c, st))
			break;
	}
	return key->source > 0;
}

uint8_t *cq_cache_get_table(struct cq_cache *c, struct cq_cache_key *key, unsigned format,
                            size_t *len)
{
	if (!key_source(c, key, false))
		return NULL;
	sqlite3_stmt *st = c->get_table;
	sqlite3_bind_int64(st, 1, key->source);
	sqlite3_bind_int(st, 2, (int)format);
	return fetch_blob(c, st, len);
}

void cq_cache_put_table(struct cq_cache *c, struct cq_cache_key *key, unsigned format,
                        unsigned rows, const uint8_t *blob, size_t len)
{
	if (!key_source(c, key, true))
		return;
	sqlite3_stmt *st = c->put_table;
	sqlite3_bind_int64(st, 1, key->source);
	sqlite3_bind_text(st, 2, key->build_id, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 3, (int)format);
	sqlite3_bind_int64(st, 4, rows);
	sqlite3_bind_blob64(st, 5, blob, len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, (sqlite3_int64)time(NULL));
	run_write(c, st);
}

uint8_t *cq_cache_get_symbols(struct cq_cache *c, struct cq_cache_key *key, uint64_t address,
                              int debuginfo, unsigned format, size_t *len)
{
	if (!key_source(c, key, false))
		return NULL;
	sqlite3_stmt *st = c->get_symbols;
	sqlite3_bind_int64(st, 1, key->source);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)address);
	sqlite3_bind_int(st, 3, debuginfo);
	sqlite3_bind_int(st, 4, (int)format);
	return fetch_blob(c, st, len);
}

void cq_cache_put_symbols(struct cq_cache *c, struct cq_cache_key *key, uint64_t address,
                          int debuginfo, unsigned format, const uint8_t *blob, size_t len)
{
	if (!key_source(c, key, true))
		return;
	sqlite3_stmt *st = c->put_symbols;
	sqlite3_bind_int64(st, 1, key->source);
	sqlite3_bind_text(st, 2, key->build_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)address);
	sqlite3_bind_int(st, 4, debuginfo);
	sqlite3_bind_int(st, 5, (int)format);
	sqlite3_bind_blob64(st, 6, blob, len, SQLITE_STATIC);
	run_write(c, st);
}

uint8_t *cq_cache_get_blob(struct cq_cache *c, struct cq_cache_key *key, const char *runtime,
                           const char *name, unsigned format, size_t *len)
{
	if (!runtime || !name || !key_source(c, key, false))
		return NULL;
	sqlite3_stmt *st = c->get_blob;
	sqlite3_bind_int64(st, 1, key->source);
	sqlite3_bind_text(st, 2, runtime, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 4, (int)format);
	return fetch_blob(c, st, len);
}

void cq_cache_put_blob(struct cq_cache *c, struct cq_cache_key *key, const char *runtime,
                       const char *name, unsigned format, const uint8_t *blob, size_t len)
{
	if (!runtime || !name || !key_source(c, key, true))
		return;
	sqlite3_stmt *st = c->put_blob;
	sqlite3_bind_int64(st, 1, key->source);
	sqlite3_bind_text(st, 2, key->build_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, runtime, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, name, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 5, (int)format);
	sqlite3_bind_blob64(st, 6, blob, len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 7, (sqlite3_int64)time(NULL));
	run_write(c, st);
}

bool cq_cache_reads_heap(struct cq_cache *c, const char *exe_build_id)
{
	if (!c || !exe_build_id || !*exe_build_id)
		return false;
	sqlite3_bind_text(c->get_hint, 1, exe_build_id, -1, SQLITE_STATIC);
	bool yes =
	    sqlite3_step(c->get_hint) == SQLITE_ROW && sqlite3_column_int64(c->get_hint, 0) != 0;
	sqlite3_reset(c->get_hint);
	sqlite3_clear_bindings(c->get_hint);
	return yes;
}

void cq_cache_put_reads_heap(struct cq_cache *c, const char *exe_build_id)
{
	if (!c || !exe_build_id || !*exe_build_id)
		return;
	sqlite3_bind_text(c->put_hint, 1, exe_build_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(c->put_hint, 2, (sqlite3_int64)time(NULL));
	run_write(c, c->put_hint);
}

char *cq_cache_scan_note(struct cq_cache *c, const char *exe_build_id)
{
	if (!c || !exe_build_id || !*exe_build_id)
		return NULL;
	char *note = NULL;
	sqlite3_bind_text(c->get_note, 1, exe_build_id, -1, SQLITE_STATIC);
	if (sqlite3_step(c->get_note) == SQLITE_ROW &&
	    sqlite3_column_type(c->get_note, 0) == SQLITE_TEXT) {
		const unsigned char *t = sqlite3_column_text(c->get_note, 0);
		int n = sqlite3_column_bytes(c->get_note, 0);
		if (t && (size_t)n == strlen((const char *)t) && (note = malloc((size_t)n + 1)))
			memcpy(note, t, (size_t)n + 1);
	}
	sqlite3_reset(c->get_note);
	sqlite3_clear_bindings(c->get_note);
	return note;
}

void cq_cache_put_scan_note(struct cq_cache *c, const char *exe_build_id, const char *note)
{
	if (!c || !exe_build_id || !*exe_build_id || !note)
		return;
	sqlite3_bind_text(c->put_note, 1, exe_build_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(c->put_note, 2, note, -1, SQLITE_STATIC);
	sqlite3_bind_int64(c->put_note, 3, (sqlite3_int64)time(NULL));
	run_write(c, c->put_note);
}
