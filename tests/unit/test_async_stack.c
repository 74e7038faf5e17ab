/*
 * test_async_stack.c - the folly async-stack walker (unwind/async/folly_walk.c)
 * and the cookie scan (unwind/async/word_scan.c) on synthetic memory.
 *
 * The fake target is a heap of 64-bit words at HEAP (AsyncStackFrame and
 * AsyncStackRoot records are planted there) and two thread stacks, STACK_A
 * and STACK_B, each one mapping; code is [CODE_LO, CODE_HI).  Native frames
 * are given directly as struct cq_unwind_frame arrays, as the unwinder would
 * produce them: pc, sp and the recovered frame-pointer register.
 *
 * Covered: a thread without a root; the same-thread blocking wait; a root
 * registered by a frame whose callees keep its rbp (no frame pointers); a
 * chain continuing on another thread's stack; two nested roots through
 * nextRoot; detached chains; suspended chains; coroutines still on the
 * native stack joined with their async frames by function and by frame
 * address; and hostile memory: frame and
 * root cycles, unreadable and misaligned pointers, a root on no stack, the
 * depth limit, and the scan's alignment and bounds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/arch.h"
#include "unwind/async/word_scan.h"
#include "unwind/async/folly_walk.h"

#define HEAP       0x10000000ull
#define HEAP_WORDS 512
#define H(i)       (HEAP + 8ull * (i))
#define STACK_A    0x7ff000000000ull
#define STACK_B    0x7fe000000000ull
#define STACK_SIZE 0x10000ull
#define CODE_LO    0x400000ull
#define CODE_HI    0x500000ull
#define MAX_STEPS  64

#define STACK_WORDS 512 /* readable words from STACK_A: native frames' slots */

struct fake {
	uint64_t heap[HEAP_WORDS];
	uint64_t stack[STACK_WORDS];
};

static bool fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct fake *f = ctx;
	if (addr + len < addr)
		return false;
	if (addr >= STACK_A && addr + len <= STACK_A + sizeof(f->stack)) {
		memcpy(buf, (uint8_t *)f->stack + (addr - STACK_A), len);
		return true;
	}
	if (addr < HEAP || addr + len > HEAP + sizeof(f->heap))
		return false;
	memcpy(buf, (uint8_t *)f->heap + (addr - HEAP), len);
	return true;
}

static const struct cq_cfi_table *fake_cfi_at(void *ctx, uint64_t pc, uint64_t *bias)
{
	(void)ctx, (void)pc, (void)bias;
	return NULL;
}

static bool fake_is_code(void *ctx, uint64_t addr)
{
	(void)ctx;
	return addr >= CODE_LO && addr < CODE_HI;
}

static bool fake_stack_bounds(void *ctx, uint64_t sp, uint64_t *lo, uint64_t *hi)
{
	(void)ctx;
	for (uint64_t base = STACK_B; base <= STACK_A; base += STACK_A - STACK_B) {
		if (sp >= base && sp < base + STACK_SIZE) {
			*lo = base;
			*hi = base + STACK_SIZE;
			return true;
		}
	}
	return false;
}

static const struct cq_unwind_target_ops fake_ops = {
    .read = fake_read,
    .cfi_at = fake_cfi_at,
    .is_code = fake_is_code,
    .stack_bounds = fake_stack_bounds,
};

static struct fake F;
static struct cq_unwind_target T = {.ops = &fake_ops, .ctx = &F, .arch = &cq_arch_x86_64};

static int reset(void **state)
{
	(void)state;
	memset(&F, 0, sizeof(F));
	return 0;
}

/* Plants an AsyncStackFrame at heap word i. */
static uint64_t frame(size_t i, uint64_t parent, uint64_t ip, uint64_t root)
{
	F.heap[i] = parent;
	F.heap[i + 1] = ip;
	F.heap[i + 2] = root;
	return H(i);
}

/* Plants an AsyncStackRoot at heap word i. */
static uint64_t root(size_t i, uint64_t top, uint64_t next, uint64_t frame_ptr)
{
	F.heap[i] = top;
	F.heap[i + 1] = next;
	F.heap[i + 2] = frame_ptr;
	F.heap[i + 3] = 0;
	return H(i);
}

