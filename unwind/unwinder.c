/*
 * unwinder.c - walk one thread's native stack (see unwind.h).
 *
 * The walk keeps a full register set per step.  After a CFI step, registers
 * with no rule become unknown except those the rule set marks "same value";
 * after a frame-pointer or scan step only sp, fp and pc are known.  The
 * return-address column of the caller's rule set becomes the caller's pc;
 * a signal frame's caller pc is exact (the interrupted instruction), every
 * other caller pc is a return address and is looked up at pc - 1.
 *
 * Invariants (asserted): the architecture's named registers are below
 * CQ_REGS_MAX and its table describes at least nregs of them; a rule that
 * names a register names one its table describes (the compiler and the
 * cache's reader both refuse any other); a walk writes at least one frame
 * and at most max_frames, and each step moves to a frame with a pc and an sp.
 */
#include "unwind/unwind.h"

#include <assert.h>
#include <elf.h>
#include <string.h>

#include "unwind/dwarf_expr.h"

void cq_unwind_options_default(struct cq_unwind_options *o)
{
	o->max_frames = CQ_UNWIND_DEFAULT_MAX_FRAMES;
	o->allow_scan = true;
	o->scan_words = CQ_UNWIND_DEFAULT_SCAN_WORDS;
}

static bool read_u64(const struct cq_unwind_target *t, uint64_t addr, uint64_t *out)
{
	uint8_t b[8];
	if (!t->ops->read(t->ctx, addr, b, sizeof(b)))
		return false;
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	*out = v;
	return true;
}

static bool eval_rule_expr(const struct cq_unwind_target *t, const struct cq_cfi_table *table,
                           const struct cq_cfi_rule *rule, const struct cq_regs *regs, bool has_cfa,
                           uint64_t cfa, uint64_t *out)
{
	size_t n;
	const struct cq_cfi_op *ops = cq_cfi_table_expr(table, rule, &n);
	struct cq_dwarf_expr_env env = {
	    .regs = regs, .has_cfa = has_cfa, .cfa = cfa, .read = t->ops->read, .ctx = t->ctx};
	return ops && cq_unwind_eval_expr(ops, n, &env, out);
}

/* Recovers one register of the caller; false if its rule cannot be applied. */
static bool apply_rule(const struct cq_unwind_target *t, const struct cq_cfi_table *table,
                       const struct cq_cfi_rule *rule, unsigned regno, const struct cq_regs *regs,
                       uint64_t cfa, struct cq_regs *caller)
{
	uint64_t v;
	switch (rule->kind) {
	case CQ_CFI_UNDEFINED:
		/*
		 * A callee-saved register with no rule keeps its value.  This also
		 * covers libdw 0.188's x86_64 defaults, which mark rbx undefined
		 * (and rax same-value) when the CFI says nothing about them.
		 */
		if (regno != t->arch->ra_reg && (t->arch->callee_saved >> regno & 1) &&
		    cq_regs_has(regs, regno))
			cq_regs_set(caller, regno, regs->value[regno]);
		return true;
	case CQ_CFI_SAME:
		if (cq_regs_has(regs, regno))
			cq_regs_set(caller, regno, regs->value[regno]);
		return true;
	case CQ_CFI_OFFSET:
		if (!read_u64(t, cfa + (uint64_t)(int64_t)rule->value, &v))
			return false;
		break;
	case CQ_CFI_VAL_OFFSET:
		v = cfa + (uint64_t)(int64_t)rule->value;
		break;
	case CQ_CFI_REGISTER:
		assert(rule->reg < table->nregs);
		if (!cq_regs_has(regs, rule->reg))
			return true;
		v = regs->value[rule->reg];
		break;
	case CQ_CFI_EXPR:
		if (!eval_rule_expr(t, table, rule, regs, true, cfa, &v) || !read_u64(t, v, &v))
			return false;
		break;
	case CQ_CFI_VAL_EXPR:
		if (!eval_rule_expr(t, table, rule, regs, true, cfa, &v))
			return false;
		break;
	default:
		return false;
	}
	cq_regs_set(caller, regno, v);
	return true;
}

