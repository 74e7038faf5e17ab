/*
 * test_go_runtime.c - the go runtime (unwind/async/go.c) on a synthetic Go
 * process (go_scene.h: memory, the runtime's symbols and the layout blob,
 * through struct cq_unwind_target alone): every goroutine of runtime.allgs
 * that is not dead is listed in id order with the runtime's own wait reason
 * string, the channel its sudog waits on, its creator and its frames from
 * g.sched; a damaged layout blob is rejected and said in a warning; a
 * damaged allgs length costs what memory holds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "async_scene.h"
#include "go_scene.h"

struct run {
	struct cq_stacks stacks;
	struct cq_async_ctx ctx;
	struct cq_async_states *states;
	struct cq_unwind_options uo;
	struct cq_thread_stack thread;
};

static void run(struct gs_scene *s, struct run *r)
{
	memset(r, 0, sizeof(*r));
	cq_unwind_options_default(&r->uo);
	r->stacks.threads = &r->thread;
	r->stacks.nthreads = 1;
	r->ctx = (struct cq_async_ctx){
	    .target = &s->target, .unwind = &r->uo, .max_suspended = 64, .stacks = &r->stacks};
	bool native = false;
	assert_null(cq_async_detect(&r->ctx, &r->states, &native));
	assert_null(cq_async_stacks(&r->ctx, r->states));
}

static void done(struct run *r)
{
	cq_async_states_free(r->states);
	as_stacks_free(&r->stacks);
}

static const struct cq_suspended_stack *goroutine(const struct run *r, uint64_t id)
{
	for (size_t i = 0; i < r->stacks.nsuspended; i++)
		if (strcmp(r->stacks.suspended[i].kind, "go") == 0 &&
		    r->stacks.suspended[i].task_id == id)
			return &r->stacks.suspended[i];
	return NULL;
}

static void test_every_goroutine(void **state)
{
	(void)state;
	static struct gs_scene s;
	gs_example(&s);
	struct run r;
	run(&s, &r);
	assert_int_equal(as_stat_u(&r.stacks, "go_goroutines"), 2);
	assert_int_equal(as_stat_u(&r.stacks, "go_dead"), 1);
	assert_int_equal(as_stat_u(&r.stacks, "go_allgs"), 3);
	assert_int_equal(r.stacks.nsuspended, 2);
	const struct cq_suspended_stack *g1 = goroutine(&r, 3), *g7 = goroutine(&r, 7);
	assert_non_null(g1);
	assert_non_null(g7);
	assert_true(g1 < g7); /* in id order */
	assert_string_equal(g1->task_state, "chan receive");
	assert_int_equal(g1->wait_object, 0x10005000);
	assert_int_equal(g1->leaf, GS_GS);
	assert_true(g1->nframes >= 2);
	assert_int_equal(g1->frames[0].pc, GS_CODE + 0x100);
	assert_int_equal(g1->frames[1].pc, GS_CODE + 0x200); /* through the frame pointer */
	assert_non_null(g1->created_by); /* goroutine 1 has none: main's, as the runtime prints */
	assert_int_equal(g1->created_by->pc, GS_CODE + 0x300);
	assert_string_equal(g7->task_state, "sleep"); /* the scan bit is not the status */
	assert_int_equal(g7->wait_object, 0);
	assert_int_equal(g7->frames[0].pc, GS_CODE + 0x400);
	assert_int_equal(r.stacks.warnings.n, 0);
	done(&r);
}

static void test_damaged_blob_is_rejected(void **state)
{
	(void)state;
	static struct gs_scene s;
	gs_example(&s);
	s.blob[0] ^= 1; /* the magic */
	struct run r;
	run(&s, &r);
	assert_true(s.rejected);
	assert_int_equal(r.stacks.nsuspended, 0);
	assert_int_equal(r.stacks.warnings.n, 1); /* no DWARF to read it again from: said */
	done(&r);
	/* a layout whose gobuf lies past runtime.g */
	gs_example(&s);
	uint64_t big = 0x1000;
	memcpy(s.blob + 16 + 8 * 13, &big, 8);
	run(&s, &r);
	assert_true(s.rejected);
	assert_int_equal(r.stacks.nsuspended, 0);
	done(&r);
}

static void test_damaged_allgs(void **state)
{
	(void)state;
	static struct gs_scene s;
	gs_example(&s);
	gs_put(&s, GS_ALLGS + 8, 1ull << 40, 8); /* a length far past memory */
	struct run r;
	run(&s, &r);
	assert_int_equal(r.stacks.nsuspended, 2); /* the three read, the rest not there */
	assert_true(as_stat_u(&r.stacks, "go_unreadable") > 0);
	done(&r);
	/* a g pointing into nothing, a sched pc of 0 */
	gs_example(&s);
	gs_put(&s, GS_BASE + 0x200, 0xdead0000, 8);
	gs_put(&s, GS_GS + 0x200 + G_SCHED + 8, 0, 8);
	run(&s, &r);
	assert_int_equal(r.stacks.nsuspended, 1);
	for (size_t i = 0; i < r.stacks.nsuspended; i++)
		assert_true(r.stacks.suspended[i].nframes >= 1);
	done(&r);
}

/* A fatal error's message: the string of the closure runtime.fatal left on the g0 stack. */
static void test_fatal_error_message(void **state)
{
	(void)state;
	static struct gs_scene s;
	gs_example(&s);
	gs_fatal(&s, "concurrent map writes", 0x700);
	struct run r;
	run(&s, &r);
	assert_non_null(r.stacks.crash_message);
	assert_string_equal(r.stacks.crash_message, "fatal error: concurrent map writes");
	done(&r);
	/* no closure, or one whose string is empty, unprintable or unreadable: no message */
	for (int k = 0; k < 4; k++) {
		gs_example(&s);
		if (k > 0)
			gs_fatal(&s, k == 2 ? "bad\x01byte" : "x", 0x700);
		if (k == 1)
			gs_put(&s, GS_G0_LO + 0x710, 0, 8); /* length 0 */
		if (k == 3)
			gs_put(&s, GS_G0_LO + 0x708, 0xdead0000, 8);
		run(&s, &r);
		assert_null(r.stacks.crash_message);
		done(&r);
	}
	/* a closure outside the g0 stack is not the M's */
	gs_example(&s);
	gs_fatal(&s, "stack overflow", 0x800);
	run(&s, &r);
	assert_null(r.stacks.crash_message);
	done(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_goroutine),
	    cmocka_unit_test(test_fatal_error_message),
	    cmocka_unit_test(test_damaged_blob_is_rejected),
	    cmocka_unit_test(test_damaged_allgs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