/* A native frame with frame pointer fp (0: unknown). */
static struct cq_unwind_frame nf(uint64_t pc, uint64_t sp, uint64_t fp)
{
	return (struct cq_unwind_frame){.pc = pc,
	                                .sp = sp,
	                                .fp = fp,
	                                .has_fp = fp != 0,
	                                .is_return_address = true,
	                                .trust = CQ_TRUST_CFI};
}

struct run {
	struct cq_folly_step steps[MAX_STEPS];
	struct cq_folly_out out;
};

static void merge(struct run *r, const struct cq_folly_thread *th, size_t n, size_t t,
                  uint64_t cookie, size_t max)
{
	r->out = (struct cq_folly_out){.steps = r->steps, .max_steps = max};
	cq_folly_merge(&T, th, n, t, cookie, &r->out);
}

/*
 * Compares steps with a string: "N<thread>.<frame>" or "A<pc hex>",
 * space-separated; a native step that starts a run on another thread ends
 * in "^", one joined with an async frame in "=A" (async_frame), "=S" (frame
 * address) or "=F" (function).
 */
static void expect_steps(const struct run *r, const char *want)
{
	char got[1024] = "";
	size_t len = 0;
	for (size_t i = 0; i < r->out.nsteps && len < sizeof(got) - 32; i++) {
		const struct cq_folly_step *s = &r->steps[i];
		if (s->kind == CQ_FOLLY_STEP_NATIVE)
			len += (size_t)snprintf(got + len, sizeof(got) - len, "%sN%u.%u%s%s",
			                        i ? " " : "", s->thread, s->frame,
			                        s->thread_switch ? "^" : "",
			                        s->join == CQ_FOLLY_JOIN_ASYNC_FRAME     ? "=A"
			                        : s->join == CQ_FOLLY_JOIN_FRAME_ADDRESS ? "=S"
			                        : s->join == CQ_FOLLY_JOIN_FUNCTION      ? "=F"
			                                                                 : "");
		else
			len += (size_t)snprintf(got + len, sizeof(got) - len, "%sA%llx",
			                        i ? " " : "", (unsigned long long)s->pc);
	}
	assert_string_equal(got, want);
}

/* ---- tests ------------------------------------------------------------------------ */

static void test_no_root_is_native(void **state)
{
	(void)state;
	struct cq_unwind_frame a[] = {nf(0x401000, STACK_A + 0x100, 0),
	                              nf(0x402000, STACK_A + 0x200, 0)};
	struct cq_folly_thread th[] = {{.frames = a, .nframes = 2, .end = CQ_END_OUTERMOST}};
	struct run r;
	merge(&r, th, 1, 0, 0, MAX_STEPS);
	expect_steps(&r, "N0.0 N0.1");
	assert_int_equal(r.out.end, CQ_END_OUTERMOST);
}

/*
 * Thread A: crash(0) inner.actor(1) resume_with_root(2, registers R) blocking_wait(3,
 * registers B) caller(4) main(5).  Chain: inner -> middle -> outer -> dummy(B).
 */
static void same_thread(struct cq_folly_thread *th, struct cq_unwind_frame *a, bool with_fp)
{
	uint64_t fp_r = STACK_A + 0x310, fp_b = STACK_A + 0x410;
	a[0] = nf(0x401000, STACK_A + 0x100, with_fp ? STACK_A + 0x180 : fp_r);
	a[1] = nf(0x401100, STACK_A + 0x200, with_fp ? STACK_A + 0x280 : fp_r);
	a[2] = nf(0x401200, STACK_A + 0x300, fp_r);
	a[3] = nf(0x401300, STACK_A + 0x400, fp_b);
	a[4] = nf(0x401400, STACK_A + 0x500, 0);
	a[5] = nf(0x401500, STACK_A + 0x600, 0);
	uint64_t b = root(100, 0, 0, fp_b);
	uint64_t dummy = frame(0, 0, 0x401400, b);
	uint64_t outer = frame(4, dummy, 0x401333, 0);
	uint64_t middle = frame(8, outer, 0x402222, 0);
	uint64_t inner = frame(12, middle, 0x403111, 0);
	uint64_t r = root(104, inner, 0, fp_r);
	F.heap[14] = r; /* inner is active: its stackRoot is R */
	*th =
	    (struct cq_folly_thread){.frames = a, .nframes = 6, .end = CQ_END_OUTERMOST, .root = r};
}