bool cq_unwind_step_cfi(const struct cq_unwind_target *t, const struct cq_cfi_table *table,
                        const struct cq_cfi_rule *rules, const struct cq_regs *regs,
                        struct cq_regs *caller, uint64_t *cfa)
{
	const struct cq_arch *arch = t->arch;
	const struct cq_cfi_rule *cfa_rule = &rules[0];
	assert(table && rules && regs && caller && cfa);
	assert(table->nregs >= arch->nregs && table->nregs <= CQ_CFI_MAX_REGS);
	if (cfa_rule->kind == CQ_CFI_CFA_REG_OFFSET) {
		assert(cfa_rule->reg < table->nregs);
		if (!cq_regs_has(regs, cfa_rule->reg))
			return false;
		*cfa = regs->value[cfa_rule->reg] + (uint64_t)(int64_t)cfa_rule->value;
	} else if (!eval_rule_expr(t, table, cfa_rule, regs, false, 0, cfa)) {
		return false;
	}
	memset(caller, 0, sizeof(*caller));
	for (unsigned r = 0; r < table->nregs && r < CQ_REGS_MAX; r++)
		if (!apply_rule(t, table, &rules[1 + r], r, regs, *cfa, caller))
			return false;
	/* The CFA is the caller's sp unless a rule said otherwise (signal frames). */
	if (!cq_regs_has(caller, arch->sp_reg))
		cq_regs_set(caller, arch->sp_reg, *cfa);
	if (cq_regs_has(caller, arch->ra_reg))
		cq_regs_set(caller, arch->pc_reg, caller->value[arch->ra_reg]);
	else
		caller->valid &= ~(1ull << arch->pc_reg);
	return true;
}

/* The state of the walk between frames. */
struct walk {
	const struct cq_unwind_target *t;
	const struct cq_unwind_options *o;
	struct cq_regs regs;
	bool is_return_address;
	bool at_signal_frame;  /* the current frame's own row is a signal frame */
	bool trampoline_at_pc; /* ... a trampoline its code gives, at pc itself (not pc - 1) */
	bool sp_kept;          /* the step to the current frame left sp where it was */
	uint8_t trust;
	bool have_stack;
	uint64_t stack_lo, stack_hi;
};

static uint64_t reg(const struct walk *w, unsigned regno)
{
	return w->regs.value[regno];
}

/* Frame-pointer step through the arch's frame record: [fp] = caller's fp, then the return address.
 */
static bool step_fp(struct walk *w, struct cq_regs *caller)
{
	const struct cq_arch *arch = w->t->arch;
	if (!cq_regs_has(&w->regs, arch->fp_reg) || !w->have_stack)
		return false;
	uint64_t fp = reg(w, arch->fp_reg), sp = reg(w, arch->sp_reg);
	uint64_t record = arch->frame_record_size;
	if (fp & 7 || fp < sp || fp < w->stack_lo || w->stack_hi < record ||
	    fp > w->stack_hi - record)
		return false;
	uint64_t saved_fp, ra;
	if (!read_u64(w->t, fp, &saved_fp) || !read_u64(w->t, fp + arch->frame_ra_offset, &ra))
		return false;
	ra &= ~w->t->return_address_mask;
	if (ra != 0 && !w->t->ops->is_code(w->t->ctx, ra))
		return false;
	memset(caller, 0, sizeof(*caller));
	cq_regs_set(caller, arch->fp_reg, saved_fp);
	cq_regs_set(caller, arch->sp_reg, fp + record);
	cq_regs_set(caller, arch->pc_reg, ra);
	return true;
}

static bool after_call(const struct cq_unwind_target *t, uint64_t addr)
{
	uint8_t before[16];
	unsigned n = t->arch->call_max_len;
	if (n > sizeof(before) || addr < n || !t->ops->read(t->ctx, addr - n, before, n))
		return false;
	return t->arch->ends_with_call(before);
}

