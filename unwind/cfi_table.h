/*
 * cfi_table.h - compact, precomputed unwind tables, one per build-id.
 *
 * libdw interprets the CFI programs of .eh_frame and .debug_frame; this
 * module turns every row they describe into a table sorted by pc that the
 * unwinder binary-searches, and that serialises to a blob cached by build-id.
 *
 * Shape: rows map a pc range to a rule set; rule sets are interned, because
 * thousands of rows share a handful of distinct rule sets (every "after push
 * rbp" row looks alike).  A rule set holds the CFA rule followed by one rule
 * per DWARF register of the architecture (nregs), so signal frames, whose CFI
 * restores every register, need nothing special.  Expressions live in an op
 * pool.
 *
 *   row        { u32 start; u32 ruleset }     covers [start, next row's start),
 *                                             relative to table->base;
 *                                             ruleset CQ_CFI_NO_RULES = no CFI
 *                                             (not yet compiled, in a partial
 *                                             table), CQ_CFI_NO_CFI = compiled:
 *                                             the CFI has no rules there
 *   ruleset i  rules[i * (nregs + 1)]         the CFA rule, then regs 0..nregs-1
 *   rule       { u8 kind; u8 reg; u8 flags; u8 pad; i32 value }
 *   op         { u8 atom; u64 number, number2, offset }, an expression is a
 *              header op (atom 0, number = count) then count ops
 *
 * Rule meanings, with CFA the canonical frame address of the frame:
 *   CQ_CFI_CFA_REG_OFFSET   CFA = reg + value
 *   CQ_CFI_CFA_EXPR         CFA = eval(ops[value])
 *   CQ_CFI_UNDEFINED        register not recoverable (RA: outermost frame)
 *   CQ_CFI_SAME             caller's value = this frame's value
 *   CQ_CFI_OFFSET           caller's value = *(CFA + value)
 *   CQ_CFI_VAL_OFFSET       caller's value = CFA + value
 *   CQ_CFI_REGISTER         caller's value = this frame's reg
 *   CQ_CFI_EXPR             caller's value = *eval(ops[value])
 *   CQ_CFI_VAL_EXPR         caller's value = eval(ops[value])
 * The CFA rule's flags carry CQ_CFI_SIGNAL_FRAME for signal trampolines.
 *
 * A table is complete (flags CQ_CFI_TABLE_COMPLETE: every row of the module,
 * from cq_cfi_table_build) or partial (the rows a walk visited, from
 * cq_cfi_lazy): a pc a partial table does not hold is compiled when met.
 *
 * Serialised form (little-endian), version CQ_CFI_TABLE_VERSION:
 *   "CQCFI\0\0\0" | u32 version | u32 nregs | u64 base | u32 nrows |
 *   u32 nrulesets | u32 nops | u32 flags | rows | rules | ops |
 *   u32 CRC-32 of all before
 * A blob of another version, whose sizes disagree with its length, whose
 * checksum is wrong or whose indices point outside it, is rejected and the
 * table rebuilt.
 */
#ifndef CQ_CFI_TABLE_H
#define CQ_CFI_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

#define CQ_CFI_TABLE_VERSION  3
#define CQ_CFI_NO_RULES       UINT32_MAX
#define CQ_CFI_NO_CFI         (UINT32_MAX - 1)
#define CQ_CFI_TABLE_COMPLETE 1u
#define CQ_CFI_MAX_REGS       34
#define CQ_CFI_SIGNAL_FRAME   1

enum cq_cfi_kind {
	CQ_CFI_UNDEFINED,
	CQ_CFI_SAME,
	CQ_CFI_OFFSET,
	CQ_CFI_VAL_OFFSET,
	CQ_CFI_REGISTER,
	CQ_CFI_EXPR,
	CQ_CFI_VAL_EXPR,
	CQ_CFI_CFA_REG_OFFSET,
	CQ_CFI_CFA_EXPR,
};

struct cq_cfi_row {
	uint32_t start;
	uint32_t ruleset;
};

struct cq_cfi_rule {
	uint8_t kind;
	uint8_t reg;
	uint8_t flags;
	uint8_t pad;
	int32_t value;
};

