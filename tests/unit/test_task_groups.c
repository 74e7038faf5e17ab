/*
 * test_task_groups.c - suspended stacks folded into groups of the same
 * frames and state (cmd/task_groups.h), on stacks built here.
 *
 * Two tasks of one chain whose futures lie at different addresses are one
 * group (ids sorted); the same chain parked at another line, in another
 * state or of another kind is a group of its own; frames without a name
 * group by pc; groups come largest first, then in the order of their first
 * member; a member's thread is listed once per group; a future without an
 * id is named by its kind; id ranges are written as "1-3, 7"; only the
 * stacks the caller takes are grouped; no stacks make no groups.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cmd/task_groups.h"
#include "unwind/frames.h"

#define MAX 16

static struct cq_stack_frame frames[MAX][3];
static struct cq_suspended_stack sus[MAX];

/* Suspended stack i: kind, id, state, thread; a leaf at object obj, parked at line in fn. */
static void task(size_t i, const char *kind, uint64_t id, const char *state, int64_t thread,
                 const char *fn, int line, uint64_t obj)
{
	frames[i][0] = (struct cq_stack_frame){
	    .kind = CQ_FRAME_ASYNC, .function = "tokio::sync::notify::Notified", .object = obj};
	frames[i][1] = (struct cq_stack_frame){.kind = CQ_FRAME_ASYNC,
	                                       .function = fn,
	                                       .file = "src/main.rs",
	                                       .line = line,
	                                       .state = "Suspend0",
	                                       .object = obj + 16};
	sus[i] = (struct cq_suspended_stack){.kind = kind,
	                                     .leaf = obj,
	                                     .frames = frames[i],
	                                     .nframes = 2,
	                                     .end = CQ_END_OUTERMOST,
	                                     .has_task = true,
	                                     .task_id = id,
	                                     .task_state = state,
	                                     .thread = thread};
}

static void test_groups(void **unused)
{
	(void)unused;
	/* Strings of one content at different addresses are the same name. */
	static char other_fn[] = "app::wait";
	task(0, "tokio", 3, "idle", 0, "app::wait", 10, 0x1000);
	task(1, "tokio", 9, "idle", 0, "app::wait", 12, 0x2000);    /* another line */
	task(2, "tokio", 1, "idle", 0, other_fn, 10, 0x3000);       /* = 0 */
	task(3, "tokio", 4, "running", 7, "app::wait", 10, 0x4000); /* another state */
	task(4, "block_on", 0, "idle", 5, "app::wait", 10, 0x5000); /* another kind, no id */
	task(5, "tokio", 2, "idle", 0, "app::wait", 10, 0x6000);    /* = 0 */
	task(6, "tokio", 6, "running", 7, "app::wait", 10, 0x7000); /* = 3, same thread */
	struct cq_stacks s = {.suspended = sus, .nsuspended = 7};
	struct task_groups g;
	assert_true(task_groups_make(&s, NULL, &g));
	assert_int_equal(g.n, 4);
	assert_ptr_equal(g.v[0].first, &sus[0]);
	assert_int_equal(g.v[0].n, 3);
	assert_int_equal(g.v[0].nids, 3);
	assert_int_equal(g.v[0].ids[0], 1);
	assert_int_equal(g.v[0].ids[1], 2);
	assert_int_equal(g.v[0].ids[2], 3);
	assert_int_equal(g.v[0].nthreads, 0);
	assert_ptr_equal(g.v[1].first, &sus[3]);
	assert_int_equal(g.v[1].n, 2);
	assert_int_equal(g.v[1].nthreads, 1);
	assert_int_equal(g.v[1].threads[0], 7);
	assert_ptr_equal(g.v[2].first, &sus[1]);
	assert_ptr_equal(g.v[3].first, &sus[4]);
	assert_int_equal(g.v[3].nids, 0);
	char buf[64];
	task_group_ids_text(&g.v[0], buf, sizeof(buf));
	assert_string_equal(buf, "1-3");
	task_group_ids_text(&g.v[1], buf, sizeof(buf));
	assert_string_equal(buf, "4, 6");
	task_group_ids_text(&g.v[3], buf, sizeof(buf));
	assert_string_equal(buf, "block_on");
	task_groups_free(&g);
	assert_null(g.v);
}

static void test_unnamed_by_pc(void **unused)
{
	(void)unused;
	for (size_t i = 0; i < 3; i++) {
		task(i, "go", 10 + i, "chan receive", 0, "main.wait", 20, 0);
		frames[i][0] =
		    (struct cq_stack_frame){.kind = CQ_FRAME_NATIVE, .pc = i == 2 ? 0x99 : 0x42};
	}
	struct cq_stacks s = {.suspended = sus, .nsuspended = 3};
	struct task_groups g;
	assert_true(task_groups_make(&s, NULL, &g));
	assert_int_equal(g.n, 2);
	assert_int_equal(g.v[0].n, 2);
	char buf[8];
	g.v[0].ids[1] = 100000; /* "10, 100000" does not fit in 8: cut with "..." */
	task_group_ids_text(&g.v[0], buf, sizeof(buf));
	assert_string_equal(buf, "10, ...");
	task_groups_free(&g);
}

static void test_many_without_id(void **unused)
{
	(void)unused;
	task(0, "rust", 0, NULL, 0, "app::wait", 10, 0x10);
	task(1, "rust", 0, NULL, 0, "app::wait", 10, 0x20);
	task(2, "rust", 5, NULL, 0, "app::wait", 10, 0x30);
	struct cq_stacks s = {.suspended = sus, .nsuspended = 3};
	struct task_groups g;
	assert_true(task_groups_make(&s, NULL, &g));
	assert_int_equal(g.n, 1);
	char buf[64];
	task_group_ids_text(&g.v[0], buf, sizeof(buf));
	assert_string_equal(buf, "5, 2 without an id");
	task_groups_free(&g);
}

static bool only_tokio(const struct cq_suspended_stack *ss)
{
	return strcmp(ss->kind, "tokio") == 0;
}

static void test_take(void **unused)
{
	(void)unused;
	task(0, "folly", 0, NULL, 0, "app::wait", 10, 0x10);
	task(1, "tokio", 2, "idle", 0, "app::wait", 10, 0x20);
	task(2, "folly", 0, NULL, 0, "app::wait", 10, 0x30);
	struct cq_stacks s = {.suspended = sus, .nsuspended = 3};
	struct task_groups g;
	assert_true(task_groups_make(&s, only_tokio, &g));
	assert_int_equal(g.n, 1);
	assert_ptr_equal(g.v[0].first, &sus[1]);
	assert_int_equal(g.v[0].n, 1);
	task_groups_free(&g);
}

static void test_none(void **unused)
{
	(void)unused;
	struct cq_stacks s = {0};
	struct task_groups g;
	assert_true(task_groups_make(&s, NULL, &g));
	assert_int_equal(g.n, 0);
	task_groups_free(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_groups),
	    cmocka_unit_test(test_unnamed_by_pc),
	    cmocka_unit_test(test_many_without_id),
	    cmocka_unit_test(test_take),
	    cmocka_unit_test(test_none),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
