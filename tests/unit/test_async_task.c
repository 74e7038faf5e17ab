/*
 * test_async_task.c - the "async_task" runtime (unwind/async/async_task.c,
 * async-task 4.x under smol and async-std) through the async driver, on a
 * synthetic target with one Rust module whose type index the target's
 * cache serves (rust_target.h).  The memory follows async-task's layout
 * (async_task.c's top comment): a TaskVTable in the module's data, seven
 * RawTask<F, T, S> functions monomorphized over F (the index's monos) and
 * a pointer to the TaskLayout {size, align, offset_s, offset_f, offset_r};
 * each task a Header {vtable, state, awaiter} at the user start of a glibc
 * malloc chunk, its future at offset_f.  State bits (state.rs): SCHEDULED
 * 1, RUNNING 2, COMPLETED 4, CLOSED 8.
 *
 * The heap is one chain of chunks (size word at chunk + 8, PREV_INUSE set
 * on the next chunk for an in-use one): an idle task, whose future is
 * suspended on a Sleep; a completed task; a running task, its header on
 * thread 400's live stack; a copy of the vtable pointer inside the idle
 * task's chunk; and a copy on a thread's stack.  Every expected value below
 * comes from this layout.
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
#define STACK0    0x7ff000000ull
#define STACK_LEN 0x1000ull

#define FN      0x7000ull                     /* the first RawTask function, link time */
#define VTABLE  (MOD + RT_DATA_VADDR + 0x200) /* the TaskVTable, runtime */
#define LAYOUT  (MOD + RT_DATA_VADDR + 0x300) /* its TaskLayout */
#define TASK_SZ 0x80ull                       /* the layout's size */
#define OFF_F   0x28ull                       /* offset_f == offset_r */
#define CHUNK   0x90ull                       /* each task's chunk: 16 + 0x80 */
#define IDLE    (HEAP + 0x10)
#define DONE    (HEAP + 0x10 + CHUNK)
#define RUNNING (HEAP + 0x10 + 2 * CHUNK)
#define TOP     (HEAP + 3 * CHUNK)

enum { T_SLEEP, T_JOB, NTYPES };

static const int module_handle;

struct scene {
	struct rt_fake fake;
	struct rt_elf elf;
	uint8_t data[RT_DATA_LEN], heap[HEAP_LEN], stack0[STACK_LEN];
	struct cq_rust_index *index;
	struct cq_target_module module;
	struct cq_regs regs[1];
	struct cq_target_thread threads[1];
	struct cq_unwind_target target;
	struct cq_unwind_options uo;
	struct cq_thread_stack thread_stacks[1];
	struct cq_stacks stacks;
	struct cq_async_ctx ctx;
	struct cq_async_states *states;
};

/* The index: a Sleep, `app::job` awaiting it, and the seven RawTask functions over app::job. */
static struct cq_rust_index *make_index(void)
{
	struct cq_rust_index *ix = calloc(1, sizeof(*ix));
	struct cq_rust_type *t = calloc(NTYPES, sizeof(*t));
	ix->monos = calloc(7, sizeof(*ix->monos));
	assert_true(ix && t && ix->monos);
	ix->kinds = rt_table_parts(); /* an index of this build: the table's parts */
	t[T_SLEEP] = rt_leaf("app::leaf::Sleep", 16, 8);
	t[T_JOB] = rt_async_fn("app::job", 64, 8, 40, T_SLEEP, 16, 42);
	ix->model.types = t;
	ix->model.ntypes = NTYPES;
	for (size_t i = 0; i < 7; i++)
		ix->monos[i] = (struct cq_rust_mono){
		    .lo = FN + 0x40 * i, .hi = FN + 0x40 * i + 0x40, .future = T_JOB};
	ix->nmonos = 7;
	return ix;
}

/* A task header at h (its chunk's user start): vtable, state. */
static void put_task(struct scene *s, uint64_t h, uint64_t state)
{
	as_put64(s->heap, HEAP, h - 8, CHUNK | 1); /* the chunk's size; previous in use */
	as_put64(s->heap, HEAP, h, VTABLE);
	as_put64(s->heap, HEAP, h + 8, state);
}