/* Stack scan: the first word above sp that is a return address into code. */
static bool step_scan(struct walk *w, struct cq_regs *caller)
{
	const struct cq_arch *arch = w->t->arch;
	if (!w->o->allow_scan || !w->have_stack || !cq_regs_has(&w->regs, arch->sp_reg))
		return false;
	uint64_t sp = reg(w, arch->sp_reg);
	/*
	 * A frame with an exact pc (the first, or one interrupted by a signal) may
	 * have its return address right at sp; a caller's sp is already past it.
	 */
	uint64_t addr = (sp + 7) & ~7ull;
	if (w->is_return_address)
		addr += 8;
	for (unsigned i = 0; i < w->o->scan_words && addr + 8 <= w->stack_hi; i++, addr += 8) {
		uint64_t v;
		if (addr < w->stack_lo || !read_u64(w->t, addr, &v))
			return false;
		if (v && w->t->ops->is_code(w->t->ctx, v) && after_call(w->t, v)) {
			*caller = w->regs;
			caller->valid &= 1ull << arch->fp_reg;
			cq_regs_set(caller, arch->sp_reg, addr + 8);
			cq_regs_set(caller, arch->pc_reg, v);
			return true;
		}
	}
	return false;
}

/*
 * A signal trampoline the architecture describes as code (no CFI covers
 * it): the interrupted registers are in the signal frame at sp.
 */
static bool step_sigreturn(struct walk *w, struct cq_regs *caller)
{
	const struct cq_arch *arch = w->t->arch;
	uint8_t code[16];
	uint64_t pc = reg(w, arch->pc_reg), sp = reg(w, arch->sp_reg);
	if (arch->sigreturn_len == 0 || arch->sigreturn_len > sizeof(code) ||
	    !cq_regs_has(&w->regs, arch->sp_reg) ||
	    !w->t->ops->read(w->t->ctx, pc, code, arch->sigreturn_len) ||
	    memcmp(code, arch->sigreturn_code, arch->sigreturn_len) != 0)
		return false;
	memset(caller, 0, sizeof(*caller));
	const int8_t *dwarf = arch->sigframe_dwarf ? arch->sigframe_dwarf : arch->prstatus_dwarf;
	unsigned nslots = arch->sigframe_dwarf ? arch->sigframe_nregs : arch->prstatus_nregs;
	for (unsigned slot = 0; slot < nslots; slot++) {
		int regno = dwarf[slot];
		uint64_t v;
		if (regno < 0 || !read_u64(w->t, sp + arch->sigframe_regs_offset + 8ull * slot, &v))
			continue;
		cq_regs_set(caller, (unsigned)regno, v);
	}
	return cq_regs_has(caller, arch->pc_reg) && cq_regs_has(caller, arch->sp_reg);
}

/*
 * A frame no CFI describes but the table its module carries for its own
 * runtime's unwinder does (a stripped Go program's .gopclntab: the target's
 * frame_size), on x86-64, where a call pushes the return address: it lies
 * right above the function's frame, and a function with a frame keeps its
 * caller's frame pointer right below it (Go's prologue).
 */
static bool step_frame_size(struct walk *w, struct cq_regs *caller)
{
	const struct cq_arch *arch = w->t->arch;
	uint64_t size, ra, fp;
	if (!w->t->ops->frame_size || arch->e_machine != EM_X86_64 ||
	    !cq_regs_has(&w->regs, arch->sp_reg))
		return false;
	uint64_t pc = reg(w, arch->pc_reg), sp = reg(w, arch->sp_reg);
	if (!w->t->ops->frame_size(w->t->ctx, pc, &size) || size > UINT64_MAX - 8 - sp ||
	    !read_u64(w->t, sp + size, &ra))
		return false;
	memset(caller, 0, sizeof(*caller));
	if (size >= 8 && read_u64(w->t, sp + size - 8, &fp))
		cq_regs_set(caller, arch->fp_reg, fp);
	else if (size < 8 && cq_regs_has(&w->regs, arch->fp_reg))
		cq_regs_set(caller, arch->fp_reg, reg(w, arch->fp_reg));
	cq_regs_set(caller, arch->sp_reg, sp + size + 8);
	cq_regs_set(caller, arch->pc_reg, ra);
	return true;
}

/* The architecture's facts the walk indexes registers with (arch.c's tables). */
static bool arch_sane(const struct cq_arch *arch)
{
	return arch->nregs <= CQ_REGS_MAX && arch->pc_reg < CQ_REGS_MAX &&
	       arch->sp_reg < CQ_REGS_MAX && arch->fp_reg < CQ_REGS_MAX &&
	       arch->ra_reg < CQ_REGS_MAX && arch->nregs > arch->sp_reg;
}

