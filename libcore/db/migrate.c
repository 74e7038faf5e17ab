/*
 * migrate.c - open coreq's SQLite files and apply the embedded schema
 * migrations (see schema.h).
 *
 * Invariants (asserted): a set is "db" or "cache"; each migration runs in
 * its own transaction, so none is open when migrating starts.
 */
#include "libcore/db/schema.h"

#include <assert.h>
#include <errno.h>
#include <libgen.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcore/base/paths.h"
#include "libcore/db/db_error.h"
#include "libcore/db/guard.h"

struct cq_error *cq_db_user_version(sqlite3 *db, unsigned *out)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
		return cq_error_create(CQ_ERR_DB, "%s", sqlite3_errmsg(db));
	int rc = sqlite3_step(st);
	*out = rc == SQLITE_ROW ? (unsigned)sqlite3_column_int(st, 0) : 0;
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return cq_error_create(CQ_ERR_DB, "%s", sqlite3_errmsg(db));
	return NULL;
}

static struct cq_error *apply(sqlite3 *db, const struct cq_schema_migration *m)
{
	assert(m && m->version >= 1 && m->sql && sqlite3_get_autocommit(db));
	char pragma[64];
	snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %u;", m->version);
	char *msg = NULL;
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, &msg) != SQLITE_OK)
		goto fail;
	/* Another process may have migrated while we waited for the lock. */
	unsigned now;
	struct cq_error *err = cq_db_user_version(db, &now);
	if (err) {
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		return err;
	}
	if (now >= m->version)
		return sqlite3_exec(db, "COMMIT", NULL, NULL, &msg) == SQLITE_OK
		           ? NULL
		           : cq_error_create(CQ_ERR_DB, "%s", msg ? msg : "commit failed");
	if (sqlite3_exec(db, m->sql, NULL, NULL, &msg) != SQLITE_OK ||
	    sqlite3_exec(db, pragma, NULL, NULL, &msg) != SQLITE_OK ||
	    sqlite3_exec(db, "COMMIT", NULL, NULL, &msg) != SQLITE_OK)
		goto fail;
	return NULL;
fail:
	err =
	    cq_error_create(CQ_ERR_DB, "migration %s: %s", m->name, msg ? msg : sqlite3_errmsg(db));
	sqlite3_free(msg);
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return err;
}

static bool known_set(const char *set)
{
	return set && (strcmp(set, "db") == 0 || strcmp(set, "cache") == 0);
}

/* Whether set holds only what can be computed again (schema.h). */
static bool derived(const char *set)
{
	return strcmp(set, "cache") == 0;
}

/* Whether a file of set at version predates the set's baseline (schema.h). */
static bool before_baseline(const char *set, unsigned version)
{
	return version > 0 && version < cq_schema_baseline(set);
}

/* Drops every table, view and trigger of db but SQLite's own, in the open transaction. */
static struct cq_error *drop_all(sqlite3 *db)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db,
	                       "SELECT type, name FROM sqlite_schema WHERE type IN "
	                       "('table', 'view', 'trigger') AND name NOT LIKE 'sqlite!_%' "
	                       "ESCAPE '!' ORDER BY type = 'table'",
	                       -1, &st, NULL) != SQLITE_OK)
		return cq_db_error(db, "cannot empty an older cache");
	sqlite3_str *drops = sqlite3_str_new(db);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *type = (const char *)sqlite3_column_text(st, 0);
		const char *name = (const char *)sqlite3_column_text(st, 1);
		if (type && name)
			sqlite3_str_appendf(drops, "DROP %s IF EXISTS \"%w\";",
			                    strcmp(type, "table") == 0  ? "TABLE"
			                    : strcmp(type, "view") == 0 ? "VIEW"
			                                                : "TRIGGER",
			                    name);
	}
	struct cq_error *err =
	    rc == SQLITE_DONE ? NULL : cq_db_error(db, "cannot empty an older cache");
	sqlite3_finalize(st);
	char *sql = sqlite3_str_finish(drops);
	if (!err && !sql)
		err = &cq_error_nomem;
	/* Tables go in any order: the references between them are checked at COMMIT. */
	if (!err &&
	    sqlite3_exec(db, "PRAGMA defer_foreign_keys = ON", NULL, NULL, NULL) != SQLITE_OK)
		err = cq_db_error(db, "cannot empty an older cache");
	if (!err && sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		err = cq_db_error(db, "cannot empty an older cache");
	sqlite3_free(sql);
	return err;
}

/*
 * Empties a cache file older than the baseline, so that the baseline makes
 * it again: the version is read again under the write lock (another process
 * may have done it meanwhile), and the drops and user_version 0 commit as one.
 */
