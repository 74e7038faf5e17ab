/*
 * test_folly.c - the folly runtime (unwind/async/folly.c) through the async
 * driver (cq_async_detect, cq_async_stacks) on a synthetic target: a fake
 * module whose symbol table holds folly_async_stack_root_tls_key and
 * __folly_suspended_frame_cookie, memory holding the key, the cookie, and
 * AsyncStackRoot / AsyncStackFrame records laid out as FACTS.md section 4
 * says, pthread_getspecific answered per thread, and every pc named from a
 * small table.
 *
 *   AsyncStackFrame { parentFrame; instructionPointer; stackRoot; }        24 bytes
 *   AsyncStackRoot  { topFrame; nextRoot; stackFramePtr; returnAddress; }  32 bytes
 *
 * Thread 0 (tid 100) runs leaf <- inner <- registrar <- main; registrar
 * registered root R (stackFramePtr = its frame pointer), whose chain is
 * coro_b, coro_b (two frames returning into the same function), coro_a,
 * then no parent and no stackRoot: detached.  Its merged stack is therefore
 * leaf, inner (native, up to but not including registrar), coro_b (async,
 * standing for 2), coro_a (async), ending "async detached".  Thread 1 (tid
 * 101) has no root and keeps its native frames.  A suspended chain
 * susp_inner <- susp_outer has a leaf whose stackRoot is the cookie; decoys
 * that hold the cookie at +16 but fail the leaf's checks (the cookie
 * variable itself, an instructionPointer outside code, a misaligned parent)
 * are not chains.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "async_scene.h"
#include "libcore/base/arch.h"
#include "libcore/base/memory.h"
#include "unwind/async/runtime.h"

#define CODE       0x400000ull
#define CODE_LEN   0x10000ull
#define DATA       0x600000ull
#define DATA_LEN   0x1000ull
#define HEAP       0x700000ull
#define HEAP_LEN   0x2000ull
#define RODATA     0x800000ull
#define RODATA_LEN 0x1000ull
#define STACK0     0x7ff000000ull
#define STACK1     0x7fe000000ull
#define STACK_LEN  0x1000ull

#define KEY_ADDR    (DATA + 0x10)
#define COOKIE_ADDR (DATA + 0x18)
#define STORE_ADDR  (DATA + 0x20)
#define KEY         5u
#define COOKIE      0x5eedc00c1e000000ull

#define HOLDER0 (HEAP + 0x000)
#define ROOT    (HEAP + 0x100)
#define F1      (HEAP + 0x200)
#define F2      (HEAP + 0x220)
#define F3      (HEAP + 0x240)
#define LEAF    (HEAP + 0x400)
#define PARENT  (HEAP + 0x420)
#define DECOY1  (HEAP + 0x600)   /* instructionPointer not in code */
#define DECOY2  (HEAP + 0x640)   /* misaligned parent */
#define LEAF_RO (RODATA + 0x100) /* a leaf in memory the scan does not read */

/* Code addresses and the functions they are in. */
#define PC_LEAF       (CODE + 0x1010)
#define PC_INNER      (CODE + 0x2020)
#define PC_REGISTRAR  (CODE + 0x3030)
#define PC_MAIN       (CODE + 0x4040)
#define PC_CORO_B1    (CODE + 0x5050)
#define PC_CORO_B2    (CODE + 0x5070)
#define PC_CORO_A     (CODE + 0x6060)
#define PC_WAIT       (CODE + 0x7070)
#define PC_SUSP_INNER (CODE + 0x8080)
#define PC_SUSP_OUTER (CODE + 0x9090)
#define PC_STORE_ONLY (CODE + 0xa0a0)

static const struct {
	uint64_t lo, hi;
	const char *name;
} functions[] = {
    {CODE + 0x1000, CODE + 0x1100, "leaf"},       {CODE + 0x2000, CODE + 0x2100, "inner"},
    {CODE + 0x3000, CODE + 0x3100, "registrar"},  {CODE + 0x4000, CODE + 0x4100, "main"},
    {CODE + 0x5000, CODE + 0x5100, "coro_b"},     {CODE + 0x6000, CODE + 0x6100, "coro_a"},
    {CODE + 0x7000, CODE + 0x7100, "wait"},       {CODE + 0x8000, CODE + 0x8100, "susp_inner"},
    {CODE + 0x9000, CODE + 0x9100, "susp_outer"}, {CODE + 0xa000, CODE + 0xa100, "store_only"},
};

