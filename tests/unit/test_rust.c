/*
 * test_rust.c - the "rust" runtime (unwind/async/rust.c: suspended futures
 * behind `dyn Future` pointers) through the async driver, on a synthetic
 * target with one Rust module whose type index the target's cache serves
 * (rust_target.h).  FACTS.md section 6 gives the model: a state machine's
 * __state is 0 Unresumed, 1 Returned, 2 Panicked, 3+k SuspendK, and
 * SuspendK holds its __awaitee inline; a future's identity is (address,
 * type), since an awaitee at offset 0 shares its awaiter's address.
 *
 * The heap holds main (app::main's state machine, Suspend0) whose awaitee
 * at offset 0 is serve (app::serve's, Suspend0), whose awaitee at +16 is a
 * Sleep leaf; a Returned serve elsewhere; and fat pointers {data, vtable} to
 * main, to serve at main's address, to the Returned one, to unmapped
 * memory, to read-only memory and to a misaligned address.  Exactly one
 * task is waiting: main, reported once as Sleep <- serve <- main.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "async_scene.h"
#include "rust_target.h"

#define MOD       0x555555550000ull /* the module's bias */
#define HEAP      0x10000000ull
#define HEAP_LEN  0x1000ull
#define RODATA    0x20000000ull
#define STACK     0x7ff000000ull
#define STACK_LEN 0x1000ull

#define VT_SERVE 0x2000ull /* link-time addresses of the Future vtables */
#define VT_MAIN  0x2100ull
#define MAIN     (HEAP + 0x100)
#define SLEEP    (MAIN + 16)
#define RETURNED (HEAP + 0x300)

enum { T_SLEEP, T_SERVE, T_MAIN, NTYPES };

static const int module_handle;

struct scene {
	struct rt_fake fake;
	struct rt_elf elf;
	uint8_t heap[HEAP_LEN], rodata[0x1000], stack[STACK_LEN];
	struct cq_rust_index *index;
	struct cq_target_module module;
	struct cq_regs regs;
	struct cq_target_thread thread;
	struct cq_unwind_target target;
	struct cq_unwind_options uo;
	struct cq_stack_frame native[2];
	struct cq_thread_stack thread_stack;
	struct cq_stacks stacks;
	struct cq_async_ctx ctx;
	struct cq_async_states *states;
};

static struct cq_rust_index *make_index(void)
{
	struct cq_rust_index *ix = calloc(1, sizeof(*ix));
	struct cq_rust_type *t = calloc(NTYPES, sizeof(*t));
	struct cq_rust_vtable *vt = calloc(2, sizeof(*vt));
	struct cq_rust_resume *r = calloc(2, sizeof(*r));
	assert_true(ix && t && vt && r);
	ix->kinds = rt_table_parts(); /* an index of this build: the table's parts */
	t[T_SLEEP] = rt_leaf("app::leaf::Sleep", 16, 8);
	t[T_SERVE] = rt_async_fn("app::serve", 64, 8, 40, T_SLEEP, 16, 42);
	t[T_MAIN] = rt_async_fn("app::main", 128, 16, 100, T_SERVE, 0, 7);
	ix->model.types = t;
	ix->model.ntypes = NTYPES;
	vt[0] = (struct cq_rust_vtable){.addr = VT_SERVE, .type = T_SERVE};
	vt[1] = (struct cq_rust_vtable){.addr = VT_MAIN, .type = T_MAIN};
	ix->model.vtables = vt;
	ix->model.nvtables = 2;
	r[0] = (struct cq_rust_resume){
	    .lo = 0x5000, .hi = 0x5100, .name = rt_dup("app::main::{async_fn#0}")};
	r[1] = (struct cq_rust_resume){
	    .lo = 0x6000, .hi = 0x6100, .name = rt_dup("app::serve::{async_fn#0}")};
	ix->resumes = r;
	ix->nresumes = 2;
	return ix;
}

