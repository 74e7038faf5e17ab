/*
 * test_migrate.c - the schema migrations and the ways a coreq SQLite file
 * is opened (libcore/db/schema.h, db/migrate.c): each set's migrations are
 * the schema/ files, numbered baseline..latest in order (the database's
 * baseline is 1; the cache's is where its history starts);
 * migrating a fresh or a
 * half-migrated database brings it to the newest version; a database newer
 * than this binary is refused and left alone; a read-only open never
 * creates, migrates or writes a file, and refuses an older schema (saying
 * how to upgrade) and a newer one ("upgrade coreq"); an open of an existing
 * file never creates one.
 *
 * Files tested: libcore/db/migrate.c, libcore/db/schema.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "libcore/db/schema.h"
#include "tests/unit/corpus.h"

/* How many schema/ files a set has (db: NNN_*.sql, cache: cache_NNN_*.sql). */
static unsigned files_of(const char *pattern)
{
	const char *root = getenv("COREQ_ROOT");
	char pat[600];
	snprintf(pat, sizeof(pat), "%s/schema/%s", root && *root ? root : ".", pattern);
	glob_t g;
	unsigned n = glob(pat, 0, NULL, &g) == 0 ? (unsigned)g.gl_pathc : 0;
	globfree(&g);
	return n;
}

static void test_migrations_are_the_files_in_order(void **state)
{
	(void)state;
	unsigned db = files_of("[0-9][0-9][0-9]_*.sql"), cache = files_of("cache_[0-9]*.sql");
	if (!db || !cache) {
		fprintf(stderr, "# no schema/ directory here (COREQ_ROOT): counts not checked\n");
	} else {
		assert_int_equal(cq_schema_latest("db"), db);
		assert_int_equal(cq_schema_latest("cache") - cq_schema_baseline("cache") + 1,
		                 cache); /* derived data: a baseline and what came after it */
	}
	assert_int_equal(cq_schema_latest("nonsense"), 0);
	assert_int_equal(cq_schema_baseline("db"), 1);
	assert_int_equal(cq_schema_baseline("cache"), cq_schema_latest("cache"));
	unsigned next_db = 1, next_cache = cq_schema_baseline("cache");
	for (unsigned i = 0; i < cq_schema_migration_count; i++) {
		const struct cq_schema_migration *m = &cq_schema_migrations[i];
		unsigned *next = strcmp(m->set, "db") == 0 ? &next_db : &next_cache;
		assert_true(strcmp(m->set, "db") == 0 || strcmp(m->set, "cache") == 0);
		assert_int_equal(m->version, *next);
		assert_non_null(m->sql);
		(*next)++;
	}
	assert_int_equal(next_db - 1, cq_schema_latest("db"));
	assert_int_equal(next_cache - 1, cq_schema_latest("cache"));
}

static unsigned version(sqlite3 *db)
{
	unsigned v = 0;
	assert_null(cq_db_user_version(db, &v));
	return v;
}

/* Applies set's migrations 1..upto by hand, as an older coreq did. */
static void migrate_to(sqlite3 *db, const char *set, unsigned upto)
{
	for (unsigned i = 0; i < cq_schema_migration_count; i++) {
		const struct cq_schema_migration *m = &cq_schema_migrations[i];
		if (strcmp(m->set, set) != 0 || m->version > upto)
			continue;
		char *msg = NULL;
		if (sqlite3_exec(db, m->sql, NULL, NULL, &msg) != SQLITE_OK)
			fail_msg("%s %u: %s", set, m->version, msg);
		char pragma[64];
		snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %u", m->version);
		assert_int_equal(sqlite3_exec(db, pragma, NULL, NULL, NULL), SQLITE_OK);
	}
}

static bool has_table(sqlite3 *db, const char *name)
{
	sqlite3_stmt *st;
	assert_int_equal(
	    sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
	                       -1, &st, NULL),
	    SQLITE_OK);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	bool yes = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return yes;
}

