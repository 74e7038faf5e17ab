/*
 * test_tokio.c - the "tokio" runtime (unwind/async/tokio.c) through the
 * async driver, on a synthetic target with one Rust module whose type index
 * (one task type, raw::poll<T, S>, and a block_on) the target's cache serves
 * (rust_target.h).  The task memory follows FACTS.md section 9: a Header
 * {state, queue_next, vtable, owner_id}, then Core {scheduler, task_id,
 * future}, then the Trailer's OwnedTasks links; the raw::Vtable, a static in
 * the module's data, holds raw::poll's address and the trailer, scheduler
 * and id offsets; each runtime's OwnedTasks {.., id, head} links its tasks,
 * whose owner_id is that id.  State bits: RUNNING 1, COMPLETE 2, NOTIFIED
 * 4, CANCELLED 32, the reference count from bit 6.
 *
 * Cell layout chosen here: scheduler at 0x20, task_id at 0x28, the future
 * at 0x30 (the index's future_from_id is 8), the trailer at 0x100 with next
 * at +8.  Task 11 is idle, its future suspended on a Sleep; task 5 is
 * running on thread 400 (a frame in raw::poll's code, its header on that
 * thread's live stack); a blocking-pool task (owner_id 0) is in no list.
 * Thread 401 is inside CachedParkThread::block_on with the future `f` at
 * sp + 0x20 (its DWARF location, in the index).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "async_scene.h"
#include "unwind/async/tokio_index.h"
#include "rust_target.h"

#define MOD       0x555555550000ull /* the module's bias */
#define HEAP      0x10000000ull
#define HEAP_LEN  0x2000ull
#define STACK0    0x7ff000000ull
#define STACK1    0x7fe000000ull
#define STACK_LEN 0x1000ull

#define POLL     0x7000ull                     /* raw::poll<T, S>, link time */
#define BLOCK_ON 0x8000ull                     /* CachedParkThread::block_on<F>, link time */
#define VTABLE   (MOD + RT_DATA_VADDR + 0x100) /* the task type's raw::Vtable, runtime */
#define SHARED   (HEAP + 0x1000)               /* the scheduler's shared state */
#define OWNED_ID 7
#define IDLE     (HEAP + 0x100)
#define RUNNING  (HEAP + 0x300)
#define BLOCKING (HEAP + 0x600)

enum { T_SLEEP, T_TASK, NTYPES };

static const int module_handle;

struct scene {
	struct rt_fake fake;
	struct rt_elf elf;
	uint8_t data[RT_DATA_LEN], heap[HEAP_LEN], stack0[STACK_LEN], stack1[STACK_LEN];
	struct cq_rust_index *index;
	struct cq_target_module module;
	struct cq_regs regs[2];
	struct cq_target_thread threads[2];
	struct cq_unwind_target target;
	struct cq_unwind_options uo;
	struct cq_stack_frame frames0[1];
	struct cq_unwind_frame native1[4];
	struct cq_async_native native[2];
	struct cq_thread_stack thread_stacks[2];
	struct cq_stacks stacks;
	struct cq_async_ctx ctx;
	struct cq_async_states *states;
};