/* One step to the caller.  Returns false with *end set when the walk stops. */
static bool step(struct walk *w, enum cq_unwind_end *end)
{
	const struct cq_arch *arch = w->t->arch;
	uint64_t pc = reg(w, arch->pc_reg), sp = reg(w, arch->sp_reg);
	uint64_t lookup = w->is_return_address ? pc - 1 : pc, bias = 0, cfa = 0;
	const struct cq_cfi_table *table = w->t->ops->cfi_at(w->t->ctx, lookup, &bias);
	/* A table must describe every register the walk uses (a damaged cache may not). */
	if (table && table->nregs < arch->nregs)
		table = NULL;
	const struct cq_cfi_rule *rules = table ? cq_cfi_table_lookup(table, lookup - bias) : NULL;
	struct cq_regs caller;
	uint8_t trust;
	bool signal = false;
	/*
	 * A return address that is exactly a signal trampoline whose CFI does not
	 * say so (Go's runtime.sigreturn, the sa_restorer of a Go program not
	 * linked with libc: the CFI found at pc - 1 is the function before it).
	 */
	if (rules && w->is_return_address && !(rules[0].flags & CQ_CFI_SIGNAL_FRAME) &&
	    step_sigreturn(w, &caller)) {
		w->at_signal_frame = true;
		w->trampoline_at_pc = true;
		signal = true;
		trust = CQ_TRUST_CFI;
	} else if (rules) {
		if (rules[1 + arch->ra_reg].kind == CQ_CFI_UNDEFINED) {
			*end = CQ_END_OUTERMOST;
			return false;
		}
		if (!cq_unwind_step_cfi(w->t, table, rules, &w->regs, &caller, &cfa)) {
			*end = CQ_END_BAD_MEMORY;
			return false;
		}
		signal = rules[0].flags & CQ_CFI_SIGNAL_FRAME;
		w->at_signal_frame = signal;
		trust = CQ_TRUST_CFI;
	} else if (step_sigreturn(w, &caller)) {
		signal = true;
		w->at_signal_frame = true;
		/* x86_64's trampolines (Go's) start right after another function */
		w->trampoline_at_pc = w->is_return_address && arch->sigframe_dwarf;
		trust = CQ_TRUST_CFI;
	} else if (step_frame_size(w, &caller)) {
		trust = CQ_TRUST_CFI;
	} else if (step_fp(w, &caller)) {
		trust = CQ_TRUST_FP;
	} else if (step_scan(w, &caller)) {
		trust = CQ_TRUST_SCAN;
	} else {
		*end = CQ_END_NO_UNWIND_INFO;
		return false;
	}
	/* A signed return address (PAC) is an address once its signature is cleared. */
	if (!signal && cq_regs_has(&caller, arch->pc_reg))
		caller.value[arch->pc_reg] &= ~w->t->return_address_mask;
	uint64_t new_pc = caller.value[arch->pc_reg], new_sp = caller.value[arch->sp_reg];
	if (!cq_regs_has(&caller, arch->pc_reg) || new_pc == 0) {
		*end = CQ_END_OUTERMOST;
		return false;
	}
	if (!w->t->ops->is_code(w->t->ctx, new_pc)) {
		*end = CQ_END_BAD_MEMORY;
		return false;
	}
	/*
	 * Signal frames may switch stacks; every other step must move up the
	 * stack.  Where a call leaves the return address in a register, a leaf
	 * that keeps no stack has its caller at its own sp (its CFA): that step
	 * may keep sp, once in a row and to another pc, as the caller it
	 * returns to saved its own return address on the stack.
	 */
	bool kept = !signal && new_sp == sp;
	if (!cq_regs_has(&caller, arch->sp_reg) || (!signal && new_sp < sp) ||
	    (kept && (!arch->leaf_may_keep_sp || w->sp_kept || new_pc == pc)) ||
	    (signal && new_sp == sp && new_pc == pc)) {
		*end = CQ_END_LOOP;
		return false;
	}
	assert(cq_regs_has(&caller, arch->pc_reg) && cq_regs_has(&caller, arch->sp_reg));
	w->sp_kept = kept;
	w->regs = caller;
	w->trust = trust;
	w->is_return_address = !signal;
	/* A signal frame may move to another stack (sigaltstack): follow it. */
	if (!w->have_stack || new_sp < w->stack_lo || new_sp >= w->stack_hi)
		w->have_stack =
		    w->t->ops->stack_bounds(w->t->ctx, new_sp, &w->stack_lo, &w->stack_hi);
	return true;
}