static void scene_init(struct scene *s)
{
	memset(s, 0, sizeof(*s));
	static const char comment[] = "GCC: (Debian 12.2.0-14) 12.2.0\0rustc version 1.80.0";
	rt_elf_build(&s->elf, comment, sizeof(comment));
	assert_non_null(s->elf.elf);
	s->index = make_index();
	s->fake.index = s->index;
	/* main: Suspend0, its awaitee serve at +0: Suspend0, its awaitee Sleep at +16 */
	s->heap[MAIN - HEAP + 100] = 3;
	s->heap[MAIN - HEAP + 40] = 3;
	s->heap[RETURNED - HEAP + 40] = 1;
	const uint64_t fat[][2] = {
	    {MAIN, MOD + VT_MAIN},
	    {MAIN, MOD + VT_SERVE},       /* serve, at main's address: main's awaitee */
	    {RETURNED, MOD + VT_SERVE},   /* not waiting */
	    {0x50000000, MOD + VT_SERVE}, /* unmapped */
	    {RODATA + 0x100, MOD + VT_SERVE},
	    {HEAP + 0x408, MOD + VT_MAIN}, /* main's type is 16-aligned */
	};
	for (size_t i = 0; i < sizeof(fat) / sizeof(fat[0]); i++) {
		as_put64(s->heap, HEAP, HEAP + 0x800 + 16 * i, fat[i][0]);
		as_put64(s->heap, HEAP, HEAP + 0x808 + 16 * i, fat[i][1]);
	}
	struct cq_mem *mem = &s->fake.mem;
	cq_mem_init(mem);
	assert_null(cq_mem_add(mem, CQ_MEM_LAYER_CORE, HEAP, HEAP + HEAP_LEN, s->heap, HEAP_LEN,
	                       CQ_MEM_READ | CQ_MEM_WRITE));
	assert_null(cq_mem_add(mem, CQ_MEM_LAYER_CORE, RODATA, RODATA + sizeof(s->rodata),
	                       s->rodata, sizeof(s->rodata), CQ_MEM_READ));
	assert_null(cq_mem_add(mem, CQ_MEM_LAYER_CORE, STACK, STACK + STACK_LEN, s->stack,
	                       STACK_LEN, CQ_MEM_READ | CQ_MEM_WRITE));
	cq_mem_finish(mem);
	s->module = (struct cq_target_module){
	    .handle = (const struct cq_module *)(const void *)&module_handle,
	    .name = "/usr/bin/app",
	    .start = MOD,
	    .end = MOD + 0x100000,
	    .bias = MOD,
	    .elf = s->elf.elf,
	    .found = true};
	cq_regs_set(&s->regs, cq_arch_x86_64.sp_reg, STACK + 0x100);
	s->thread = (struct cq_target_thread){.tid = 300, .regs = &s->regs};
	s->target = (struct cq_unwind_target){.ops = &rt_ops,
	                                      .ctx = &s->fake,
	                                      .arch = &cq_arch_x86_64,
	                                      .mem = mem,
	                                      .modules = &s->module,
	                                      .nmodules = 1,
	                                      .threads = &s->thread,
	                                      .nthreads = 1};
	cq_unwind_options_default(&s->uo);
	s->thread_stack = (struct cq_thread_stack){.frames = s->native, .nframes = 0};
	s->stacks.threads = &s->thread_stack;
	s->stacks.nthreads = 1;
	s->ctx = (struct cq_async_ctx){.target = &s->target,
	                               .unwind = &s->uo,
	                               .max_suspended = 16,
	                               .named = true,
	                               .stacks = &s->stacks};
}

static void scene_run(struct scene *s)
{
	bool wants_native;
	assert_null(cq_async_detect(&s->ctx, &s->states, &wants_native));
	assert_null(cq_async_stacks(&s->ctx, s->states));
}

static void scene_free(struct scene *s)
{
	cq_async_states_free(s->states);
	as_stacks_free(&s->stacks);
	cq_mem_destroy(&s->fake.mem);
	cq_rust_index_free(s->index);
	elf_end(s->elf.elf);
}

static uint64_t u(const struct scene *s, const char *key)
{
	return as_stat_u(&s->stacks, key);
}

/* The value of key inside the top-level object obj. */
static uint64_t nested_u(const struct scene *s, const char *obj, const char *key)
{
	const struct cq_stat *o = cq_stats_find(&s->stacks.async, obj);
	assert_non_null(o);
	for (const struct cq_stat *e = o + 1; e < s->stacks.async.v + s->stacks.async.n; e++) {
		if (e->type == CQ_STAT_END)
			break;
		if (e->key && strcmp(e->key, key) == 0)
			return e->u;
	}
	fail_msg("%s.%s missing", obj, key);
	return 0;
}

