/*
 * test_cache_warm.c - filling the cache for an executable before any core
 * of it arrives (libcore/pipeline/cache_warm.h).
 *
 * Oracles: readelf -n (the build-id the result names), readelf -S (whether
 * the file carries its own DWARF, so its .debug_frame is read) and
 * readelf -p .comment (whether rustc built it), and the cache file itself
 * read with SQLite (one complete table stored, with the rows the result
 * gives).  A second run finds the table cached with the same rows; a
 * damaged cached blob is counted as rejected and compiled afresh (the rule
 * the walks follow, cq_core_target_cached_table); a file that is not ELF
 * is an error and a file without build-id (objcopy'd from the corpus
 * executable) is refused with nothing stored.
 */
#include <setjmp.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/db/cache.h"
#include "libcore/pipeline/cache_warm.h"
#include "tests/unit/corpus.h"
#include "tests/unit/corpus_db.h"

static char dir[64], cache_path[128];

static int setup(void **state)
{
	(void)state;
	if (!scratch_make(dir, sizeof(dir), "cache-warm"))
		return -1;
	snprintf(cache_path, sizeof(cache_path), "%s/cache.db", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	scratch_remove(dir);
	return 0;
}

/* True if `cmd` prints a line containing needle. */
static bool prints(const char *cmd, const char *needle)
{
	char line[512];
	bool seen = false;
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p))
		seen = seen || strstr(line, needle);
	pclose(p);
	return seen;
}