static const int module_handle; /* what frames point at: never looked into */

struct fake {
	uint8_t code[64];
	uint8_t data[DATA_LEN];
	uint8_t heap[HEAP_LEN];
	uint8_t rodata[RODATA_LEN];
	uint8_t stack0[STACK_LEN], stack1[STACK_LEN];
	struct cq_mem mem;
	/* symbols the module defines (NULL name: none) */
	const char *sym_name[3];
	uint64_t sym_addr[3];
	bool tls_from_libc;
	bool has_tp[2];
	uint64_t holder[2]; /* 0: the thread never set the key */
	unsigned tls_gets;
};

static struct fake *F;

static void put64(uint64_t addr, uint64_t v)
{
	struct {
		uint64_t base;
		uint8_t *bytes;
		uint64_t len;
	} r[] = {{DATA, F->data, DATA_LEN},
	         {HEAP, F->heap, HEAP_LEN},
	         {RODATA, F->rodata, RODATA_LEN},
	         {STACK0, F->stack0, STACK_LEN},
	         {STACK1, F->stack1, STACK_LEN}};
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		if (addr >= r[i].base && addr + 8 <= r[i].base + r[i].len) {
			memcpy(r[i].bytes + (addr - r[i].base), &v, 8);
			return;
		}
	fail_msg("put64 outside the fake's memory: %#lx", (unsigned long)addr);
}

static void put_frame(uint64_t at, uint64_t parent, uint64_t ip, uint64_t root)
{
	put64(at, parent);
	put64(at + 8, ip);
	put64(at + 16, root);
}

static void put_root(uint64_t at, uint64_t top, uint64_t next, uint64_t frame_ptr, uint64_t ra)
{
	put64(at, top);
	put64(at + 8, next);
	put64(at + 16, frame_ptr);
	put64(at + 24, ra);
}

/* ---- the target's operations ---------------------------------------------- */

static bool op_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return cq_mem_read(&((struct fake *)ctx)->mem, addr, buf, len);
}

static bool op_is_code(void *ctx, uint64_t addr)
{
	const struct cq_mem_segment *s = cq_mem_find(&((struct fake *)ctx)->mem, addr);
	return s && (s->flags & CQ_MEM_EXEC);
}

static bool op_stack_bounds(void *ctx, uint64_t sp, uint64_t *lo, uint64_t *hi)
{
	(void)ctx;
	const uint64_t stacks[] = {STACK0, STACK1};
	for (size_t i = 0; i < 2; i++)
		if (sp >= stacks[i] && sp < stacks[i] + STACK_LEN) {
			*lo = stacks[i];
			*hi = stacks[i] + STACK_LEN;
			return true;
		}
	return false;
}

static size_t op_find_symbols(void *ctx, size_t m, struct cq_target_symbol *q, size_t n)
{
	struct fake *f = ctx;
	size_t found = 0;
	for (size_t i = 0; i < n; i++) {
		for (size_t s = 0; m == 0 && !q[i].found && s < 3; s++)
			if (f->sym_name[s] && strcmp(f->sym_name[s], q[i].name) == 0) {
				q[i].found = true;
				q[i].addr = f->sym_addr[s];
				q[i].size = 8;
			}
		found += q[i].found;
	}
	return found;
}

static bool op_tls_prepare(void *ctx)
{
	return ((struct fake *)ctx)->tls_from_libc;
}

static enum cq_target_tls op_tls_get(void *ctx, size_t t, uint32_t key, uint64_t *value)
{
	struct fake *f = ctx;
	f->tls_gets++;
	assert_int_equal(key, KEY);
	assert_true(t < 2);
	if (!f->has_tp[t])
		return CQ_TARGET_TLS_UNREADABLE;
	if (!f->holder[t])
		return CQ_TARGET_TLS_NONE;
	*value = f->holder[t];
	return CQ_TARGET_TLS_VALUE;
}

static bool op_thread_has_tp(void *ctx, size_t t)
{
	return ((struct fake *)ctx)->has_tp[t];
}

