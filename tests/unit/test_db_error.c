/*
 * test_db_error.c - the error an SQLite connection just reported, as a
 * coreq error (libcore/db/db_error.h), on real SQLite failures: a plain
 * error is "what: SQLite's message" (or the message alone); a file that is
 * not a database is called damaged and the reason names the file and how
 * to recover it; an interrupted statement and a value over SQLite's length
 * limit are CQ_ERR_LIMIT with their own reasons.  The oracle is SQLite's
 * own error code and message for each case.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "libcore/db/db_error.h"

static void test_plain_error_names_what(void **state)
{
	(void)state;
	sqlite3 *db;
	assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
	assert_int_not_equal(sqlite3_exec(db, "SELECT * FROM nowhere", NULL, NULL, NULL),
	                     SQLITE_OK);
	char want[256];
	snprintf(want, sizeof(want), "reading: %s", sqlite3_errmsg(db));
	assert_false(cq_db_damaged(db));
	struct cq_error *err = cq_db_error(db, "reading");
	assert_int_equal(err->code, CQ_ERR_DB);
	assert_string_equal(err->message, want);
	cq_error_free(err);
	err = cq_db_error(db, NULL); /* no context: SQLite's message alone */
	assert_string_equal(err->message, sqlite3_errmsg(db));
	cq_error_free(err);
	sqlite3_close(db);
}

static void test_not_a_database_is_damaged(void **state)
{
	(void)state;
	char path[] = "/tmp/coreq-db-error-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	char junk[4096];
	memset(junk, 'x', sizeof(junk));
	assert_int_equal(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	close(fd);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_not_equal(sqlite3_exec(db, "SELECT * FROM sqlite_schema", NULL, NULL, NULL),
	                     SQLITE_OK);
	assert_int_equal(sqlite3_extended_errcode(db) & 0xff, SQLITE_NOTADB);
	assert_true(cq_db_damaged(db));
	struct cq_error *err = cq_db_error(db, "opening");
	assert_int_equal(err->code, CQ_ERR_DB);
	assert_non_null(strstr(err->message, "opening: damaged database ("));
	assert_non_null(strstr(err->message, sqlite3_errmsg(db)));
	char hint[128];
	snprintf(hint, sizeof(hint), "`sqlite3 %s .recover | sqlite3 NEW.db`", path);
	assert_non_null(strstr(err->message, hint));
	cq_error_free(err);
	sqlite3_close(db);
	unlink(path);
}

static int stop_at_once(void *arg)
{
	(void)arg;
	return 1;
}

static void test_interrupted_and_too_big_are_limits(void **state)
{
	(void)state;
	sqlite3 *db;
	assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
	sqlite3_progress_handler(db, 1, stop_at_once, NULL);
	assert_int_equal(sqlite3_exec(db, "SELECT 1", NULL, NULL, NULL), SQLITE_INTERRUPT);
	struct cq_error *err = cq_db_error(db, "query");
	assert_int_equal(err->code, CQ_ERR_LIMIT);
	assert_non_null(strstr(err->message, "query: a query ran far longer"));
	cq_error_free(err);
	sqlite3_progress_handler(db, 0, NULL, NULL);

	sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 1000);
	assert_int_equal(sqlite3_exec(db, "SELECT zeroblob(5000)", NULL, NULL, NULL),
	                 SQLITE_TOOBIG);
	err = cq_db_error(db, NULL);
	assert_int_equal(err->code, CQ_ERR_LIMIT);
	assert_non_null(strstr(err->message, "a value in the database is over"));
	assert_false(cq_db_damaged(db));
	cq_error_free(err);
	sqlite3_close(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plain_error_names_what),
	    cmocka_unit_test(test_not_a_database_is_damaged),
	    cmocka_unit_test(test_interrupted_and_too_big_are_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
