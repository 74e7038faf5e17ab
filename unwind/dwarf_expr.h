/*
 * dwarf_expr.h - evaluate the DWARF expressions that CFI rules use.
 *
 * The subset CFI needs: literals and constants, stack manipulation,
 * arithmetic and logic, comparisons, skip/bra, breg/bregx, deref and
 * deref_size, and call_frame_cfa.  Evaluation is bounded (stack depth and
 * executed-op count) so a hostile expression cannot hang the walk.
 */
#ifndef CQ_DWARF_EXPR_H
#define CQ_DWARF_EXPR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/arch.h"
#include "unwind/cfi_table.h"

struct cq_dwarf_expr_env {
	const struct cq_regs *regs;
	bool has_cfa;
	uint64_t cfa;
	bool (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
	void *ctx;
};

/* Evaluates ops; the result is the top of the stack.  False on any failure. */
bool cq_unwind_eval_expr(const struct cq_cfi_op *ops, size_t n, const struct cq_dwarf_expr_env *env,
                         uint64_t *result);

#endif
