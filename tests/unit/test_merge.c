/*
 * test_merge.c - folding crash databases into one (libcore/store/merge.h),
 * with sources made by the ingest pipeline from corpus cores: what is new is
 * copied, what the target holds is skipped (by identity), a stack shared by
 * two sources is stored once, bucket counts come from the cores; merging
 * the same sources again adds nothing; a core whose stack's stored hash is
 * not its frames' hash, whose bucket's hash is not its signature's, or
 * whose module key is no build-id is refused and counted; a source is only
 * read; a file that is not coreq's database is refused whole.
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

#include "libcore/store/merge.h"
#include "libcore/store/store_query.h"
#include "tests/unit/corpus_db.h"

struct fixture {
	struct corpus_db target, src1, src2;
	struct corpus_case a, b, s, t;
	char g0[600], g4[600];
	bool have;
};

static int setup(void **state)
{
	struct fixture *x = calloc(1, sizeof(*x));
	if (corpus_db_open(&x->target, "merge-t") || corpus_db_open(&x->src1, "merge-1") ||
	    corpus_db_open(&x->src2, "merge-2"))
		return -1;
	*state = x;
	snprintf(x->g0, sizeof(x->g0), "%s/cores/bucket-100/core-000", corpus_root());
	snprintf(x->g4, sizeof(x->g4), "%s/cores/bucket-100/core-004", corpus_root());
	if (!corpus_case("abort_deep.O0", &x->a) || !corpus_case("abort_deep.O2", &x->b) ||
	    !corpus_case("segv_null.O0", &x->s) || !corpus_case("threads8.O0", &x->t))
		return 0;
	/* src1: a, s, g0.  src2: b, t, g4, and a again.  The target already holds s. */
	x->have =
	    corpus_db_ingest_path(&x->src1, x->a.core) &&
	    corpus_db_ingest_path(&x->src1, x->s.core) && corpus_db_ingest_path(&x->src1, x->g0) &&
	    corpus_db_ingest_path(&x->src2, x->b.core) &&
	    corpus_db_ingest_path(&x->src2, x->t.core) && corpus_db_ingest_path(&x->src2, x->g4) &&
	    corpus_db_ingest_path(&x->src2, x->a.core) &&
	    corpus_db_ingest_path(&x->target, x->s.core);
	/* The sources are files on disk, closed, as a merge finds them. */
	cq_store_close(x->src1.store);
	cq_store_close(x->src2.store);
	x->src1.store = x->src2.store = NULL;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *x = *state;
	corpus_db_close(&x->target);
	corpus_db_close(&x->src1);
	corpus_db_close(&x->src2);
	free(x);
	return 0;
}

#define NEED(x)                                                                                    \
	do {                                                                                       \
		if (!(x)->have)                                                                    \
			return;                                                                    \
	} while (0)

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	char *buf = NULL;
	*len = 0;
	FILE *m = open_memstream(&buf, len);
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, m);
	fclose(f);
	fclose(m);
	return buf;
}

static void on_bucket(void *arg, const struct cq_store_bucket_row *row)
{
	int64_t *counts = arg;
	for (size_t i = 0; i < 8; i++)
		if (!counts[i]) {
			counts[i] = row->count;
			break;
		}
}

static void on_core(void *arg, const struct cq_store_core_row *row)
{
	(void)row;
	(*(size_t *)arg)++;
}

static size_t ncores(struct cq_store *s)
{
	size_t n = 0;
	assert_null(cq_store_each_core(s, &(struct cq_store_core_filter){0}, on_core, &n));
	return n;
}

