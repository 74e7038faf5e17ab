/*
 * test_db_guard.c - what coreq does to every SQLite file it opens
 * (libcore/db/guard.h): a path becomes a URI naming exactly that file; a
 * guarded connection runs no trigger and stops a statement that runs past
 * its work budget; the schema check accepts what coreq's migrations make
 * (and tables of someone else's) and refuses a view where a table should
 * be, a planted trigger, index or view, a dropped NOT NULL, a missing table;
 * a value over CQ_DB_MAX_VALUE bytes is refused, and a sparse tail buys no
 * budget.
 *
 * Files tested: libcore/db/guard.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "libcore/db/guard.h"
#include "libcore/db/schema.h"

static void test_uri_names_the_file(void **state)
{
	(void)state;
	char *uri = cq_db_uri("file:x.db?mode=ro#y", NULL);
	assert_string_equal(uri, "file:file%3Ax.db%3Fmode%3Dro%23y");
	sqlite3_free(uri);
	uri = cq_db_uri("/a b/%.db", "mode=ro");
	assert_string_equal(uri, "file:///a%20b/%25.db?mode=ro");
	sqlite3_free(uri);
}

/* A fresh database of the newest "db" schema at path, guarded. */
static sqlite3 *fresh(const char *path)
{
	unlink(path);
	sqlite3 *db;
	assert_null(cq_db_open(path, "db", 1000, &db));
	return db;
}

static struct cq_error *check(sqlite3 *db)
{
	return cq_db_schema_check(db, "main", "db", cq_schema_latest("db"));
}

/* Expects check to refuse db with a message containing what. */
static void refused(sqlite3 *db, const char *what)
{
	struct cq_error *err = check(db);
	assert_non_null(err);
	if (!strstr(err->message, what))
		fail_msg("\"%s\" does not say \"%s\"", err->message, what);
	cq_error_free(err);
}