static struct cq_error *empty_older(sqlite3 *db, const char *set)
{
	assert(derived(set) && sqlite3_get_autocommit(db));
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return cq_db_error(db, "cannot empty an older cache");
	unsigned now;
	struct cq_error *err = cq_db_user_version(db, &now);
	if (!err && before_baseline(set, now) && !(err = drop_all(db)) &&
	    sqlite3_exec(db, "PRAGMA user_version = 0", NULL, NULL, NULL) != SQLITE_OK)
		err = cq_db_error(db, "cannot empty an older cache");
	if (!err && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		err = cq_db_error(db, "cannot empty an older cache");
	if (err)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return err;
}

struct cq_error *cq_db_migrate(sqlite3 *db, const char *set)
{
	assert(db && known_set(set) && sqlite3_get_autocommit(db));
	unsigned have;
	struct cq_error *err = cq_db_user_version(db, &have);
	if (err)
		return err;
	unsigned latest = cq_schema_latest(set);
	if (have > latest)
		return cq_error_create(CQ_ERR_UNSUPPORTED,
		                       "database schema version %u is newer than this coreq "
		                       "understands (%u); upgrade coreq",
		                       have, latest);
	if (before_baseline(set, have)) {
		if (!derived(set))
			return cq_error_create(CQ_ERR_UNSUPPORTED,
			                       "database schema version %u is older than any this "
			                       "coreq can upgrade (%u)",
			                       have, cq_schema_baseline(set));
		if ((err = empty_older(db, set)) || (err = cq_db_user_version(db, &have)))
			return err;
	}
	for (unsigned v = have + 1; v <= latest; v++) {
		for (unsigned i = 0; i < cq_schema_migration_count; i++) {
			const struct cq_schema_migration *m = &cq_schema_migrations[i];
			if (m->version == v && strcmp(m->set, set) == 0 && (err = apply(db, m)))
				return err;
		}
	}
	return NULL;
}

/* PRAGMA journal_mode=WAL, retried on SQLITE_BUSY until busy_ms have passed. */
static struct cq_error *enable_wal(sqlite3 *db, int busy_ms)
{
	const int pause_ms = 20;
	for (int waited = 0;; waited += pause_ms) {
		int rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
		if (rc == SQLITE_OK)
			return NULL;
		if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || waited >= busy_ms)
			return cq_error_create(CQ_ERR_DB, "%s", sqlite3_errmsg(db));
		sqlite3_sleep(pause_ms);
	}
}

/* Opens path (never read as a URI) with flags and "?params", guarded (guard.h). */
static struct cq_error *open_guarded(const char *path, const char *params, int flags, int busy_ms,
                                     sqlite3 **out)
{
	*out = NULL;
	char *uri = cq_db_uri(path, params);
	if (!uri)
		return &cq_error_nomem;
	sqlite3 *db = NULL;
	int rc = sqlite3_open_v2(uri, &db, flags | SQLITE_OPEN_URI, NULL);
	sqlite3_free(uri);
	struct cq_error *err = NULL;
	if (rc != SQLITE_OK)
		err = cq_error_create(CQ_ERR_DB, "cannot open: %s",
		                      db ? sqlite3_errmsg(db) : "out of memory");
	else
		err = cq_db_guard(db);
	if (err) {
		sqlite3_close(db);
		return err;
	}
	sqlite3_busy_timeout(db, busy_ms);
	sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0); /* only merge attaches, and says so */
	*out = db;
	return NULL;
}

/*
 * The file's schema version, and its objects checked against what coreq's
 * migrations make at that version (guard.h), read in one transaction.  A
 * version newer than this coreq, or older than the set's baseline (a cache
 * that migrating empties), is returned unchecked.
 */
static struct cq_error *check_file(sqlite3 *db, const char *set, unsigned *have)
{
	*have = 0;
	if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return cq_db_error(db, NULL);
	struct cq_error *err = cq_db_user_version(db, have);
	if (!err && *have <= cq_schema_latest(set) && !before_baseline(set, *have))
		err = cq_db_schema_check(db, "main", set, *have);
	if (err && err->code == CQ_ERR_DB && cq_db_damaged(db)) {
		cq_error_free(err);
		err = cq_db_error(db, NULL);
	}
	sqlite3_exec(db, err ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL);
	return err;
}

static struct cq_error *newer(unsigned have, const char *set)
{
	return cq_error_create(CQ_ERR_UNSUPPORTED,
	                       "database schema version %u is newer than this coreq "
	                       "understands (%u); upgrade coreq",
	                       have, cq_schema_latest(set));
}

