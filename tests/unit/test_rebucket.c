/*
 * test_rebucket.c - recomputing stored cores' crash signatures under new
 * rules from the stored frames (libcore/store/rebucket.h), on a fleet of
 * corpus cores (corpus_db.h): the rules that made the buckets change
 * nothing; rules that skip each program's own crash functions fold three
 * buckets into one ("main | SIGABRT") and leave segv_null's, keeping its
 * row; the defaults again split them back.  Expected signatures follow the
 * expect files' crash chains and the rules' documented meaning
 * (dist/coreq.rules).
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

#include "libcore/store/rebucket.h"
#include "libcore/store/store_query.h"
#include "tests/unit/corpus_db.h"

static int setup(void **state)
{
	return fleet_fixture_setup(state, "rebucket");
}

struct buckets {
	size_t n;
	int64_t id[8], count[8];
	char signature[8][160];
};

static void on_bucket(void *arg, const struct cq_store_bucket_row *row)
{
	struct buckets *b = arg;
	assert_true(b->n < 8);
	b->id[b->n] = row->id;
	b->count[b->n] = row->count;
	snprintf(b->signature[b->n], sizeof(b->signature[0]), "%s", row->signature);
	b->n++;
}

static struct buckets buckets(struct fleet_fixture *x)
{
	struct buckets b = {0};
	assert_null(cq_store_each_bucket(x->d.store, NULL, on_bucket, &b));
	return b;
}

static void test_rebucket(void **state)
{
	struct fleet_fixture *x = *state;
	if (!x->have)
		return;
	struct buckets before = buckets(x);
	assert_int_equal(before.n, 4);
	assert_string_equal(before.signature[2], "store_null | writer | main | SIGSEGV");

	/* The same rules: nothing moves. */
	struct cq_store_rebucket_result r;
	assert_null(cq_store_rebucket(x->d.store, x->d.rules, 5, &r));
	assert_int_equal(r.cores, 6);
	assert_int_equal(r.before, 4);
	assert_int_equal(r.after, 4);
	assert_int_equal(r.moved + r.merged + r.split, 0);
	struct buckets same = buckets(x);
	assert_memory_equal(same.id, before.id, sizeof(before.id));

	/* Each program's own crash functions skipped: abort_deep, site g and threads8 meet. */
	static const char text[] = "version test-1\n"
	                           "machinery raise\nmachinery abort\nmachinery __pthread_kill*\n"
	                           "startup __libc_start*\nstartup _start\n"
	                           "skip level*\nskip crash_in_g\nskip dispatch\nskip crash_main\n";
	struct cq_bucket_rules *rules;
	assert_null(cq_bucket_rules_parse(text, strlen(text), "test", &rules));
	assert_null(cq_store_rebucket(x->d.store, rules, 5, &r));
	cq_bucket_rules_free(rules);
	assert_int_equal(r.cores, 6);
	assert_int_equal(r.before, 4);
	assert_int_equal(r.after, 2);
	assert_int_equal(r.merged, 1);
	assert_int_equal(r.split, 0);
	assert_int_equal(r.moved, 5);
	struct buckets folded = buckets(x);
	assert_int_equal(folded.n, 2);
	assert_string_equal(folded.signature[0], "main | SIGABRT");
	assert_int_equal(folded.count[0], 5);
	assert_string_equal(folded.signature[1], "store_null | writer | main | SIGSEGV");
	assert_int_equal(folded.count[1], 1);
	assert_int_equal(folded.id[1], before.id[2]); /* its signature survived: same row */

	/* The defaults again: the folded bucket splits three ways. */
	assert_null(cq_store_rebucket(x->d.store, x->d.rules, 5, &r));
	assert_int_equal(r.before, 2);
	assert_int_equal(r.after, 4);
	assert_int_equal(r.merged, 0);
	assert_int_equal(r.split, 1);
	assert_int_equal(r.moved, 5);
	struct buckets back = buckets(x);
	assert_int_equal(back.n, 4);
	for (size_t i = 0; i < 4; i++) { /* the same buckets, in some order */
		size_t k = 0;
		while (k < 4 && strcmp(back.signature[k], before.signature[i]) != 0)
			k++;
		assert_true(k < 4);
		assert_int_equal(back.count[k], before.count[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_rebucket, setup, corpus_fixture_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
