/*
 * test_stacktrace.c - every thread's stack of a corpus core (libcore/
 * analysis/stacktrace.h): as many threads as the expect file says, the
 * crashed thread first, its frames holding the program's crash chain in
 * order; threads8's eight workers each parked under their own function
 * (park <- wait_here_N <- worker_main, as threads8.c makes them); a
 * stripped program named only with its build-id tree (--debug-dir); no
 * names at all without symbolization; no suspended chains in a program
 * without an async runtime.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/analysis/stacktrace.h"
#include "libcore/model/core.h"
#include "tests/unit/corpus.h"

static bool has_chain(const struct cq_thread_stack *t, const struct corpus_case *c)
{
	for (size_t i = 0; i < t->nframes; i++) {
		size_t k = 0;
		while (k < c->nchain && i + k < t->nframes && t->frames[i + k].function &&
		       strcmp(t->frames[i + k].function, c->chain[k]) == 0)
			k++;
		if (k == c->nchain)
			return true;
	}
	return false;
}

/* Opens c's core and makes its stacks under o. */
static void stacks_of(const struct corpus_case *c, const struct cq_core_options *co,
                      const struct cq_stack_options *o, struct cq_core **core,
                      struct cq_stacks **stacks)
{
	assert_null(cq_core_open(c->core, co, core));
	assert_null(cq_core_stacks(*core, o, stacks));
}

static void test_crashed_thread_first_with_its_chain(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("abort_deep.O0", &c);
	struct cq_core_options co = {0};
	struct cq_stack_options o;
	cq_stack_options_default(&o);
	struct cq_core *core;
	struct cq_stacks *s;
	stacks_of(&c, &co, &o, &core, &s);
	assert_int_equal(s->nthreads, c.threads);
	assert_true(s->threads[0].thread->crashed);
	assert_int_equal(s->threads[0].thread->tid, c.pid); /* single-threaded: tid is the pid */
	assert_true(has_chain(&s->threads[0], &c));
	assert_int_equal(s->nsuspended, 0);
	/* The chain's frames are in the program, at link-time offsets inside it. */
	for (size_t i = 0; i < s->threads[0].nframes; i++) {
		const struct cq_stack_frame *f = &s->threads[0].frames[i];
		if (f->function && strcmp(f->function, "level2") == 0) {
			assert_non_null(f->module);
			assert_true(f->offset < f->pc);
			assert_true(f->kind == CQ_FRAME_NATIVE || f->kind == CQ_FRAME_INLINE);
		}
	}
	cq_stacks_free(s);
	cq_core_close(core);
}

static void test_threads8_workers(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("threads8.O0", &c);
	struct cq_core_options co = {0};
	struct cq_stack_options o;
	cq_stack_options_default(&o);
	struct cq_core *core;
	struct cq_stacks *s;
	stacks_of(&c, &co, &o, &core, &s);
	assert_int_equal(s->nthreads, c.threads);
	assert_true(s->threads[0].thread->crashed);
	assert_true(has_chain(&s->threads[0], &c));
	unsigned workers = 0;
	for (size_t t = 1; t < s->nthreads; t++) {
		assert_false(s->threads[t].thread->crashed);
		const struct cq_stack_frame *f = s->threads[t].frames;
		for (size_t i = 0; i + 2 < s->threads[t].nframes; i++)
			if (f[i].function && strcmp(f[i].function, "park") == 0 &&
			    f[i + 1].function &&
			    strncmp(f[i + 1].function, "wait_here_", 10) == 0 &&
			    f[i + 2].function && strcmp(f[i + 2].function, "worker_main") == 0)
				workers |= 1u << (f[i + 1].function[10] - '0');
	}
	assert_int_equal(workers, 0xff);
	cq_stacks_free(s);
	cq_core_close(core);
}

static void test_stripped_named_from_debug_dir(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("abort_deep.stripped", &c);
	assert_true(c.debug_dir[0]);
	struct cq_core_options co = {0};
	struct cq_stack_options o;
	cq_stack_options_default(&o);
	struct cq_core *core;
	struct cq_stacks *s;
	stacks_of(&c, &co, &o, &core, &s);
	assert_false(has_chain(&s->threads[0], &c));
	cq_stacks_free(s);
	cq_core_close(core);
	const char *dirs[] = {c.debug_dir, NULL};
	co.debug_dirs = dirs;
	o.debug_dirs = dirs;
	stacks_of(&c, &co, &o, &core, &s);
	assert_true(has_chain(&s->threads[0], &c));
	cq_stacks_free(s);
	cq_core_close(core);
}

static void test_no_symbolization(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("abort_deep.O0", &c);
	struct cq_core_options co = {0};
	struct cq_stack_options o;
	cq_stack_options_default(&o);
	o.symbolize = false;
	struct cq_core *core;
	struct cq_stacks *s;
	stacks_of(&c, &co, &o, &core, &s);
	/* The frames are still found (at least the chain's and the crash machinery's). */
	assert_true(s->threads[0].nframes >= c.nchain + 1);
	for (size_t i = 0; i < s->threads[0].nframes; i++)
		assert_null(s->threads[0].frames[i].function);
	cq_stacks_free(s);
	cq_core_close(core);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_crashed_thread_first_with_its_chain),
	    cmocka_unit_test(test_threads8_workers),
	    cmocka_unit_test(test_stripped_named_from_debug_dir),
	    cmocka_unit_test(test_no_symbolization),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