static void test_one_waiting_task_reported_from_its_outermost_future(void **state)
{
	(void)state;
	struct scene *s = calloc(1, sizeof(*s));
	scene_init(s);
	scene_run(s);
	assert_int_equal(s->fake.gets, 1); /* one index, shared by tokio and rust */
	assert_int_equal(s->fake.puts, 0);
	assert_int_equal(s->stacks.nsuspended, 1);
	const struct cq_suspended_stack *c = &s->stacks.suspended[0];
	assert_string_equal(c->kind, "rust");
	assert_int_equal(c->nframes, 3);
	assert_int_equal(c->leaf, SLEEP);
	assert_int_equal(c->end, CQ_END_OUTERMOST);
	const struct cq_stack_frame *f = c->frames;
	/* innermost first: the leaf, then each async fn that awaits it */
	assert_string_equal(f[0].function, "app::leaf::Sleep");
	assert_int_equal(f[0].object, SLEEP);
	assert_null(f[0].state);
	assert_string_equal(f[1].function, "app::serve");
	assert_int_equal(f[1].object, MAIN);
	assert_string_equal(f[1].state, "Suspend0");
	assert_string_equal(f[1].file, "/src/app.rs");
	assert_int_equal(f[1].line, 42);
	assert_string_equal(f[2].function, "app::main");
	assert_int_equal(f[2].object, MAIN);
	assert_int_equal(f[2].line, 7);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(f[i].kind, CQ_FRAME_ASYNC);
		assert_int_equal(f[i].pc, 0);
		assert_ptr_equal(f[i].module, &module_handle);
	}
	scene_free(s);
	free(s);
}

static void test_statistics(void **state)
{
	(void)state;
	struct scene *s = calloc(1, sizeof(*s));
	scene_init(s);
	scene_run(s);
	assert_int_equal(u(s, "rust_modules_indexed"), 1);
	assert_int_equal(u(s, "rust_modules_cached"), 1);
	assert_int_equal(u(s, "rust_types"), NTYPES);
	assert_int_equal(u(s, "rust_vtables"), 2);
	assert_int_equal(u(s, "rust_fat_pointers"), 6);
	/* main, serve at main's address and the Returned serve were decoded */
	assert_int_equal(u(s, "rust_futures"), 3);
	assert_int_equal(u(s, "rust_awaited"), 1);
	assert_int_equal(u(s, "rust_not_waiting"), 1);
	assert_int_equal(u(s, "rust_polled"), 0);
	assert_int_equal(u(s, "rust_claimed"), 0);
	assert_int_equal(u(s, "rust_reported"), 1);
	assert_int_equal(u(s, "rust_over_limit"), 0);
	/* every writable byte: the heap, and the thread's stack above its red zone */
	assert_int_equal(u(s, "rust_scanned_bytes"),
	                 HEAP_LEN + STACK_LEN - 0x100 + cq_arch_x86_64.red_zone);
	assert_int_equal(nested_u(s, "rust_rejected", "unmapped"), 1);
	assert_int_equal(nested_u(s, "rust_rejected", "read_only"), 1);
	assert_int_equal(nested_u(s, "rust_rejected", "misaligned"), 1);
	assert_int_equal(nested_u(s, "rust_rejected", "inside_chunk"), 0);
	const struct cq_stat *samples = cq_stats_find(&s->stacks.async, "rust_rejects");
	assert_non_null(samples);
	assert_int_equal(samples->type, CQ_STAT_ARRAY);
	scene_free(s);
	free(s);
}

/*
 * A thread polling main's resume function, main's address on its live
 * stack: main is running, reported once as running on that thread, its
 * chain from its types (no stale state).
 */
static void test_a_future_being_polled_is_reported_running(void **state)
{
	(void)state;
	struct scene *s = calloc(1, sizeof(*s));
	scene_init(s);
	s->native[0] = (struct cq_stack_frame){.pc = MOD + 0x5010, .kind = CQ_FRAME_NATIVE};
	s->thread_stack.nframes = 1;
	as_put64(s->stack, STACK, STACK + 0x200, MAIN);
	scene_run(s);
	assert_int_equal(u(s, "rust_polled"), 1);
	assert_int_equal(s->stacks.nsuspended, 1);
	const struct cq_suspended_stack *ss = &s->stacks.suspended[0];
	assert_true(ss->has_task);
	assert_string_equal(ss->task_state, "running");
	assert_int_equal(ss->thread, 300);
	for (size_t i = 0; i < ss->nframes; i++)
		assert_null(ss->frames[i].state);
	scene_free(s);
	free(s);

	/* The same frame without main's address on the live stack: another main, still waiting. */
	s = calloc(1, sizeof(*s));
	scene_init(s);
	s->native[0] = (struct cq_stack_frame){.pc = MOD + 0x5010, .kind = CQ_FRAME_NATIVE};
	s->thread_stack.nframes = 1;
	as_put64(s->stack, STACK, STACK + 0x10, MAIN); /* below sp: dead */
	scene_run(s);
	assert_int_equal(u(s, "rust_polled"), 0);
	assert_int_equal(s->stacks.nsuspended, 1);
	assert_false(s->stacks.suspended[0].has_task);
	scene_free(s);
	free(s);
}

/*
 * Two mains on the polling thread's live stack: one thread polls one of
 * them.  The one resumed before (Suspend0) is running and the Unresumed one
 * is dropped; when both are Unresumed nothing decides, and both are dropped.
 */