static struct cq_rust_index *make_index(bool with_block_on)
{
	struct cq_rust_index *ix = calloc(1, sizeof(*ix));
	struct cq_rust_type *t = calloc(NTYPES, sizeof(*t));
	assert_true(ix && t);
	t[T_SLEEP] = rt_leaf("app::leaf::Sleep", 16, 8);
	t[T_TASK] = rt_async_fn("app::worker", 64, 8, 40, T_SLEEP, 16, 12);
	ix->model.types = t;
	ix->model.ntypes = NTYPES;
	struct cq_tokio_kind *kinds = calloc(1, sizeof(*kinds));
	assert_non_null(kinds);
	kinds[0] = (struct cq_tokio_kind){.poll = POLL,
	                                  .code = {{POLL, POLL + 0x100}},
	                                  .ncode = 1,
	                                  .future = T_TASK,
	                                  .future_from_id = 8,
	                                  .sched_ptr = 0,
	                                  .owned = 0x40,
	                                  .owned_id = 0x8,
	                                  .owned_head = 0x10,
	                                  .hdr_state = 0,
	                                  .hdr_vtable = 0x10,
	                                  .hdr_owner = 0x18,
	                                  .vt_poll = 0,
	                                  .vt_trailer = 0x38,
	                                  .vt_scheduler = 0x40,
	                                  .vt_id = 0x48,
	                                  .trailer_next = 8,
	                                  .scheduler = rt_dup("Arc<Handle>")};
	assert_true(cq_tokio_index_set(ix, kinds, 1, 2));
	if (with_block_on) {
		struct cq_rust_local *loc = calloc(1, sizeof(*loc));
		ix->block_ons = calloc(1, sizeof(*ix->block_ons));
		assert_true(loc && ix->block_ons);
		*loc = (struct cq_rust_local){.lo = BLOCK_ON,
		                              .hi = BLOCK_ON + 0x100,
		                              .base = CQ_RUST_BASE_SP,
		                              .offset = 0x20,
		                              .type = T_TASK};
		ix->block_ons[0] = (struct cq_rust_block_on){.lo = BLOCK_ON,
		                                             .hi = BLOCK_ON + 0x100,
		                                             .future = T_TASK,
		                                             .locs = loc,
		                                             .nlocs = 1};
		ix->nblock_ons = 1;
	}
	return ix;
}

/* A task cell at h: header, scheduler pointer, id, trailer's next. */
static void put_task(struct scene *s, uint64_t h, uint64_t state, uint64_t owner, uint64_t id,
                     uint64_t shared, uint64_t next)
{
	as_put64(s->heap, HEAP, h, state);
	as_put64(s->heap, HEAP, h + 0x10, VTABLE);
	as_put64(s->heap, HEAP, h + 0x18, owner);
	as_put64(s->heap, HEAP, h + 0x20, shared);
	as_put64(s->heap, HEAP, h + 0x28, id);
	as_put64(s->heap, HEAP, h + 0x108, next);
}