static void test_same_thread(void **state)
{
	(void)state;
	struct cq_unwind_frame a[6];
	struct cq_folly_thread th;
	same_thread(&th, a, true);
	struct run r;
	merge(&r, &th, 1, 0, 0, MAX_STEPS);
	/* The dummy frame's instructionPointer is frame 4 (the caller): native. */
	expect_steps(&r, "N0.0 N0.1 A403111 A402222 A401333 N0.4 N0.5");
	assert_int_equal(r.out.end, CQ_END_OUTERMOST);
}

/* Without frame pointers the frames inside the registering one share its rbp. */
static void test_registering_frame_without_frame_pointers(void **state)
{
	(void)state;
	struct cq_unwind_frame a[6];
	struct cq_folly_thread th;
	same_thread(&th, a, false);
	struct run r;
	merge(&r, &th, 1, 0, 0, MAX_STEPS);
	expect_steps(&r, "N0.0 N0.1 A403111 A402222 A401333 N0.4 N0.5");
}

/* The blocking root is on thread B's stack: the merged stack continues there. */
static void test_cross_thread(void **state)
{
	(void)state;
	uint64_t fp_r = STACK_A + 0x310, fp_b = STACK_B + 0x310;
	struct cq_unwind_frame a[] = {nf(0x401000, STACK_A + 0x100, 0),
	                              nf(0x401200, STACK_A + 0x300, fp_r),
	                              nf(0x401900, STACK_A + 0x400, 0)};
	struct cq_unwind_frame b[] = {nf(0x409000, STACK_B + 0x100, 0),    /* futex wait */
	                              nf(0x401300, STACK_B + 0x300, fp_b), /* blocking_wait */
	                              nf(0x401400, STACK_B + 0x400, 0),    /* its caller */
	                              nf(0x401500, STACK_B + 0x500, 0)};   /* main */
	uint64_t broot = root(100, 0, 0, fp_b);
	uint64_t dummy = frame(0, 0, 0x401400, broot);
	uint64_t outer = frame(4, dummy, 0x401333, 0);
	uint64_t r = root(104, 0, 0, fp_r);
	uint64_t inner = frame(8, outer, 0x402222, r);
	F.heap[104] = inner;
	struct cq_folly_thread th[] = {
	    {.frames = a, .nframes = 3, .end = CQ_END_OUTERMOST, .root = r},
	    {.frames = b, .nframes = 4, .end = CQ_END_OUTERMOST},
	};
	struct run run;
	merge(&run, th, 2, 0, 0, MAX_STEPS);
	expect_steps(&run, "N0.0 A402222 A401333 N1.2^ N1.3");
	assert_int_equal(run.out.end, CQ_END_OUTERMOST);
	/* Thread B itself has no root: plain native frames. */
	merge(&run, th, 2, 1, 0, MAX_STEPS);
	expect_steps(&run, "N1.0 N1.1 N1.2 N1.3");
}

/*
 * Two nested roots: R2 (frame 2) over blocking root B2 (frame 3), whose
 * nextRoot R1 was registered by frame 6 under blocking root B1 (frame 7).
 */
static void test_nested_roots(void **state)
{
	(void)state;
	struct cq_unwind_frame a[10];
	uint64_t fp[10];
	for (int i = 0; i < 10; i++) {
		fp[i] = STACK_A + 0x100 * (uint64_t)(i + 1) + 0x10;
		a[i] =
		    nf(0x401000 + 0x100 * (uint64_t)i, STACK_A + 0x100 * (uint64_t)(i + 1), fp[i]);
	}
	uint64_t r1 = root(100, 0, 0, fp[6]);
	uint64_t b1 = root(104, 0, 0, fp[7]);
	uint64_t b2 = root(108, 0, r1, fp[3]);
	uint64_t dummy1 = frame(0, 0, a[8].pc, b1);
	uint64_t outer = frame(4, dummy1, 0x402700, r1);
	F.heap[100] = outer;
	uint64_t dummy2 = frame(8, 0, a[4].pc, b2);
	uint64_t r2 = root(112, 0, 0, fp[2]);
	uint64_t inner = frame(12, dummy2, 0x402300, r2);
	F.heap[112] = inner;
	struct cq_folly_thread th = {
	    .frames = a, .nframes = 10, .end = CQ_END_OUTERMOST, .root = r2};
	struct run r;
	merge(&r, &th, 1, 0, 0, MAX_STEPS);
	expect_steps(&r, "N0.0 N0.1 A402300 N0.4 N0.5 A402700 N0.8 N0.9");
	assert_int_equal(r.out.end, CQ_END_OUTERMOST);
}

