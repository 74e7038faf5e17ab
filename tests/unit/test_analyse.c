/*
 * test_analyse.c - the one analysis of a core (libcore/pipeline/analyse.h):
 * a corpus core gives its core and stacks (the expect file's threads and
 * crash chain); opened runs once, after the core opened and before the
 * stacks are made, and can end the analysis there (no stacks, no cache
 * opened); the cache is asked of open_cache once, and only for a core that
 * opened (a one-stream core's hints ask it as the core opens); the wait-for graph, when asked, is
 * the program's own record (the oracle file of a deadlock core); the capture given is reconciled
 * with the notes; a file that is not a core and a missing path are errors with no core; freeing
 * twice is harmless.
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

#include "libcore/analysis/stacktrace.h"
#include "libcore/analysis/waits.h"
#include "libcore/db/cache.h"
#include "libcore/model/core.h"
#include "libcore/pipeline/analyse.h"
#include "tests/unit/corpus.h"

struct seen {
	size_t opened, caches;
	int32_t pid;
	bool had_stacks; /* when opened ran */
	bool stop;
	struct cq_cache *cache; /* what open_cache gives */
};

static struct cq_error *on_opened(void *arg, const char *path, const struct cq_analysis *a,
                                  bool *stop)
{
	(void)path;
	struct seen *s = arg;
	s->opened++;
	s->pid = a->core->pid;
	s->had_stacks = a->stacks != NULL;
	*stop = s->stop;
	return NULL;
}

static struct cq_cache *on_open_cache(void *arg)
{
	struct seen *s = arg;
	s->caches++;
	return s->cache;
}

static void options(struct cq_analyse_options *o, const struct cq_core_options *co,
                    const struct cq_stack_options *so, struct seen *s)
{
	*o = (struct cq_analyse_options){.core = co,
	                                 .stacks = so,
	                                 .open_cache = on_open_cache,
	                                 .open_cache_arg = s,
	                                 .opened = on_opened,
	                                 .opened_arg = s};
}

static void test_a_corpus_core(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("segv_null.O0", &c);
	char dir[64], db[128];
	assert_true(scratch_make(dir, sizeof(dir), "analyse"));
	snprintf(db, sizeof(db), "%s/cache.db", dir);
	struct cq_core_options co = {0};
	struct cq_stack_options so;
	cq_stack_options_default(&so);
	struct seen seen = {0};
	assert_null(cq_cache_open(db, &seen.cache));
	struct cq_analyse_options o;
	options(&o, &co, &so, &seen);
	struct cq_analysis a;
	assert_null(cq_analyse(c.core, &o, &a));
	assert_int_equal(seen.opened, 1);
	assert_false(seen.had_stacks);
	assert_int_equal(seen.pid, c.pid);
	assert_int_equal(seen.caches, 1);
	assert_ptr_equal(a.opened_cache, seen.cache);
	assert_non_null(a.core);
	assert_non_null(a.stacks);
	assert_null(a.waits); /* not asked */
	assert_int_equal(cq_core_signal(a.core), c.signal);
	assert_int_equal(a.stacks->nthreads, c.threads);
	const struct cq_thread_stack *t = &a.stacks->threads[0];
	size_t k = 0;
	for (size_t i = 0; i < t->nframes && k < c.nchain; i++)
		if (t->frames[i].function && strcmp(t->frames[i].function, c.chain[k]) == 0)
			k++;
	assert_int_equal(k, c.nchain);
	/* A plain file named "core" says nothing beside the notes. */
	assert_string_equal(a.capture.source, "file");
	assert_string_equal(a.capture.conflicts, "");
	cq_analysis_free(&a);
	cq_analysis_free(&a);
	assert_null(a.core);
	assert_null(cq_cache_close(seen.cache));
	scratch_remove(dir);
}

static void test_opened_stops(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("segv_null.O0", &c);
	struct cq_core_options co = {0};
	struct cq_stack_options so;
	cq_stack_options_default(&so);
	struct seen seen = {.stop = true};
	struct cq_analyse_options o;
	options(&o, &co, &so, &seen);
	struct cq_analysis a;
	assert_null(cq_analyse(c.core, &o, &a));
	assert_int_equal(seen.opened, 1);
	assert_non_null(a.core);
	assert_null(a.stacks);
	/* A mapped core's open asks no hint: nothing needed the cache. */
	assert_int_equal(seen.caches, 0);
	assert_null(a.opened_cache);
	cq_analysis_free(&a);
}

/*
 * A one-stream compressed core asks its stream hints as it opens: the
 * cache is opened then, once, and kept for the stacks (one open, not one
 * per question); a core that stops at opened has asked it all the same.
 */