static void test_migrate_fresh_half_and_newer(void **state)
{
	(void)state;
	for (int s = 0; s < 2; s++) {
		const char *set = s ? "cache" : "db";
		sqlite3 *db;
		assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
		assert_null(cq_db_migrate(db, set));
		assert_int_equal(version(db), cq_schema_latest(set));
		assert_null(cq_db_migrate(db, set)); /* again: nothing to do */
		sqlite3_close(db);

		assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
		unsigned first = cq_schema_baseline(set);
		migrate_to(db, set, first);
		assert_int_equal(version(db), first);
		assert_null(cq_db_migrate(db, set));
		assert_int_equal(version(db), cq_schema_latest(set));
		sqlite3_close(db);
	}
	/* db 002 adds buckets: a database at 001 has none until migrated. */
	sqlite3 *db;
	assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
	migrate_to(db, "db", 1);
	assert_true(has_table(db, "cores"));
	assert_false(has_table(db, "buckets"));
	assert_null(cq_db_migrate(db, "db"));
	assert_true(has_table(db, "buckets"));
	sqlite3_close(db);

	/* Newer than this binary: refused, left alone. */
	assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
	char pragma[64];
	snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %u", cq_schema_latest("db") + 1);
	assert_int_equal(sqlite3_exec(db, pragma, NULL, NULL, NULL), SQLITE_OK);
	struct cq_error *err = cq_db_migrate(db, "db");
	assert_non_null(err);
	assert_non_null(strstr(err->message, "upgrade coreq"));
	cq_error_free(err);
	assert_int_equal(version(db), cq_schema_latest("db") + 1);
	assert_false(has_table(db, "cores"));
	sqlite3_close(db);
}

static void test_read_only_and_existing(void **state)
{
	(void)state;
	char dir[64], path[128], side[160];
	assert_true(scratch_make(dir, sizeof(dir), "migrate"));
	snprintf(path, sizeof(path), "%s/sub/t.db", dir);
	struct stat st;
	sqlite3 *db = NULL;
	/* Missing: never created, by either. */
	struct cq_error *err = cq_db_open_read_only(path, "db", 1000, &db);
	assert_non_null(err);
	assert_non_null(strstr(err->message, "no such database"));
	cq_error_free(err);
	err = cq_db_open_existing(path, "db", 1000, &db);
	assert_non_null(err);
	cq_error_free(err);
	snprintf(side, sizeof(side), "%s/sub", dir);
	assert_true(stat(path, &st) != 0 && stat(side, &st) != 0);

	/* An older schema: read-only refuses and says how to upgrade; existing migrates. */
	snprintf(path, sizeof(path), "%s/t.db", dir);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	migrate_to(db, "db", 3);
	sqlite3_close(db);
	err = cq_db_open_read_only(path, "db", 1000, &db);
	assert_non_null(err);
	assert_null(strstr(err->message, "upgrade coreq"));
	cq_error_free(err);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(version(db), 3);
	sqlite3_close(db);
	assert_null(cq_db_open_existing(path, "db", 1000, &db));
	assert_int_equal(version(db), cq_schema_latest("db"));
	sqlite3_close(db);

	/* The newest: read-only opens it and cannot write it. */
	assert_null(cq_db_open_read_only(path, "db", 1000, &db));
	assert_int_equal(version(db), cq_schema_latest("db"));
	assert_true(sqlite3_exec(db, "DELETE FROM cores", NULL, NULL, NULL) != SQLITE_OK);
	sqlite3_close(db);

	/* Newer: refused with "upgrade coreq". */
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	char pragma[64];
	snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %u", cq_schema_latest("db") + 1);
	assert_int_equal(sqlite3_exec(db, pragma, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	err = cq_db_open_read_only(path, "db", 1000, &db);
	assert_non_null(err);
	assert_non_null(strstr(err->message, "upgrade coreq"));
	cq_error_free(err);
	err = cq_db_open_existing(path, "db", 1000, &db);
	assert_non_null(err);
	assert_non_null(strstr(err->message, "upgrade coreq"));
	cq_error_free(err);
	scratch_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_migrations_are_the_files_in_order),
	    cmocka_unit_test(test_migrate_fresh_half_and_newer),
	    cmocka_unit_test(test_read_only_and_existing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