static void test_two_futures_polled_in_one_function(void **state)
{
	(void)state;
	const uint64_t main2 = HEAP + 0x300;
	for (int both_unresumed = 0; both_unresumed < 2; both_unresumed++) {
		struct scene *s = calloc(1, sizeof(*s));
		scene_init(s);
		as_put64(s->heap, HEAP, HEAP + 0x800 + 16 * 6, main2);
		as_put64(s->heap, HEAP, HEAP + 0x808 + 16 * 6, MOD + VT_MAIN);
		if (both_unresumed)
			s->heap[MAIN - HEAP + 100] = 0;
		s->native[0] = (struct cq_stack_frame){.pc = MOD + 0x5010, .kind = CQ_FRAME_NATIVE};
		s->thread_stack.nframes = 1;
		as_put64(s->stack, STACK, STACK + 0x200, MAIN);
		as_put64(s->stack, STACK, STACK + 0x208, main2);
		scene_run(s);
		assert_int_equal(u(s, "rust_polled"), 2);
		size_t running = 0;
		for (size_t i = 0; i < s->stacks.nsuspended; i++)
			running += s->stacks.suspended[i].has_task;
		assert_int_equal(running, both_unresumed ? 0 : 1);
		for (size_t i = 0; i < s->stacks.nsuspended; i++) {
			const struct cq_suspended_stack *ss = &s->stacks.suspended[i];
			if (ss->has_task) /* the one resumed before */
				assert_int_equal(ss->frames[ss->nframes - 1].object, MAIN);
		}
		scene_free(s);
		free(s);
	}
}

static void test_bound_on_suspended_stacks(void **state)
{
	(void)state;
	struct scene *s = calloc(1, sizeof(*s));
	scene_init(s);
	s->ctx.max_suspended = 0;
	scene_run(s);
	assert_int_equal(s->stacks.nsuspended, 0);
	assert_int_equal(u(s, "rust_reported"), 0);
	assert_int_equal(u(s, "rust_over_limit"), 1);
	scene_free(s);
	free(s);
}

/* A module whose .comment does not say rustc is not indexed: no cache read, no state. */
static void test_module_not_built_by_rustc(void **state)
{
	(void)state;
	struct scene *s = calloc(1, sizeof(*s));
	scene_init(s);
	elf_end(s->elf.elf);
	static const char gcc_only[] = "GCC: (Debian 12.2.0-14) 12.2.0";
	rt_elf_build(&s->elf, gcc_only, sizeof(gcc_only));
	s->module.elf = s->elf.elf;
	scene_run(s);
	assert_int_equal(s->fake.gets, 0);
	assert_int_equal(u(s, "rust_modules_indexed"), 0);
	assert_int_equal(u(s, "rust_fat_pointers"), 0);
	assert_int_equal(s->stacks.nsuspended, 0);
	scene_free(s);
	free(s);
}

/*
 * A damaged cached index is rejected (counted by the target), and with no
 * debuginfo to rebuild it from the module has no types: nothing is found.
 */
static void test_damaged_cache_row(void **state)
{
	(void)state;
	struct scene *s = calloc(1, sizeof(*s));
	scene_init(s);
	s->fake.damaged = true;
	scene_run(s);
	assert_int_equal(s->fake.rejects, 1);
	assert_int_equal(u(s, "rust_modules_indexed"), 1);
	assert_int_equal(u(s, "rust_modules_cached"), 0);
	assert_int_equal(u(s, "rust_types"), 0);
	assert_int_equal(s->stacks.nsuspended, 0);
	scene_free(s);
	free(s);
}

/* A target whose cache offers no reject op does without it on a damaged row. */
static void test_damaged_cache_row_without_reject_op(void **state)
{
	(void)state;
	struct scene *s = calloc(1, sizeof(*s));
	scene_init(s);
	struct cq_unwind_target_ops no_reject = rt_ops;
	no_reject.cache_reject = NULL;
	s->target.ops = &no_reject;
	s->fake.damaged = true;
	scene_run(s);
	assert_int_equal(u(s, "rust_types"), 0);
	assert_int_equal(s->stacks.nsuspended, 0);
	scene_free(s);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_one_waiting_task_reported_from_its_outermost_future),
	    cmocka_unit_test(test_statistics),
	    cmocka_unit_test(test_a_future_being_polled_is_reported_running),
	    cmocka_unit_test(test_two_futures_polled_in_one_function),
	    cmocka_unit_test(test_bound_on_suspended_stacks),
	    cmocka_unit_test(test_module_not_built_by_rustc),
	    cmocka_unit_test(test_damaged_cache_row),
	    cmocka_unit_test(test_damaged_cache_row_without_reject_op),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
