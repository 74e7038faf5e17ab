/*
 * test_unwinder.c - the native stack walker (unwind/unwinder.c) and the DWARF
 * expression evaluator (unwind/dwarf_expr.c) on synthetic targets.
 *
 * A fake target implements struct cq_unwind_target_ops over test buffers: a
 * stack of 64-bit words at STACK_BASE (with an optional unreadable hole), a
 * code range [CODE_LO, CODE_HI) that is executable, whose first CODE_BYTES are
 * readable (so call instructions can be planted before return addresses), and
 * a CFI table built by hand with cq_cfi_table_from_parts.  Every cfi_at call
 * is recorded, so tests can check that return addresses are looked up at
 * pc - 1 and interrupted (signal) or first frames at pc.
 *
 * The walks cover CFI, frame-pointer and scan steps, signal frames, and every
 * way a walk ends; the evaluator tests cover arithmetic, comparisons, stack
 * operations, branches, registers, memory and the bounds on stack depth and
 * executed operations.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dwarf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libcore/base/arch.h"
#include "libcore/base/error.h"
#include "unwind/cfi_table.h"
#include "unwind/dwarf_expr.h"
#include "unwind/unwind.h"

#include "tests/unit/x86_64_regs.h"

enum { STRIDE = NREGS + 1 };

#define STACK_BASE  0x7ff000000000ull
#define STACK_WORDS 1024
#define STACK_END   (STACK_BASE + STACK_WORDS * 8)
#define S(off)      (STACK_BASE + (off))
#define ALT_BASE    0x7fe000000000ull /* a sigaltstack-like second stack */
#define ALT_WORDS   256
#define ALT_END     (ALT_BASE + ALT_WORDS * 8)
#define ALT(off)    (ALT_BASE + (off))
#define CODE_LO     0x400000ull
#define CODE_HI     0x500000ull
#define CODE_BYTES  0x10000
#define MAX_LOOKUPS 64

/* ---- the fake target ------------------------------------------------------------ */

struct fake {
	uint64_t stack[STACK_WORDS];
	uint64_t alt[ALT_WORDS];
	uint8_t code[CODE_BYTES];  /* readable bytes of [CODE_LO, CODE_LO + CODE_BYTES) */
	uint64_t hole_lo, hole_hi; /* unreadable part of the stack */
	struct cq_cfi_table *table;
	uint64_t bias;
	uint64_t lookups[MAX_LOOKUPS];
	size_t nlookups;
	uint64_t ra_mask; /* the target's return_address_mask */
};

static bool fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct fake *f = ctx;
	if (addr + len < addr)
		return false;
	if (addr >= STACK_BASE && addr + len <= STACK_END) {
		if (addr < f->hole_hi && addr + len > f->hole_lo)
			return false;
		memcpy(buf, (const uint8_t *)f->stack + (addr - STACK_BASE), len);
		return true;
	}
	if (addr >= ALT_BASE && addr + len <= ALT_END) {
		memcpy(buf, (const uint8_t *)f->alt + (addr - ALT_BASE), len);
		return true;
	}
	if (addr >= CODE_LO && addr + len <= CODE_LO + CODE_BYTES) {
		memcpy(buf, f->code + (addr - CODE_LO), len);
		return true;
	}
	return false;
}

static const struct cq_cfi_table *fake_cfi_at(void *ctx, uint64_t pc, uint64_t *bias)
{
	struct fake *f = ctx;
	if (f->nlookups < MAX_LOOKUPS)
		f->lookups[f->nlookups++] = pc;
	if (!f->table || pc < CODE_LO || pc >= CODE_HI)
		return NULL;
	*bias = f->bias;
	return f->table;
}

static bool fake_is_code(void *ctx, uint64_t addr)
{
	(void)ctx;
	return addr >= CODE_LO && addr < CODE_HI;
}

static bool fake_stack_bounds(void *ctx, uint64_t sp, uint64_t *lo, uint64_t *hi)
{
	(void)ctx;
	if (sp >= ALT_BASE && sp < ALT_END) {
		*lo = ALT_BASE;
		*hi = ALT_END;
		return true;
	}
	if (sp < STACK_BASE || sp >= STACK_END)
		return false;
	*lo = STACK_BASE;
	*hi = STACK_END;
	return true;
}

static const struct cq_unwind_target_ops fake_ops = {
    .read = fake_read,
    .cfi_at = fake_cfi_at,
    .is_code = fake_is_code,
    .stack_bounds = fake_stack_bounds,
};

static int fake_setup(void **state)
{
	struct fake *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	*state = f;
	return 0;
}

static int fake_teardown(void **state)
{
	struct fake *f = *state;
	if (f)
		cq_cfi_table_free(f->table);
	free(f);
	return 0;
}

/* Stores a word on one of the fake stacks at address addr. */
static void poke(struct fake *f, uint64_t addr, uint64_t v)
{
	assert_true((addr & 7) == 0);
	if (addr >= ALT_BASE && addr + 8 <= ALT_END) {
		f->alt[(addr - ALT_BASE) / 8] = v;
		return;
	}
	assert_true(addr >= STACK_BASE && addr + 8 <= STACK_END);
	f->stack[(addr - STACK_BASE) / 8] = v;
}

/* Plants "call rel32" (e8 xx xx xx xx) ending at return address ra. */
static void plant_call(struct fake *f, uint64_t ra)
{
	assert_true(ra >= CODE_LO + 5 && ra <= CODE_LO + CODE_BYTES);
	uint8_t *p = f->code + (ra - CODE_LO) - 5;
	p[0] = 0xe8;
	p[1] = 0x11;
	p[2] = 0x22;
	p[3] = 0x33;
	p[4] = 0x44;
}

static struct cq_unwind_target fake_target(struct fake *f)
{
	return (struct cq_unwind_target){
	    .ops = &fake_ops, .ctx = f, .arch = &cq_arch_x86_64, .return_address_mask = f->ra_mask};
}

/* ---- hand-built CFI tables -------------------------------------------------------- */

struct tb {
	struct cq_cfi_row rows[64];
	size_t nrows;
	struct cq_cfi_rule rules[32 * STRIDE];
	size_t nrulesets;
	struct cq_cfi_op ops[128];
	size_t nops;
};

/* A new rule set: CFA = reg + off, every register undefined. */
static uint32_t tb_ruleset(struct tb *b, unsigned cfa_reg, int32_t cfa_off)
{
	assert_true(b->nrulesets < 32);
	struct cq_cfi_rule *rs = &b->rules[b->nrulesets * STRIDE];
	memset(rs, 0, STRIDE * sizeof(*rs));
	rs[0] = (struct cq_cfi_rule){
	    .kind = CQ_CFI_CFA_REG_OFFSET, .reg = (uint8_t)cfa_reg, .value = cfa_off};
	return (uint32_t)b->nrulesets++;
}

static void tb_rule(struct tb *b, uint32_t rs, unsigned regno, enum cq_cfi_kind kind, int32_t value)
{
	b->rules[rs * STRIDE + 1 + regno] =
	    (struct cq_cfi_rule){.kind = (uint8_t)kind, .value = value};
}

static void tb_register(struct tb *b, uint32_t rs, unsigned regno, unsigned from)
{
	b->rules[rs * STRIDE + 1 + regno] =
	    (struct cq_cfi_rule){.kind = CQ_CFI_REGISTER, .reg = (uint8_t)from};
}

/* Interns an expression (ops without header); returns the header's index. */
static int32_t tb_expr(struct tb *b, const struct cq_cfi_op *ops, size_t n)
{
	assert_true(b->nops + n + 1 <= 128);
	int32_t index = (int32_t)b->nops;
	b->ops[b->nops++] = (struct cq_cfi_op){.atom = 0, .number = n};
	for (size_t i = 0; i < n; i++)
		b->ops[b->nops++] = ops[i];
	return index;
}

/* A rule set whose CFA is an expression. */
static uint32_t tb_ruleset_expr(struct tb *b, const struct cq_cfi_op *ops, size_t n)
{
	uint32_t rs = tb_ruleset(b, RSP, 0);
	b->rules[rs * STRIDE] =
	    (struct cq_cfi_rule){.kind = CQ_CFI_CFA_EXPR, .value = tb_expr(b, ops, n)};
	return rs;
}

/* The usual rule set just after a call: CFA = rsp + 8, RA at CFA - 8, callee-saved kept. */
static uint32_t tb_after_call(struct tb *b)
{
	uint32_t rs = tb_ruleset(b, RSP, 8);
	tb_rule(b, rs, RIP, CQ_CFI_OFFSET, -8);
	static const unsigned saved[] = {RBX, RBP, R12, R13, R14, R15};
	for (size_t i = 0; i < sizeof(saved) / sizeof(saved[0]); i++)
		tb_rule(b, rs, saved[i], CQ_CFI_SAME, 0);
	return rs;
}

/* A thread's first function: the return address is undefined. */
static uint32_t tb_outermost(struct tb *b)
{
	return tb_ruleset(b, RSP, 8);
}

/* Rows are given in link-time addresses; base is the lowest. */
static void tb_row(struct tb *b, uint64_t base, uint64_t start, uint32_t rs)
{
	assert_true(b->nrows < 64 && start >= base);
	b->rows[b->nrows++] = (struct cq_cfi_row){(uint32_t)(start - base), rs};
}

static void install(struct fake *f, struct tb *b, uint64_t base, uint64_t bias)
{
	struct cq_error *err = cq_cfi_table_from_parts(base, NREGS, b->rows, b->nrows, b->rules,
	                                               b->nrulesets, b->ops, b->nops, &f->table);
	if (err)
		fail_msg("cq_cfi_table_from_parts: %s", err->message);
	f->bias = bias;
}

/* ---- walking ------------------------------------------------------------------------ */

static struct cq_regs regs_of(uint64_t pc, uint64_t sp)
{
	struct cq_regs r = {.valid = 0};
	cq_regs_set(&r, RIP, pc);
	cq_regs_set(&r, RSP, sp);
	return r;
}

struct walk_result {
	struct cq_unwind_frame frames[CQ_UNWIND_DEFAULT_MAX_FRAMES];
	size_t n;
	enum cq_unwind_end end;
};

static void walk_with(struct fake *f, const struct cq_regs *regs, const struct cq_unwind_options *o,
                      struct walk_result *w)
{
	struct cq_unwind_target t = fake_target(f);
	assert_true(o->max_frames <= CQ_UNWIND_DEFAULT_MAX_FRAMES);
	memset(w, 0, sizeof(*w));
	w->end = (enum cq_unwind_end) - 1;
	cq_unwind_thread(&t, regs, o, w->frames, &w->n, &w->end);
	assert_true(w->n <= o->max_frames);
}

static void walk(struct fake *f, const struct cq_regs *regs, bool allow_scan, struct walk_result *w)
{
	struct cq_unwind_options o;
	cq_unwind_options_default(&o);
	o.allow_scan = allow_scan;
	walk_with(f, regs, &o, w);
}

static void check_end(const struct walk_result *w, enum cq_unwind_end end)
{
	if (w->end != end)
		fail_msg("walk ended with %s after %zu frames, expected %s",
		         cq_unwind_end_name(w->end), w->n, cq_unwind_end_name(end));
}

static void check_frame(const struct walk_result *w, size_t i, uint64_t pc, uint64_t sp,
                        enum cq_unwind_trust trust, bool is_return_address)
{
	assert_true(i < w->n);
	const struct cq_unwind_frame *fr = &w->frames[i];
	if (fr->pc != pc || fr->sp != sp || fr->trust != trust ||
	    fr->is_return_address != is_return_address)
		fail_msg("frame %zu: pc 0x%llx sp 0x%llx trust %s ra %d; expected pc 0x%llx sp "
		         "0x%llx trust %s ra %d",
		         i, (unsigned long long)fr->pc, (unsigned long long)fr->sp,
		         cq_unwind_trust_name(fr->trust), fr->is_return_address,
		         (unsigned long long)pc, (unsigned long long)sp,
		         cq_unwind_trust_name(trust), is_return_address);
}