static const char *op_function_at(void *ctx, uint64_t pc, bool is_ra)
{
	(void)ctx;
	uint64_t at = is_ra ? pc - 1 : pc;
	for (size_t i = 0; i < sizeof(functions) / sizeof(functions[0]); i++)
		if (at >= functions[i].lo && at < functions[i].hi)
			return functions[i].name;
	return NULL;
}

static struct cq_error *op_add_frames(void *ctx, struct cq_frame_list *fl,
                                      const struct cq_unwind_frame *uf, int kind)
{
	if (fl->n == fl->cap) {
		size_t cap = fl->cap ? 2 * fl->cap : 8;
		struct cq_stack_frame *p = realloc(fl->frames, cap * sizeof(*p));
		if (!p)
			return &cq_error_nomem;
		fl->frames = p;
		fl->cap = cap;
	}
	fl->frames[fl->n++] = (struct cq_stack_frame){
	    .pc = uf->pc,
	    .kind = (enum cq_frame_kind)kind,
	    .trust = uf->trust,
	    .module = (const struct cq_module *)(const void *)&module_handle,
	    .offset = uf->pc - CODE,
	    .function = op_function_at(ctx, uf->pc, uf->is_return_address)};
	return NULL;
}

static const struct cq_unwind_target_ops ops = {
    .read = op_read,
    .is_code = op_is_code,
    .stack_bounds = op_stack_bounds,
    .find_symbols = op_find_symbols,
    .tls_prepare = op_tls_prepare,
    .tls_get = op_tls_get,
    .thread_has_tp = op_thread_has_tp,
    .function_at = op_function_at,
    .add_frames = op_add_frames,
};

/* ---- the scene ---------------------------------------------------------- */

/* Native frames as the unwinder would give them: pc, sp, the frame pointer. */
static const struct cq_unwind_frame native0[] = {
    {.pc = PC_LEAF, .sp = STACK0 + 0x100, .fp = STACK0 + 0x110, .has_fp = true},
    {.pc = PC_INNER,
     .sp = STACK0 + 0x200,
     .fp = STACK0 + 0x210,
     .has_fp = true,
     .is_return_address = true},
    {.pc = PC_REGISTRAR,
     .sp = STACK0 + 0x300,
     .fp = STACK0 + 0x310,
     .has_fp = true,
     .is_return_address = true},
    {.pc = PC_MAIN,
     .sp = STACK0 + 0x400,
     .fp = STACK0 + 0x410,
     .has_fp = true,
     .is_return_address = true},
};
static const struct cq_unwind_frame native1[] = {
    {.pc = PC_WAIT, .sp = STACK1 + 0x100, .fp = STACK1 + 0x110, .has_fp = true},
    {.pc = PC_MAIN,
     .sp = STACK1 + 0x200,
     .fp = STACK1 + 0x210,
     .has_fp = true,
     .is_return_address = true},
};

struct scene {
	struct cq_target_module module;
	struct cq_regs regs[2];
	struct cq_target_thread threads[2];
	struct cq_unwind_target target;
	struct cq_unwind_options uo;
	struct cq_async_native native[2];
	struct cq_thread_stack stacks_threads[2];
	struct cq_stacks stacks;
	struct cq_async_ctx ctx;
	struct cq_async_states *states;
};

static int setup(void **state)
{
	(void)state;
	F = calloc(1, sizeof(*F));
	assert_non_null(F);
	F->sym_name[0] = "folly_async_stack_root_tls_key";
	F->sym_addr[0] = KEY_ADDR;
	F->sym_name[1] = "__folly_suspended_frame_cookie";
	F->sym_addr[1] = COOKIE_ADDR;
	F->tls_from_libc = true;
	F->has_tp[0] = F->has_tp[1] = true;
	F->holder[0] = HOLDER0;
	uint32_t key = KEY;
	memcpy(F->data + (KEY_ADDR - DATA), &key, 4);
	put64(COOKIE_ADDR, COOKIE);
	put64(HOLDER0, ROOT);
	put_root(ROOT, F1, 0, STACK0 + 0x310, PC_MAIN);
	put_frame(F1, F2, PC_CORO_B1, ROOT);
	put_frame(F2, F3, PC_CORO_B2, ROOT);
	put_frame(F3, 0, PC_CORO_A, 0);
	put_frame(LEAF, PARENT, PC_SUSP_INNER, COOKIE);
	put_frame(PARENT, 0, PC_SUSP_OUTER, 0);
	put_frame(DECOY1, 0, 0x12345, COOKIE);
	put_frame(DECOY2, HEAP + 0x13, PC_SUSP_INNER, COOKIE);
	put_frame(LEAF_RO, 0, PC_STORE_ONLY, COOKIE);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(F);
	return 0;
}

