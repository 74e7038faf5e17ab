/*
 * test_resymbolize.c - naming stored frames from debuginfo that arrives
 * later (libcore/pipeline/resymbolize.h), with no server: abort_deep.stripped
 * ingested without its debuginfo, then resymbolized from the corpus's
 * build-id tree (--debug-dir).  The stripped program's module is found
 * there, its frames get the expect file's crash chain, and the core's
 * bucket moves to the signature that chain makes; a second run has nothing
 * left to do; a tree without the file finds nothing and names nothing.
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

#include "libcore/pipeline/resymbolize.h"
#include "libcore/store/store_query.h"
#include "tests/unit/corpus_db.h"

static int setup(void **state)
{
	return case_fixture_setup(state, "resym", "abort_deep.stripped");
}

struct chain {
	const struct corpus_case *c;
	bool found;
};

static void on_thread(void *arg, const struct cq_store_thread_row *row)
{
	struct chain *ch = arg;
	for (size_t i = 0; i < row->nframes; i++) {
		size_t k = 0;
		while (k < ch->c->nchain && i + k < row->nframes &&
		       cq_store_text_is(row->frames[i + k].function, ch->c->chain[k]))
			k++;
		ch->found |= k == ch->c->nchain;
	}
}

static void on_bucket(void *arg, const struct cq_store_bucket_row *row)
{
	snprintf(arg, 256, "%s", row->signature);
}

static void test_from_a_debug_dir(void **state)
{
	struct case_fixture *x = *state;
	if (!x->id)
		return;
	assert_true(x->c.debug_dir[0]);
	struct chain ch = {.c = &x->c};
	assert_null(cq_store_each_thread(x->d.store, x->id, on_thread, &ch));
	assert_false(ch.found); /* stripped: the chain has no names yet */

	const char *dirs[] = {x->c.debug_dir, NULL};
	struct cq_resymbolize_options o = {
	    .debug_dirs = dirs, .debuginfod_urls = "", .rules = x->d.rules, .signature_frames = 5};
	struct cq_resymbolize_result r;
	assert_null(cq_resymbolize(x->d.store, &o, &r));
	char exe_id[80];
	readelf_build_id(x->c.exe, exe_id, sizeof(exe_id));
	bool exe_seen = false;
	for (size_t i = 0; i < r.neach; i++) {
		if (!r.each[i].build_id || strcmp(r.each[i].build_id, exe_id) != 0) {
			/* no server: anything else is simply not found */
			assert_int_equal(r.each[i].outcome, CQ_RESYM_NOT_FOUND);
			continue;
		}
		exe_seen = true;
		assert_int_equal(r.each[i].outcome, CQ_RESYM_DEBUG_DIR);
		assert_true(r.each[i].frames >= (int64_t)x->c.nchain);
	}
	assert_true(exe_seen);
	assert_int_equal(r.modules, (int64_t)r.neach);
	assert_int_equal(r.found, 1);
	assert_true(r.frames >= (int64_t)x->c.nchain);
	assert_int_equal(r.rebucket.cores, 1);
	assert_int_equal(r.rebucket.moved, 1);
	cq_resymbolize_result_free(&r);

	assert_null(cq_store_each_thread(x->d.store, x->id, on_thread, &ch));
	assert_true(ch.found);
	char sig[256] = "", want[256] = "";
	for (size_t i = 0; i < x->c.nchain && i < 5; i++)
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s | ", x->c.chain[i]);
	snprintf(want + strlen(want), sizeof(want) - strlen(want), "SIGABRT");
	assert_int_equal(x->c.signal, 6);
	assert_null(cq_store_each_bucket(x->d.store, NULL, on_bucket, sig));
	assert_string_equal(sig, want);

	/* Again: the program's frames are named; only modules found nowhere are left. */
	assert_null(cq_resymbolize(x->d.store, &o, &r));
	assert_int_equal(r.found, 0);
	assert_int_equal(r.frames, 0);
	for (size_t i = 0; i < r.neach; i++)
		assert_true(!r.each[i].build_id || strcmp(r.each[i].build_id, exe_id) != 0);
	cq_resymbolize_result_free(&r);
}

static void test_a_tree_without_the_file(void **state)
{
	struct case_fixture *x = *state;
	if (!x->id)
		return;
	const char *dirs[] = {x->d.dir, NULL}; /* an empty tree */
	struct cq_resymbolize_options o = {
	    .debug_dirs = dirs, .debuginfod_urls = "", .rules = x->d.rules, .signature_frames = 5};
	struct cq_resymbolize_result r;
	assert_null(cq_resymbolize(x->d.store, &o, &r));
	assert_true(r.modules >= 1);
	assert_int_equal(r.found, 0);
	assert_int_equal(r.frames, 0);
	assert_int_equal(r.rebucket.moved, 0);
	for (size_t i = 0; i < r.neach; i++)
		assert_int_equal(r.each[i].outcome, CQ_RESYM_NOT_FOUND);
	cq_resymbolize_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_from_a_debug_dir, setup, corpus_fixture_teardown),
	    cmocka_unit_test_setup_teardown(test_a_tree_without_the_file, setup,
	                                    corpus_fixture_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