static void test_detached(void **state)
{
	(void)state;
	uint64_t fp_r = STACK_A + 0x210;
	struct cq_unwind_frame a[] = {nf(0x401000, STACK_A + 0x100, 0),
	                              nf(0x401200, STACK_A + 0x200, fp_r),
	                              nf(0x401300, STACK_A + 0x300, 0)};
	uint64_t outer = frame(0, 0, 0x401777, 0);
	uint64_t r = root(100, 0, 0, fp_r);
	uint64_t inner = frame(4, outer, 0x402222, r);
	F.heap[100] = inner;
	struct cq_folly_thread th = {.frames = a, .nframes = 3, .end = CQ_END_OUTERMOST, .root = r};
	struct run run;
	merge(&run, &th, 1, 0, 0, MAX_STEPS);
	expect_steps(&run, "N0.0 A402222 A401777");
	assert_int_equal(run.out.end, CQ_END_ASYNC_DETACHED);
	/* A one-frame chain whose stackRoot is its own root is detached too. */
	frame(4, 0, 0x402222, r);
	merge(&run, &th, 1, 0, 0, MAX_STEPS);
	expect_steps(&run, "N0.0 A402222");
	assert_int_equal(run.out.end, CQ_END_ASYNC_DETACHED);
}

static void test_suspended(void **state)
{
	(void)state;
	const uint64_t cookie = 0xf011ac0c12345a5ull;
	uint64_t fp_b = STACK_B + 0x210;
	struct cq_unwind_frame b[] = {
	    nf(0x409000, STACK_B + 0x100, 0), nf(0x401300, STACK_B + 0x200, fp_b),
	    nf(0x401400, STACK_B + 0x300, 0), nf(0x401500, STACK_B + 0x400, 0)};
	struct cq_folly_thread th = {.frames = b, .nframes = 4, .end = CQ_END_OUTERMOST};
	uint64_t broot = root(100, 0, 0, fp_b);
	uint64_t dummy = frame(0, 0, 0x401400, broot);
	uint64_t outer = frame(4, dummy, 0x401333, 0);
	uint64_t leaf = frame(8, outer, 0x402222, cookie);
	struct run r = {.out = {.steps = r.steps, .max_steps = MAX_STEPS}};
	cq_folly_walk_suspended(&T, &th, 1, leaf, cookie, &r.out);
	expect_steps(&r, "A402222 A401333 N0.2^ N0.3");
	assert_int_equal(r.out.end, CQ_END_OUTERMOST);
	/* Detached: the top frame has no parent and no root. */
	frame(4, 0, 0x401333, 0);
	r.out = (struct cq_folly_out){.steps = r.steps, .max_steps = MAX_STEPS};
	cq_folly_walk_suspended(&T, &th, 1, leaf, cookie, &r.out);
	expect_steps(&r, "A402222 A401333");
	assert_int_equal(r.out.end, CQ_END_ASYNC_DETACHED);
	/* A lone leaf: its stackRoot is the cookie, which is no root. */
	frame(8, 0, 0x402222, cookie);
	r.out = (struct cq_folly_out){.steps = r.steps, .max_steps = MAX_STEPS};
	cq_folly_walk_suspended(&T, &th, 1, leaf, cookie, &r.out);
	expect_steps(&r, "A402222");
	assert_int_equal(r.out.end, CQ_END_ASYNC_DETACHED);
}

/* ---- coroutines still on the native stack (-O0) ------------------------------------- */

/* The test's functions are the 0x100-byte blocks of code. */
static enum cq_folly_same same_block(void *ctx, uint64_t native_pc, bool is_ra, uint64_t ip)
{
	(void)ctx, (void)is_ra;
	return native_pc >> 8 == ip >> 8 ? CQ_FOLLY_SAME_YES : CQ_FOLLY_SAME_NO;
}

static enum cq_folly_same same_unknown(void *ctx, uint64_t native_pc, bool is_ra, uint64_t ip)
{
	(void)ctx, (void)native_pc, (void)is_ra, (void)ip;
	return CQ_FOLLY_SAME_UNKNOWN;
}

/*
 * Thread A as -O0 leaves it: crash(0) inner.actor(1) middle.actor(2)
 * outer.actor(3) resume stub(4) resume_with_root(5, registers R)
 * blocking_wait(6, registers B) caller(7) main(8).  Chain: inner (ip in
 * middle) -> middle (ip in outer) -> outer (ip in blocking_wait) -> dummy
 * (ip = the caller's pc, root B).  *rec gets middle's and outer's records.
 */