static void scene_init(struct scene *s)
{
	memset(s, 0, sizeof(*s));
	struct cq_mem *mem = &F->mem;
	cq_mem_init(mem);
	assert_null(cq_mem_add(mem, CQ_MEM_LAYER_CORE, CODE, CODE + CODE_LEN, F->code,
	                       sizeof(F->code), CQ_MEM_READ | CQ_MEM_EXEC));
	assert_null(cq_mem_add(mem, CQ_MEM_LAYER_CORE, DATA, DATA + DATA_LEN, F->data, DATA_LEN,
	                       CQ_MEM_READ | CQ_MEM_WRITE));
	assert_null(cq_mem_add(mem, CQ_MEM_LAYER_CORE, HEAP, HEAP + HEAP_LEN, F->heap, HEAP_LEN,
	                       CQ_MEM_READ | CQ_MEM_WRITE));
	assert_null(cq_mem_add(mem, CQ_MEM_LAYER_CORE, RODATA, RODATA + RODATA_LEN, F->rodata,
	                       RODATA_LEN, CQ_MEM_READ));
	assert_null(cq_mem_add(mem, CQ_MEM_LAYER_CORE, STACK0, STACK0 + STACK_LEN, F->stack0,
	                       STACK_LEN, CQ_MEM_READ | CQ_MEM_WRITE));
	assert_null(cq_mem_add(mem, CQ_MEM_LAYER_CORE, STACK1, STACK1 + STACK_LEN, F->stack1,
	                       STACK_LEN, CQ_MEM_READ | CQ_MEM_WRITE));
	cq_mem_finish(mem);
	s->module = (struct cq_target_module){
	    .handle = (const struct cq_module *)(const void *)&module_handle,
	    .name = "/usr/bin/app",
	    .start = CODE,
	    .end = CODE + CODE_LEN,
	    .found = false};
	cq_regs_set(&s->regs[0], cq_arch_x86_64.sp_reg, STACK0 + 0x100);
	cq_regs_set(&s->regs[1], cq_arch_x86_64.sp_reg, STACK1 + 0x100);
	s->threads[0] = (struct cq_target_thread){.tid = 100, .regs = &s->regs[0]};
	s->threads[1] = (struct cq_target_thread){.tid = 101, .regs = &s->regs[1]};
	s->target = (struct cq_unwind_target){.ops = &ops,
	                                      .ctx = F,
	                                      .arch = &cq_arch_x86_64,
	                                      .mem = mem,
	                                      .modules = &s->module,
	                                      .nmodules = 1,
	                                      .threads = s->threads,
	                                      .nthreads = 2};
	cq_unwind_options_default(&s->uo);
	s->native[0] = (struct cq_async_native){native0, 4, CQ_END_OUTERMOST};
	s->native[1] = (struct cq_async_native){native1, 2, CQ_END_OUTERMOST};
	s->stacks.threads = s->stacks_threads;
	s->stacks.nthreads = 2;
	s->ctx = (struct cq_async_ctx){.target = &s->target,
	                               .unwind = &s->uo,
	                               .max_suspended = 16,
	                               .named = true,
	                               .stacks = &s->stacks};
}

/* Detects, then runs the driver; returns whether folly asked for native frames. */
static bool scene_run(struct scene *s)
{
	bool wants_native = false;
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
	cq_mem_destroy(&F->mem);
}

static void expect_frame(const struct cq_stack_frame *f, uint64_t pc, enum cq_frame_kind kind,
                         const char *function, uint32_t repeat)
{
	assert_int_equal(f->pc, pc);
	assert_int_equal(f->kind, kind);
	assert_string_equal(f->function, function);
	assert_int_equal(f->repeat > 1 ? f->repeat : 1, repeat);
}

static const struct cq_stat *stat(const struct scene *s, const char *key)
{
	const struct cq_stat *e = cq_stats_find(&s->stacks.async, key);
	assert_non_null(e);
	return e;
}