static void test_stream_hints_open_the_cache_once(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("segv_null.O0", &c);
	char dir[64], db[128], zst[128], cmd[1024];
	assert_true(scratch_make(dir, sizeof(dir), "analyse"));
	snprintf(db, sizeof(db), "%s/cache.db", dir);
	snprintf(zst, sizeof(zst), "%s/core.zst", dir);
	snprintf(cmd, sizeof(cmd), "zstd -q -3 -o '%s' '%s'", zst, c.core);
	if (system(cmd) != 0) {
		fprintf(stderr, "# zstd failed: skipped\n");
		scratch_remove(dir);
		return;
	}
	struct cq_core_options co = {0};
	struct cq_stack_options so;
	cq_stack_options_default(&so);
	struct seen seen = {0};
	assert_null(cq_cache_open(db, &seen.cache));
	struct cq_analyse_options o;
	options(&o, &co, &so, &seen);
	for (int stop = 0; stop < 2; stop++) {
		seen.stop = stop;
		seen.caches = seen.opened = 0;
		struct cq_analysis a;
		assert_null(cq_analyse(zst, &o, &a));
		assert_string_equal(cq_source_read(&a.core->source).how, "stream");
		assert_int_equal(seen.opened, 1);
		assert_int_equal(seen.caches, 1);
		assert_ptr_equal(a.opened_cache, seen.cache);
		assert_true(stop ? !a.stacks : a.stacks && a.stacks->nthreads == (size_t)c.threads);
		cq_analysis_free(&a);
	}
	assert_null(cq_cache_close(seen.cache));
	scratch_remove(dir);
}

/* The threads of the oracle's "waits TID mutex ADDR" lines, and how many. */
static size_t oracle_waits(const char *name, int32_t *tids, uint64_t *objects, size_t max)
{
	char path[600], line[256];
	snprintf(path, sizeof(path), "%s/cores/%s/oracle", corpus_root(), name);
	FILE *f = fopen(path, "r");
	size_t n = 0;
	while (f && fgets(line, sizeof(line), f)) {
		int tid;
		unsigned long long object;
		if (n < max && sscanf(line, "waits %d mutex %llx", &tid, &object) == 2) {
			tids[n] = tid;
			objects[n++] = object;
		}
	}
	if (f)
		fclose(f);
	return n;
}

static void test_waits_are_the_oracles(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("deadlock-abba.O0", &c);
	int32_t tids[8];
	uint64_t objects[8];
	size_t n = oracle_waits("deadlock-abba.O0", tids, objects, 8);
	assert_int_equal(n, 2);
	struct cq_core_options co = {0};
	struct cq_stack_options so;
	cq_stack_options_default(&so);
	so.cache = NULL;
	struct cq_analyse_options o = {.core = &co, .stacks = &so, .waits = true};
	struct cq_analysis a;
	assert_null(cq_analyse(c.core, &o, &a));
	assert_non_null(a.waits);
	assert_int_equal(a.waits->nwaits, n);
	assert_int_equal(a.waits->ndeadlocks, 1);
	for (size_t i = 0; i < n; i++) {
		size_t found = 0;
		for (size_t w = 0; w < a.waits->nwaits; w++)
			found += a.waits->waits[w].tid == tids[i] &&
			         a.waits->waits[w].object == objects[i] &&
			         a.waits->waits[w].kind == CQ_WAIT_MUTEX;
		assert_int_equal(found, 1);
	}
	cq_analysis_free(&a);
}

static void test_capture_reconciled(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("segv_null.O0", &c);
	struct cq_capture cap;
	cq_capture_init(&cap);
	cap.source = "hook";
	cap.known = CQ_CAPTURE_PID | CQ_CAPTURE_SIGNAL;
	cap.pid = c.pid + 1;
	cap.signal = c.signal;
	struct cq_core_options co = {0};
	struct cq_stack_options so;
	cq_stack_options_default(&so);
	struct seen seen = {.stop = true};
	struct cq_analyse_options o;
	options(&o, &co, &so, &seen);
	o.capture = &cap;
	struct cq_analysis a;
	assert_null(cq_analyse(c.core, &o, &a));
	char want[128];
	snprintf(want, sizeof(want), "pid: core %ld, hook %ld", c.pid, c.pid + 1);
	assert_string_equal(a.capture.conflicts, want);
	assert_string_equal(a.capture.source, "hook");
	assert_string_equal(cap.conflicts, ""); /* the caller's copy is left as it was */
	cq_analysis_free(&a);
}

static void test_not_a_core(void **state)
{
	(void)state;
	char path[] = "/tmp/coreq-test-analyse-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not a core\n", 11), 11);
	close(fd);
	struct cq_core_options co = {0};
	struct cq_stack_options so;
	cq_stack_options_default(&so);
	struct seen seen = {0};
	struct cq_analyse_options o;
	options(&o, &co, &so, &seen);
	struct cq_analysis a;
	struct cq_error *err = cq_analyse(path, &o, &a);
	assert_non_null(err);
	assert_null(a.core);
	assert_null(a.stacks);
	assert_int_equal(seen.opened, 0);
	assert_int_equal(seen.caches, 0);
	cq_error_free(err);
	cq_analysis_free(&a);
	unlink(path);
	err = cq_analyse(path, &o, &a);
	assert_non_null(err);
	assert_null(a.core);
	assert_int_equal(seen.caches, 0);
	cq_error_free(err);
	cq_analysis_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_corpus_core),
	    cmocka_unit_test(test_opened_stops),
	    cmocka_unit_test(test_waits_are_the_oracles),
	    cmocka_unit_test(test_capture_reconciled),
	    cmocka_unit_test(test_stream_hints_open_the_cache_once),
	    cmocka_unit_test(test_not_a_core),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