static struct cq_folly_thread o0_thread(struct cq_unwind_frame *a, uint64_t *rec)
{
	static const uint64_t pcs[] = {0x401000, 0x403100, 0x402200, 0x401300, 0x404000,
	                               0x405000, 0x406000, 0x407000, 0x408000};
	for (int i = 0; i < 9; i++)
		a[i] = nf(pcs[i], STACK_A + 0x80 * (uint64_t)(i + 1),
		          STACK_A + 0x80 * (uint64_t)(i + 1) + 0x40);
	uint64_t b = root(100, 0, 0, a[6].fp);
	uint64_t dummy = frame(0, 0, a[7].pc, b);
	uint64_t outer = frame(8, dummy, 0x406010, 0);
	uint64_t middle = frame(16, outer, 0x401333, 0);
	uint64_t r = root(104, 0, 0, a[5].fp);
	uint64_t inner = frame(24, middle, 0x402222, r);
	F.heap[104] = inner;
	rec[0] = middle;
	rec[1] = outer;
	return (struct cq_folly_thread){
	    .frames = a, .nframes = 9, .end = CQ_END_OUTERMOST, .root = r};
}

/* The same function in the same order: middle's and outer's activations are native. */
static void test_join_by_function(void **state)
{
	(void)state;
	struct cq_unwind_frame a[9];
	uint64_t rec[2];
	struct cq_folly_thread th = o0_thread(a, rec);
	struct run r = {
	    .out = {.steps = r.steps, .max_steps = MAX_STEPS, .same_function = same_block}};
	cq_folly_merge(&T, &th, 1, 0, 0, &r.out);
	expect_steps(&r, "N0.0 N0.1 N0.2=F N0.3=F N0.4 A406010 N0.7 N0.8");
	/* Without the hook nothing is joined: every async frame is kept. */
	merge(&r, &th, 1, 0, 0, MAX_STEPS);
	expect_steps(&r, "N0.0 N0.1 N0.2 N0.3 N0.4 A402222 A401333 A406010 N0.7 N0.8");
}

/* Frames holding the coroutine frame's address, or the record's, join without names. */
static void test_join_by_frame_address(void **state)
{
	(void)state;
	struct cq_unwind_frame a[9];
	uint64_t rec[2];
	struct cq_folly_thread th = o0_thread(a, rec);
	F.stack[(a[2].sp - STACK_A) / 8 + 3] = rec[0] - 16; /* middle's coroutine frame */
	F.stack[(a[3].sp - STACK_A) / 8 + 5] = rec[1];      /* outer's promise record */
	struct run r = {
	    .out = {.steps = r.steps, .max_steps = MAX_STEPS, .same_function = same_unknown}};
	cq_folly_merge(&T, &th, 1, 0, 0, &r.out);
	expect_steps(&r, "N0.0 N0.1 N0.2=S N0.3=A N0.4 A406010 N0.7 N0.8");
	/* Out of order: outer's address in a frame inside middle's joins nothing more. */
	F.stack[(a[3].sp - STACK_A) / 8 + 5] = 0;
	F.stack[(a[1].sp - STACK_A) / 8 + 1] = rec[1];
	r.out = (struct cq_folly_out){
	    .steps = r.steps, .max_steps = MAX_STEPS, .same_function = same_unknown};
	cq_folly_merge(&T, &th, 1, 0, 0, &r.out);
	expect_steps(&r, "N0.0 N0.1 N0.2=S N0.3 N0.4 A401333 A406010 N0.7 N0.8");
	/* A function the names say differs is not joined, whatever its slots hold. */
	F.stack[(a[3].sp - STACK_A) / 8 + 5] = rec[1];
	a[3].pc = 0x40a000;
	r.out = (struct cq_folly_out){
	    .steps = r.steps, .max_steps = MAX_STEPS, .same_function = same_block};
	cq_folly_merge(&T, &th, 1, 0, 0, &r.out);
	expect_steps(&r, "N0.0 N0.1 N0.2=S N0.3 N0.4 A401333 A406010 N0.7 N0.8");
}

/* ---- hostile memory ---------------------------------------------------------------- */

