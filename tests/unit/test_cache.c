/*
 * test_cache.c - the per-build-id cache (libcore/db/cache.h): unwind
 * tables and symbol blobs keyed by build-id, the identity of the files they
 * came from, format version and address; a missing key, another format,
 * another build-id or the same build-id from other files finds nothing, and
 * a second open of the same file sees what the first stored.  Runtimes'
 * blobs (one table keyed by files, runtime and blob name): served under
 * that key and format alone; a cache an older coreq made (schema 7, with
 * the per-runtime tables, or older) keeps opening: it is emptied and made
 * again at the newest schema.
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

#include "libcore/db/cache.h"
#include "libcore/db/schema.h"

static void test_tables_and_symbols_round_trip(void **state)
{
	(void)state;
	char dir[] = "/tmp/coreq-test-cache-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/cache.db", dir);
	struct cq_cache *c;
	assert_null(cq_cache_open(path, &c));
	static const char genuine[] = "file=/usr/bin/app dev=1 ino=2 size=3 mtime=4.5\n";
	static const char claimant[] = "file=/tmp/app dev=1 ino=9 size=3 mtime=4.5\n";
	const char *hex = "0123456789abcdef0123456789abcdef01234567";
	struct cq_cache_key id = {hex, genuine, sizeof(genuine) - 1, 0};
	struct cq_cache_key other_file = {hex, claimant, sizeof(claimant) - 1, 0};
	struct cq_cache_key other_id = {"ffff", genuine, sizeof(genuine) - 1, 0};
	static const uint8_t table[] = {1, 2, 3, 4, 5};
	size_t len = 99;
	assert_null(cq_cache_get_table(c, &id, 3, &len));
	cq_cache_put_table(c, &id, 3, 7, table, sizeof(table));
	uint8_t *got = cq_cache_get_table(c, &id, 3, &len);
	assert_non_null(got);
	assert_int_equal(len, sizeof(table));
	assert_memory_equal(got, table, sizeof(table));
	free(got);
	assert_null(cq_cache_get_table(c, &id, 4, &len)); /* another format version */
	assert_null(cq_cache_get_table(c, &other_id, 3, &len));
	/* The same build-id claimed by another file: neither sees the other's rows. */
	assert_null(cq_cache_get_table(c, &other_file, 3, &len));
	static const uint8_t forged[] = {6, 6, 6};
	cq_cache_put_table(c, &other_file, 3, 1, forged, sizeof(forged));
	assert_true(other_file.source > 0 && other_file.source != id.source);
	got = cq_cache_get_table(c, &id, 3, &len);
	assert_non_null(got);
	assert_memory_equal(got, table, sizeof(table));
	free(got);

	static const uint8_t sym[] = {9, 8, 7};
	cq_cache_put_symbols(c, &id, 0x1234, 1, 2, sym, sizeof(sym));
	assert_null(cq_cache_get_symbols(c, &id, 0x1234, 0, 2, &len)); /* without debuginfo */
	assert_null(cq_cache_get_symbols(c, &id, 0x1235, 1, 2, &len));
	assert_null(cq_cache_get_symbols(c, &other_file, 0x1234, 1, 2, &len));
	/* stream_hints: a build whose analysis read its heap */
	assert_false(cq_cache_reads_heap(c, hex));
	cq_cache_put_reads_heap(c, hex);
	assert_true(cq_cache_reads_heap(c, hex));
	assert_false(cq_cache_reads_heap(c, "ffff"));
	assert_false(cq_cache_reads_heap(c, ""));
	assert_false(cq_cache_reads_heap(NULL, hex));
	/* scan_notes: what a build's heap scan looked for, replaced by a newer note */
	assert_null(cq_cache_scan_note(c, hex));
	cq_cache_put_scan_note(c, hex, "100 200 /bin/p\n");
	cq_cache_put_scan_note(c, hex, "100 300 /bin/p\n");
	char *note = cq_cache_scan_note(c, hex);
	assert_non_null(note);
	assert_string_equal(note, "100 300 /bin/p\n");
	free(note);
	assert_null(cq_cache_scan_note(c, "ffff"));
	assert_null(cq_cache_scan_note(c, ""));
	assert_null(cq_cache_scan_note(NULL, hex));
	assert_null(cq_cache_close(c));

	assert_null(cq_cache_open(path, &c));
	assert_true(cq_cache_reads_heap(c, hex)); /* kept across handles */
	note = cq_cache_scan_note(c, hex);
	assert_non_null(note);
	free(note);
	id.source = 0; /* a new handle: the sources row is found again */
	got = cq_cache_get_symbols(c, &id, 0x1234, 1, 2, &len);
	assert_non_null(got);
	assert_int_equal(len, sizeof(sym));
	assert_memory_equal(got, sym, sizeof(sym));
	free(got);
	assert_null(cq_cache_close(c));

	char p[160];
	static const char *const files[] = {"cache.db", "cache.db-wal", "cache.db-shm"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
		unlink(p);
	}
	rmdir(dir);
}

