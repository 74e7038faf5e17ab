/*
 * test_debuginfod_client.c - debuginfo by build-id from debuginfod servers
 * (libcore/symbols/debuginfod_client.h), where no server is needed: no URL
 * configured is a usage error; only valid build-ids are ever asked for (a
 * bad one never reaches the client, so nothing lands in its cache); a
 * lookup with no time left gives up before asking; a server that refuses
 * the connection is a failure, not "not found", and leaves no file.  The
 * client's cache is a scratch directory ($DEBUGINFOD_CACHE_PATH).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <math.h>
#include <unistd.h>

#include <cmocka.h>

#include "libcore/base/clock.h"
#include "libcore/symbols/debuginfod_client.h"
#include "tests/unit/corpus.h"

static char cache[64];

static int setup(void **state)
{
	(void)state;
	if (!scratch_make(cache, sizeof(cache), "dbgd"))
		return -1;
	setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
	unsetenv("DEBUGINFOD_URLS");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	scratch_remove(cache);
	return 0;
}

/* Entries of the client's cache that are not elfutils' own bookkeeping. */
static size_t cached_entries(void)
{
	DIR *d = opendir(cache);
	if (!d)
		return 0;
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && strcmp(e->d_name, "cache_clean_interval_s") != 0 &&
		    strcmp(e->d_name, "max_unused_age_s") != 0)
			n++;
	closedir(d);
	return n;
}

static void test_no_url(void **state)
{
	(void)state;
	struct cq_debuginfod *d = (void *)1;
	struct cq_error *err = cq_debuginfod_open(NULL, 0, &d);
	assert_non_null(err);
	assert_int_equal(err->code, CQ_ERR_USAGE);
	assert_null(d);
	cq_error_free(err);
	err = cq_debuginfod_open("", 0, &d);
	assert_non_null(err);
	assert_int_equal(err->code, CQ_ERR_USAGE);
	cq_error_free(err);
	unsetenv("DEBUGINFOD_URLS");
}

/* A client for a server that refuses connections (nothing listens on port 9), or NULL. */
static struct cq_debuginfod *refusing(void)
{
	struct cq_debuginfod *d = NULL;
	struct cq_error *err = cq_debuginfod_open("http://127.0.0.1:9", 1 << 20, &d);
	if (err) {
		fprintf(stderr, "# no debuginfod client here (%s): skipped\n", err->message);
		cq_error_free(err);
		return NULL;
	}
	return d;
}

static void test_bad_build_ids_never_asked(void **state)
{
	(void)state;
	struct cq_debuginfod *d = refusing();
	if (!d)
		return;
	static const char *const bad[] = {"",
	                                  "zz",
	                                  "abc",
	                                  "../../etc/passwd",
	                                  "ab/cd",
	                                  "0123456789abcdef0123456789abcdef0123456789abcdef0"
	                                  "123456789abcdef0123456789abcdef0123456789abcdef0"
	                                  "123456789abcdef0123456789abcdef0123456789abcdef"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *path = (char *)1;
		enum cq_debuginfod_outcome outcome = CQ_DEBUGINFOD_FETCHED;
		struct cq_error *err = cq_debuginfod_find(d, bad[i], INFINITY, &path, &outcome);
		if (!err)
			fail_msg("build-id \"%s\" was asked for", bad[i]);
		assert_null(path);
		assert_int_equal(outcome, CQ_DEBUGINFOD_FAILED);
		cq_error_free(err);
	}
	assert_int_equal(cached_entries(), 0);
	cq_debuginfod_close(d);
}

static void test_no_time_left_and_refused(void **state)
{
	(void)state;
	struct cq_debuginfod *d = refusing();
	if (!d)
		return;
	const char *id = "648d1fb7cf01eb70ef77cea0b26bad7f7847e822";
	char *path = NULL;
	enum cq_debuginfod_outcome outcome;
	struct cq_error *err = cq_debuginfod_find(d, id, cq_clock_seconds() - 1, &path, &outcome);
	assert_non_null(err);
	assert_int_equal(outcome, CQ_DEBUGINFOD_TIMED_OUT);
	assert_null(path);
	cq_error_free(err);
	double start = cq_clock_seconds();
	err = cq_debuginfod_find(d, id, start + 20, &path, &outcome);
	assert_non_null(err);
	assert_null(path);
	assert_int_equal(outcome, CQ_DEBUGINFOD_FAILED);
	assert_true(cq_clock_seconds() - start < 20);
	cq_error_free(err);
	cq_debuginfod_close(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_no_url),
	    cmocka_unit_test(test_bad_build_ids_never_asked),
	    cmocka_unit_test(test_no_time_left_and_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