static struct cq_folly_thread one_root_thread(struct cq_unwind_frame *a, uint64_t *r_out)
{
	uint64_t fp_r = STACK_A + 0x210;
	a[0] = nf(0x401000, STACK_A + 0x100, 0);
	a[1] = nf(0x401200, STACK_A + 0x200, fp_r);
	a[2] = nf(0x401300, STACK_A + 0x300, 0);
	*r_out = root(100, 0, 0, fp_r);
	return (struct cq_folly_thread){
	    .frames = a, .nframes = 3, .end = CQ_END_OUTERMOST, .root = *r_out};
}

static void test_frame_cycle(void **state)
{
	(void)state;
	struct cq_unwind_frame a[3];
	uint64_t r;
	struct cq_folly_thread th = one_root_thread(a, &r);
	uint64_t x = frame(0, H(4), 0x402000, r);
	frame(4, H(8), 0x402100, 0);
	frame(8, x, 0x402200, 0); /* back to the first */
	F.heap[100] = x;
	struct run run;
	merge(&run, &th, 1, 0, 0, MAX_STEPS);
	expect_steps(&run, "N0.0 A402000 A402100 A402200");
	assert_int_equal(run.out.end, CQ_END_LOOP);
	/* A frame that is its own parent. */
	frame(0, x, 0x402000, r);
	merge(&run, &th, 1, 0, 0, MAX_STEPS);
	expect_steps(&run, "N0.0 A402000");
	assert_int_equal(run.out.end, CQ_END_LOOP);
}

static void test_root_cycle(void **state)
{
	(void)state;
	/* R's chain ends at blocking root B, whose nextRoot is R again. */
	uint64_t fp_r = STACK_A + 0x210, fp_b = STACK_A + 0x310;
	struct cq_unwind_frame a[] = {nf(0x401000, STACK_A + 0x100, 0),
	                              nf(0x401200, STACK_A + 0x200, fp_r),
	                              nf(0x401300, STACK_A + 0x300, fp_b),
	                              nf(0x401400, STACK_A + 0x400, 0),
	                              nf(0x401200, STACK_A + 0x500, fp_r + 0x300),
	                              nf(0x401500, STACK_A + 0x600, 0)};
	uint64_t r = H(100);
	uint64_t b = root(104, 0, r, fp_b);
	uint64_t dummy = frame(0, 0, 0x401400, b);
	uint64_t top = frame(4, dummy, 0x402000, r);
	root(100, top, 0, fp_r);
	/* R's frame_ptr only matches frame 1; after B the walk looks for R again. */
	struct cq_folly_thread th = {.frames = a, .nframes = 6, .end = CQ_END_OUTERMOST, .root = r};
	struct run run;
	merge(&run, &th, 1, 0, 0, MAX_STEPS);
	/* R is not found past frame 1, so the rest is native; no endless loop. */
	expect_steps(&run, "N0.0 A402000 N0.3 N0.4 N0.5");
	assert_int_equal(run.out.end, CQ_END_OUTERMOST);
	/* Make R findable again below B: the same root twice is a loop. */
	a[4].fp = fp_r;
	a[4].sp = STACK_A + 0x200;
	merge(&run, &th, 1, 0, 0, MAX_STEPS);
	assert_int_equal(run.out.end, CQ_END_LOOP);
}

static void test_unreadable_pointers(void **state)
{
	(void)state;
	struct cq_unwind_frame a[3];
	uint64_t r;
	struct cq_folly_thread th = one_root_thread(a, &r);
	struct run run;
	/* topFrame points nowhere. */
	F.heap[100] = 0xdead0000;
	merge(&run, &th, 1, 0, 0, MAX_STEPS);
	expect_steps(&run, "N0.0");
	assert_int_equal(run.out.end, CQ_END_BAD_MEMORY);
	/* A misaligned parent. */
	uint64_t x = frame(0, H(4) + 3, 0x402000, r);
	F.heap[100] = x;
	merge(&run, &th, 1, 0, 0, MAX_STEPS);
	expect_steps(&run, "N0.0 A402000");
	assert_int_equal(run.out.end, CQ_END_BAD_MEMORY);
	/* The last frame's stackRoot is unreadable. */
	frame(0, 0, 0x402000, 0xbad00000);
	merge(&run, &th, 1, 0, 0, MAX_STEPS);
	expect_steps(&run, "N0.0 A402000");
	assert_int_equal(run.out.end, CQ_END_BAD_MEMORY);
	/* A blocking root on no thread's stack. */
	uint64_t b = root(104, 0, 0, STACK_B + 0x800);
	frame(0, 0, 0x402000, b);
	merge(&run, &th, 1, 0, 0, MAX_STEPS);
	expect_steps(&run, "N0.0 A402000");
	assert_int_equal(run.out.end, CQ_END_ASYNC_DETACHED);
	/* The thread's root itself is unreadable: its native stack, unchanged. */
	th.root = 0x12345678;
	merge(&run, &th, 1, 0, 0, MAX_STEPS);
	expect_steps(&run, "N0.0 N0.1 N0.2");
	assert_int_equal(run.out.end, CQ_END_OUTERMOST);
	/* A root whose frame is on no frame of the thread's stack: native, unchanged. */
	th.root = root(108, x, 0, STACK_A + 0x20000);
	merge(&run, &th, 1, 0, 0, MAX_STEPS);
	expect_steps(&run, "N0.0 N0.1 N0.2");
}

