/*
 * migrate.c - apply the embedded schema migrations (see schema.h).
 */
#include "libcore/schema.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

unsigned cq_schema_latest(const char *set)
{
	unsigned latest = 0;
	for (unsigned i = 0; i < cq_schema_migration_count; i++)
		if (strcmp(cq_schema_migrations[i].set, set) == 0 &&
		    cq_schema_migrations[i].version > latest)
			latest = cq_schema_migrations[i].version;
	return latest;
}

static struct cq_error *user_version(sqlite3 *db, unsigned *out)
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
	struct cq_error *err = user_version(db, &now);
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
	struct cq_error *err = user_version(db, &have);
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
