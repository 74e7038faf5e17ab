/*
 * migrate.c - open coreq's SQLite files and apply the embedded schema
 * migrations (see schema.h).
 */
#include "libcore/db/schema.h"

#include <errno.h>
#include <libgen.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcore/base/paths.h"

unsigned cq_schema_latest(const char *set)
{
	unsigned latest = 0;
	for (unsigned i = 0; i < cq_schema_migration_count; i++)
		if (strcmp(cq_schema_migrations[i].set, set) == 0 &&
		    cq_schema_migrations[i].version > latest)
			latest = cq_schema_migrations[i].version;
	return latest;
}

struct cq_error *cq_store_user_version(sqlite3 *db, unsigned *out)
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
	char pragma[64];
	snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %u;", m->version);
	char *msg = NULL;
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, &msg) != SQLITE_OK)
		goto fail;
	/* Another process may have migrated while we waited for the lock. */
	unsigned now;
	struct cq_error *err = cq_store_user_version(db, &now);
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

struct cq_error *cq_store_migrate(sqlite3 *db, const char *set)
{
	unsigned have;
	struct cq_error *err = cq_store_user_version(db, &have);
	if (err)
		return err;
	unsigned latest = cq_schema_latest(set);
	if (have > latest)
		return cq_error_create(CQ_ERR_UNSUPPORTED,
		                       "database schema version %u is newer than this coreq "
		                       "understands (%u); upgrade coreq",
		                       have, latest);
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

static bool damaged(sqlite3 *db)
{
	int code = sqlite3_extended_errcode(db) & 0xff;
	return code == SQLITE_CORRUPT || code == SQLITE_NOTADB;
}

struct cq_error *cq_db_error(sqlite3 *db, const char *what)
{
	const char *sep = what && *what ? ": " : "";
	if (damaged(db)) {
		const char *path = sqlite3_db_filename(db, "main");
		return cq_error_create(CQ_ERR_DB,
		                       "%s%sdamaged database (%s); recover what it holds with "
		                       "`sqlite3 %s .recover | sqlite3 NEW.db`, or move it aside",
		                       what ? what : "", sep, sqlite3_errmsg(db),
		                       path && *path ? path : "FILE");
	}
	return cq_error_create(CQ_ERR_DB, "%s%s%s", what ? what : "", sep, sqlite3_errmsg(db));
}

struct cq_error *cq_store_open_sqlite(const char *path, const char *set, int busy_ms, sqlite3 **out)
{
	*out = NULL;
	struct cq_error *err = cq_path_make_parent_dirs(path);
	if (err)
		return err;
	sqlite3 *db = NULL;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
	    SQLITE_OK) {
		err = cq_error_create(CQ_ERR_DB, "cannot open: %s",
		                      db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		return err;
	}
	sqlite3_busy_timeout(db, busy_ms);
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
	    (err = cq_store_migrate(db, set))) {
		if (!err || (err->code == CQ_ERR_DB && damaged(db))) {
			cq_error_free(err);
			err = cq_db_error(db, NULL);
		}
		sqlite3_close(db);
		return err;
	}
	*out = db;
	return NULL;
}

/* Opens path read-only; a WAL file in a place without write access is read immutable. */
static struct cq_error *open_read_only(const char *path, const char *set, int busy_ms,
                                       sqlite3 **out)
{
	static const char *const uris[] = {"file:%s?mode=ro", "file:%s?immutable=1"};
	struct cq_error *err = NULL;
	for (size_t i = 0; i < sizeof(uris) / sizeof(uris[0]); i++) {
		cq_error_free(err);
		err = NULL;
		char *uri = sqlite3_mprintf(uris[i], path);
		sqlite3 *db = NULL;
		int rc =
		    uri ? sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL)
		        : SQLITE_NOMEM;
		sqlite3_free(uri);
		unsigned have = 0;
		if (rc == SQLITE_OK) {
			sqlite3_busy_timeout(db, busy_ms);
			err = cq_store_user_version(db, &have);
		} else {
			err = cq_error_create(CQ_ERR_DB, "cannot open: %s",
			                      db ? sqlite3_errmsg(db) : "out of memory");
		}
		if (!err && have != cq_schema_latest(set))
			err = have > cq_schema_latest(set)
			          ? cq_store_migrate(db, set) /* says: newer than this coreq */
			          : cq_error_create(
			                CQ_ERR_UNSUPPORTED,
			                "read-only database of schema %u, this coreq needs %u: "
			                "open it once where it can be written",
			                have, cq_schema_latest(set));
		if (!err) {
			*out = db;
			return NULL;
		}
		if (err->code == CQ_ERR_DB && damaged(db)) {
			cq_error_free(err);
			err = cq_db_error(db, NULL);
			sqlite3_close(db);
			return err;
		}
		sqlite3_close(db);
		if (err->code != CQ_ERR_DB)
			return err;
	}
	return err;
}

struct cq_error *cq_store_open_existing(const char *path, const char *set, int busy_ms,
                                        sqlite3 **out)
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
			return cq_store_open_sqlite(path, set, busy_ms, out);
	}
	return open_read_only(path, set, busy_ms, out);
}