static void test_depth_limit(void **state)
{
	(void)state;
	struct cq_unwind_frame a[3];
	uint64_t r;
	struct cq_folly_thread th = one_root_thread(a, &r);
	/* A chain of 100 distinct frames (3 words each). */
	for (size_t i = 0; i < 100; i++)
		frame(3 * i, i + 1 < 100 ? H(3 * (i + 1)) : 0, 0x402000 + i, 0);
	root(400, H(0), 0, STACK_A + 0x210);
	th.root = H(400);
	struct run run;
	merge(&run, &th, 1, 0, 0, 10);
	assert_int_equal(run.out.nsteps, 10);
	assert_int_equal(run.out.end, CQ_END_MAX_FRAMES);
	merge(&run, &th, 1, 0, 0, MAX_STEPS);
	assert_int_equal(run.out.nsteps, MAX_STEPS);
	assert_int_equal(run.out.end, CQ_END_MAX_FRAMES);
	(void)r;
}

static void test_scan(void **state)
{
	(void)state;
	const uint64_t cookie = 0xf011ac0c12345a5ull;
	uint64_t words[100] = {0};
	words[0] = cookie;
	words[37] = cookie;
	words[99] = cookie;
	uint64_t hits[8];
	size_t n = cq_word_scan((const uint8_t *)words, 0x1000, sizeof(words), cookie, hits, 8);
	assert_int_equal(n, 3);
	assert_int_equal(hits[0], 0x1000);
	assert_int_equal(hits[1], 0x1000 + 37 * 8);
	assert_int_equal(hits[2], 0x1000 + 99 * 8);
	/* Hits beyond max_hits are counted, not stored. */
	assert_int_equal(
	    cq_word_scan((const uint8_t *)words, 0x1000, sizeof(words), cookie, hits, 1), 3);
	/* Only aligned words count: the same bytes at an odd target address. */
	uint8_t bytes[64] = {0};
	memcpy(bytes + 8, &cookie, 8);
	assert_int_equal(cq_word_scan(bytes, 0x1004, sizeof(bytes), cookie, hits, 8), 0);
	assert_int_equal(cq_word_scan(bytes, 0x1000, sizeof(bytes), cookie, hits, 8), 1);
	/* A partial last word and a too-short region are not read past their end. */
	assert_int_equal(cq_word_scan(bytes, 0x1000, 15, cookie, hits, 8), 0);
	assert_int_equal(cq_word_scan(bytes, 0x1001, 3, cookie, hits, 8), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_no_root_is_native, reset),
	    cmocka_unit_test_setup(test_same_thread, reset),
	    cmocka_unit_test_setup(test_join_by_function, reset),
	    cmocka_unit_test_setup(test_join_by_frame_address, reset),
	    cmocka_unit_test_setup(test_registering_frame_without_frame_pointers, reset),
	    cmocka_unit_test_setup(test_cross_thread, reset),
	    cmocka_unit_test_setup(test_nested_roots, reset),
	    cmocka_unit_test_setup(test_detached, reset),
	    cmocka_unit_test_setup(test_suspended, reset),
	    cmocka_unit_test_setup(test_frame_cycle, reset),
	    cmocka_unit_test_setup(test_root_cycle, reset),
	    cmocka_unit_test_setup(test_unreadable_pointers, reset),
	    cmocka_unit_test_setup(test_depth_limit, reset),
	    cmocka_unit_test_setup(test_scan, reset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
