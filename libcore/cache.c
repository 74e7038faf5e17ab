/*
 * cache.c - the SQLite cache of per-build-id work (see cache.h).
 */
#include "libcore/cache.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "libcore/schema.h"

struct cq_cache {
	sqlite3 *db;
	sqlite3_stmt *get_table, *put_table;
};

char *cq_store_cache_default_path(void)
{
	const char *env = getenv("COREQ_CACHE");
	if (env && *env)
		return strdup(env);
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char *p = NULL;
	if (xdg && *xdg) {
		if (asprintf(&p, "%s/coreq/cache.db", xdg) < 0)
			p = NULL;
	} else if (home && *home) {
		if (asprintf(&p, "%s/.cache/coreq/cache.db", home) < 0)
			p = NULL;
	}
	return p;
}

/* mkdir -p of the directory part of path. */
static struct cq_error *make_parent_dirs(const char *path)
{
	char *dir = strdup(path);
	if (!dir)
		return &cq_error_nomem;
	char *slash = strrchr(dir, '/');
	struct cq_error *err = NULL;
	if (slash && slash != dir) {
		*slash = '\0';
		for (char *p = dir + 1; *p && !err; p++) {
			if (*p != '/')
				continue;
			*p = '\0';
			if (mkdir(dir, 0755) < 0 && errno != EEXIST)
				err = cq_error_errno(errno, "cannot create %s", dir);
			*p = '/';
		}
		if (!err && mkdir(dir, 0755) < 0 && errno != EEXIST)
			err = cq_error_errno(errno, "cannot create %s", dir);
	}
	free(dir);
	return err;
}

struct cq_error *cq_store_cache_open(const char *path, struct cq_cache **out)
{
	*out = NULL;
	struct cq_error *err = make_parent_dirs(path);
	if (err)
		return err;
	struct cq_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return &cq_error_nomem;
	if (sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
	    SQLITE_OK) {
		err = cq_error_create(CQ_ERR_DB, "cannot open cache %s: %s", path,
				      sqlite3_errmsg(c->db));
		goto fail;
	}
	sqlite3_busy_timeout(c->db, 10000);
	sqlite3_exec(c->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
	if ((err = cq_store_migrate(c->db, "cache")))
		goto fail;
	if (sqlite3_prepare_v2(c->db,
			       "SELECT blob FROM unwind_tables WHERE build_id = ? AND format = ?",
			       -1, &c->get_table, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(c->db,
			       "INSERT OR REPLACE INTO unwind_tables "
			       "(build_id, format, rows, blob, created) VALUES (?, ?, ?, ?, ?)",
			       -1, &c->put_table, NULL) != SQLITE_OK) {
		err = cq_error_create(CQ_ERR_DB, "cache %s: %s", path, sqlite3_errmsg(c->db));
		goto fail;
	}
	*out = c;
	return NULL;
fail:
	cq_store_cache_close(c);
	return err;
}

void cq_store_cache_close(struct cq_cache *c)
{
	if (!c)
		return;
	sqlite3_finalize(c->get_table);
	sqlite3_finalize(c->put_table);
	sqlite3_close(c->db);
	free(c);
}

uint8_t *cq_store_cache_get_table(struct cq_cache *c, const char *build_id, unsigned format,
				  size_t *len)
{
	uint8_t *copy = NULL;
	sqlite3_stmt *st = c->get_table;
	sqlite3_bind_text(st, 1, build_id, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, (int)format);
	if (sqlite3_step(st) == SQLITE_ROW) {
		int n = sqlite3_column_bytes(st, 0);
		const void *blob = sqlite3_column_blob(st, 0);
		if (blob && n > 0 && (copy = malloc((size_t)n))) {
			memcpy(copy, blob, (size_t)n);
			*len = (size_t)n;
		}
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return copy;
}

void cq_store_cache_put_table(struct cq_cache *c, const char *build_id, unsigned format,
			      unsigned rows, const uint8_t *blob, size_t len)
{
	sqlite3_stmt *st = c->put_table;
	sqlite3_bind_text(st, 1, build_id, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, (int)format);
	sqlite3_bind_int64(st, 3, rows);
	sqlite3_bind_blob64(st, 4, blob, len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)time(NULL));
	sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}