static void check_lookups(const struct fake *f, const uint64_t *want, size_t n)
{
	if (f->nlookups != n)
		fail_msg("%zu CFI lookups, expected %zu", f->nlookups, n);
	for (size_t i = 0; i < n; i++)
		if (f->lookups[i] != want[i])
			fail_msg("lookup %zu at 0x%llx, expected 0x%llx", i,
			         (unsigned long long)f->lookups[i], (unsigned long long)want[i]);
}

/*
 * Four functions, the CFI of each different:
 *   f0 [0x401000, 0x401100)  leaf: CFA = rsp + 8
 *   f1 [0x402000, 0x402050)  CFA = rsp + 16, rbp at CFA - 16;
 *      [0x402050, 0x402100)  a row starting exactly at f1's return address
 *                            with an undefined RA: only a pc - 1 lookup misses it
 *   f2 [0x403000, 0x403100)  CFA = rbp + 16, rbp at CFA - 16
 *   f3 [0x404000, 0x404100)  outermost (RA undefined)
 * and a stack laid out for them.
 */
static void four_frames(struct fake *f, struct cq_regs *regs)
{
	struct tb b = {.nrows = 0};
	uint32_t f0 = tb_after_call(&b);
	uint32_t f1 = tb_ruleset(&b, RSP, 16);
	tb_rule(&b, f1, RIP, CQ_CFI_OFFSET, -8);
	tb_rule(&b, f1, RBP, CQ_CFI_OFFSET, -16);
	uint32_t f1_bad = tb_outermost(&b);
	uint32_t f2 = tb_ruleset(&b, RBP, 16);
	tb_rule(&b, f2, RIP, CQ_CFI_OFFSET, -8);
	tb_rule(&b, f2, RBP, CQ_CFI_OFFSET, -16);
	uint32_t f3 = tb_outermost(&b);
	const uint64_t base = 0x401000;
	tb_row(&b, base, 0x401000, f0);
	tb_row(&b, base, 0x401100, CQ_CFI_NO_RULES);
	tb_row(&b, base, 0x402000, f1);
	tb_row(&b, base, 0x402050, f1_bad);
	tb_row(&b, base, 0x402100, CQ_CFI_NO_RULES);
	tb_row(&b, base, 0x403000, f2);
	tb_row(&b, base, 0x403100, CQ_CFI_NO_RULES);
	tb_row(&b, base, 0x404000, f3);
	tb_row(&b, base, 0x404100, CQ_CFI_NO_RULES);
	install(f, &b, base, 0);

	poke(f, S(0x100), 0x402050); /* f0's return address into f1 */
	poke(f, S(0x108), S(0x200)); /* f1 saved rbp (f2's frame pointer) */
	poke(f, S(0x110), 0x403080); /* f1's return address into f2 */
	poke(f, S(0x200), 0);        /* f2 saved rbp */
	poke(f, S(0x208), 0x404020); /* f2's return address into f3 */
	*regs = regs_of(0x401010, S(0x100));
	cq_regs_set(regs, RBP, S(0x1f0));
}

/* ---- CFI walks ------------------------------------------------------------------------ */

static void test_cfi_walk_four_frames_to_outermost(void **state)
{
	struct fake *f = *state;
	struct cq_regs regs;
	four_frames(f, &regs);
	struct walk_result w;
	walk(f, &regs, true, &w);
	check_end(&w, CQ_END_OUTERMOST);
	assert_int_equal(w.n, 4);
	check_frame(&w, 0, 0x401010, S(0x100), CQ_TRUST_CONTEXT, false);
	check_frame(&w, 1, 0x402050, S(0x108), CQ_TRUST_CFI, true);
	check_frame(&w, 2, 0x403080, S(0x118), CQ_TRUST_CFI, true);
	check_frame(&w, 3, 0x404020, S(0x210), CQ_TRUST_CFI, true);
	for (size_t i = 0; i < w.n; i++)
		assert_false(w.frames[i].is_signal_frame);
	/* rbp: the context's, kept by f0 (same value), restored by f1 and f2. */
	assert_true(w.frames[0].has_fp && w.frames[0].fp == S(0x1f0));
	assert_true(w.frames[1].has_fp && w.frames[1].fp == S(0x1f0));
	assert_true(w.frames[2].has_fp && w.frames[2].fp == S(0x200));
	assert_true(w.frames[3].has_fp && w.frames[3].fp == 0);
}

/* cq_unwind_regs_at: frame k's registers as the walk recovered them, only for that walk's frame. */
static void test_regs_at_a_frame(void **state)
{
	struct fake *f = *state;
	struct cq_regs regs, out;
	four_frames(f, &regs);
	struct cq_unwind_target t = fake_target(f);
	struct cq_unwind_options o;
	cq_unwind_options_default(&o);
	assert_true(cq_unwind_regs_at(&t, &regs, &o, 0, 0x401010, S(0x100), &out));
	assert_int_equal(out.value[RBP], S(0x1f0));
	assert_true(cq_unwind_regs_at(&t, &regs, &o, 2, 0x403080, S(0x118), &out));
	assert_true(cq_regs_has(&out, RBP));
	assert_int_equal(out.value[RBP], S(0x200)); /* restored from f1's save slot */
	assert_int_equal(out.value[RSP], S(0x118));
	/* another walk's frame (pc or sp not the same), past the outermost, past max_frames */
	assert_false(cq_unwind_regs_at(&t, &regs, &o, 2, 0x403081, S(0x118), &out));
	assert_false(cq_unwind_regs_at(&t, &regs, &o, 2, 0x403080, S(0x120), &out));
	assert_false(cq_unwind_regs_at(&t, &regs, &o, 4, 0x404020, S(0x210), &out));
	o.max_frames = 2;
	assert_false(cq_unwind_regs_at(&t, &regs, &o, 2, 0x403080, S(0x118), &out));
}

/* Return addresses signed with a pointer-authentication code in their top bits. */
static void test_signed_return_addresses_are_stripped(void **state)
{
	struct fake *f = *state;
	struct cq_regs regs;
	four_frames(f, &regs);
	const uint64_t pac = 0x002a000000000000ull, mask = 0xffff000000000000ull;
	size_t signed_words = 0;
	for (size_t i = 0; i < STACK_WORDS; i++) {
		uint64_t v = f->stack[i];
		if (v == 0x402050 || v == 0x403080 || v == 0x404020) {
			f->stack[i] = v | pac;
			signed_words++;
		}
	}
	assert_int_equal(signed_words, 3);
	struct walk_result w;
	walk(f, &regs, true, &w); /* no mask: a signed address is no code */
	check_end(&w, CQ_END_BAD_MEMORY);
	assert_int_equal(w.n, 1);
	f->ra_mask = mask;
	walk(f, &regs, true, &w);
	check_end(&w, CQ_END_OUTERMOST);
	assert_int_equal(w.n, 4);
	check_frame(&w, 1, 0x402050, S(0x108), CQ_TRUST_CFI, true);
	check_frame(&w, 2, 0x403080, S(0x118), CQ_TRUST_CFI, true);
	check_frame(&w, 3, 0x404020, S(0x210), CQ_TRUST_CFI, true);
}

static void test_return_addresses_are_looked_up_at_pc_minus_one(void **state)
{
	struct fake *f = *state;
	struct cq_regs regs;
	four_frames(f, &regs);
	struct walk_result w;
	walk(f, &regs, true, &w);
	/* The first frame at its pc; callers at pc - 1 (0x402050 starts another row). */
	static const uint64_t want[] = {0x401010, 0x40204f, 0x40307f, 0x40401f};
	check_lookups(f, want, 4);
	check_end(&w, CQ_END_OUTERMOST);
	assert_int_equal(w.n, 4);
}

static void test_first_frame_is_looked_up_at_pc(void **state)
{
	struct fake *f = *state;
	/* [0x401000, 0x401040) says outermost; the first frame's pc starts the next row. */
	struct tb b = {.nrows = 0};
	uint32_t outer = tb_outermost(&b), good = tb_after_call(&b), f3 = tb_outermost(&b);
	tb_row(&b, 0x401000, 0x401000, outer);
	tb_row(&b, 0x401000, 0x401040, good);
	tb_row(&b, 0x401000, 0x401100, CQ_CFI_NO_RULES);
	tb_row(&b, 0x401000, 0x404000, f3);
	tb_row(&b, 0x401000, 0x404100, CQ_CFI_NO_RULES);
	install(f, &b, 0x401000, 0);
	poke(f, S(0x100), 0x404020);
	struct cq_regs regs = regs_of(0x401040, S(0x100));
	struct walk_result w;
	walk(f, &regs, false, &w);
	check_end(&w, CQ_END_OUTERMOST);
	assert_int_equal(w.n, 2);
	check_frame(&w, 1, 0x404020, S(0x108), CQ_TRUST_CFI, true);
	static const uint64_t want[] = {0x401040, 0x40401f};
	check_lookups(f, want, 2);
}

static void test_nonzero_load_bias(void **state)
{
	struct fake *f = *state;
	/* Link-time 0x1000.. is loaded at 0x400000: bias 0x3ff000. */
	struct tb b = {.nrows = 0};
	uint32_t f0 = tb_after_call(&b), f1 = tb_outermost(&b);
	tb_row(&b, 0x1000, 0x1000, f0);
	tb_row(&b, 0x1000, 0x1100, f1);
	tb_row(&b, 0x1000, 0x1200, CQ_CFI_NO_RULES);
	install(f, &b, 0x1000, 0x3ff000);
	poke(f, S(0x100), 0x400150);
	struct cq_regs regs = regs_of(0x400010, S(0x100));
	struct walk_result w;
	walk(f, &regs, false, &w);
	check_end(&w, CQ_END_OUTERMOST);
	assert_int_equal(w.n, 2);
	check_frame(&w, 1, 0x400150, S(0x108), CQ_TRUST_CFI, true);
}

static void test_cfi_and_frame_pointer_steps_mix(void **state)
{
	struct fake *f = *state;
	/* f0 has CFI; f1 (0x402000..) has none but a frame pointer; f2 has CFI again. */
	struct tb b = {.nrows = 0};
	uint32_t f0 = tb_after_call(&b);
	uint32_t f2 = tb_ruleset(&b, RBP, 16);
	tb_rule(&b, f2, RIP, CQ_CFI_OFFSET, -8);
	tb_rule(&b, f2, RBP, CQ_CFI_OFFSET, -16);
	uint32_t f3 = tb_outermost(&b);
	tb_row(&b, 0x401000, 0x401000, f0);
	tb_row(&b, 0x401000, 0x401100, CQ_CFI_NO_RULES);
	tb_row(&b, 0x401000, 0x403000, f2);
	tb_row(&b, 0x401000, 0x403100, CQ_CFI_NO_RULES);
	tb_row(&b, 0x401000, 0x404000, f3);
	tb_row(&b, 0x401000, 0x404100, CQ_CFI_NO_RULES);
	install(f, &b, 0x401000, 0);
	poke(f, S(0x100), 0x402040); /* f0 -> f1 */
	poke(f, S(0x200), S(0x300)); /* f1's frame: saved rbp, return address */
	poke(f, S(0x208), 0x403050);
	poke(f, S(0x300), 0); /* f2's frame */
	poke(f, S(0x308), 0x404010);
	struct cq_regs regs = regs_of(0x401010, S(0x100));
	cq_regs_set(&regs, RBP, S(0x200));
	struct walk_result w;
	walk(f, &regs, false, &w);
	check_end(&w, CQ_END_OUTERMOST);
	assert_int_equal(w.n, 4);
	check_frame(&w, 0, 0x401010, S(0x100), CQ_TRUST_CONTEXT, false);
	check_frame(&w, 1, 0x402040, S(0x108), CQ_TRUST_CFI, true);
	check_frame(&w, 2, 0x403050, S(0x210), CQ_TRUST_FP, true);
	check_frame(&w, 3, 0x404010, S(0x310), CQ_TRUST_CFI, true);
	assert_int_equal(w.frames[2].fp, S(0x300));
}