/* ---- tests ------------------------------------------------------------- */

static void test_merged_stack_of_a_thread_with_a_root(void **state)
{
	(void)state;
	struct scene s;
	scene_init(&s);
	assert_true(scene_run(&s));
	const struct cq_thread_stack *t0 = &s.stacks.threads[0];
	assert_true(t0->owns_frames);
	assert_int_equal(t0->nframes, 4);
	expect_frame(&t0->frames[0], PC_LEAF, CQ_FRAME_NATIVE, "leaf", 1);
	expect_frame(&t0->frames[1], PC_INNER, CQ_FRAME_NATIVE, "inner", 1);
	/* registrar's frame and everything below it are replaced by the chain */
	expect_frame(&t0->frames[2], PC_CORO_B1, CQ_FRAME_ASYNC, "coro_b", 2);
	assert_int_equal(t0->frames[2].trust, CQ_TRUST_ASYNC);
	expect_frame(&t0->frames[3], PC_CORO_A, CQ_FRAME_ASYNC, "coro_a", 1);
	assert_int_equal(t0->end, CQ_END_ASYNC_DETACHED);
	for (size_t i = 0; i < t0->nframes; i++) {
		assert_null(t0->frames[i].joined); /* no native frame is a coroutine's activation */
		assert_int_equal(t0->frames[i].thread_switch, 0);
	}

	/* thread 1 has no root: its native frames, unchanged */
	const struct cq_thread_stack *t1 = &s.stacks.threads[1];
	assert_int_equal(t1->nframes, 2);
	expect_frame(&t1->frames[0], PC_WAIT, CQ_FRAME_NATIVE, "wait", 1);
	expect_frame(&t1->frames[1], PC_MAIN, CQ_FRAME_NATIVE, "main", 1);
	assert_int_equal(t1->end, CQ_END_OUTERMOST);
	assert_int_equal(F->tls_gets, 2);
	scene_free(&s);
}

/* A chain that blocks another thread: thread 1's blocking root is the chain's stackRoot. */
static void test_chain_resumes_on_the_blocked_thread(void **state)
{
	(void)state;
	/*
	 * wait() on thread 1 registered B (frame pointer STACK1 + 0x110) and awaits
	 * the chain: its last frame has no parent, B as stackRoot and wait()'s
	 * return address (into main) as instructionPointer.
	 */
	const uint64_t b = HEAP + 0x180;
	put_root(b, 0, 0, STACK1 + 0x110, PC_MAIN);
	put_frame(F3, 0, PC_MAIN, b);
	struct scene s;
	scene_init(&s);
	scene_run(&s);
	const struct cq_thread_stack *t0 = &s.stacks.threads[0];
	/* leaf, inner, coro_b x2, then thread 1's frames after wait(): main, shown native */
	assert_int_equal(t0->nframes, 4);
	expect_frame(&t0->frames[2], PC_CORO_B1, CQ_FRAME_ASYNC, "coro_b", 2);
	expect_frame(&t0->frames[3], PC_MAIN, CQ_FRAME_NATIVE, "main", 1);
	assert_int_equal(t0->frames[3].thread_switch, 101); /* the tid, not the index */
	assert_int_equal(t0->frames[2].thread_switch, 0);
	assert_int_equal(t0->end, CQ_END_OUTERMOST);
	scene_free(&s);
	put_frame(F3, 0, PC_CORO_A, 0);
}

static void test_suspended_chain_found_by_the_cookie(void **state)
{
	(void)state;
	struct scene s;
	scene_init(&s);
	scene_run(&s);
	/* LEAF only: not the cookie variable, not DECOY1 (ip not code), not DECOY2 (parent
	 * misaligned), not LEAF_RO (read-only memory is not scanned) */
	assert_int_equal(s.stacks.nsuspended, 1);
	const struct cq_suspended_stack *c = &s.stacks.suspended[0];
	assert_string_equal(c->kind, "folly");
	assert_int_equal(c->leaf, LEAF);
	assert_int_equal(c->nframes, 2);
	expect_frame(&c->frames[0], PC_SUSP_INNER, CQ_FRAME_ASYNC, "susp_inner", 1);
	expect_frame(&c->frames[1], PC_SUSP_OUTER, CQ_FRAME_ASYNC, "susp_outer", 1);
	assert_int_equal(c->end, CQ_END_ASYNC_DETACHED);
	assert_false(c->has_task);
	scene_free(&s);
}