static void scene_init(struct scene *s, bool with_block_on)
{
	memset(s, 0, sizeof(*s));
	static const char comment[] = "rustc version 1.80.0 (051478957 2024-07-21)";
	rt_elf_build(&s->elf, comment, sizeof(comment));
	assert_non_null(s->elf.elf);
	s->index = make_index(with_block_on);
	s->fake.index = s->index;
	/* raw::Vtable: poll first; trailer, scheduler and id offsets at the index's offsets */
	as_put64(s->data, 0, 0x100, MOD + POLL);
	as_put64(s->data, 0, 0x100 + 0x38, 0x100);
	as_put64(s->data, 0, 0x100 + 0x40, 0x20);
	as_put64(s->data, 0, 0x100 + 0x48, 0x28);
	/* OwnedTasks of the runtime: id and head */
	as_put64(s->heap, HEAP, SHARED + 0x40 + 0x8, OWNED_ID);
	as_put64(s->heap, HEAP, SHARED + 0x40 + 0x10, IDLE);
	put_task(s, IDLE, 0x48, OWNED_ID, 11, SHARED, RUNNING);
	s->heap[IDLE + 0x30 + 40 - HEAP] = 3; /* its future: Suspend0, awaiting the Sleep */
	put_task(s, RUNNING, 0x49, OWNED_ID, 5, SHARED, 0);
	put_task(s, BLOCKING, 0x48, 0, 99, 0, 0);
	/* thread 400 polls task 5: a frame in raw::poll, the header on its live stack */
	as_put64(s->stack0, STACK0, STACK0 + 0x180, RUNNING);
	s->frames0[0] = (struct cq_stack_frame){.pc = MOD + POLL + 0x10, .kind = CQ_FRAME_NATIVE};
	/* thread 401 is in block_on, f at sp + 0x20: Suspend0 */
	s->stack1[0x120 + 40] = 3;
	s->native1[0] = (struct cq_unwind_frame){.pc = MOD + BLOCK_ON + 0x10, .sp = STACK1 + 0x100};
	s->native1[1] = (struct cq_unwind_frame){
	    .pc = MOD + 0x9000, .sp = STACK1 + 0x200, .is_return_address = true};

	struct cq_mem *mem = &s->fake.mem;
	cq_mem_init(mem);
	assert_null(cq_mem_add(mem, CQ_MEM_LAYER_CORE, MOD + RT_DATA_VADDR,
	                       MOD + RT_DATA_VADDR + RT_DATA_LEN, s->data, RT_DATA_LEN,
	                       CQ_MEM_READ));
	assert_null(cq_mem_add(mem, CQ_MEM_LAYER_CORE, HEAP, HEAP + HEAP_LEN, s->heap, HEAP_LEN,
	                       CQ_MEM_READ | CQ_MEM_WRITE));
	assert_null(cq_mem_add(mem, CQ_MEM_LAYER_CORE, STACK0, STACK0 + STACK_LEN, s->stack0,
	                       STACK_LEN, CQ_MEM_READ | CQ_MEM_WRITE));
	assert_null(cq_mem_add(mem, CQ_MEM_LAYER_CORE, STACK1, STACK1 + STACK_LEN, s->stack1,
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
	cq_regs_set(&s->regs[0], cq_arch_x86_64.sp_reg, STACK0 + 0x100);
	cq_regs_set(&s->regs[1], cq_arch_x86_64.sp_reg, STACK1 + 0x100);
	s->threads[0] = (struct cq_target_thread){.tid = 400, .regs = &s->regs[0]};
	s->threads[1] = (struct cq_target_thread){.tid = 401, .regs = &s->regs[1]};
	s->target = (struct cq_unwind_target){.ops = &rt_ops,
	                                      .ctx = &s->fake,
	                                      .arch = &cq_arch_x86_64,
	                                      .mem = mem,
	                                      .modules = &s->module,
	                                      .nmodules = 1,
	                                      .threads = s->threads,
	                                      .nthreads = 2};
	cq_unwind_options_default(&s->uo);
	s->thread_stacks[0] = (struct cq_thread_stack){.frames = s->frames0, .nframes = 1};
	s->thread_stacks[1] = (struct cq_thread_stack){.frames = NULL, .nframes = 0};
	s->native[0] = (struct cq_async_native){NULL, 0, CQ_END_OUTERMOST};
	s->native[1] = (struct cq_async_native){s->native1, 2, CQ_END_OUTERMOST};
	s->stacks.threads = s->thread_stacks;
	s->stacks.nthreads = 2;
	s->ctx = (struct cq_async_ctx){.target = &s->target,
	                               .unwind = &s->uo,
	                               .max_suspended = 16,
	                               .named = true,
	                               .stacks = &s->stacks};
}

static bool scene_run(struct scene *s)
{
	bool wants_native;
	assert_null(cq_async_detect(&s->ctx, &s->states, &wants_native));
	if (wants_native)
		s->ctx.native = s->native;
	assert_null(cq_async_stacks(&s->ctx, s->states));
	return wants_native;
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

static const struct cq_suspended_stack *find_kind(const struct scene *s, const char *kind,
                                                  size_t nth)
{
	for (size_t i = 0; i < s->stacks.nsuspended; i++)
		if (strcmp(s->stacks.suspended[i].kind, kind) == 0 && nth-- == 0)
			return &s->stacks.suspended[i];
	return NULL;
}

static void test_tasks_of_a_runtime(void **state)
{
	(void)state;
	struct scene *s = calloc(1, sizeof(*s));
	scene_init(s, false);
	assert_false(scene_run(s)); /* no block_on in the index: no native frames wanted */
	assert_int_equal(s->stacks.nsuspended, 2);
	/* in task id order: 5, then 11 */
	const struct cq_suspended_stack *run = find_kind(s, "tokio", 0);
	const struct cq_suspended_stack *idle = find_kind(s, "tokio", 1);
	assert_true(run && idle);
	assert_true(run->has_task);
	assert_int_equal(run->task_id, 5);
	assert_string_equal(run->task_state, "running");
	assert_int_equal(run->thread, 400);
	/* a running task's state machine is stale: named, not decoded */
	assert_int_equal(run->nframes, 1);
	assert_string_equal(run->frames[0].function, "app::worker");
	assert_int_equal(run->frames[0].object, RUNNING + 0x30);
	assert_null(run->frames[0].state);
	assert_int_equal(run->leaf, RUNNING + 0x30);

	assert_int_equal(idle->task_id, 11);
	assert_string_equal(idle->task_state, "idle");
	assert_int_equal(idle->thread, 0);
	assert_int_equal(idle->nframes, 2);
	assert_string_equal(idle->frames[0].function, "app::leaf::Sleep");
	assert_int_equal(idle->frames[0].object, IDLE + 0x30 + 16);
	assert_string_equal(idle->frames[1].function, "app::worker");
	assert_string_equal(idle->frames[1].state, "Suspend0");
	assert_int_equal(idle->frames[1].line, 12);
	assert_int_equal(idle->frames[1].object, IDLE + 0x30);
	assert_ptr_equal(idle->frames[1].module, &module_handle);
	assert_int_equal(idle->end, CQ_END_OUTERMOST);
	scene_free(s);
	free(s);
}

static void test_statistics(void **state)
{
	(void)state;
	struct scene *s = calloc(1, sizeof(*s));
	scene_init(s, false);
	scene_run(s);
	assert_int_equal(u(s, "tokio_task_types"), 1);
	assert_int_equal(u(s, "tokio_unresolved"), 2);
	assert_int_equal(u(s, "tokio_vtables"), 1);
	assert_int_equal(u(s, "tokio_candidates"),
	                 3); /* the two listed tasks and the blocking one */
	assert_int_equal(u(s, "tokio_lists"), 1);
	assert_int_equal(u(s, "tokio_tasks"), 2);
	assert_int_equal(u(s, "tokio_stale"), 1);
	assert_int_equal(u(s, "tokio_broken_lists"), 0);
	assert_int_equal(u(s, "tokio_reported"), 2);
	assert_int_equal(u(s, "tokio_over_limit"), 0);
	assert_int_equal(u(s, "tokio_block_on"), 0);
	const struct cq_stat *tr = cq_stats_find(&s->stacks.async, "tokio_truncated");
	assert_true(tr && tr->type == CQ_STAT_BOOL && !tr->b);
	/* the index has no dyn Future vtable: the rust runtime has nothing to scan for */
	assert_int_equal(u(s, "rust_types"), NTYPES);
	assert_int_equal(u(s, "rust_fat_pointers"), 0);
	scene_free(s);
	free(s);
}

/* The task states from the header bits. */
static void test_task_states(void **state)
{
	(void)state;
	const struct {
		uint64_t bits;
		const char *name;
	} cases[] = {{0x40 | 4, "scheduled"}, {0x40 | 32, "cancelled"}, {0x40 | 2 | 1, "complete"}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct scene *s = calloc(1, sizeof(*s));
		scene_init(s, false);
		as_put64(s->heap, HEAP, IDLE, cases[i].bits);
		scene_run(s);
		const struct cq_suspended_stack *t = find_kind(s, "tokio", 1);
		assert_non_null(t);
		assert_int_equal(t->task_id, 11);
		assert_string_equal(t->task_state, cases[i].name);
		/* a complete task's future is gone: named only; the others are decoded */
		assert_int_equal(t->nframes, cases[i].bits & 2 ? 1 : 2);
		scene_free(s);
		free(s);
	}
}

/* An element whose owner_id is not the list's id ends the walk: a broken list. */
static void test_broken_list(void **state)
{
	(void)state;
	struct scene *s = calloc(1, sizeof(*s));
	scene_init(s, false);
	as_put64(s->heap, HEAP, RUNNING + 0x18, OWNED_ID + 1);
	scene_run(s);
	assert_int_equal(u(s, "tokio_broken_lists"), 1);
	assert_int_equal(u(s, "tokio_tasks"), 1);
	assert_int_equal(u(s, "tokio_stale"), 2);
	assert_int_equal(s->stacks.nsuspended, 1);
	assert_int_equal(s->stacks.suspended[0].task_id, 11);
	scene_free(s);
	free(s);
}

/* A list whose id is 0 is not believed: no task is reported. */
static void test_list_without_id(void **state)
{
	(void)state;
	struct scene *s = calloc(1, sizeof(*s));
	scene_init(s, false);
	as_put64(s->heap, HEAP, SHARED + 0x48, 0);
	scene_run(s);
	assert_int_equal(u(s, "tokio_lists"), 0);
	assert_int_equal(u(s, "tokio_tasks"), 0);
	assert_int_equal(u(s, "tokio_stale"), 3);
	assert_int_equal(s->stacks.nsuspended, 0);
	scene_free(s);
	free(s);
}

/* The future #[tokio::main] drives, pinned in block_on's frame on thread 401. */
static void test_block_on_future(void **state)
{
	(void)state;
	struct scene *s = calloc(1, sizeof(*s));
	scene_init(s, true);
	assert_true(scene_run(s));
	const struct cq_suspended_stack *b = find_kind(s, "block_on", 0);
	assert_non_null(b);
	assert_true(b->has_task);
	assert_int_equal(b->thread, 401);
	assert_string_equal(b->task_state, "idle");
	assert_int_equal(b->nframes, 2);
	assert_int_equal(b->frames[0].object, STACK1 + 0x120 + 16);
	assert_int_equal(b->frames[1].object, STACK1 + 0x120);
	assert_string_equal(b->frames[1].state, "Suspend0");
	assert_int_equal(u(s, "tokio_block_on"), 1);
	assert_int_equal(u(s, "tokio_reported"), 2);
	scene_free(s);
	free(s);
}

/*
 * Where block_on's `f` has no location at the parked pc (-O2), the future
 * is the one value of F in the driving frame and its caller's stack
 * (thread 401: [sp of block_on, the caller's CFA)) that decodes suspended;
 * the zeroed words around it read as Unresumed copies and do not count
 * against it.  A second suspended value makes it ambiguous: none is
 * reported, and the frames are counted as rejected.
 */
static void block_on_by_value(struct scene *s)
{
	scene_init(s, true);
	s->index->block_ons[0].locs[0].lo = BLOCK_ON + 0x80; /* not at the parked pc */
	s->native1[1].sp = STACK1 + 0x180;
	s->native1[2] = (struct cq_unwind_frame){
	    .pc = MOD + 0xa000, .sp = STACK1 + 0x300, .is_return_address = true};
	s->native[1].nframes = 3;
	s->stack1[0x120 + 40] = 0;
	s->stack1[0x240 + 40] = 3; /* in the caller's frame: Suspend0 */
}

static void test_block_on_future_by_value(void **state)
{
	(void)state;
	struct scene *s = calloc(1, sizeof(*s));
	block_on_by_value(s);
	assert_true(scene_run(s));
	const struct cq_suspended_stack *b = find_kind(s, "block_on", 0);
	assert_non_null(b);
	assert_int_equal(b->thread, 401);
	assert_int_equal(b->nframes, 2);
	assert_int_equal(b->frames[1].object, STACK1 + 0x240);
	assert_string_equal(b->frames[1].state, "Suspend0");
	assert_int_equal(u(s, "tokio_block_on"), 1);
	assert_int_equal(u(s, "tokio_block_on_scanned"), 1);
	assert_int_equal(u(s, "tokio_block_on_rejected"), 0);
	scene_free(s);

	/* two suspended values: not believed */
	block_on_by_value(s);
	s->stack1[0x140 + 40] = 3;
	assert_true(scene_run(s));
	assert_null(find_kind(s, "block_on", 0));
	assert_int_equal(u(s, "tokio_block_on"), 0);
	assert_int_equal(u(s, "tokio_block_on_rejected"), 1);
	scene_free(s);

	/* past the caller's CFA: not looked at */
	block_on_by_value(s);
	s->stack1[0x240 + 40] = 0;
	s->stack1[0x300 + 40] = 3;
	assert_true(scene_run(s));
	assert_null(find_kind(s, "block_on", 0));
	assert_int_equal(u(s, "tokio_block_on_rejected"), 1);
	scene_free(s);
	free(s);
}

/*
 * A lone Unresumed value is the future only while a poll of it runs above
 * block_on (its first poll: the state in memory is still Unresumed); a
 * parked future returned Pending and is suspended, so then it is rejected.
 */
static void block_on_first_poll(struct scene *s, bool polled)
{
	block_on_by_value(s);
	memset(s->stack1 + 0x100, 0xff, 0x200); /* no value of F decodes here ... */
	s->stack1[0x240 + 40] = 0;              /* ... but this Unresumed one */
	if (polled) {
		/* the worker's poll (its resume function) on top of block_on */
		struct cq_rust_resume *r = calloc(1, sizeof(*r));
		assert_non_null(r);
		*r = (struct cq_rust_resume){
		    .lo = 0xb000, .hi = 0xb100, .name = rt_dup("app::worker::{async_fn#0}")};
		s->index->resumes = r;
		s->index->nresumes = 1;
		memmove(s->native1 + 1, s->native1, 3 * sizeof(s->native1[0]));
		s->native1[0] = (struct cq_unwind_frame){.pc = MOD + 0xb010, .sp = STACK1 + 0x80};
		s->native1[1].is_return_address = true;
		s->native[1].nframes = 4;
	}
}

static void test_block_on_first_poll(void **state)
{
	(void)state;
	struct scene *s = calloc(1, sizeof(*s));
	block_on_first_poll(s, true);
	assert_true(scene_run(s));
	const struct cq_suspended_stack *b = find_kind(s, "block_on", 0);
	assert_non_null(b);
	assert_string_equal(b->task_state, "running");
	assert_int_equal(b->frames[b->nframes - 1].object, STACK1 + 0x240);
	assert_int_equal(u(s, "tokio_block_on_scanned"), 1);
	scene_free(s);

	block_on_first_poll(s, false);
	assert_true(scene_run(s));
	assert_null(find_kind(s, "block_on", 0));
	assert_int_equal(u(s, "tokio_block_on_rejected"), 1);
	scene_free(s);
	free(s);
}

static void test_bound_on_suspended_stacks(void **state)
{
	(void)state;
	struct scene *s = calloc(1, sizeof(*s));
	scene_init(s, false);
	s->ctx.max_suspended = 1;
	scene_run(s);
	assert_int_equal(s->stacks.nsuspended, 1);
	assert_int_equal(u(s, "tokio_reported"), 1);
	assert_int_equal(u(s, "tokio_over_limit"), 1);
	scene_free(s);
	free(s);
}

/* Without the vtable in the module's data (no task was ever spawned), no state. */
static void test_no_vtable_in_the_module(void **state)
{
	(void)state;
	struct scene *s = calloc(1, sizeof(*s));
	scene_init(s, false);
	as_put64(s->data, 0, 0x100, 0);
	scene_run(s);
	assert_int_equal(u(s, "tokio_task_types"), 1); /* what the index holds is still told */
	assert_int_equal(u(s, "tokio_vtables"), 0);
	assert_int_equal(u(s, "tokio_candidates"), 0);
	assert_int_equal(s->stacks.nsuspended, 0);
	scene_free(s);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tasks_of_a_runtime),
	    cmocka_unit_test(test_statistics),
	    cmocka_unit_test(test_task_states),
	    cmocka_unit_test(test_broken_list),
	    cmocka_unit_test(test_list_without_id),
	    cmocka_unit_test(test_block_on_future),
	    cmocka_unit_test(test_block_on_future_by_value),
	    cmocka_unit_test(test_block_on_first_poll),
	    cmocka_unit_test(test_bound_on_suspended_stacks),
	    cmocka_unit_test(test_no_vtable_in_the_module),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