void cq_unwind_thread(const struct cq_unwind_target *t, const struct cq_regs *regs,
                      const struct cq_unwind_options *o, struct cq_unwind_frame *frames,
                      size_t *nframes, enum cq_unwind_end *end)
{
	const struct cq_arch *arch = t->arch;
	assert(t->ops && arch_sane(arch) && regs && o && frames && nframes && end);
	struct walk w = {.t = t, .o = o, .regs = *regs, .trust = CQ_TRUST_CONTEXT};
	size_t n = 0;
	*end = CQ_END_MAX_FRAMES;
	if (cq_regs_has(regs, arch->sp_reg))
		w.have_stack =
		    t->ops->stack_bounds(t->ctx, reg(&w, arch->sp_reg), &w.stack_lo, &w.stack_hi);
	while (n < o->max_frames) {
		frames[n++] = (struct cq_unwind_frame){
		    .pc = reg(&w, arch->pc_reg),
		    .sp = reg(&w, arch->sp_reg),
		    .fp = reg(&w, arch->fp_reg),
		    .has_fp = cq_regs_has(&w.regs, arch->fp_reg),
		    .is_return_address = w.is_return_address,
		    .trust = w.trust,
		};
		if (!cq_regs_has(&w.regs, arch->pc_reg)) {
			*end = CQ_END_NO_UNWIND_INFO;
			break;
		}
		/* Step even from the last slot: a stack that ends there is complete. */
		bool more = step(&w, end);
		frames[n - 1].is_signal_frame = w.at_signal_frame;
		w.at_signal_frame = false;
		/* the trampoline is named where it starts: pc - 1 is the function before it */
		if (w.trampoline_at_pc)
			frames[n - 1].is_return_address = false;
		w.trampoline_at_pc = false;
		if (!more)
			break;
		if (n == o->max_frames) {
			*end = CQ_END_MAX_FRAMES;
			break;
		}
	}
	assert(o->max_frames ? n >= 1 && n <= o->max_frames : n == 0);
	*nframes = n;
}

bool cq_unwind_regs_at(const struct cq_unwind_target *t, const struct cq_regs *regs,
                       const struct cq_unwind_options *o, size_t k, uint64_t pc, uint64_t sp,
                       struct cq_regs *out)
{
	const struct cq_arch *arch = t->arch;
	assert(t->ops && arch_sane(arch) && regs && o && out);
	struct walk w = {.t = t, .o = o, .regs = *regs, .trust = CQ_TRUST_CONTEXT};
	enum cq_unwind_end end;
	if (k >= o->max_frames)
		return false;
	if (cq_regs_has(regs, arch->sp_reg))
		w.have_stack =
		    t->ops->stack_bounds(t->ctx, reg(&w, arch->sp_reg), &w.stack_lo, &w.stack_hi);
	for (size_t i = 0; i < k; i++)
		if (!cq_regs_has(&w.regs, arch->pc_reg) || !step(&w, &end))
			return false;
	if (reg(&w, arch->pc_reg) != pc || reg(&w, arch->sp_reg) != sp)
		return false;
	*out = w.regs;
	return true;
}

const char *cq_unwind_trust_name(enum cq_unwind_trust trust)
{
	static const char *const names[] = {"context", "cfi", "fp", "scan", "async", "log"};
	return (unsigned)trust < sizeof(names) / sizeof(names[0]) ? names[trust] : "unknown";
}

const char *cq_unwind_end_name(enum cq_unwind_end end)
{
	static const char *const names[] = {"outermost",  "max_frames", "no_unwind_info",
	                                    "bad_memory", "loop",       "async_detached"};
	return (unsigned)end < sizeof(names) / sizeof(names[0]) ? names[end] : "unknown";
}