struct cq_error *cq_db_open(const char *path, const char *set, int busy_ms, sqlite3 **out)
{
	assert(path && known_set(set) && out);
	*out = NULL;
	struct cq_error *err = cq_path_make_parent_dirs(path);
	if (err)
		return err;
	sqlite3 *db;
	if ((err = open_guarded(path, NULL, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, busy_ms,
	                        &db)))
		return err;
	unsigned have;
	if ((err = check_file(db, set, &have)) ||
	    (have > cq_schema_latest(set) && (err = newer(have, set)))) {
		sqlite3_close(db);
		return err;
	}
	bool cache = strcmp(set, "cache") == 0; /* derived data: see schema.h */
	if (cache && sqlite3_exec(db, "PRAGMA synchronous=OFF", NULL, NULL, NULL) != SQLITE_OK) {
		err = cq_db_error(db, NULL);
		sqlite3_close(db);
		return err;
	}
	if ((err = enable_wal(db, busy_ms)) ||
	    sqlite3_exec(db,
	                 cache ? "PRAGMA foreign_keys=ON"
	                       : "PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL",
	                 NULL, NULL, NULL) != SQLITE_OK ||
	    (err = cq_db_migrate(db, set))) {
		if (!err || (err->code == CQ_ERR_DB && cq_db_damaged(db))) {
			cq_error_free(err);
			err = cq_db_error(db, NULL);
		}
		sqlite3_close(db);
		return err;
	}
	*out = db;
	return NULL;
}

/* Whether db holds no schema object at all (an empty file). */
static bool is_empty(sqlite3 *db)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &st, NULL) !=
	    SQLITE_OK)
		return false;
	bool empty = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) == 0;
	sqlite3_finalize(st);
	return empty;
}

/* A database of the newest schema of set in memory, holding nothing. */
static struct cq_error *empty_database(const char *set, sqlite3 **out)
{
	*out = NULL;
	sqlite3 *db = NULL;
	if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		sqlite3_close(db);
		return &cq_error_nomem;
	}
	struct cq_error *err = cq_db_guard(db);
	if (!err)
		err = cq_db_migrate(db, set);
	if (err)
		sqlite3_close(db);
	else
		*out = db;
	return err;
}

struct cq_error *cq_db_open_read_only(const char *path, const char *set, int busy_ms, sqlite3 **out)
{
	*out = NULL;
	if (access(path, F_OK) != 0)
		return errno == ENOENT ? cq_error_create(CQ_ERR_NOT_FOUND, "no such database")
		                       : cq_error_errno(errno, "cannot open");
	/* A WAL file in a place without write access can only be read immutable. */
	static const char *const params[] = {"mode=ro", "immutable=1"};
	struct cq_error *err = NULL;
	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++) {
		cq_error_free(err);
		sqlite3 *db;
		if ((err = open_guarded(path, params[i], SQLITE_OPEN_READONLY, busy_ms, &db)))
			continue;
		unsigned have = 0, latest = cq_schema_latest(set);
		if (!(err = check_file(db, set, &have)) && have == 0 && is_empty(db)) {
			/* An empty file is an empty database: answered from one in memory. */
			sqlite3_close(db);
			return empty_database(set, out);
		}
		if (!err && have != latest)
			err = have > latest
			          ? newer(have, set)
			          : cq_error_create(CQ_ERR_UNSUPPORTED,
			                            "database schema version %u is older than this "
			                            "coreq's (%u), and reading never upgrades it: "
			                            "upgrade it with `coreq merge --db %s`",
			                            have, latest, path);
		if (!err) {
			*out = db;
			return NULL;
		}
		sqlite3_close(db);
		if (err->code != CQ_ERR_DB || strstr(err->message, "damaged database"))
			return err;
	}
	return err;
}

struct cq_error *cq_db_open_existing(const char *path, const char *set, int busy_ms, sqlite3 **out)
{
	*out = NULL;
	if (access(path, F_OK) != 0)
		return errno == ENOENT ? cq_error_create(CQ_ERR_NOT_FOUND, "no such database")
		                       : cq_error_errno(errno, "cannot open");
	if (access(path, W_OK) == 0) {
		/* WAL needs to write its -wal and -shm files next to the database. */
		char *copy = strdup(path);
		if (!copy)
			return &cq_error_nomem;
		bool dir_writable = access(dirname(copy), W_OK) == 0;
		free(copy);
		if (dir_writable)
			return cq_db_open(path, set, busy_ms, out);
	}
	return cq_db_open_read_only(path, set, busy_ms, out);
}