/* frame_size for the fake: [0x405000, 0x405100) keeps 0x18 bytes, [0x406000, 0x406100) none. */
static bool fake_frame_size(void *ctx, uint64_t pc, uint64_t *size)
{
	(void)ctx;
	if (pc >= 0x405000 && pc < 0x405100)
		*size = 0x18;
	else if (pc >= 0x406000 && pc < 0x406100)
		*size = 0;
	else
		return false;
	return true;
}

/*
 * Code without CFI whose module's own table gives its frame size (a stripped
 * Go program's .gopclntab): the return address right above the frame, the
 * caller's frame pointer right below it (none kept by an empty frame), in
 * place of the frame pointer chain, which here points elsewhere.
 */
static void test_frame_size_steps(void **state)
{
	struct fake *f = *state;
	struct cq_unwind_target_ops ops = fake_ops;
	ops.frame_size = fake_frame_size;
	poke(f, S(0x100) + 0x10, S(0x800)); /* f0 (size 0x18): the saved frame pointer */
	poke(f, S(0x100) + 0x18, 0x406010); /* ... and the return address */
	poke(f, S(0x120), 0x405080);        /* f1 (size 0): the return address at sp */
	poke(f, S(0x128) + 0x18, 0);        /* f2 (size 0x18): a zero return address */
	struct cq_regs regs = regs_of(0x405004, S(0x100));
	cq_regs_set(&regs, RBP, S(0x400)); /* a frame record that says something else */
	poke(f, S(0x400), 0);
	poke(f, S(0x408), 0x404444);
	struct cq_unwind_target t = fake_target(f);
	t.ops = &ops;
	struct cq_unwind_options o;
	cq_unwind_options_default(&o);
	o.allow_scan = false;
	struct walk_result w = {.n = 0};
	cq_unwind_thread(&t, &regs, &o, w.frames, &w.n, &w.end);
	check_end(&w, CQ_END_OUTERMOST);
	assert_int_equal(w.n, 3);
	check_frame(&w, 0, 0x405004, S(0x100), CQ_TRUST_CONTEXT, false);
	check_frame(&w, 1, 0x406010, S(0x120), CQ_TRUST_CFI, true);
	assert_int_equal(w.frames[1].fp, S(0x800));
	check_frame(&w, 2, 0x405080, S(0x128), CQ_TRUST_CFI, true);
	assert_int_equal(w.frames[2].fp, S(0x800)); /* an empty frame keeps the caller's */
}

/* ---- how walks end --------------------------------------------------------------------- */

/* One function with CFA = rsp + 8, RA at CFA - 8, at [0x401000, 0x401100). */
static void one_function(struct fake *f)
{
	struct tb b = {.nrows = 0};
	uint32_t f0 = tb_after_call(&b);
	tb_row(&b, 0x401000, 0x401000, f0);
	tb_row(&b, 0x401000, 0x401100, CQ_CFI_NO_RULES);
	install(f, &b, 0x401000, 0);
}

static void test_zero_return_address_is_outermost(void **state)
{
	struct fake *f = *state;
	one_function(f);
	poke(f, S(0x100), 0);
	struct cq_regs regs = regs_of(0x401010, S(0x100));
	struct walk_result w;
	walk(f, &regs, true, &w);
	check_end(&w, CQ_END_OUTERMOST);
	assert_int_equal(w.n, 1);
}

static void test_return_address_outside_code_is_bad_memory(void **state)
{
	struct fake *f = *state;
	one_function(f);
	poke(f, S(0x100), 0x900000);
	struct cq_regs regs = regs_of(0x401010, S(0x100));
	struct walk_result w;
	walk(f, &regs, true, &w);
	check_end(&w, CQ_END_BAD_MEMORY);
	assert_int_equal(w.n, 1);
}

static void test_cfa_not_increasing_is_loop(void **state)
{
	struct fake *f = *state;
	/* CFA = rsp + 0 and RA at CFA: the caller would have the same sp. */
	struct tb b = {.nrows = 0};
	uint32_t rs = tb_ruleset(&b, RSP, 0);
	tb_rule(&b, rs, RIP, CQ_CFI_OFFSET, 0);
	tb_row(&b, 0x401000, 0x401000, rs);
	tb_row(&b, 0x401000, 0x401100, CQ_CFI_NO_RULES);
	install(f, &b, 0x401000, 0);
	poke(f, S(0x100), 0x401020);
	struct cq_regs regs = regs_of(0x401010, S(0x100));
	struct walk_result w;
	walk(f, &regs, true, &w);
	check_end(&w, CQ_END_LOOP);
	assert_int_equal(w.n, 1);
}

static void test_cfa_decreasing_is_loop(void **state)
{
	struct fake *f = *state;
	struct tb b = {.nrows = 0};
	uint32_t rs = tb_ruleset(&b, RSP, -16);
	tb_rule(&b, rs, RIP, CQ_CFI_OFFSET, -8);
	tb_row(&b, 0x401000, 0x401000, rs);
	tb_row(&b, 0x401000, 0x401100, CQ_CFI_NO_RULES);
	install(f, &b, 0x401000, 0);
	poke(f, S(0xe8), 0x401020);
	struct cq_regs regs = regs_of(0x401010, S(0x100));
	struct walk_result w;
	walk(f, &regs, true, &w);
	check_end(&w, CQ_END_LOOP);
	assert_int_equal(w.n, 1);
}

/* ---- aarch64: a leaf that keeps no stack ------------------------------------------ */

enum { A64_X29 = 29, A64_X30 = 30, A64_SP = 31, A64_PC = 32, A64_NREGS = 33 };
enum { A64_STRIDE = A64_NREGS + 1 };

/* aarch64 rule sets: CFA = sp + cfa_off; x30 the same, or at CFA + ra_off (ra_off != 1). */
struct a64_tb {
	struct cq_cfi_row rows[8];
	size_t nrows;
	struct cq_cfi_rule rules[4 * A64_STRIDE];
	size_t nrulesets;
};

static uint32_t a64_ruleset(struct a64_tb *b, int32_t cfa_off, int32_t ra_off)
{
	assert_true(b->nrulesets < 4);
	struct cq_cfi_rule *rs = &b->rules[b->nrulesets * A64_STRIDE];
	memset(rs, 0, A64_STRIDE * sizeof(*rs));
	rs[0] =
	    (struct cq_cfi_rule){.kind = CQ_CFI_CFA_REG_OFFSET, .reg = A64_SP, .value = cfa_off};
	if (ra_off == 1) {
		rs[1 + A64_X30].kind = CQ_CFI_SAME;
	} else if (ra_off != 0) {
		rs[1 + A64_X30] = (struct cq_cfi_rule){.kind = CQ_CFI_OFFSET, .value = ra_off};
		rs[1 + A64_X29] = (struct cq_cfi_rule){.kind = CQ_CFI_OFFSET, .value = ra_off - 8};
	}
	return (uint32_t)b->nrulesets++;
}

static void a64_install(struct fake *f, struct a64_tb *b)
{
	struct cq_error *err = cq_cfi_table_from_parts(0x401000, A64_NREGS, b->rows, b->nrows,
	                                               b->rules, b->nrulesets, NULL, 0, &f->table);
	if (err)
		fail_msg("cq_cfi_table_from_parts: %s", err->message);
	f->bias = 0;
}

static void a64_walk(struct fake *f, uint64_t pc, uint64_t sp, uint64_t x30,
                     const struct cq_arch *arch, struct walk_result *w)
{
	struct cq_regs regs = {.valid = 0};
	cq_regs_set(&regs, A64_PC, pc);
	cq_regs_set(&regs, A64_SP, sp);
	cq_regs_set(&regs, A64_X30, x30);
	struct cq_unwind_options o;
	cq_unwind_options_default(&o);
	o.allow_scan = false;
	struct cq_unwind_target t = {.ops = &fake_ops, .ctx = f, .arch = arch};
	memset(w, 0, sizeof(*w));
	cq_unwind_thread(&t, &regs, &o, w->frames, &w->n, &w->end);
}

/*
 * A recursive function as gcc -O2 shrink-wraps it on aarch64: descend's
 * recursive path [0x402000, 0x402040) saves x29 and x30 (CFA = sp + 16),
 * its last level [0x402040, 0x402050) keeps no stack (CFA = sp, x30 the
 * same) and faults there; main [0x403000, 0x403100) is outermost.  The
 * faulting level's caller is at its own sp; every level above moves up.
 */
static void test_aarch64_leaf_without_stack_returns_to_a_caller_at_its_sp(void **state)
{
	struct fake *f = *state;
	struct a64_tb b = {.nrows = 0};
	uint32_t framed = a64_ruleset(&b, 16, -8), leaf = a64_ruleset(&b, 0, 1);
	uint32_t outer = a64_ruleset(&b, 0, 0);
	b.rows[b.nrows++] = (struct cq_cfi_row){0x1000, framed};
	b.rows[b.nrows++] = (struct cq_cfi_row){0x1040, leaf};
	b.rows[b.nrows++] = (struct cq_cfi_row){0x1050, CQ_CFI_NO_RULES};
	b.rows[b.nrows++] = (struct cq_cfi_row){0x2000, outer};
	b.rows[b.nrows++] = (struct cq_cfi_row){0x2100, CQ_CFI_NO_RULES};
	a64_install(f, &b);
	poke(f, S(0x108), 0x402020); /* level 2's saved x30: level 3 */
	poke(f, S(0x118), 0x403010); /* level 3's saved x30: main */
	struct walk_result w;
	a64_walk(f, 0x402044, S(0x100), 0x402020, &cq_arch_aarch64, &w);
	check_end(&w, CQ_END_OUTERMOST);
	assert_int_equal(w.n, 4);
	check_frame(&w, 0, 0x402044, S(0x100), CQ_TRUST_CONTEXT, false);
	check_frame(&w, 1, 0x402020, S(0x100), CQ_TRUST_CFI, true);
	check_frame(&w, 2, 0x402020, S(0x110), CQ_TRUST_CFI, true);
	check_frame(&w, 3, 0x403010, S(0x120), CQ_TRUST_CFI, true);
	/* Where calls push the return address (x86_64), the same step is a loop. */
	struct cq_arch pushing = cq_arch_aarch64;
	pushing.leaf_may_keep_sp = false;
	a64_walk(f, 0x402044, S(0x100), 0x402020, &pushing, &w);
	check_end(&w, CQ_END_LOOP);
	assert_int_equal(w.n, 1);
}

/* A step that keeps sp is taken once in a row, and never back to the same pc. */
static void test_aarch64_sp_kept_twice_or_to_the_same_pc_is_loop(void **state)
{
	struct fake *f = *state;
	struct a64_tb b = {.nrows = 0};
	uint32_t leaf = a64_ruleset(&b, 0, 1), odd = a64_ruleset(&b, 0, 8);
	b.rows[b.nrows++] = (struct cq_cfi_row){0x0000, leaf};
	b.rows[b.nrows++] = (struct cq_cfi_row){0x0100, CQ_CFI_NO_RULES};
	b.rows[b.nrows++] = (struct cq_cfi_row){0x1000, odd}; /* x30 at CFA + 8 = sp + 8 */
	b.rows[b.nrows++] = (struct cq_cfi_row){0x1100, CQ_CFI_NO_RULES};
	a64_install(f, &b);
	struct walk_result w;
	/* x30 points back into the leaf itself: same pc, same sp. */
	a64_walk(f, 0x401010, S(0x100), 0x401010, &cq_arch_aarch64, &w);
	check_end(&w, CQ_END_LOOP);
	assert_int_equal(w.n, 1);
	/* leaf -> odd at the same sp -> leaf again at the same sp: the second is refused. */
	poke(f, S(0x108), 0x401030);
	a64_walk(f, 0x401010, S(0x100), 0x402020, &cq_arch_aarch64, &w);
	check_end(&w, CQ_END_LOOP);
	assert_int_equal(w.n, 2);
	check_frame(&w, 1, 0x402020, S(0x100), CQ_TRUST_CFI, true);
}