/* Runs one SQL query over the cache file that yields one integer (or -1). */
static long long cache_int(const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	long long v = -1;
	assert_int_equal(sqlite3_open_v2(cache_path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static void cache_exec(const char *sql)
{
	sqlite3 *db;
	assert_int_equal(sqlite3_open_v2(cache_path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/* A runtime's figure in r (its warm hook's key): a count, or a flag as 0/1. */
static uint64_t figure(const struct cq_cache_warm_result *r, const char *key)
{
	const struct cq_stat *st = cq_stats_find(&r->runtimes, key);
	if (!st)
		fail_msg("no figure %s", key);
	return st->type == CQ_STAT_BOOL ? st->b : st->u;
}

/* One cq_cache_warm over a freshly opened cache, closed (committed) after. */
static struct cq_error *warm(const char *path, struct cq_cache_warm_result *r, size_t *rejected)
{
	struct cq_cache *cache;
	assert_null(cq_cache_open(cache_path, &cache));
	struct cq_error *err = cq_cache_warm(path, NULL, cache, r);
	if (rejected)
		*rejected = cq_cache_rejected(cache);
	struct cq_error *close_err = cq_cache_close(cache);
	if (close_err)
		fail_msg("cache close: %s", close_err->message);
	return err;
}

static void test_computed_then_cached(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("segv_null.O0", &c);
	char want_id[256], cmd[700];
	readelf_build_id(c.exe, want_id, sizeof(want_id));
	assert_true(want_id[0]);
	snprintf(cmd, sizeof(cmd), "readelf -S -W '%s'", c.exe);
	bool has_dwarf = prints(cmd, ".debug_frame") || prints(cmd, ".debug_info");
	snprintf(cmd, sizeof(cmd), "readelf -p .comment '%s' 2>/dev/null", c.exe);
	assert_false(prints(cmd, "rustc"));

	struct cq_cache_warm_result r;
	size_t rejected;
	assert_null(warm(c.exe, &r, &rejected));
	assert_string_equal(r.build_id, want_id);
	assert_true(r.rows > 0);
	assert_false(r.table_cached);
	assert_int_equal(r.debug_frame, has_dwarf);
	assert_int_equal(figure(&r, "rust_types"), 0); /* a C program */
	assert_false(figure(&r, "rust_cached"));
	assert_int_equal(figure(&r, "cxx_types"), 0);
	assert_string_equal(r.runtimes_text, "");
	cq_cache_warm_result_free(&r);
	assert_int_equal(rejected, 0);
	/* One table is stored for that build-id, with those rows. */
	char sql[512];
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM unwind_tables WHERE build_id = '%s'",
	         want_id);
	assert_int_equal(cache_int(sql), 1);
	snprintf(sql, sizeof(sql), "SELECT rows FROM unwind_tables WHERE build_id = '%s'", want_id);
	assert_int_equal(cache_int(sql), r.rows);

	/* Again, in a new process's worth of handle: cached, the same rows. */
	struct cq_cache_warm_result again;
	assert_null(warm(c.exe, &again, &rejected));
	assert_string_equal(again.build_id, want_id);
	assert_true(again.table_cached);
	assert_int_equal(again.rows, r.rows);
	assert_int_equal(rejected, 0);
	cq_cache_warm_result_free(&again);

	/* A damaged blob is counted, compiled afresh and replaced. */
	snprintf(sql, sizeof(sql),
	         "UPDATE unwind_tables SET blob = X'00112233445566778899' WHERE build_id = '%s'",
	         want_id);
	cache_exec(sql);
	struct cq_cache_warm_result fresh;
	assert_null(warm(c.exe, &fresh, &rejected));
	assert_int_equal(rejected, 1);
	assert_false(fresh.table_cached);
	assert_int_equal(fresh.rows, r.rows);
	cq_cache_warm_result_free(&fresh);
	assert_null(warm(c.exe, &fresh, &rejected));
	assert_int_equal(rejected, 0);
	assert_true(fresh.table_cached);
	assert_int_equal(fresh.rows, r.rows);
	cq_cache_warm_result_free(&fresh);
}

/* A Rust program with its DWARF: its type index is stored, then found. */
static void test_rust_index(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("rust_async.O2", &c);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "readelf -p .comment '%s' 2>/dev/null", c.exe);
	assert_true(prints(cmd, "rustc"));
	struct cq_cache_warm_result r, again;
	assert_null(warm(c.exe, &r, NULL));
	assert_true(r.rows > 0);
	assert_true(r.debug_frame);
	assert_true(figure(&r, "rust_types") > 0);
	assert_false(figure(&r, "rust_cached"));
	assert_non_null(strstr(r.runtimes_text, "Rust index "));
	char sql[512];
	snprintf(sql, sizeof(sql),
	         "SELECT count(*) FROM runtime_blobs WHERE build_id = '%s' AND runtime = 'rust' "
	         "AND name = 'index'",
	         r.build_id);
	assert_int_equal(cache_int(sql), 1);
	assert_null(warm(c.exe, &again, NULL));
	assert_true(again.table_cached);
	assert_true(figure(&again, "rust_cached"));
	assert_int_equal(figure(&again, "rust_types"), figure(&r, "rust_types"));
	assert_non_null(strstr(again.runtimes_text, "(cached already)"));
	cq_cache_warm_result_free(&r);
	cq_cache_warm_result_free(&again);
}

static void test_not_elf(void **state)
{
	(void)state;
	char path[128];
	snprintf(path, sizeof(path), "%s/not-elf", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\necho not an ELF file\n", f);
	fclose(f);
	struct cq_cache_warm_result r;
	struct cq_error *err = warm(path, &r, NULL);
	assert_non_null(err);
	cq_error_free(err);
	assert_int_equal(r.rows, 0);
	cq_cache_warm_result_free(&r);
	snprintf(path, sizeof(path), "%s/absent", dir);
	err = warm(path, &r, NULL);
	assert_non_null(err);
	cq_error_free(err);
	cq_cache_warm_result_free(&r);
}

static void test_no_build_id_refused(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("segv_null.O2", &c);
	char path[128], cmd[800];
	snprintf(path, sizeof(path), "%s/no-build-id", dir);
	snprintf(cmd, sizeof(cmd), "objcopy --remove-section .note.gnu.build-id '%s' '%s'", c.exe,
	         path);
	assert_int_equal(system(cmd), 0);
	char id[256];
	readelf_build_id(path, id, sizeof(id));
	assert_string_equal(id, "");
	struct cq_cache *cache; /* made, so that it can be counted before */
	assert_null(cq_cache_open(cache_path, &cache));
	assert_null(cq_cache_close(cache));
	long long before = cache_int("SELECT count(*) FROM unwind_tables");
	struct cq_cache_warm_result r;
	struct cq_error *err = warm(path, &r, NULL);
	assert_non_null(err);
	assert_int_equal(err->code, CQ_ERR_UNSUPPORTED);
	assert_non_null(strstr(err->message, "build-id"));
	cq_error_free(err);
	assert_int_equal(r.rows, 0);
	assert_string_equal(r.build_id, "");
	cq_cache_warm_result_free(&r);
	/* Nothing was stored by it. */
	assert_int_equal(cache_int("SELECT count(*) FROM unwind_tables"), before);
	assert_int_equal(cache_int("SELECT count(*) FROM sources WHERE build_id = ''"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_computed_then_cached),
	    cmocka_unit_test(test_rust_index),
	    cmocka_unit_test(test_not_elf),
	    cmocka_unit_test(test_no_build_id_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