static void test_schema_check(void **state)
{
	(void)state;
	char path[] = "/tmp/coreq-test-guard-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	sqlite3 *db = fresh(path);
	assert_null(check(db));
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE mine (x)", NULL, NULL, NULL), SQLITE_OK);
	assert_null(check(db)); /* someone else's table: never read */
	assert_int_equal(sqlite3_exec(db, "CREATE VIEW v_mine AS SELECT 1", NULL, NULL, NULL),
	                 SQLITE_OK);
	refused(db, "view v_mine is not coreq's");
	sqlite3_exec(db, "DROP VIEW v_mine", NULL, NULL, NULL);
	assert_int_equal(
	    sqlite3_exec(db, "CREATE INDEX i_mine ON frames (function)", NULL, NULL, NULL),
	    SQLITE_OK);
	refused(db, "index i_mine is not coreq's");
	sqlite3_exec(db, "DROP INDEX i_mine", NULL, NULL, NULL);
	assert_int_equal(sqlite3_exec(db,
	                              "CREATE TRIGGER t AFTER INSERT ON cores BEGIN "
	                              "INSERT INTO mine VALUES (1); END",
	                              NULL, NULL, NULL),
	                 SQLITE_OK);
	refused(db, "trigger t is not coreq's");
	sqlite3_exec(db, "DROP TRIGGER t", NULL, NULL, NULL);
	/* coreq's own view, made to say something else */
	assert_int_equal(sqlite3_exec(db,
	                              "DROP VIEW v_stack_counts; CREATE VIEW v_stack_counts AS "
	                              "SELECT 1",
	                              NULL, NULL, NULL),
	                 SQLITE_OK);
	refused(db, "v_stack_counts differs");
	sqlite3_close(db);

	db = fresh(path);
	assert_int_equal(sqlite3_exec(db,
	                              "ALTER TABLE buckets RENAME TO b2; CREATE VIEW buckets AS "
	                              "SELECT * FROM b2",
	                              NULL, NULL, NULL),
	                 SQLITE_OK);
	refused(db, "buckets is a view where coreq has a table");
	sqlite3_close(db);

	db = fresh(path);
	assert_int_equal(
	    sqlite3_exec(db, "ALTER TABLE frames DROP COLUMN sig_name", NULL, NULL, NULL),
	    SQLITE_OK);
	refused(db, "table frames does not have coreq's columns");
	sqlite3_close(db);

	db = fresh(path);
	assert_int_equal(sqlite3_exec(db, "DROP TABLE lws_allocations", NULL, NULL, NULL),
	                 SQLITE_OK);
	refused(db, "lws_allocations is missing");
	sqlite3_close(db);

	/* What an older coreq made is coreq's at its own version. */
	db = fresh(path);
	assert_null(cq_db_schema_check(db, "main", "db", cq_schema_latest("db")));
	struct cq_error *err = cq_db_schema_check(db, "main", "db", 1); /* more than 001 made */
	assert_non_null(err);
	cq_error_free(err);
	sqlite3_close(db);
	char side[160];
	unlink(path);
	snprintf(side, sizeof(side), "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
}

static void test_budget_and_triggers(void **state)
{
	(void)state;
	sqlite3 *db;
	assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
	assert_null(cq_db_guard(db));
	/* Triggers never fire on a guarded connection. */
	assert_int_equal(sqlite3_exec(db,
	                              "CREATE TABLE a (x); CREATE TABLE b (x); "
	                              "CREATE TRIGGER t AFTER INSERT ON a BEGIN "
	                              "INSERT INTO b VALUES (1); END; INSERT INTO a VALUES (1)",
	                              NULL, NULL, NULL),
	                 SQLITE_OK);
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM b", -1, &st, NULL),
	                 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(st, 0), 0);
	sqlite3_finalize(st);
	/* An endless statement is stopped (CQ_DB_BUDGET_BASE steps: seconds, not forever). */
	time_t start = time(NULL);
	int rc = sqlite3_exec(db,
	                      "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
	                      "SELECT count(*) FROM r",
	                      NULL, NULL, NULL);
	assert_int_equal(rc, SQLITE_INTERRUPT);
	assert_true(time(NULL) - start < 60);
	/* and the next statement has a budget of its own. */
	assert_int_equal(sqlite3_exec(db, "SELECT count(*) FROM a", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/*
 * One value is at most CQ_DB_MAX_VALUE bytes, and a file's sparse tail buys
 * its statements no budget: a database of a few pages followed by a 1 TB
 * hole stops an endless statement as soon as an empty one does.
 */
static void test_value_limit_and_sparse_budget(void **state)
{
	(void)state;
	char path[] = "/tmp/coreq-test-guard-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	sqlite3 *db = fresh(path);
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT length(zeroblob(?))", -1, &st, NULL),
	                 SQLITE_OK);
	sqlite3_bind_int(st, 1, CQ_DB_MAX_VALUE);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	sqlite3_reset(st);
	sqlite3_bind_int(st, 1, CQ_DB_MAX_VALUE + 1);
	assert_int_equal(sqlite3_step(st), SQLITE_TOOBIG);
	sqlite3_finalize(st);
	assert_int_equal(truncate(path, 1ll << 40), 0);
	alarm(120); /* the test fails, rather than runs for days, when the hole counts */
	time_t start = time(NULL);
	int rc = sqlite3_exec(db,
	                      "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
	                      "SELECT count(*) FROM r",
	                      NULL, NULL, NULL);
	alarm(0);
	assert_int_equal(rc, SQLITE_INTERRUPT);
	assert_true(time(NULL) - start < 60);
	sqlite3_close(db);
	char side[160];
	unlink(path);
	snprintf(side, sizeof(side), "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_uri_names_the_file),
	    cmocka_unit_test(test_schema_check),
	    cmocka_unit_test(test_budget_and_triggers),
	    cmocka_unit_test(test_value_limit_and_sparse_budget),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