struct cq_cfi_op {
	uint8_t atom;
	uint64_t number, number2, offset;
};

struct cq_cfi_table {
	uint64_t base;  /* link-time address row starts are relative to */
	uint32_t nregs; /* registers per rule set */
	uint32_t nrows, nrulesets, nops;
	uint32_t flags; /* CQ_CFI_TABLE_COMPLETE, or 0: partial */
	struct cq_cfi_row *rows;
	struct cq_cfi_rule *rules; /* nrulesets * (nregs + 1) */
	struct cq_cfi_op *ops;
};

/*
 * Compiles the CFI of an ELF object: .eh_frame of elf, plus .debug_frame of
 * debug_elf (may be NULL or the same as elf) for ranges .eh_frame lacks.
 * elf and debug_elf are Elf *.  nregs is the architecture's register count.
 */
struct cq_error *cq_cfi_table_build(void *elf, void *debug_elf, unsigned nregs,
                                    struct cq_cfi_table **out);

void cq_cfi_table_free(struct cq_cfi_table *table);

/* The rule set for a link-time pc: CFA rule then nregs register rules, or NULL. */
const struct cq_cfi_rule *cq_cfi_table_lookup(const struct cq_cfi_table *table, uint64_t pc);

/* The ops of an expression rule (after its header), and their count. */
const struct cq_cfi_op *cq_cfi_table_expr(const struct cq_cfi_table *table,
                                          const struct cq_cfi_rule *rule, size_t *count);

/*
 * A partial table, compiled a row at a time, for the first cores of a
 * binary: cq_cfi_lazy_at compiles the row libdw gives for a pc not yet held
 * (.eh_frame first, then .debug_frame where .eh_frame has no rules), so a
 * walk pays for the rows it visits, not the whole module.  Lookups give the
 * rule sets the complete table gives.  The table grows from seed (a partial
 * table from the cache, may be NULL) and is serialised back for the next
 * core.  elf (Elf *, may be NULL) must outlive the lazy table; debug_elf
 * is called, once, the first time .debug_frame is needed, and gives the
 * debuginfo's Elf * (kept by the caller) or NULL.
 */
struct cq_cfi_lazy;

struct cq_error *cq_cfi_lazy_create(void *elf, void *(*debug_elf)(void *arg), void *arg,
                                    unsigned nregs, const struct cq_cfi_table *seed,
                                    struct cq_cfi_lazy **out);

/*
 * The table, now holding pc's row (or knowing that it has none); look pc
 * up in it with cq_cfi_table_lookup.  The table stays valid until the next
 * call.  *error is set (and the row left out) when memory runs out.
 */
const struct cq_cfi_table *cq_cfi_lazy_at(struct cq_cfi_lazy *lazy, uint64_t pc,
                                          struct cq_error **error);

/* The table as compiled so far (partial: flags 0), to serialise. */
const struct cq_cfi_table *cq_cfi_lazy_table(const struct cq_cfi_lazy *lazy);

/* True once rows were compiled that the seed lacked. */
bool cq_cfi_lazy_grew(const struct cq_cfi_lazy *lazy);

void cq_cfi_lazy_free(struct cq_cfi_lazy *lazy);

/* Serialises into a malloc'd blob. */
struct cq_error *cq_cfi_table_serialize(const struct cq_cfi_table *table, uint8_t **blob,
                                        size_t *len);

/* Rebuilds a table from a blob; CQ_ERR_FORMAT if the blob is not valid. */
struct cq_error *cq_cfi_table_deserialize(const uint8_t *blob, size_t len,
                                          struct cq_cfi_table **out);

/* Builds a table from rows and rule sets given directly (tests, synthetic CFI). */
struct cq_error *cq_cfi_table_from_parts(uint64_t base, unsigned nregs,
                                         const struct cq_cfi_row *rows, size_t nrows,
                                         const struct cq_cfi_rule *rules, size_t nrulesets,
                                         const struct cq_cfi_op *ops, size_t nops,
                                         struct cq_cfi_table **out);

#endif