static void remove_cache(const char *dir)
{
	char p[160];
	static const char *const files[] = {"cache.db", "cache.db-wal", "cache.db-shm"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
		unlink(p);
	}
	rmdir(dir);
}

/* One integer a query over the file at path yields (-1: no row). */
static long long query_int(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	long long v = -1;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static void test_runtime_blobs(void **state)
{
	(void)state;
	char dir[] = "/tmp/coreq-test-cache-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/cache.db", dir);
	struct cq_cache *c;
	assert_null(cq_cache_open(path, &c));
	static const char genuine[] = "file=/usr/lib/libapp.so dev=1 ino=2 size=3 mtime=4.5\n";
	static const char claimant[] = "file=/tmp/libapp.so dev=1 ino=9 size=3 mtime=4.5\n";
	const char *hex = "00112233445566778899aabbccddeeff00112233";
	struct cq_cache_key id = {hex, genuine, sizeof(genuine) - 1, 0};
	struct cq_cache_key other_file = {hex, claimant, sizeof(claimant) - 1, 0};
	const uint8_t types[] = {1, 2, 3}, index[] = {9, 8, 7, 6};
	size_t len = 0;
	assert_null(cq_cache_get_blob(c, &id, "go", "types", 1, &len));
	cq_cache_put_blob(c, &id, "go", "types", 1, types, sizeof(types));
	cq_cache_put_blob(c, &id, "go", "index", 1, index, sizeof(index));
	uint8_t *got = cq_cache_get_blob(c, &id, "go", "types", 1, &len);
	assert_non_null(got);
	assert_int_equal(len, sizeof(types));
	assert_memory_equal(got, types, sizeof(types));
	free(got);
	got = cq_cache_get_blob(c, &id, "go", "index", 1, &len); /* its other blob */
	assert_non_null(got);
	assert_int_equal(len, sizeof(index));
	free(got);
	assert_null(cq_cache_get_blob(c, &id, "go", "types", 2, &len));     /* another format */
	assert_null(cq_cache_get_blob(c, &id, "python", "types", 1, &len)); /* another runtime */
	assert_null(cq_cache_get_blob(c, &other_file, "go", "types", 1, &len)); /* other files */
	/* Replaced by the next put, at its own format. */
	cq_cache_put_blob(c, &id, "go", "types", 2, index, sizeof(index));
	assert_null(cq_cache_get_blob(c, &id, "go", "types", 1, &len));
	got = cq_cache_get_blob(c, &id, "go", "types", 2, &len);
	assert_non_null(got);
	assert_int_equal(len, sizeof(index));
	free(got);
	assert_null(cq_cache_close(c));
	assert_int_equal(query_int(path, "SELECT count(*) FROM runtime_blobs"), 2);
	remove_cache(dir);
}

/*
 * The tables a cache file had at cache schema 7, as an older coreq made
 * them (before the cache's migrations were folded into one baseline,
 * schema/cache_008_baseline.sql): its per-runtime blob tables included.
 */