/* Debug builds: __folly_leaf_frame_store, an unordered_set<AsyncStackFrame*>*. */
static void test_leaf_frame_store(void **state)
{
	(void)state;
	/* set {buckets, bucket_count, before_begin.next, element_count}; node {next, value} */
	const uint64_t set = HEAP + 0x800, n1 = HEAP + 0x900, n2 = HEAP + 0x910, n3 = HEAP + 0x920;
	put64(STORE_ADDR, set);
	put64(set + 16, n1);
	put64(set + 24, 3);
	put64(n1, n2);
	put64(n1 + 8, LEAF); /* also found by the scan: reported once */
	put64(n2, n3);
	put64(n2 + 8, 0); /* an empty slot is skipped */
	put64(n3, 0);
	put64(n3 + 8, LEAF_RO); /* only the store knows it */
	F->sym_name[2] = "__folly_leaf_frame_store";
	F->sym_addr[2] = STORE_ADDR;
	struct scene s;
	scene_init(&s);
	scene_run(&s);
	assert_int_equal(s.stacks.nsuspended, 2);
	uint64_t leaves[2] = {s.stacks.suspended[0].leaf, s.stacks.suspended[1].leaf};
	assert_true((leaves[0] == LEAF && leaves[1] == LEAF_RO) ||
	            (leaves[0] == LEAF_RO && leaves[1] == LEAF));
	for (size_t i = 0; i < 2; i++)
		if (s.stacks.suspended[i].leaf == LEAF_RO) {
			assert_int_equal(s.stacks.suspended[i].nframes, 1);
			expect_frame(&s.stacks.suspended[i].frames[0], PC_STORE_ONLY,
			             CQ_FRAME_ASYNC, "store_only", 1);
		}
	scene_free(&s);
	F->sym_name[2] = NULL;
	put64(STORE_ADDR, 0);
}

static void test_suspended_chains_honour_the_bound(void **state)
{
	(void)state;
	struct scene s;
	scene_init(&s);
	s.ctx.max_suspended = 0;
	scene_run(&s);
	assert_int_equal(s.stacks.nsuspended, 0);
	scene_free(&s);
}

static void test_statistics(void **state)
{
	(void)state;
	struct scene s;
	scene_init(&s);
	scene_run(&s);
	assert_true(stat(&s, "folly")->b);
	assert_int_equal(stat(&s, "tls_key")->type, CQ_STAT_UINT);
	assert_int_equal(stat(&s, "tls_key")->u, KEY);
	assert_string_equal(stat(&s, "tls_layout")->s, "libc");
	assert_int_equal(stat(&s, "threads_with_roots")->u, 1);
	assert_true(stat(&s, "scanned")->b);
	/* every writable byte the core holds, once: data, heap, two stacks */
	assert_int_equal(stat(&s, "scanned_bytes")->u, DATA_LEN + HEAP_LEN + 2 * STACK_LEN);
	assert_int_equal(stat(&s, "scan_us")->type, CQ_STAT_UINT);
	assert_int_equal(s.stacks.warnings.n, 0);
	scene_free(&s);
}

static void test_warnings(void **state)
{
	(void)state;
	F->has_tp[1] = false;
	F->tls_from_libc = false;
	struct scene s;
	scene_init(&s);
	scene_run(&s);
	assert_string_equal(stat(&s, "tls_layout")->s, "fallback");
	assert_int_equal(s.stacks.warnings.n, 2);
	const char *w0 = s.stacks.warnings.v[0].s, *w1 = s.stacks.warnings.v[1].s;
	assert_non_null(strstr(w0, "1 thread without a thread pointer"));
	assert_non_null(strstr(w0, cq_arch_x86_64.tp_name));
	assert_non_null(strstr(w1, "_thread_db"));
	/* thread 1 keeps its native stack; thread 0's is merged as before */
	assert_int_equal(s.stacks.threads[1].nframes, 2);
	assert_int_equal(s.stacks.threads[0].nframes, 4);
	scene_free(&s);

	F->has_tp[0] = false;
	F->tls_from_libc = true;
	scene_init(&s);
	scene_run(&s);
	assert_int_equal(s.stacks.warnings.n, 1);
	assert_non_null(strstr(s.stacks.warnings.v[0].s, "2 threads without a thread pointer"));
	assert_int_equal(stat(&s, "threads_with_roots")->u, 0);
	scene_free(&s);
	F->has_tp[0] = F->has_tp[1] = true;
}