static void test_frame_pointer_self_loop_terminates(void **state)
{
	struct fake *f = *state;
	/* No CFI; rbp points at itself, with a code address above it. */
	poke(f, S(0x180), S(0x180));
	poke(f, S(0x188), 0x401234);
	for (int scan = 0; scan < 2; scan++) {
		struct cq_regs regs = regs_of(0x401010, S(0x100));
		cq_regs_set(&regs, RBP, S(0x180));
		struct walk_result w;
		walk(f, &regs, scan, &w);
		assert_true(w.end == CQ_END_LOOP || w.end == CQ_END_NO_UNWIND_INFO);
		assert_true(w.n <= 3);
		/* Whatever it did, no frame repeats. */
		for (size_t i = 1; i < w.n; i++)
			assert_true(w.frames[i].sp > w.frames[i - 1].sp);
	}
}

static void test_frame_pointer_two_frame_cycle_terminates(void **state)
{
	struct fake *f = *state;
	/* rbp A -> B -> A ... with valid return addresses in both frames. */
	poke(f, S(0x180), S(0x1c0));
	poke(f, S(0x188), 0x401234);
	poke(f, S(0x1c0), S(0x180));
	poke(f, S(0x1c8), 0x401334);
	struct cq_regs regs = regs_of(0x401010, S(0x100));
	cq_regs_set(&regs, RBP, S(0x180));
	struct walk_result w;
	walk(f, &regs, false, &w);
	assert_true(w.end == CQ_END_LOOP || w.end == CQ_END_NO_UNWIND_INFO);
	assert_int_equal(w.n, 3);
	check_frame(&w, 1, 0x401234, S(0x190), CQ_TRUST_FP, true);
	check_frame(&w, 2, 0x401334, S(0x1d0), CQ_TRUST_FP, true);
}

static void test_garbage_frame_pointer_without_scan_is_no_unwind_info(void **state)
{
	struct fake *f = *state;
	/* Each candidate would point at a plausible frame if it were accepted. */
	for (uint64_t a = S(0x40); a < S(0x400); a += 8)
		poke(f, a, 0x401234);
	const uint64_t bad[] = {
	    S(0x181),      /* unaligned */
	    S(0x80),       /* below sp */
	    0x1234,        /* not on the stack */
	    STACK_END - 8, /* frame record would run off the stack */
	    STACK_END,     /* just past the stack */
	    (uint64_t)-8,  /* would wrap */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cq_regs regs = regs_of(0x401010, S(0x100));
		cq_regs_set(&regs, RBP, bad[i]);
		struct walk_result w;
		walk(f, &regs, false, &w);
		if (w.n != 1 || w.end != CQ_END_NO_UNWIND_INFO)
			fail_msg("rbp 0x%llx: %zu frames, end %s", (unsigned long long)bad[i], w.n,
			         cq_unwind_end_name(w.end));
	}
	/* And no rbp at all. */
	struct cq_regs regs = regs_of(0x401010, S(0x100));
	struct walk_result w;
	walk(f, &regs, false, &w);
	check_end(&w, CQ_END_NO_UNWIND_INFO);
	assert_int_equal(w.n, 1);
}

static void test_frame_pointer_with_return_address_outside_code_is_rejected(void **state)
{
	struct fake *f = *state;
	poke(f, S(0x180), S(0x200));
	poke(f, S(0x188), 0x900000);
	struct cq_regs regs = regs_of(0x401010, S(0x100));
	cq_regs_set(&regs, RBP, S(0x180));
	struct walk_result w;
	walk(f, &regs, false, &w);
	check_end(&w, CQ_END_NO_UNWIND_INFO);
	assert_int_equal(w.n, 1);
}

static void test_unreadable_memory_in_offset_rule_is_bad_memory(void **state)
{
	struct fake *f = *state;
	one_function(f);
	/* The return address slot [rsp] is in an unreadable hole. */
	f->hole_lo = S(0x100);
	f->hole_hi = S(0x108);
	struct cq_regs regs = regs_of(0x401010, S(0x100));
	struct walk_result w;
	walk(f, &regs, true, &w);
	check_end(&w, CQ_END_BAD_MEMORY);
	assert_int_equal(w.n, 1);
}

static void test_unreadable_saved_register_is_bad_memory(void **state)
{
	struct fake *f = *state;
	/* RA readable, but rbp's OFFSET rule points into the hole. */
	struct tb b = {.nrows = 0};
	uint32_t rs = tb_ruleset(&b, RSP, 16);
	tb_rule(&b, rs, RIP, CQ_CFI_OFFSET, -8);
	tb_rule(&b, rs, RBP, CQ_CFI_OFFSET, -16);
	tb_row(&b, 0x401000, 0x401000, rs);
	tb_row(&b, 0x401000, 0x401100, CQ_CFI_NO_RULES);
	install(f, &b, 0x401000, 0);
	poke(f, S(0x108), 0x401050);
	f->hole_lo = S(0x100);
	f->hole_hi = S(0x108);
	struct cq_regs regs = regs_of(0x401010, S(0x100));
	struct walk_result w;
	walk(f, &regs, true, &w);
	check_end(&w, CQ_END_BAD_MEMORY);
	assert_int_equal(w.n, 1);
}

static void test_cfa_past_readable_memory_is_bad_memory(void **state)
{
	struct fake *f = *state;
	struct tb b = {.nrows = 0};
	uint32_t rs = tb_ruleset(&b, RSP, 0x100000);
	tb_rule(&b, rs, RIP, CQ_CFI_OFFSET, -8);
	tb_row(&b, 0x401000, 0x401000, rs);
	tb_row(&b, 0x401000, 0x401100, CQ_CFI_NO_RULES);
	install(f, &b, 0x401000, 0);
	struct cq_regs regs = regs_of(0x401010, S(0x100));
	struct walk_result w;
	walk(f, &regs, true, &w);
	check_end(&w, CQ_END_BAD_MEMORY);
	assert_int_equal(w.n, 1);
}

static void test_unknown_cfa_register_stops_walk(void **state)
{
	struct fake *f = *state;
	/* CFA = rax + 8, and rax is not in the context. */
	struct tb b = {.nrows = 0};
	uint32_t rs = tb_ruleset(&b, RAX, 8);
	tb_rule(&b, rs, RIP, CQ_CFI_OFFSET, -8);
	tb_row(&b, 0x401000, 0x401000, rs);
	tb_row(&b, 0x401000, 0x401100, CQ_CFI_NO_RULES);
	install(f, &b, 0x401000, 0);
	poke(f, S(0x100), 0x401050);
	struct cq_regs regs = regs_of(0x401010, S(0x100));
	struct walk_result w;
	walk(f, &regs, true, &w);
	assert_int_equal(w.n, 1);
	assert_int_not_equal(w.end, CQ_END_MAX_FRAMES);
}

static void test_missing_pc_is_no_unwind_info(void **state)
{
	struct fake *f = *state;
	struct cq_regs regs = {.valid = 0};
	cq_regs_set(&regs, RSP, S(0x100));
	struct walk_result w;
	walk(f, &regs, true, &w);
	check_end(&w, CQ_END_NO_UNWIND_INFO);
	assert_int_equal(w.n, 1);
}

static void test_max_frames_stops_walk(void **state)
{
	struct fake *f = *state;
	struct cq_regs regs;
	four_frames(f, &regs);
	struct cq_unwind_options o;
	cq_unwind_options_default(&o);
	o.max_frames = 3;
	/* Exactly three entries, so ASan catches a fourth write. */
	struct cq_unwind_frame *frames = calloc(3, sizeof(*frames));
	assert_non_null(frames);
	size_t n = 0;
	enum cq_unwind_end end = CQ_END_OUTERMOST;
	struct cq_unwind_target t = fake_target(f);
	cq_unwind_thread(&t, &regs, &o, frames, &n, &end);
	assert_int_equal(n, 3);
	assert_int_equal(end, CQ_END_MAX_FRAMES);
	assert_int_equal(frames[2].pc, 0x403080);
	free(frames);
}

static void test_max_frames_one(void **state)
{
	struct fake *f = *state;
	struct cq_regs regs;
	four_frames(f, &regs);
	struct cq_unwind_options o;
	cq_unwind_options_default(&o);
	o.max_frames = 1;
	struct walk_result w;
	walk_with(f, &regs, &o, &w);
	assert_int_equal(w.n, 1);
	check_end(&w, CQ_END_MAX_FRAMES);
}

static void test_max_frames_equal_to_depth_reports_outermost(void **state)
{
	struct fake *f = *state;
	/* The stack has exactly 4 frames and the last one is outermost: nothing was cut off. */
	struct cq_regs regs;
	four_frames(f, &regs);
	struct cq_unwind_options o;
	cq_unwind_options_default(&o);
	o.max_frames = 4;
	struct walk_result w;
	walk_with(f, &regs, &o, &w);
	assert_int_equal(w.n, 4);
	check_end(&w, CQ_END_OUTERMOST);
}

static void test_default_options(void **state)
{
	(void)state;
	struct cq_unwind_options o = {.max_frames = 0};
	cq_unwind_options_default(&o);
	assert_int_equal(o.max_frames, CQ_UNWIND_DEFAULT_MAX_FRAMES);
	assert_true(o.allow_scan);
	assert_int_equal(o.scan_words, CQ_UNWIND_DEFAULT_SCAN_WORDS);
}

static void test_trust_and_end_names(void **state)
{
	(void)state;
	assert_string_equal(cq_unwind_trust_name(CQ_TRUST_CONTEXT), "context");
	assert_string_equal(cq_unwind_trust_name(CQ_TRUST_CFI), "cfi");
	assert_string_equal(cq_unwind_trust_name(CQ_TRUST_FP), "fp");
	assert_string_equal(cq_unwind_trust_name(CQ_TRUST_SCAN), "scan");
	assert_string_equal(cq_unwind_trust_name(CQ_TRUST_ASYNC), "async");
	assert_string_equal(cq_unwind_trust_name((enum cq_unwind_trust)99), "unknown");
	assert_string_equal(cq_unwind_end_name(CQ_END_OUTERMOST), "outermost");
	assert_string_equal(cq_unwind_end_name(CQ_END_MAX_FRAMES), "max_frames");
	assert_string_equal(cq_unwind_end_name(CQ_END_NO_UNWIND_INFO), "no_unwind_info");
	assert_string_equal(cq_unwind_end_name(CQ_END_BAD_MEMORY), "bad_memory");
	assert_string_equal(cq_unwind_end_name(CQ_END_LOOP), "loop");
	assert_string_equal(cq_unwind_end_name(CQ_END_ASYNC_DETACHED), "async_detached");
	assert_string_equal(cq_unwind_end_name((enum cq_unwind_end)99), "unknown");
}

/* ---- frame-pointer and scan fallbacks --------------------------------------------------- */

static void test_frame_pointer_fallback(void **state)
{
	struct fake *f = *state;
	/* No CFI anywhere: a chain of frame records, ending with a zero return address. */
	poke(f, S(0x100), S(0x200));
	poke(f, S(0x108), 0x401100);
	poke(f, S(0x200), S(0x300));
	poke(f, S(0x208), 0x402200);
	poke(f, S(0x300), 0);
	poke(f, S(0x308), 0);
	struct cq_regs regs = regs_of(0x401010, S(0x80));
	cq_regs_set(&regs, RBP, S(0x100));
	struct walk_result w;
	walk(f, &regs, false, &w);
	check_end(&w, CQ_END_OUTERMOST);
	assert_int_equal(w.n, 3);
	check_frame(&w, 0, 0x401010, S(0x80), CQ_TRUST_CONTEXT, false);
	check_frame(&w, 1, 0x401100, S(0x110), CQ_TRUST_FP, true);
	check_frame(&w, 2, 0x402200, S(0x210), CQ_TRUST_FP, true);
	assert_true(w.frames[1].has_fp);
	assert_int_equal(w.frames[1].fp, S(0x200));
	assert_int_equal(w.frames[2].fp, S(0x300));
}