static const char schema_7[] =
    "CREATE TABLE sources (id INTEGER PRIMARY KEY, build_id TEXT NOT NULL,"
    " identity BLOB NOT NULL, created INTEGER NOT NULL, UNIQUE (build_id, identity));"
    "CREATE TABLE unwind_tables (source INTEGER NOT NULL PRIMARY KEY REFERENCES sources (id),"
    " build_id TEXT NOT NULL, format INTEGER NOT NULL, rows INTEGER NOT NULL,"
    " blob BLOB NOT NULL, created INTEGER NOT NULL);"
    "CREATE TABLE symbols (source INTEGER NOT NULL REFERENCES sources (id),"
    " build_id TEXT NOT NULL, address INTEGER NOT NULL, debuginfo INTEGER NOT NULL,"
    " format INTEGER NOT NULL, frames BLOB NOT NULL,"
    " PRIMARY KEY (source, address, debuginfo)) WITHOUT ROWID;"
    "CREATE TABLE rust_index (source INTEGER NOT NULL PRIMARY KEY REFERENCES sources (id),"
    " build_id TEXT NOT NULL, format INTEGER NOT NULL, blob BLOB NOT NULL,"
    " created INTEGER NOT NULL);"
    "CREATE TABLE cxx_types (source INTEGER NOT NULL PRIMARY KEY REFERENCES sources (id),"
    " build_id TEXT NOT NULL, format INTEGER NOT NULL, blob BLOB NOT NULL,"
    " created INTEGER NOT NULL);"
    "CREATE TABLE stream_hints (build_id TEXT NOT NULL PRIMARY KEY,"
    " reads_heap INTEGER NOT NULL, created INTEGER NOT NULL);"
    "CREATE TABLE scan_notes (build_id TEXT NOT NULL PRIMARY KEY, note TEXT NOT NULL,"
    " created INTEGER NOT NULL);"
    "INSERT INTO sources (id, build_id, identity, created) VALUES (1, 'ab', x'78', 0);"
    "INSERT INTO rust_index VALUES (1, 'ab', 8, x'0102', 0);"
    "INSERT INTO cxx_types VALUES (1, 'ab', 1, x'0304', 0);"
    "INSERT INTO unwind_tables VALUES (1, 'ab', 1, 1, x'05', 0);";

/*
 * Opens the cache at path, checks that it is at the newest schema with
 * none of the older tables and none of what else was there, and that a blob
 * stored now is served (and opens again as it is).
 */
static void assert_made_again(const char *path)
{
	struct cq_cache *c;
	assert_null(cq_cache_open(path, &c));
	struct cq_cache_key id = {"ab", "x", 1, 0};
	size_t len;
	assert_null(cq_cache_get_blob(c, &id, "rust", "index", 8, &len));
	assert_null(cq_cache_get_table(c, &id, 1, &len)); /* emptied: derived data */
	const uint8_t blob[] = {5, 6};
	cq_cache_put_blob(c, &id, "rust", "index", 8, blob, sizeof(blob));
	assert_null(cq_cache_close(c));
	assert_int_equal(query_int(path, "PRAGMA user_version"), cq_schema_latest("cache"));
	assert_int_equal(query_int(path, "SELECT count(*) FROM sqlite_schema WHERE name IN "
	                                 "('rust_index', 'cxx_types', 'mine', 'fired', 'v', 't')"),
	                 0);
	assert_int_equal(query_int(path, "SELECT count(*) FROM runtime_blobs WHERE "
	                                 "runtime = 'rust' AND name = 'index'"),
	                 1);
	assert_null(cq_cache_open(path, &c)); /* and opens again as it is */
	assert_int_equal(query_int(path, "PRAGMA user_version"), cq_schema_latest("cache"));
	assert_null(cq_cache_close(c));
}

/*
 * A cache file an older coreq made (schema 7, rows in its per-runtime
 * tables), and one of schema 3 that also holds a view, a trigger and a
 * table coreq never made: both are emptied and made again at the newest
 * schema, their rows gone (derived data), and the trigger never fires.
 */
static void test_older_cache_made_again(void **state)
{
	(void)state;
	assert_true(cq_schema_baseline("cache") > 7);
	for (int shape = 0; shape < 2; shape++) {
		char dir[] = "/tmp/coreq-test-cache-XXXXXX";
		assert_non_null(mkdtemp(dir));
		char path[128];
		snprintf(path, sizeof(path), "%s/cache.db", dir);
		sqlite3 *db;
		assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
		assert_int_equal(sqlite3_exec(db, schema_7, NULL, NULL, NULL), SQLITE_OK);
		assert_int_equal(sqlite3_exec(db,
		                              shape
		                                  ? "PRAGMA user_version = 3;"
		                                    "CREATE TABLE mine (x); CREATE TABLE fired (x);"
		                                    "CREATE VIEW v AS SELECT * FROM sources;"
		                                    "CREATE TRIGGER t AFTER DELETE ON sources "
		                                    "BEGIN INSERT INTO fired VALUES (1); END;"
		                                  : "PRAGMA user_version = 7;",
		                              NULL, NULL, NULL),
		                 SQLITE_OK);
		sqlite3_close(db);
		assert_made_again(path);
		remove_cache(dir);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tables_and_symbols_round_trip),
	    cmocka_unit_test(test_runtime_blobs),
	    cmocka_unit_test(test_older_cache_made_again),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
