/*
 * dwarf_expr.c - the bounded DWARF expression evaluator (see dwarf_expr.h).
 *
 * Invariants (asserted): the machine's depth stays within STACK_MAX (push
 * and pop refuse, never overrun); the op being run is inside the list, and
 * a run ends exactly at the list's end (a branch lands on an op or the end,
 * anything else is refused before it is taken).
 */
#include "unwind/dwarf_expr.h"

#include <assert.h>
#include <dwarf.h>
#include <stdint.h>

#define STACK_MAX 64
#define STEP_MAX  1024

struct machine {
	uint64_t stack[STACK_MAX];
	size_t depth;
};

static bool push(struct machine *m, uint64_t v)
{
	assert(m->depth <= STACK_MAX);
	if (m->depth == STACK_MAX)
		return false;
	m->stack[m->depth++] = v;
	return true;
}

static bool pop(struct machine *m, uint64_t *v)
{
	assert(m->depth <= STACK_MAX);
	if (m->depth == 0)
		return false;
	*v = m->stack[--m->depth];
	return true;
}

static bool read_sized(const struct cq_dwarf_expr_env *env, uint64_t addr, size_t size,
                       uint64_t *out)
{
	uint8_t b[8];
	if (size == 0 || size > 8 || !env->read(env->ctx, addr, b, size))
		return false;
	uint64_t v = 0;
	for (size_t i = size; i-- > 0;)
		v = v << 8 | b[i];
	*out = v;
	return true;
}

static bool binary(struct machine *m, uint8_t atom)
{
	uint64_t b, a;
	if (!pop(m, &b) || !pop(m, &a))
		return false;
	int64_t sa = (int64_t)a, sb = (int64_t)b;
	uint64_t r;
	switch (atom) {
	case DW_OP_and:
		r = a & b;
		break;
	case DW_OP_or:
		r = a | b;
		break;
	case DW_OP_xor:
		r = a ^ b;
		break;
	case DW_OP_plus:
		r = a + b;
		break;
	case DW_OP_minus:
		r = a - b;
		break;
	case DW_OP_mul:
		r = a * b;
		break;
	case DW_OP_div:
		if (b == 0 || (sa == INT64_MIN && sb == -1))
			return false;
		r = (uint64_t)(sa / sb);
		break;
	case DW_OP_mod:
		if (b == 0)
			return false;
		r = a % b;
		break;
	case DW_OP_shl:
		r = b >= 64 ? 0 : a << b;
		break;
	case DW_OP_shr:
		r = b >= 64 ? 0 : a >> b;
		break;
	case DW_OP_shra:
		r = (uint64_t)(b >= 64 ? (sa < 0 ? -1 : 0) : sa >> b);
		break;
	case DW_OP_eq:
		r = a == b;
		break;
	case DW_OP_ne:
		r = a != b;
		break;
	case DW_OP_ge:
		r = sa >= sb;
		break;
	case DW_OP_gt:
		r = sa > sb;
		break;
	case DW_OP_le:
		r = sa <= sb;
		break;
	case DW_OP_lt:
		r = sa < sb;
		break;
	default:
		return false;
	}
	return push(m, r);
}

static bool reg_value(const struct cq_dwarf_expr_env *env, uint64_t regno, uint64_t *v)
{
	if (regno >= CQ_REGS_MAX || !cq_regs_has(env->regs, (unsigned)regno))
		return false;
	*v = env->regs->value[regno];
	return true;
}

/*
 * Index of the op at byte offset target; n for a target past the last op's
 * start (the end of the expression); SIZE_MAX for a target before the first
 * op or between ops, which is malformed.
 */
static size_t op_at_offset(const struct cq_cfi_op *ops, size_t n, int64_t target)
{
	if (target < 0)
		return SIZE_MAX;
	for (size_t i = 0; i < n; i++)
		if (ops[i].offset == (uint64_t)target)
			return i;
	if (n > 0 && (uint64_t)target > ops[n - 1].offset)
		return n;
	return SIZE_MAX;
}