static void test_frame_pointer_fallback_where_table_has_no_row(void **state)
{
	struct fake *f = *state;
	/* A table exists but has no row for the pc: same as no CFI. */
	one_function(f);
	poke(f, S(0x100), S(0x200));
	poke(f, S(0x108), 0x401010); /* back into the function with CFI */
	poke(f, S(0x110), 0);        /* its RA: outermost */
	struct cq_regs regs = regs_of(0x402010, S(0x80));
	cq_regs_set(&regs, RBP, S(0x100));
	struct walk_result w;
	walk(f, &regs, false, &w);
	check_end(&w, CQ_END_OUTERMOST);
	assert_int_equal(w.n, 2);
	check_frame(&w, 1, 0x401010, S(0x110), CQ_TRUST_FP, true);
}

/* sp = S(0x100); a return address after a call 5 words above sp, decoys below it. */
static void scan_stack(struct fake *f)
{
	poke(f, S(0x100), 0x12345);  /* not code */
	poke(f, S(0x108), 0x401200); /* code, but no call before it */
	poke(f, S(0x110), S(0x500)); /* a stack address */
	poke(f, S(0x118), 0);
	poke(f, S(0x120), 0x900000); /* outside code */
	poke(f, S(0x128), 0x401105); /* after "call rel32" */
	plant_call(f, 0x401105);
}

static void test_scan_fallback_finds_return_address(void **state)
{
	struct fake *f = *state;
	scan_stack(f);
	struct cq_regs regs = regs_of(0x401010, S(0x100));
	struct walk_result w;
	walk(f, &regs, true, &w);
	assert_true(w.n >= 2);
	check_frame(&w, 1, 0x401105, S(0x130), CQ_TRUST_SCAN, true);
	assert_false(w.frames[1].has_fp);
	check_end(&w, CQ_END_NO_UNWIND_INFO);
	assert_int_equal(w.n, 2);
}

static void test_scan_recognises_indirect_calls(void **state)
{
	struct fake *f = *state;
	/* call *%rax (ff d0) before the return address. */
	poke(f, S(0x100), 0x401302);
	f->code[0x1300] = 0xff;
	f->code[0x1301] = 0xd0;
	struct cq_regs regs = regs_of(0x401010, S(0x100));
	struct walk_result w;
	walk(f, &regs, true, &w);
	assert_true(w.n >= 2);
	check_frame(&w, 1, 0x401302, S(0x108), CQ_TRUST_SCAN, true);
}

static void test_scan_disabled_gives_no_frame(void **state)
{
	struct fake *f = *state;
	scan_stack(f);
	struct cq_regs regs = regs_of(0x401010, S(0x100));
	struct walk_result w;
	walk(f, &regs, false, &w);
	check_end(&w, CQ_END_NO_UNWIND_INFO);
	assert_int_equal(w.n, 1);
}

static void test_scan_is_bounded_by_scan_words(void **state)
{
	struct fake *f = *state;
	scan_stack(f);
	struct cq_regs regs = regs_of(0x401010, S(0x100));
	struct cq_unwind_options o;
	cq_unwind_options_default(&o);
	o.scan_words = 5; /* words 0..4: the return address is word 5 */
	struct walk_result w;
	walk_with(f, &regs, &o, &w);
	check_end(&w, CQ_END_NO_UNWIND_INFO);
	assert_int_equal(w.n, 1);
	o.scan_words = 6;
	walk_with(f, &regs, &o, &w);
	assert_true(w.n >= 2);
	check_frame(&w, 1, 0x401105, S(0x130), CQ_TRUST_SCAN, true);
}

static void test_scan_stops_at_stack_end(void **state)
{
	struct fake *f = *state;
	/* sp near the top of the stack, nothing found: no read past the end. */
	struct cq_regs regs = regs_of(0x401010, STACK_END - 16);
	struct walk_result w;
	walk(f, &regs, true, &w);
	check_end(&w, CQ_END_NO_UNWIND_INFO);
	assert_int_equal(w.n, 1);
}

static void test_cfi_is_preferred_over_frame_pointer_and_scan(void **state)
{
	struct fake *f = *state;
	one_function(f);
	scan_stack(f);               /* a return address a scan would find */
	poke(f, S(0x100), 0x401050); /* the one CFI finds, at [rsp] */
	poke(f, S(0x180), S(0x200)); /* a frame record pointing elsewhere */
	poke(f, S(0x188), 0x402000);
	struct cq_regs regs = regs_of(0x401010, S(0x100));
	cq_regs_set(&regs, RBP, S(0x180));
	struct walk_result w;
	walk(f, &regs, true, &w);
	assert_true(w.n >= 2);
	check_frame(&w, 1, 0x401050, S(0x108), CQ_TRUST_CFI, true);
}

/* ---- signal frames ----------------------------------------------------------------------- */

/* glibc's uc_mcontext.gregs order (at the trampoline's sp + 40), as DWARF numbers. */
static const unsigned gregs_dwarf[17] = {R8,  R9,  R10, R11, R12, R13, R14, R15, RDI,
                                         RSI, RBP, RBX, RDX, RAX, RCX, RSP, RIP};

/* A __restore_rt-like rule set: CFA = *(rsp + 160), every register from the gregs. */
static uint32_t tb_sigframe(struct tb *b)
{
	const struct cq_cfi_op cfa[] = {{.atom = DW_OP_breg7, .number = 160, .offset = 0},
	                                {.atom = DW_OP_deref, .offset = 3}};
	uint32_t rs = tb_ruleset_expr(b, cfa, 2);
	b->rules[rs * STRIDE].flags = CQ_CFI_SIGNAL_FRAME;
	for (unsigned i = 0; i < 17; i++) {
		const struct cq_cfi_op op = {.atom = DW_OP_breg7, .number = 40 + 8 * i};
		b->rules[rs * STRIDE + 1 + gregs_dwarf[i]] =
		    (struct cq_cfi_rule){.kind = CQ_CFI_EXPR, .value = tb_expr(b, &op, 1)};
	}
	return rs;
}

/*
 * handler f0 [0x401000, 0x401100) returns into the trampoline at 0x405001,
 * whose FDE starts at 0x405000 (the nop before it).  The interrupted f2 has
 * [0x403000, 0x403080) outermost and [0x403080, 0x403100) CFA = rbx + 8: the
 * interrupted pc 0x403080 must be looked up exactly, and rbx must come from
 * the ucontext.  f3 is outermost.
 */
static void signal_setup(struct fake *f, uint64_t saved_rsp, uint64_t saved_rbx)
{
	struct tb b = {.nrows = 0};
	uint32_t f0 = tb_after_call(&b), sig = tb_sigframe(&b);
	uint32_t f2_bad = tb_outermost(&b);
	uint32_t f2 = tb_ruleset(&b, RBX, 8);
	tb_rule(&b, f2, RIP, CQ_CFI_OFFSET, -8);
	tb_rule(&b, f2, RBP, CQ_CFI_SAME, 0);
	uint32_t f3 = tb_outermost(&b);
	const uint64_t base = 0x401000;
	tb_row(&b, base, 0x401000, f0);
	tb_row(&b, base, 0x401100, CQ_CFI_NO_RULES);
	tb_row(&b, base, 0x403000, f2_bad);
	tb_row(&b, base, 0x403080, f2);
	tb_row(&b, base, 0x403100, CQ_CFI_NO_RULES);
	tb_row(&b, base, 0x404000, f3);
	tb_row(&b, base, 0x404100, CQ_CFI_NO_RULES);
	tb_row(&b, base, 0x405000, sig);
	tb_row(&b, base, 0x405010, CQ_CFI_NO_RULES);
	install(f, &b, base, 0);

	poke(f, S(0x100), 0x405001); /* the handler returns into the trampoline */
	uint64_t uc = S(0x108);      /* the trampoline's sp */
	for (unsigned i = 0; i < 17; i++)
		poke(f, uc + 40 + 8 * i, 0x5a5a0000 + gregs_dwarf[i]);
	poke(f, uc + 40 + 8 * 15, saved_rsp);
	poke(f, uc + 40 + 8 * 16, 0x403080); /* rip: the interrupted instruction */
	poke(f, uc + 40 + 8 * 10, S(0x380)); /* rbp */
	poke(f, uc + 40 + 8 * 11, saved_rbx);
	poke(f, saved_rbx, 0x404020); /* f2's return address at CFA - 8 = rbx */
}

static void test_signal_frame_caller_is_exact_pc_with_ucontext_registers(void **state)
{
	struct fake *f = *state;
	signal_setup(f, S(0x300), S(0x340));
	struct cq_regs regs = regs_of(0x401010, S(0x100));
	struct walk_result w;
	walk(f, &regs, false, &w);
	check_end(&w, CQ_END_OUTERMOST);
	assert_int_equal(w.n, 4);
	check_frame(&w, 0, 0x401010, S(0x100), CQ_TRUST_CONTEXT, false);
	check_frame(&w, 1, 0x405001, S(0x108), CQ_TRUST_CFI, true);
	/* The interrupted frame: pc, sp and rbp from the ucontext; not a return address. */
	check_frame(&w, 2, 0x403080, S(0x300), CQ_TRUST_CFI, false);
	assert_true(w.frames[2].has_fp);
	assert_int_equal(w.frames[2].fp, S(0x380));
	/* Its caller: CFA from the ucontext's rbx. */
	check_frame(&w, 3, 0x404020, S(0x348), CQ_TRUST_CFI, true);
	assert_int_equal(w.frames[3].fp, S(0x380));
	static const uint64_t want[] = {0x401010, 0x405000, 0x403080, 0x40401f};
	check_lookups(f, want, 4);
	/* Only the trampoline is marked as a signal frame. */
	assert_false(w.frames[0].is_signal_frame);
	assert_true(w.frames[1].is_signal_frame);
	assert_false(w.frames[2].is_signal_frame);
	assert_false(w.frames[3].is_signal_frame);
}

static void test_signal_frame_step_restores_every_register(void **state)
{
	struct fake *f = *state;
	signal_setup(f, S(0x300), S(0x340));
	struct cq_unwind_target t = fake_target(f);
	const struct cq_cfi_rule *rs = cq_cfi_table_lookup(f->table, 0x405000);
	assert_non_null(rs);
	struct cq_regs regs = regs_of(0x405001, S(0x108)), caller;
	cq_regs_set(&regs, RBX, 0x1111);
	cq_regs_set(&regs, R12, 0x2222);
	uint64_t cfa = 0;
	assert_true(cq_unwind_step_cfi(&t, f->table, rs, &regs, &caller, &cfa));
	assert_int_equal(cfa, S(0x300));
	for (unsigned i = 0; i < 17; i++) {
		unsigned regno = gregs_dwarf[i];
		uint64_t want = 0x5a5a0000 + regno;
		if (regno == RSP)
			want = S(0x300);
		else if (regno == RIP)
			want = 0x403080;
		else if (regno == RBP)
			want = S(0x380);
		else if (regno == RBX)
			want = S(0x340);
		assert_true(cq_regs_has(&caller, regno));
		if (caller.value[regno] != want)
			fail_msg("register %u: 0x%llx, not 0x%llx", regno,
			         (unsigned long long)caller.value[regno], (unsigned long long)want);
	}
}

static void test_signal_frame_may_switch_to_a_lower_stack(void **state)
{
	struct fake *f = *state;
	/* The handler ran on an alternate stack above the interrupted one. */
	signal_setup(f, S(0x40), S(0x60));
	struct cq_regs regs = regs_of(0x401010, S(0x100));
	struct walk_result w;
	walk(f, &regs, false, &w);
	check_end(&w, CQ_END_OUTERMOST);
	assert_int_equal(w.n, 4);
	check_frame(&w, 2, 0x403080, S(0x40), CQ_TRUST_CFI, false);
	check_frame(&w, 3, 0x404020, S(0x68), CQ_TRUST_CFI, true);
}

