/*
 * test_analyse_core.c - one call from a core's path to every thread's stack
 * (libcore/analysis/analyse_core.h): a corpus core gives its core and
 * stacks (the expect file's threads and crash chain); the opened callback
 * runs once, after the core opened and before the stacks are made (what
 * it sets in the stack options is used); a file that is not a core and a
 * missing path are errors with no core; freeing twice is harmless.
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

#include "libcore/analysis/analyse_core.h"
#include "libcore/analysis/stacktrace.h"
#include "libcore/model/core.h"
#include "tests/unit/corpus.h"

struct opened {
	size_t calls;
	int32_t pid;
	bool turn_off_names;
};

static void on_opened(void *arg, const char *path, const struct cq_core *core,
                      struct cq_stack_options *stacks)
{
	(void)path;
	struct opened *o = arg;
	o->calls++;
	o->pid = core->pid;
	if (o->turn_off_names)
		stacks->symbolize = false;
}

static size_t named(const struct cq_thread_stack *t)
{
	size_t n = 0;
	for (size_t i = 0; i < t->nframes; i++)
		n += t->frames[i].function != NULL;
	return n;
}

static void test_a_corpus_core(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("segv_null.O0", &c);
	struct cq_core_options co = {0};
	struct cq_stack_options so;
	cq_stack_options_default(&so);
	struct opened seen = {0};
	struct cq_analyse_options o = {
	    .core = &co, .stacks = &so, .opened = on_opened, .opened_arg = &seen};
	struct cq_analysed_core a;
	assert_null(cq_analyse_core(c.core, &o, &a));
	assert_int_equal(seen.calls, 1);
	assert_int_equal(seen.pid, c.pid);
	assert_non_null(a.core);
	assert_non_null(a.stacks);
	assert_int_equal(cq_core_signal(a.core), c.signal);
	assert_int_equal(a.stacks->nthreads, c.threads);
	const struct cq_thread_stack *t = &a.stacks->threads[0];
	size_t k = 0;
	for (size_t i = 0; i < t->nframes && k < c.nchain; i++)
		if (t->frames[i].function && strcmp(t->frames[i].function, c.chain[k]) == 0)
			k++;
	assert_int_equal(k, c.nchain);
	assert_true(named(t) >= c.nchain);
	cq_analysed_core_free(&a);
	cq_analysed_core_free(&a);
	assert_null(a.core);

	/* What opened sets is used for the stacks. */
	seen = (struct opened){.turn_off_names = true};
	assert_null(cq_analyse_core(c.core, &o, &a));
	assert_int_equal(seen.calls, 1);
	assert_int_equal(named(&a.stacks->threads[0]), 0);
	cq_analysed_core_free(&a);
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
	struct opened seen = {0};
	struct cq_analyse_options o = {
	    .core = &co, .stacks = &so, .opened = on_opened, .opened_arg = &seen};
	struct cq_analysed_core a;
	struct cq_error *err = cq_analyse_core(path, &o, &a);
	assert_non_null(err);
	assert_null(a.core);
	assert_null(a.stacks);
	assert_int_equal(seen.calls, 0);
	cq_error_free(err);
	cq_analysed_core_free(&a);
	unlink(path);
	err = cq_analyse_core(path, &o, &a);
	assert_non_null(err);
	assert_null(a.core);
	cq_error_free(err);
	cq_analysed_core_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_corpus_core),
	    cmocka_unit_test(test_not_a_core),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