/* 0xFFFFFFFF: the key was never created; nothing is read per thread, nothing is warned. */
static void test_key_never_initialised(void **state)
{
	(void)state;
	uint32_t none = 0xFFFFFFFFu;
	memcpy(F->data + (KEY_ADDR - DATA), &none, 4);
	F->has_tp[1] = false;
	F->tls_gets = 0;
	struct scene s;
	scene_init(&s);
	scene_run(&s);
	assert_int_equal(F->tls_gets, 0);
	assert_true(stat(&s, "folly")->b);
	assert_int_equal(stat(&s, "tls_key")->type, CQ_STAT_NULL);
	assert_int_equal(stat(&s, "tls_layout")->type, CQ_STAT_STRING);
	assert_null(stat(&s, "tls_layout")->s);
	assert_int_equal(stat(&s, "threads_with_roots")->u, 0);
	assert_int_equal(s.stacks.threads[0].nframes, 4); /* native only */
	expect_frame(&s.stacks.threads[0].frames[2], PC_REGISTRAR, CQ_FRAME_NATIVE, "registrar", 1);
	assert_int_equal(s.stacks.nsuspended, 1); /* the cookie scan does not need the key */
	assert_int_equal(s.stacks.warnings.n, 0);
	scene_free(&s);
	uint32_t key = KEY;
	memcpy(F->data + (KEY_ADDR - DATA), &key, 4);
	F->has_tp[1] = true;
}

/* No folly symbol: the runtime is not detected, costs no TLS read and no scan. */
static void test_program_without_folly(void **state)
{
	(void)state;
	const char *saved0 = F->sym_name[0], *saved1 = F->sym_name[1];
	F->sym_name[0] = F->sym_name[1] = NULL;
	F->tls_gets = 0;
	struct scene s;
	scene_init(&s);
	assert_false(scene_run(&s));
	assert_int_equal(F->tls_gets, 0);
	assert_false(stat(&s, "folly")->b);
	assert_false(stat(&s, "scanned")->b);
	assert_int_equal(stat(&s, "scanned_bytes")->u, 0);
	assert_int_equal(stat(&s, "tls_key")->type, CQ_STAT_NULL);
	assert_int_equal(s.stacks.nsuspended, 0);
	assert_false(s.stacks.threads[0].owns_frames); /* stacks left alone */
	assert_int_equal(s.stacks.warnings.n, 0);
	scene_free(&s);
	F->sym_name[0] = saved0;
	F->sym_name[1] = saved1;
}

/* A target that offers no symbol lookup (the op is NULL): folly does without, undetected. */
static void test_target_without_symbol_lookup(void **state)
{
	(void)state;
	struct cq_unwind_target_ops no_symbols = ops;
	no_symbols.find_symbols = NULL;
	struct scene s;
	scene_init(&s);
	s.target.ops = &no_symbols;
	assert_false(scene_run(&s));
	assert_false(stat(&s, "folly")->b);
	assert_int_equal(s.stacks.nsuspended, 0);
	scene_free(&s);
}

/* The cookie symbol without a value (0: never set) means no scan. */
static void test_cookie_never_set(void **state)
{
	(void)state;
	put64(COOKIE_ADDR, 0);
	struct scene s;
	scene_init(&s);
	scene_run(&s);
	assert_false(stat(&s, "scanned")->b);
	assert_int_equal(stat(&s, "scanned_bytes")->u, 0);
	assert_int_equal(s.stacks.nsuspended, 0);
	assert_int_equal(s.stacks.threads[0].nframes, 4); /* the threads are merged still */
	scene_free(&s);
	put64(COOKIE_ADDR, COOKIE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_merged_stack_of_a_thread_with_a_root, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_chain_resumes_on_the_blocked_thread, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_suspended_chain_found_by_the_cookie, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_leaf_frame_store, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_suspended_chains_honour_the_bound, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_statistics, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_warnings, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_key_never_initialised, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_program_without_folly, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cookie_never_set, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_target_without_symbol_lookup, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