static void test_merge_and_again(void **state)
{
	struct fixture *x = *state;
	NEED(x);
	size_t len1, len1b;
	char *before = slurp(x->src1.path, &len1);
	const char *paths[] = {x->src1.path, x->src2.path};
	struct cq_merge_result r;
	assert_null(cq_store_merge(x->target.store, paths, 2, &r));
	/* src1: a, g0 new, s held.  src2: b, t, g4 new, a held by then. */
	assert_int_equal(r.cores, 5);
	assert_int_equal(r.skipped, 2);
	assert_int_equal(r.refused, 0);
	/* a 1, g0 1; b 1, t 9, g4 none (g0's) */
	assert_int_equal(r.stacks, 12);
	assert_int_equal(ncores(x->target.store), 6);
	int64_t counts[8] = {0};
	assert_null(cq_store_each_bucket(x->target.store, NULL, on_bucket, counts));
	assert_int_equal(counts[0], 2); /* abort_deep's two builds */
	assert_int_equal(counts[1], 2); /* site g twice */
	assert_int_equal(counts[2], 1);
	assert_int_equal(counts[3], 1);
	assert_int_equal(counts[4], 0);

	/* Again: nothing new. */
	assert_null(cq_store_merge(x->target.store, paths, 2, &r));
	assert_int_equal(r.cores, 0);
	assert_int_equal(r.skipped, 7);
	assert_int_equal(r.stacks, 0);
	assert_int_equal(ncores(x->target.store), 6);
	memset(counts, 0, sizeof(counts));
	assert_null(cq_store_each_bucket(x->target.store, NULL, on_bucket, counts));
	assert_int_equal(counts[0], 2);
	assert_int_equal(counts[1], 2);

	/* The source was only read. */
	char *after = slurp(x->src1.path, &len1b);
	assert_int_equal(len1, len1b);
	assert_memory_equal(before, after, len1);
	free(before);
	free(after);
}

static void tamper(const char *path, const char *sql)
{
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	char *msg = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s", msg);
	assert_int_equal(sqlite3_changes(db) > 0, 1);
	sqlite3_close(db);
}

/* src1's core for the core at path (a's, s's, g0's) changed by sql, merged alone. */
static void refused_one(struct fixture *x, const char *sql)
{
	tamper(x->src1.path, sql);
	const char *paths[] = {x->src1.path};
	struct cq_merge_result r;
	assert_null(cq_store_merge(x->target.store, paths, 1, &r));
	assert_int_equal(r.refused, 1);
	assert_int_equal(r.cores, 1); /* the other new one (s is the target's) */
	assert_int_equal(r.skipped, 1);
	assert_int_equal(ncores(x->target.store), 2);
}

/* a's crashed thread's stack (core 1 of src1) claims another hash. */
static void test_stack_hash_that_disagrees(void **state)
{
	struct fixture *x = *state;
	NEED(x);
	refused_one(x, "UPDATE stacks SET hash = '0123456789abcdef' WHERE id = "
	               "(SELECT stack_id FROM threads WHERE core_id = 1 AND crashed = 1)");
}

static void test_bucket_hash_that_disagrees(void **state)
{
	struct fixture *x = *state;
	NEED(x);
	refused_one(x, "UPDATE buckets SET hash = '0123456789abcdef' WHERE id = "
	               "(SELECT bucket_id FROM cores WHERE id = 1)");
}

static void test_module_key_that_is_no_build_id(void **state)
{
	struct fixture *x = *state;
	NEED(x);
	/* A module of a's only: its executable. */
	char sql[800];
	snprintf(sql, sizeof(sql),
	         "UPDATE modules SET build_id = 'not a build-id' WHERE path = '%s'", x->a.exe);
	refused_one(x, sql);
}

static void test_not_coreqs_database(void **state)
{
	struct fixture *x = *state;
	char path[160];
	snprintf(path, sizeof(path), "%s/other.db", x->target.dir);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE cores (id)", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	const char *paths[] = {path};
	struct cq_merge_result r;
	struct cq_error *err = cq_store_merge(x->target.store, paths, 1, &r);
	assert_non_null(err);
	cq_error_free(err);
	snprintf(path, sizeof(path), "%s/missing.db", x->target.dir);
	err = cq_store_merge(x->target.store, paths, 1, &r);
	assert_non_null(err);
	cq_error_free(err);
	if (x->have)
		assert_int_equal(ncores(x->target.store), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_merge_and_again, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stack_hash_that_disagrees, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bucket_hash_that_disagrees, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_module_key_that_is_no_build_id, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_not_coreqs_database, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