static void test_signal_frame_repeating_itself_is_loop(void **state)
{
	struct fake *f = *state;
	/* A first frame in the trampoline whose ucontext names the trampoline itself. */
	signal_setup(f, S(0x108), S(0x340));
	poke(f, S(0x108) + 40 + 8 * 16, 0x405004);
	struct cq_regs regs = regs_of(0x405004, S(0x108));
	struct walk_result w;
	walk(f, &regs, false, &w);
	check_end(&w, CQ_END_LOOP);
	assert_int_equal(w.n, 1);
}

/*
 * A handler (f0) running on the alternate stack ALT, interrupted code at
 * 0x406010 with no CFI on the main stack: ucontext rsp = S(0x100), rbp =
 * S(0x180), and a frame record there leading to the outermost f3.
 */
static void sigaltstack_setup(struct fake *f)
{
	struct tb b = {.nrows = 0};
	uint32_t f0 = tb_after_call(&b), sig = tb_sigframe(&b), f3 = tb_outermost(&b);
	const uint64_t base = 0x401000;
	tb_row(&b, base, 0x401000, f0);
	tb_row(&b, base, 0x401100, CQ_CFI_NO_RULES);
	tb_row(&b, base, 0x404000, f3);
	tb_row(&b, base, 0x404100, CQ_CFI_NO_RULES);
	tb_row(&b, base, 0x405000, sig);
	tb_row(&b, base, 0x405010, CQ_CFI_NO_RULES);
	install(f, &b, base, 0);
	poke(f, ALT(0x100), 0x405001);
	uint64_t uc = ALT(0x108);
	poke(f, uc + 40 + 8 * 15, S(0x100)); /* rsp */
	poke(f, uc + 40 + 8 * 16, 0x406010); /* rip */
	poke(f, uc + 40 + 8 * 10, S(0x180)); /* rbp */
	poke(f, S(0x180), 0);
	poke(f, S(0x188), 0x404020);
}

static void test_frame_pointer_step_after_switch_from_alternate_signal_stack(void **state)
{
	struct fake *f = *state;
	sigaltstack_setup(f);
	struct cq_regs regs = regs_of(0x401010, ALT(0x100));
	struct walk_result w;
	walk(f, &regs, false, &w);
	assert_true(w.n >= 3);
	check_frame(&w, 1, 0x405001, ALT(0x108), CQ_TRUST_CFI, true);
	check_frame(&w, 2, 0x406010, S(0x100), CQ_TRUST_CFI, false);
	/* The interrupted frame's rbp chain is on the main stack, not the handler's. */
	check_end(&w, CQ_END_OUTERMOST);
	assert_int_equal(w.n, 4);
	check_frame(&w, 3, 0x404020, S(0x190), CQ_TRUST_FP, true);
}

static void test_scan_after_signal_frame_considers_word_at_sp(void **state)
{
	struct fake *f = *state;
	/*
	 * The signal interrupted a function at its first instruction (no CFI,
	 * rbp useless): its return address is the word at the interrupted sp,
	 * just as it may be for the first frame.
	 */
	signal_setup(f, S(0x300), S(0x340));
	poke(f, S(0x108) + 40 + 8 * 16, 0x406000); /* rip: no CFI there */
	poke(f, S(0x108) + 40 + 8 * 10, 0x13);     /* rbp: garbage */
	poke(f, S(0x300), 0x401105);
	plant_call(f, 0x401105);
	struct cq_regs regs = regs_of(0x401010, S(0x100));
	struct walk_result w;
	walk(f, &regs, true, &w);
	assert_true(w.n >= 3);
	check_frame(&w, 2, 0x406000, S(0x300), CQ_TRUST_CFI, false);
	if (w.n < 4)
		fail_msg("walk ended with %s at the interrupted frame", cq_unwind_end_name(w.end));
	check_frame(&w, 3, 0x401105, S(0x308), CQ_TRUST_SCAN, true);
}

/* ---- rule kinds, directly --------------------------------------------------------------- */

static void test_step_cfi_applies_every_rule_kind(void **state)
{
	struct fake *f = *state;
	struct tb b = {.nrows = 0};
	uint32_t rs = tb_ruleset(&b, RSP, 32);
	tb_rule(&b, rs, RIP, CQ_CFI_OFFSET, -8);
	tb_rule(&b, rs, RBX, CQ_CFI_SAME, 0);
	tb_rule(&b, rs, RBP, CQ_CFI_OFFSET, -16);
	tb_rule(&b, rs, R12, CQ_CFI_VAL_OFFSET, 24);
	tb_register(&b, rs, R13, RDI);
	tb_register(&b, rs, R14, RSI); /* rsi unknown: r14 unknown */
	const struct cq_cfi_op e1[] = {{.atom = DW_OP_call_frame_cfa},
	                               {.atom = DW_OP_lit24},
	                               {.atom = DW_OP_minus}}; /* *(CFA - 24) */
	b.rules[rs * STRIDE + 1 + R15] =
	    (struct cq_cfi_rule){.kind = CQ_CFI_EXPR, .value = tb_expr(&b, e1, 3)};
	const struct cq_cfi_op e2[] = {{.atom = DW_OP_breg5, .number = 0x100}}; /* rdi + 0x100 */
	b.rules[rs * STRIDE + 1 + R8] =
	    (struct cq_cfi_rule){.kind = CQ_CFI_VAL_EXPR, .value = tb_expr(&b, e2, 1)};
	tb_row(&b, 0x401000, 0x401000, rs);
	tb_row(&b, 0x401000, 0x401100, CQ_CFI_NO_RULES);
	install(f, &b, 0x401000, 0);

	poke(f, S(0x118), 0x401077); /* CFA - 8 */
	poke(f, S(0x110), 0xbbbb);   /* CFA - 16 */
	poke(f, S(0x108), 0xffff);   /* CFA - 24 */
	struct cq_regs regs = regs_of(0x401010, S(0x100)), caller;
	cq_regs_set(&regs, RBX, 0x3333);
	cq_regs_set(&regs, RDI, 0xd1d1);
	cq_regs_set(&regs, RAX, 0xa0a0); /* undefined rule: lost */
	struct cq_unwind_target t = fake_target(f);
	uint64_t cfa = 0;
	assert_true(cq_unwind_step_cfi(&t, f->table, cq_cfi_table_lookup(f->table, 0x401010), &regs,
	                               &caller, &cfa));
	assert_int_equal(cfa, S(0x120));
	assert_int_equal(caller.value[RSP], S(0x120));
	assert_int_equal(caller.value[RIP], 0x401077);
	assert_int_equal(caller.value[RBX], 0x3333);
	assert_int_equal(caller.value[RBP], 0xbbbb);
	assert_int_equal(caller.value[R12], S(0x120) + 24);
	assert_int_equal(caller.value[R13], 0xd1d1);
	assert_false(cq_regs_has(&caller, R14));
	assert_int_equal(caller.value[R15], 0xffff);
	assert_int_equal(caller.value[R8], 0xd1d1 + 0x100);
	assert_false(cq_regs_has(&caller, RAX));
	assert_false(cq_regs_has(&caller, RDI));
}

static void test_step_cfi_fails_on_bad_expressions(void **state)
{
	struct fake *f = *state;
	struct tb b = {.nrows = 0};
	/* A CFA expression may not use DW_OP_call_frame_cfa. */
	const struct cq_cfi_op cfa_self[] = {{.atom = DW_OP_call_frame_cfa}};
	uint32_t r1 = tb_ruleset_expr(&b, cfa_self, 1);
	tb_rule(&b, r1, RIP, CQ_CFI_OFFSET, -8);
	/* An EXPR rule whose address is unreadable. */
	uint32_t r2 = tb_after_call(&b);
	const struct cq_cfi_op far[] = {{.atom = DW_OP_constu, .number = 0x10}};
	b.rules[r2 * STRIDE + 1 + RBX] =
	    (struct cq_cfi_rule){.kind = CQ_CFI_EXPR, .value = tb_expr(&b, far, 1)};
	tb_row(&b, 0x401000, 0x401000, r1);
	tb_row(&b, 0x401000, 0x401010, r2);
	tb_row(&b, 0x401000, 0x401100, CQ_CFI_NO_RULES);
	install(f, &b, 0x401000, 0);
	poke(f, S(0x100), 0x401050);
	struct cq_unwind_target t = fake_target(f);
	struct cq_regs regs = regs_of(0x401000, S(0x100)), caller;
	uint64_t cfa;
	assert_false(cq_unwind_step_cfi(&t, f->table, cq_cfi_table_lookup(f->table, 0x401000),
	                                &regs, &caller, &cfa));
	assert_false(cq_unwind_step_cfi(&t, f->table, cq_cfi_table_lookup(f->table, 0x401010),
	                                &regs, &caller, &cfa));
	struct walk_result w;
	walk(f, &regs, true, &w);
	check_end(&w, CQ_END_BAD_MEMORY);
	assert_int_equal(w.n, 1);
}

/*
 * A table whose rule sets are narrower than the architecture (nregs 8 < x86_64's
 * 17, as a damaged or foreign cache blob may be: cq_cfi_table_deserialize
 * accepts any nregs up to CQ_CFI_MAX_REGS) must not be read past its end.
 * Runs in a child process so that an ASan report fails this test only.
 */
static void test_narrow_table_is_not_read_out_of_bounds(void **state)
{
	struct fake *f = *state;
	const unsigned nregs = 8;
	struct cq_cfi_rule rules[9];
	memset(rules, 0, sizeof(rules));
	rules[0] = (struct cq_cfi_rule){.kind = CQ_CFI_CFA_REG_OFFSET, .reg = RSP, .value = 8};
	const struct cq_cfi_row rows[] = {{0, 0}, {0x100, CQ_CFI_NO_RULES}};
	struct cq_error *err =
	    cq_cfi_table_from_parts(0x401000, nregs, rows, 2, rules, 1, NULL, 0, &f->table);
	if (err)
		fail_msg("cq_cfi_table_from_parts: %s", err->message);
	poke(f, S(0x100), 0x401050);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct cq_regs regs = regs_of(0x401010, S(0x100));
		struct walk_result w;
		struct cq_unwind_options o;
		cq_unwind_options_default(&o);
		struct cq_unwind_target t = fake_target(f);
		cq_unwind_thread(&t, &regs, &o, w.frames, &w.n, &w.end);
		_exit(w.n >= 1 && w.n <= 2 ? 0 : 3);
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("walking a table with nregs %u crashed or failed (status 0x%x)", nregs,
		         status);
}

/* ---- the DWARF expression evaluator ------------------------------------------------------ */

/* Memory for deref: 64 bytes at 0x1000; everything else unreadable. */
static uint8_t expr_memory[64];

static bool expr_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < 0x1000 || addr - 0x1000 > sizeof(expr_memory) ||
	    len > sizeof(expr_memory) - (addr - 0x1000))
		return false;
	memcpy(buf, expr_memory + (addr - 0x1000), len);
	return true;
}

static struct cq_regs expr_regs;

static struct cq_dwarf_expr_env expr_env(void)
{
	memset(&expr_regs, 0, sizeof(expr_regs));
	cq_regs_set(&expr_regs, RSP, 0x7000);
	cq_regs_set(&expr_regs, RIP, 0x40123b);
	cq_regs_set(&expr_regs, R12, 0x1000);
	for (size_t i = 0; i < sizeof(expr_memory); i++)
		expr_memory[i] = (uint8_t)(0x10 + i);
	return (struct cq_dwarf_expr_env){
	    .regs = &expr_regs, .has_cfa = true, .cfa = 0x9000, .read = expr_read, .ctx = NULL};
}

/* Assigns byte offsets as the ops would be encoded (ops given with their sizes). */
struct op_spec {
	uint8_t atom;
	uint64_t number, number2;
	unsigned size; /* encoded bytes, opcode included */
};