static void scene_init(struct scene *s)
{
	memset(s, 0, sizeof(*s));
	static const char comment[] = "rustc version 1.80.0 (051478957 2024-07-21)";
	rt_elf_build(&s->elf, comment, sizeof(comment));
	assert_non_null(s->elf.elf);
	s->index = make_index();
	s->fake.index = s->index;
	/* The TaskVTable: seven functions, then &TaskLayout {size, align, s, f, r}. */
	for (uint64_t i = 0; i < 7; i++)
		as_put64(s->data, MOD + RT_DATA_VADDR, VTABLE + 8 * i, MOD + FN + 0x40 * i);
	as_put64(s->data, MOD + RT_DATA_VADDR, VTABLE + 56, LAYOUT);
	const uint64_t layout[] = {TASK_SZ, 8, 0x20, OFF_F, OFF_F};
	for (uint64_t i = 0; i < 5; i++)
		as_put64(s->data, MOD + RT_DATA_VADDR, LAYOUT + 8 * i, layout[i]);
	/* The heap's chunks: three tasks, then the top chunk to the segment's end. */
	put_task(s, IDLE, 0);
	s->heap[IDLE + OFF_F + 40 - HEAP] = 3;        /* its future: Suspend0, awaiting the Sleep */
	as_put64(s->heap, HEAP, IDLE + 0x70, VTABLE); /* a copy inside its chunk */
	put_task(s, DONE, 4);
	put_task(s, RUNNING, 2);
	as_put64(s->heap, HEAP, TOP + 8, (HEAP_LEN - (TOP - HEAP)) | 1);
	/* Thread 400 runs the running task (its header on the live stack) and holds a copy. */
	as_put64(s->stack0, STACK0, STACK0 + 0x180, RUNNING);
	as_put64(s->stack0, STACK0, STACK0 + 0x200, VTABLE);

	struct cq_mem *mem = &s->fake.mem;
	cq_mem_init(mem);
	assert_null(cq_mem_add(mem, CQ_MEM_LAYER_CORE, MOD + RT_DATA_VADDR,
	                       MOD + RT_DATA_VADDR + RT_DATA_LEN, s->data, RT_DATA_LEN,
	                       CQ_MEM_READ));
	assert_null(cq_mem_add(mem, CQ_MEM_LAYER_CORE, HEAP, HEAP + HEAP_LEN, s->heap, HEAP_LEN,
	                       CQ_MEM_READ | CQ_MEM_WRITE));
	assert_null(cq_mem_add(mem, CQ_MEM_LAYER_CORE, STACK0, STACK0 + STACK_LEN, s->stack0,
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
	s->threads[0] = (struct cq_target_thread){.tid = 400, .regs = &s->regs[0]};
	s->target = (struct cq_unwind_target){.ops = &rt_ops,
	                                      .ctx = &s->fake,
	                                      .arch = &cq_arch_x86_64,
	                                      .mem = mem,
	                                      .modules = &s->module,
	                                      .nmodules = 1,
	                                      .threads = s->threads,
	                                      .nthreads = 1};
	cq_unwind_options_default(&s->uo);
	s->stacks.threads = s->thread_stacks;
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

static const struct cq_suspended_stack *find_task(const struct scene *s, uint64_t header)
{
	for (size_t i = 0; i < s->stacks.nsuspended; i++)
		if (strcmp(s->stacks.suspended[i].kind, "async_task") == 0 &&
		    s->stacks.suspended[i].task_id == header)
			return &s->stacks.suspended[i];
	return NULL;
}

static uint64_t rejected(const struct scene *s, const char *reason)
{
	const struct cq_stat *v = s->stacks.async.v;
	size_t n = s->stacks.async.n, i = 0;
	while (i < n && !(v[i].key && strcmp(v[i].key, "async_task_rejected") == 0))
		i++;
	for (i++; i < n && v[i].type != CQ_STAT_END; i++)
		if (strcmp(v[i].key, reason) == 0)
			return v[i].u;
	fail_msg("no async_task_rejected.%s", reason);
	return 0;
}

static void test_tasks_of_an_executor(void **state)
{
	(void)state;
	struct scene *s = calloc(1, sizeof(*s));
	scene_init(s);
	scene_run(s);
	const struct cq_suspended_stack *idle = find_task(s, IDLE), *run = find_task(s, RUNNING);
	assert_true(idle && run);
	assert_null(find_task(s, DONE)); /* completed: its output is stored, no future */
	/* the idle task's future decoded: app::job at Suspend0, awaiting the Sleep */
	assert_string_equal(idle->task_state, "idle");
	assert_int_equal(idle->thread, 0);
	assert_int_equal(idle->nframes, 2);
	assert_string_equal(idle->frames[0].function, "app::leaf::Sleep");
	assert_int_equal(idle->frames[0].object, IDLE + OFF_F + 16);
	assert_string_equal(idle->frames[1].function, "app::job");
	assert_string_equal(idle->frames[1].state, "Suspend0");
	assert_int_equal(idle->frames[1].line, 42);
	assert_int_equal(idle->frames[1].object, IDLE + OFF_F);
	assert_ptr_equal(idle->frames[1].module, &module_handle);
	/* the running task: named from its type (its states are stale), on thread 400 */
	assert_string_equal(run->task_state, "running");
	assert_int_equal(run->thread, 400);
	assert_int_equal(run->nframes, 1);
	assert_string_equal(run->frames[0].function, "app::job");
	assert_int_equal(run->frames[0].object, RUNNING + OFF_F);
	assert_null(run->frames[0].state);
	scene_free(s);
	free(s);
}

static void test_statistics(void **state)
{
	(void)state;
	struct scene *s = calloc(1, sizeof(*s));
	scene_init(s);
	scene_run(s);
	assert_int_equal(as_stat_u(&s->stacks, "async_task_vtables"), 1);
	/* three headers, the copy inside a chunk, the copy on the stack */
	assert_int_equal(as_stat_u(&s->stacks, "async_task_candidates"), 5);
	assert_int_equal(as_stat_u(&s->stacks, "async_task_tasks"), 2);
	assert_int_equal(as_stat_u(&s->stacks, "async_task_reported"), 2);
	assert_int_equal(rejected(s, "completed"), 1);
	assert_int_equal(rejected(s, "inside_chunk"), 1);
	assert_int_equal(rejected(s, "not_heap"), 1);
	assert_int_equal(rejected(s, "closed"), 0);
	scene_free(s);
	free(s);
}

/* A closed (cancelled) task is no waiting task; a scheduled one is listed as such. */
static void test_states(void **state)
{
	(void)state;
	struct scene *s = calloc(1, sizeof(*s));
	scene_init(s);
	as_put64(s->heap, HEAP, IDLE + 8, 8);    /* CLOSED */
	as_put64(s->heap, HEAP, RUNNING + 8, 1); /* SCHEDULED, not running */
	scene_run(s);
	assert_null(find_task(s, IDLE));
	const struct cq_suspended_stack *sched = find_task(s, RUNNING);
	assert_non_null(sched);
	assert_string_equal(sched->task_state, "scheduled");
	assert_int_equal(sched->thread, 0);
	assert_int_equal(rejected(s, "closed"), 1);
	scene_free(s);
	free(s);
}

/*
 * A vtable whose slots are over two futures as often (slots 0-2 over
 * app::job, 3-5 over the Sleep, 6 folded over both): ambiguous, so it is
 * left rather than its tasks misnamed.
 */
static void test_ambiguous_vtable(void **state)
{
	(void)state;
	struct scene *s = calloc(1, sizeof(*s));
	scene_init(s);
	struct cq_rust_index *ix = s->index;
	struct cq_rust_mono *m = realloc(ix->monos, 8 * sizeof(*m));
	assert_non_null(m);
	ix->monos = m;
	for (size_t i = 3; i < 6; i++)
		m[i].future = T_SLEEP;
	m[7] = m[6];
	m[7].future = T_SLEEP;
	ix->nmonos = 8;
	scene_run(s);
	assert_int_equal(as_stat_u(&s->stacks, "async_task_vtables"), 0);
	assert_int_equal(as_stat_u(&s->stacks, "async_task_tasks"), 0);
	assert_null(find_task(s, IDLE));
	scene_free(s);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tasks_of_an_executor),
	    cmocka_unit_test(test_statistics),
	    cmocka_unit_test(test_states),
	    cmocka_unit_test(test_ambiguous_vtable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