/* Where a skip or bra lands: its operand is relative to the end of the 3-byte op. */
static size_t branch_target(const struct cq_cfi_op *ops, size_t n, const struct cq_cfi_op *op)
{
	if (op->offset > INT32_MAX)
		return SIZE_MAX;
	return op_at_offset(ops, n, (int64_t)op->offset + 3 + (int16_t)op->number);
}

/* Executes one op; *next is the index of the op to run after it. */
static bool step(struct machine *m, const struct cq_cfi_op *ops, size_t n, size_t i,
                 const struct cq_dwarf_expr_env *env, size_t *next)
{
	assert(i < n);
	const struct cq_cfi_op *op = &ops[i];
	uint64_t a, b, c;
	*next = i + 1;
	if (op->atom >= DW_OP_lit0 && op->atom <= DW_OP_lit31)
		return push(m, (uint64_t)(op->atom - DW_OP_lit0));
	if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31)
		return reg_value(env, op->atom - DW_OP_breg0, &a) && push(m, a + op->number);
	switch (op->atom) {
	case DW_OP_addr:
	case DW_OP_const1u:
	case DW_OP_const1s:
	case DW_OP_const2u:
	case DW_OP_const2s:
	case DW_OP_const4u:
	case DW_OP_const4s:
	case DW_OP_const8u:
	case DW_OP_const8s:
	case DW_OP_constu:
	case DW_OP_consts:
		return push(m, op->number);
	case DW_OP_bregx:
		return reg_value(env, op->number, &a) && push(m, a + op->number2);
	case DW_OP_call_frame_cfa:
		return env->has_cfa && push(m, env->cfa);
	case DW_OP_dup:
		return m->depth > 0 && push(m, m->stack[m->depth - 1]);
	case DW_OP_drop:
		return pop(m, &a);
	case DW_OP_over:
		return m->depth > 1 && push(m, m->stack[m->depth - 2]);
	case DW_OP_pick:
		return op->number < m->depth && push(m, m->stack[m->depth - 1 - op->number]);
	case DW_OP_swap:
		if (!pop(m, &a) || !pop(m, &b))
			return false;
		return push(m, a) && push(m, b);
	case DW_OP_rot:
		if (!pop(m, &a) || !pop(m, &b) || !pop(m, &c))
			return false;
		return push(m, a) && push(m, c) && push(m, b);
	case DW_OP_deref:
		return pop(m, &a) && read_sized(env, a, 8, &b) && push(m, b);
	case DW_OP_deref_size:
		return pop(m, &a) && read_sized(env, a, (size_t)op->number, &b) && push(m, b);
	case DW_OP_abs:
		return pop(m, &a) && push(m, (int64_t)a < 0 ? -a : a);
	case DW_OP_neg:
		return pop(m, &a) && push(m, -a);
	case DW_OP_not:
		return pop(m, &a) && push(m, ~a);
	case DW_OP_plus_uconst:
		return pop(m, &a) && push(m, a + op->number);
	case DW_OP_skip:
		*next = branch_target(ops, n, op);
		return *next != SIZE_MAX;
	case DW_OP_bra:
		if (!pop(m, &a))
			return false;
		if (a != 0)
			*next = branch_target(ops, n, op);
		return *next != SIZE_MAX;
	case DW_OP_nop:
		return true;
	default:
		return binary(m, op->atom);
	}
}

bool cq_unwind_eval_expr(const struct cq_cfi_op *ops, size_t n, const struct cq_dwarf_expr_env *env,
                         uint64_t *result)
{
	assert((ops || n == 0) && env && env->regs && env->read && result);
	struct machine m = {.depth = 0};
	size_t i = 0;
	for (unsigned steps = 0; i < n; steps++) {
		if (steps == STEP_MAX)
			return false;
		size_t next;
		if (!step(&m, ops, n, i, env, &next))
			return false;
		assert(next <= n);
		i = next;
	}
	assert(i == n);
	return pop(&m, result);
}