#define OP(a)                                                                                      \
	{                                                                                          \
		(a), 0, 0, 1                                                                       \
	}
#define OPN(a, n, size)                                                                            \
	{                                                                                          \
		(a), (uint64_t)(n), 0, (size)                                                      \
	}
#define SKIP(a, delta)                                                                             \
	{                                                                                          \
		(a), (uint64_t)(int64_t)(delta), 0, 3                                              \
	}

static bool eval_spec(const struct op_spec *spec, size_t n, const struct cq_dwarf_expr_env *env,
                      uint64_t *result)
{
	struct cq_cfi_op *ops = calloc(n ? n : 1, sizeof(*ops));
	assert_non_null(ops);
	uint64_t offset = 0;
	for (size_t i = 0; i < n; i++) {
		ops[i] = (struct cq_cfi_op){.atom = spec[i].atom,
		                            .number = spec[i].number,
		                            .number2 = spec[i].number2,
		                            .offset = offset};
		offset += spec[i].size;
	}
	bool ok = cq_unwind_eval_expr(ops, n, env, result);
	free(ops);
	return ok;
}

#define EVAL_OK(want, ...)                                                                         \
	do {                                                                                       \
		const struct op_spec spec_[] = {__VA_ARGS__};                                      \
		struct cq_dwarf_expr_env env_ = expr_env();                                        \
		uint64_t r_ = 0xdeadbeef;                                                          \
		if (!eval_spec(spec_, sizeof(spec_) / sizeof(spec_[0]), &env_, &r_))               \
			fail_msg("line %d: evaluation failed", __LINE__);                          \
		if (r_ != (uint64_t)(want))                                                        \
			fail_msg("line %d: 0x%llx, expected 0x%llx", __LINE__,                     \
			         (unsigned long long)r_, (unsigned long long)(uint64_t)(want));    \
	} while (0)

#define EVAL_FAILS(...)                                                                            \
	do {                                                                                       \
		const struct op_spec spec_[] = {__VA_ARGS__};                                      \
		struct cq_dwarf_expr_env env_ = expr_env();                                        \
		uint64_t r_ = 0;                                                                   \
		if (eval_spec(spec_, sizeof(spec_) / sizeof(spec_[0]), &env_, &r_))                \
			fail_msg("line %d: evaluation succeeded with 0x%llx", __LINE__,            \
			         (unsigned long long)r_);                                          \
	} while (0)

static void test_expr_literals_and_constants(void **state)
{
	(void)state;
	EVAL_OK(0, OP(DW_OP_lit0));
	EVAL_OK(31, OP(DW_OP_lit31));
	EVAL_OK(200, OPN(DW_OP_const1u, 200, 2));
	EVAL_OK(-5, OPN(DW_OP_const1s, -5, 2));
	EVAL_OK(0x1234, OPN(DW_OP_const2u, 0x1234, 3));
	EVAL_OK(0x12345678, OPN(DW_OP_const4u, 0x12345678, 5));
	EVAL_OK(0x123456789abcdef0ull, OPN(DW_OP_const8u, 0x123456789abcdef0ull, 9));
	EVAL_OK(1000000, OPN(DW_OP_constu, 1000000, 4));
	EVAL_OK(-1000000, OPN(DW_OP_consts, -1000000, 4));
	EVAL_OK(0x401000, OPN(DW_OP_addr, 0x401000, 9));
	/* The result is the top of the stack. */
	EVAL_OK(2, OP(DW_OP_lit1), OP(DW_OP_lit2));
	EVAL_OK(7, OP(DW_OP_lit7), OP(DW_OP_nop));
}

static void test_expr_arithmetic(void **state)
{
	(void)state;
	EVAL_OK(12, OP(DW_OP_lit5), OP(DW_OP_lit7), OP(DW_OP_plus));
	EVAL_OK(-2, OP(DW_OP_lit5), OP(DW_OP_lit7), OP(DW_OP_minus));
	EVAL_OK(2, OP(DW_OP_lit7), OP(DW_OP_lit5), OP(DW_OP_minus));
	EVAL_OK(35, OP(DW_OP_lit5), OP(DW_OP_lit7), OP(DW_OP_mul));
	EVAL_OK(3, OP(DW_OP_lit22), OP(DW_OP_lit7), OP(DW_OP_div));
	EVAL_OK(-3, OPN(DW_OP_consts, -22, 2), OP(DW_OP_lit7), OP(DW_OP_div));
	EVAL_OK(1, OP(DW_OP_lit22), OP(DW_OP_lit7), OP(DW_OP_mod));
	EVAL_OK(0x4, OPN(DW_OP_const1u, 0x0c, 2), OP(DW_OP_lit6), OP(DW_OP_and));
	EVAL_OK(0xe, OPN(DW_OP_const1u, 0x0c, 2), OP(DW_OP_lit6), OP(DW_OP_or));
	EVAL_OK(0xa, OPN(DW_OP_const1u, 0x0c, 2), OP(DW_OP_lit6), OP(DW_OP_xor));
	EVAL_OK(40, OP(DW_OP_lit5), OP(DW_OP_lit3), OP(DW_OP_shl));
	EVAL_OK(5, OP(DW_OP_lit20), OP(DW_OP_lit2), OP(DW_OP_shr));
	EVAL_OK(0, OP(DW_OP_lit20), OPN(DW_OP_const1u, 64, 2), OP(DW_OP_shl));
	EVAL_OK(-4, OPN(DW_OP_consts, -16, 2), OP(DW_OP_lit2), OP(DW_OP_shra));
	EVAL_OK(0x3ffffffffffffffcull, OPN(DW_OP_consts, -16, 2), OP(DW_OP_lit2), OP(DW_OP_shr));
	EVAL_OK(-9, OP(DW_OP_lit9), OP(DW_OP_neg));
	EVAL_OK(9, OPN(DW_OP_consts, -9, 2), OP(DW_OP_abs));
	EVAL_OK(9, OP(DW_OP_lit9), OP(DW_OP_abs));
	EVAL_OK(~(uint64_t)9, OP(DW_OP_lit9), OP(DW_OP_not));
	EVAL_OK(1009, OP(DW_OP_lit9), OPN(DW_OP_plus_uconst, 1000, 3));
	EVAL_OK(0, OP(DW_OP_lit1), OPN(DW_OP_const8u, UINT64_MAX, 9), OP(DW_OP_plus));
}

static void test_expr_division_by_zero_fails(void **state)
{
	(void)state;
	EVAL_FAILS(OP(DW_OP_lit5), OP(DW_OP_lit0), OP(DW_OP_div));
	EVAL_FAILS(OP(DW_OP_lit5), OP(DW_OP_lit0), OP(DW_OP_mod));
	EVAL_FAILS(OPN(DW_OP_const8s, INT64_MIN, 9), OPN(DW_OP_consts, -1, 2), OP(DW_OP_div));
}

static void test_expr_comparisons_are_signed(void **state)
{
	(void)state;
	EVAL_OK(1, OP(DW_OP_lit3), OP(DW_OP_lit3), OP(DW_OP_eq));
	EVAL_OK(0, OP(DW_OP_lit3), OP(DW_OP_lit4), OP(DW_OP_eq));
	EVAL_OK(1, OP(DW_OP_lit3), OP(DW_OP_lit4), OP(DW_OP_ne));
	EVAL_OK(1, OP(DW_OP_lit3), OP(DW_OP_lit4), OP(DW_OP_lt));
	EVAL_OK(0, OP(DW_OP_lit4), OP(DW_OP_lit3), OP(DW_OP_lt));
	EVAL_OK(1, OP(DW_OP_lit4), OP(DW_OP_lit3), OP(DW_OP_gt));
	EVAL_OK(1, OP(DW_OP_lit3), OP(DW_OP_lit3), OP(DW_OP_le));
	EVAL_OK(1, OP(DW_OP_lit3), OP(DW_OP_lit3), OP(DW_OP_ge));
	EVAL_OK(0, OP(DW_OP_lit2), OP(DW_OP_lit3), OP(DW_OP_ge));
	/* -1 < 1 when signed. */
	EVAL_OK(1, OPN(DW_OP_consts, -1, 2), OP(DW_OP_lit1), OP(DW_OP_lt));
	EVAL_OK(0, OPN(DW_OP_consts, -1, 2), OP(DW_OP_lit1), OP(DW_OP_gt));
}

static void test_expr_glibc_plt_rule(void **state)
{
	(void)state;
	/* breg7 8; breg16 0; lit15; and; lit11; ge; lit3; shl; plus, with rip & 15 = 11. */
	EVAL_OK(0x7000 + 16, OPN(DW_OP_breg7, 8, 2), OPN(DW_OP_breg16, 0, 2), OP(DW_OP_lit15),
	        OP(DW_OP_and), OP(DW_OP_lit11), OP(DW_OP_ge), OP(DW_OP_lit3), OP(DW_OP_shl),
	        OP(DW_OP_plus));
}

static void test_expr_stack_operations(void **state)
{
	(void)state;
	EVAL_OK(14, OP(DW_OP_lit7), OP(DW_OP_dup), OP(DW_OP_plus));
	EVAL_OK(1, OP(DW_OP_lit1), OP(DW_OP_lit2), OP(DW_OP_drop));
	EVAL_OK(1, OP(DW_OP_lit1), OP(DW_OP_lit2), OP(DW_OP_over));
	/* over: [1 2] becomes [1 2 1]; minus: 2 - 1. */
	EVAL_OK(1, OP(DW_OP_lit1), OP(DW_OP_lit2), OP(DW_OP_over), OP(DW_OP_minus));
	EVAL_OK(3, OP(DW_OP_lit1), OP(DW_OP_lit2), OP(DW_OP_over), OP(DW_OP_plus), OP(DW_OP_swap),
	        OP(DW_OP_drop));
	EVAL_OK(3, OP(DW_OP_lit3), OP(DW_OP_lit2), OP(DW_OP_lit1), OPN(DW_OP_pick, 2, 2));
	EVAL_OK(1, OP(DW_OP_lit3), OP(DW_OP_lit2), OP(DW_OP_lit1), OPN(DW_OP_pick, 0, 2));
	EVAL_OK(1, OP(DW_OP_lit1), OP(DW_OP_lit2), OP(DW_OP_swap));
	EVAL_OK(1, OP(DW_OP_lit1), OP(DW_OP_lit2), OP(DW_OP_swap), OP(DW_OP_minus));
	/* rot: [1 2 3] (3 on top) becomes [3 1 2]. */
	EVAL_OK(2, OP(DW_OP_lit1), OP(DW_OP_lit2), OP(DW_OP_lit3), OP(DW_OP_rot));
	EVAL_OK(1, OP(DW_OP_lit1), OP(DW_OP_lit2), OP(DW_OP_lit3), OP(DW_OP_rot), OP(DW_OP_drop));
	EVAL_OK(3, OP(DW_OP_lit1), OP(DW_OP_lit2), OP(DW_OP_lit3), OP(DW_OP_rot), OP(DW_OP_drop),
	        OP(DW_OP_drop));
}

static void test_expr_stack_underflow_fails(void **state)
{
	(void)state;
	EVAL_FAILS(OP(DW_OP_plus));
	EVAL_FAILS(OP(DW_OP_lit1), OP(DW_OP_plus));
	EVAL_FAILS(OP(DW_OP_drop));
	EVAL_FAILS(OP(DW_OP_dup));
	EVAL_FAILS(OP(DW_OP_lit1), OP(DW_OP_over));
	EVAL_FAILS(OP(DW_OP_lit1), OPN(DW_OP_pick, 1, 2));
	EVAL_FAILS(OP(DW_OP_lit1), OP(DW_OP_swap));
	EVAL_FAILS(OP(DW_OP_lit1), OP(DW_OP_lit2), OP(DW_OP_rot));
	EVAL_FAILS(OP(DW_OP_neg));
	EVAL_FAILS(OP(DW_OP_deref));
	EVAL_FAILS(OP(DW_OP_lit1), OP(DW_OP_drop)); /* empty at the end: no result */
	EVAL_FAILS(SKIP(DW_OP_bra, 0));
	/* No ops at all. */
	struct cq_dwarf_expr_env env = expr_env();
	uint64_t r;
	assert_false(cq_unwind_eval_expr(NULL, 0, &env, &r));
}

static void test_expr_deep_stack_overflow_fails(void **state)
{
	(void)state;
	struct op_spec spec[200];
	for (size_t i = 0; i < 200; i++)
		spec[i] = (struct op_spec)OP(DW_OP_lit1);
	struct cq_dwarf_expr_env env = expr_env();
	uint64_t r;
	/* 64 values fit; 65 and 200 do not. */
	assert_true(eval_spec(spec, 64, &env, &r));
	assert_int_equal(r, 1);
	assert_false(eval_spec(spec, 65, &env, &r));
	assert_false(eval_spec(spec, 200, &env, &r));
	/* dup, over and pick push too. */
	spec[64] = (struct op_spec)OP(DW_OP_dup);
	assert_false(eval_spec(spec, 65, &env, &r));
	spec[64] = (struct op_spec)OP(DW_OP_over);
	assert_false(eval_spec(spec, 65, &env, &r));
}

static void test_expr_bra_and_skip(void **state)
{
	(void)state;
	/*
	 * @0 cond; @1 bra +4 (to @8); @4 lit10; @5 skip +1 (to @9, the end); @8 lit20
	 * cond != 0 gives 20, cond == 0 gives 10.
	 */
	EVAL_OK(20, OP(DW_OP_lit1), SKIP(DW_OP_bra, 4), OP(DW_OP_lit10), SKIP(DW_OP_skip, 1),
	        OP(DW_OP_lit20));
	EVAL_OK(10, OP(DW_OP_lit0), SKIP(DW_OP_bra, 4), OP(DW_OP_lit10), SKIP(DW_OP_skip, 1),
	        OP(DW_OP_lit20));
	/* skip 0 is a no-op; bra pops its condition. */
	EVAL_OK(5, OP(DW_OP_lit5), SKIP(DW_OP_skip, 0), OP(DW_OP_nop));
	EVAL_OK(5, OP(DW_OP_lit5), OP(DW_OP_lit0), SKIP(DW_OP_bra, 0));
	/* A skip to exactly the end ends the expression. */
	EVAL_OK(5, OP(DW_OP_lit5), SKIP(DW_OP_skip, 1), OP(DW_OP_lit9));
}

static void test_expr_backward_branch_loop(void **state)
{
	(void)state;
	/* @0 lit10; @1 lit1; @2 minus; @3 dup; @4 bra -6 (to @1): counts down to 0. */
	EVAL_OK(0, OP(DW_OP_lit10), OP(DW_OP_lit1), OP(DW_OP_minus), OP(DW_OP_dup),
	        SKIP(DW_OP_bra, -6));
	/* 20 iterations: 81 operations executed. */
	EVAL_OK(0, OP(DW_OP_lit20), OP(DW_OP_lit1), OP(DW_OP_minus), OP(DW_OP_dup),
	        SKIP(DW_OP_bra, -6));
}

static void test_expr_infinite_loop_terminates(void **state)
{
	(void)state;
	/* skip -3 jumps to itself. */
	EVAL_FAILS(SKIP(DW_OP_skip, -3));
	EVAL_FAILS(OP(DW_OP_lit1), SKIP(DW_OP_skip, -3));
	/* Two skips jumping to each other. */
	EVAL_FAILS(SKIP(DW_OP_skip, 0), SKIP(DW_OP_skip, -6));
	/* bra on an always-true condition kept on the stack. */
	EVAL_FAILS(OP(DW_OP_lit1), OP(DW_OP_dup), SKIP(DW_OP_bra, -4));
}

static void test_expr_branch_into_the_middle_of_an_op_fails(void **state)
{
	(void)state;
	/* @0 breg7 8 (2 bytes); @2 skip -4 lands at @1, inside breg7's operand. */
	EVAL_FAILS(OPN(DW_OP_breg7, 8, 2), SKIP(DW_OP_skip, -4));
	/* A skip before the start of the expression. */
	EVAL_FAILS(OP(DW_OP_lit1), SKIP(DW_OP_skip, -10));
}

static void test_expr_registers(void **state)
{
	(void)state;
	EVAL_OK(0x7008, OPN(DW_OP_breg7, 8, 2));
	EVAL_OK(0x6ff8, OPN(DW_OP_breg7, -8, 2));
	EVAL_OK(0x40123b, OPN(DW_OP_breg16, 0, 2));
	EVAL_OK(0x1010, {DW_OP_bregx, 12, 0x10, 3});
	/* An unknown register, or one past the register file, fails. */
	EVAL_FAILS(OPN(DW_OP_breg0, 0, 2));
	EVAL_FAILS({DW_OP_bregx, 3, 0, 3});
	EVAL_FAILS({DW_OP_bregx, 1000, 0, 4});
	EVAL_FAILS({DW_OP_bregx, UINT64_MAX, 0, 11});
}

static void test_expr_call_frame_cfa(void **state)
{
	(void)state;
	EVAL_OK(0x9000 - 16, OP(DW_OP_call_frame_cfa), OP(DW_OP_lit16), OP(DW_OP_minus));
	const struct op_spec spec[] = {OP(DW_OP_call_frame_cfa)};
	struct cq_dwarf_expr_env env = expr_env();
	env.has_cfa = false;
	uint64_t r;
	assert_false(eval_spec(spec, 1, &env, &r));
}

static void test_expr_deref(void **state)
{
	(void)state;
	EVAL_OK(0x1716151413121110ull, OPN(DW_OP_constu, 0x1000, 3), OP(DW_OP_deref));
	EVAL_OK(0x1f1e1d1c1b1a1918ull, OPN(DW_OP_breg12, 8, 2), OP(DW_OP_deref));
	EVAL_OK(0x11, OPN(DW_OP_constu, 0x1001, 3), OPN(DW_OP_deref_size, 1, 2));
	EVAL_OK(0x1312, OPN(DW_OP_constu, 0x1002, 3), OPN(DW_OP_deref_size, 2, 2));
	EVAL_OK(0x17161514, OPN(DW_OP_constu, 0x1004, 3), OPN(DW_OP_deref_size, 4, 2));
	/* The last readable word. */
	EVAL_OK(0x4f4e4d4c4b4a4948ull, OPN(DW_OP_constu, 0x1038, 3), OP(DW_OP_deref));
}

static void test_expr_deref_of_unreadable_memory_fails(void **state)
{
	(void)state;
	EVAL_FAILS(OP(DW_OP_lit0), OP(DW_OP_deref));
	EVAL_FAILS(OPN(DW_OP_constu, 0x0fff, 3), OP(DW_OP_deref));
	EVAL_FAILS(OPN(DW_OP_constu, 0x1039, 3), OP(DW_OP_deref)); /* straddles the end */
	EVAL_FAILS(OPN(DW_OP_constu, 0x1040, 3), OP(DW_OP_deref));
	EVAL_FAILS(OPN(DW_OP_const8u, UINT64_MAX - 3, 9), OP(DW_OP_deref));
	EVAL_FAILS(OPN(DW_OP_constu, 0x1000, 3), OPN(DW_OP_deref_size, 0, 2));
	EVAL_FAILS(OPN(DW_OP_constu, 0x1000, 3), OPN(DW_OP_deref_size, 9, 2));
}

static void test_expr_unsupported_ops_fail(void **state)
{
	(void)state;
	EVAL_FAILS(OP(DW_OP_reg3));
	EVAL_FAILS(OPN(DW_OP_regx, 3, 2));
	EVAL_FAILS(OP(DW_OP_lit1), OP(DW_OP_lit2), OPN(DW_OP_piece, 8, 2));
	EVAL_FAILS(OP(DW_OP_lit1), OP(DW_OP_lit2), OP(0xff));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, fake_setup, fake_teardown)
	const struct CMUnitTest tests[] = {
	    T(test_cfi_walk_four_frames_to_outermost),
	    T(test_regs_at_a_frame),
	    T(test_signed_return_addresses_are_stripped),
	    T(test_return_addresses_are_looked_up_at_pc_minus_one),
	    T(test_first_frame_is_looked_up_at_pc),
	    T(test_nonzero_load_bias),
	    T(test_cfi_and_frame_pointer_steps_mix),
	    T(test_frame_size_steps),
	    T(test_zero_return_address_is_outermost),
	    T(test_return_address_outside_code_is_bad_memory),
	    T(test_cfa_not_increasing_is_loop),
	    T(test_cfa_decreasing_is_loop),
	    T(test_aarch64_leaf_without_stack_returns_to_a_caller_at_its_sp),
	    T(test_aarch64_sp_kept_twice_or_to_the_same_pc_is_loop),
	    T(test_frame_pointer_self_loop_terminates),
	    T(test_frame_pointer_two_frame_cycle_terminates),
	    T(test_garbage_frame_pointer_without_scan_is_no_unwind_info),
	    T(test_frame_pointer_with_return_address_outside_code_is_rejected),
	    T(test_unreadable_memory_in_offset_rule_is_bad_memory),
	    T(test_unreadable_saved_register_is_bad_memory),
	    T(test_cfa_past_readable_memory_is_bad_memory),
	    T(test_unknown_cfa_register_stops_walk),
	    T(test_missing_pc_is_no_unwind_info),
	    T(test_max_frames_stops_walk),
	    T(test_max_frames_one),
	    T(test_max_frames_equal_to_depth_reports_outermost),
	    T(test_default_options),
	    T(test_trust_and_end_names),
	    T(test_frame_pointer_fallback),
	    T(test_frame_pointer_fallback_where_table_has_no_row),
	    T(test_scan_fallback_finds_return_address),
	    T(test_scan_recognises_indirect_calls),
	    T(test_scan_disabled_gives_no_frame),
	    T(test_scan_is_bounded_by_scan_words),
	    T(test_scan_stops_at_stack_end),
	    T(test_cfi_is_preferred_over_frame_pointer_and_scan),
	    T(test_signal_frame_caller_is_exact_pc_with_ucontext_registers),
	    T(test_signal_frame_step_restores_every_register),
	    T(test_signal_frame_may_switch_to_a_lower_stack),
	    T(test_signal_frame_repeating_itself_is_loop),
	    T(test_frame_pointer_step_after_switch_from_alternate_signal_stack),
	    T(test_scan_after_signal_frame_considers_word_at_sp),
	    T(test_step_cfi_applies_every_rule_kind),
	    T(test_step_cfi_fails_on_bad_expressions),
	    T(test_narrow_table_is_not_read_out_of_bounds),
	    cmocka_unit_test(test_expr_literals_and_constants),
	    cmocka_unit_test(test_expr_arithmetic),
	    cmocka_unit_test(test_expr_division_by_zero_fails),
	    cmocka_unit_test(test_expr_comparisons_are_signed),
	    cmocka_unit_test(test_expr_glibc_plt_rule),
	    cmocka_unit_test(test_expr_stack_operations),
	    cmocka_unit_test(test_expr_stack_underflow_fails),
	    cmocka_unit_test(test_expr_deep_stack_overflow_fails),
	    cmocka_unit_test(test_expr_bra_and_skip),
	    cmocka_unit_test(test_expr_backward_branch_loop),
	    cmocka_unit_test(test_expr_infinite_loop_terminates),
	    cmocka_unit_test(test_expr_branch_into_the_middle_of_an_op_fails),
	    cmocka_unit_test(test_expr_registers),
	    cmocka_unit_test(test_expr_call_frame_cfa),
	    cmocka_unit_test(test_expr_deref),
	    cmocka_unit_test(test_expr_deref_of_unreadable_memory_fails),
	    cmocka_unit_test(test_expr_unsupported_ops_fail),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
