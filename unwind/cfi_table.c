/*
 * cfi_table.c - compile .eh_frame/.debug_frame into a struct cq_cfi_table
 * (format and rule meanings in cfi_table.h).
 *
 * Enumeration: dwarf_next_cfi lists the CIEs and FDEs of a section; we decode
 * only each FDE's initial location (its pointer encoding comes from the CIE's
 * 'R' augmentation).  From every FDE start, dwarf_cfi_addrframe gives the row
 * at pc and dwarf_frame_info the [start, end) it holds for; we step from row
 * to row until the pc leaves all FDEs.  A watermark makes each row visited
 * once even when FDEs are adjacent.
 *
 * Each row's rules are canonicalised from libdw's op-list form (see
 * classify_register) and interned, so identical rule sets are stored once.
 *
 * Invariants (asserted): an intern set's capacity is a power of two kept at
 * least twice its count, so a probe always ends; an expression's pool entry
 * is its count then that many ops, inside the pool; a rule names only
 * registers below the table's nregs; a table's rows start strictly
 * increasing from its base, in whole tables and as the lazy table grows.
 */
#include "libcore/base/elf_section.h"
#include "unwind/cfi_table.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <assert.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/bytes.h"
#include "libcore/base/hash.h"

#define MAX_ROWS (1u << 24)

_Static_assert(sizeof(struct cq_cfi_rule) == 8, "a rule is hashed as one word");
#define MAX_EXPR_OPS 64

/* A pc range and its interned rule set, before rows are laid out. */
struct span {
	uint64_t start, end;
	uint32_t ruleset;
	uint32_t order; /* eh_frame spans sort before debug_frame spans */
};

/* An open-addressing set of indices, keyed by a caller-computed hash. */
struct intern {
	uint32_t *slot; /* UINT32_MAX = empty */
	uint64_t *hash;
	size_t cap, count;
};

struct builder {
	unsigned nregs;
	struct span *spans;
	size_t nspans, spans_cap;
	struct cq_cfi_rule *rules; /* nrulesets * (nregs + 1) */
	size_t nrulesets, rules_cap;
	struct cq_cfi_op *ops;
	size_t nops, ops_cap;
	struct intern ruleset_set, expr_set;
	uint32_t order;
};

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	size_t ncap = *cap ? *cap : 64;
	while (ncap < need)
		ncap *= 2;
	void *q = realloc(p, ncap * elem);
	if (q)
		*cap = ncap;
	return q;
}

typedef bool (*intern_eq)(const struct builder *b, uint32_t index, const void *key);

/* Finds key (by hash + eq) or returns UINT32_MAX and the slot to insert at. */
static uint32_t intern_find(const struct builder *b, const struct intern *set, uint64_t h,
                            const void *key, intern_eq eq, size_t *slot_out)
{
	assert(set->cap && (set->cap & (set->cap - 1)) == 0 && set->count * 2 < set->cap);
	size_t mask = set->cap - 1, i = (size_t)h & mask;
	while (set->slot[i] != UINT32_MAX) {
		if (set->hash[i] == h && eq(b, set->slot[i], key))
			return set->slot[i];
		i = (i + 1) & mask;
	}
	*slot_out = i;
	return UINT32_MAX;
}

static bool intern_reserve(struct intern *set)
{
	if (set->cap && (set->count + 1) * 2 <= set->cap)
		return true;
	size_t ncap = set->cap ? set->cap * 2 : 256;
	uint32_t *slot = malloc(ncap * sizeof(*slot));
	uint64_t *hash = malloc(ncap * sizeof(*hash));
	if (!slot || !hash) {
		free(slot);
		free(hash);
		return false;
	}
	memset(slot, 0xff, ncap * sizeof(*slot));
	for (size_t i = 0; i < set->cap; i++) {
		if (set->slot[i] == UINT32_MAX)
			continue;
		size_t j = (size_t)set->hash[i] & (ncap - 1);
		while (slot[j] != UINT32_MAX)
			j = (j + 1) & (ncap - 1);
		slot[j] = set->slot[i];
		hash[j] = set->hash[i];
	}
	free(set->slot);
	free(set->hash);
	set->slot = slot;
	set->hash = hash;
	set->cap = ncap;
	return true;
}

static void intern_insert(struct intern *set, size_t slot, uint64_t h, uint32_t index)
{
	assert(slot < set->cap && set->slot[slot] == UINT32_MAX &&
	       (set->count + 1) * 2 <= set->cap);
	set->slot[slot] = index;
	set->hash[slot] = h;
	set->count++;
}

/* ---- expressions -------------------------------------------------------- */

struct expr_key {
	const Dwarf_Op *ops;
	size_t n;
};

static uint64_t expr_hash(const Dwarf_Op *ops, size_t n)
{
	uint64_t h = CQ_FNV_OFFSET;
	for (size_t i = 0; i < n; i++) {
		h = cq_fnv1a(h, &ops[i].atom, sizeof(ops[i].atom));
		h = cq_fnv1a(h, &ops[i].number, sizeof(ops[i].number));
		h = cq_fnv1a(h, &ops[i].number2, sizeof(ops[i].number2));
	}
	return h;
}

static bool expr_eq(const struct builder *b, uint32_t index, const void *key)
{
	const struct expr_key *k = key;
	if (b->ops[index].number != k->n)
		return false;
	for (size_t i = 0; i < k->n; i++) {
		const struct cq_cfi_op *o = &b->ops[index + 1 + i];
		if (o->atom != k->ops[i].atom || o->number != k->ops[i].number ||
		    o->number2 != k->ops[i].number2 || o->offset != k->ops[i].offset)
			return false;
	}
	return true;
}

/* Interns an expression; returns its pool index or UINT32_MAX on failure. */
static uint32_t intern_expr(struct builder *b, const Dwarf_Op *ops, size_t n)
{
	if (n == 0 || n > MAX_EXPR_OPS || !intern_reserve(&b->expr_set))
		return UINT32_MAX;
	struct expr_key key = {ops, n};
	uint64_t h = expr_hash(ops, n);
	size_t slot;
	uint32_t found = intern_find(b, &b->expr_set, h, &key, expr_eq, &slot);
	if (found != UINT32_MAX)
		return found;
	struct cq_cfi_op *pool = grow(b->ops, &b->ops_cap, b->nops + n + 1, sizeof(*pool));
	if (!pool || b->nops + n + 1 > INT32_MAX)
		return UINT32_MAX;
	b->ops = pool;
	uint32_t index = (uint32_t)b->nops;
	memset(&pool[index], 0, (n + 1) * sizeof(*pool));
	pool[index].number = n;
	for (size_t i = 0; i < n; i++)
		pool[index + 1 + i] = (struct cq_cfi_op){
		    .atom = ops[i].atom,
		    .number = ops[i].number,
		    .number2 = ops[i].number2,
		    .offset = ops[i].offset,
		};
	b->nops += n + 1;
	assert(b->ops[index].number == n && index + n < b->nops);
	intern_insert(&b->expr_set, slot, h, index);
	return index;
}

/* ---- rules ---------------------------------------------------------------- */

static bool fits_i32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

static bool breg_of(const Dwarf_Op *op, unsigned *reg, int64_t *off)
{
	if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31) {
		*reg = op->atom - DW_OP_breg0;
		*off = (int64_t)op->number;
		return true;
	}
	if (op->atom == DW_OP_bregx) {
		*reg = (unsigned)op->number;
		*off = (int64_t)op->number2;
		return op->number < 256;
	}
	return false;
}

/* A rule from an expression: fast forms where they match, else the op list. */
static struct cq_cfi_rule expr_rule(struct builder *b, const Dwarf_Op *ops, size_t n, bool value)
{
	struct cq_cfi_rule r = {.kind = CQ_CFI_UNDEFINED};
	uint32_t index = intern_expr(b, ops, n);
	if (index != UINT32_MAX) {
		r.kind = value ? CQ_CFI_VAL_EXPR : CQ_CFI_EXPR;
		r.value = (int32_t)index;
	}
	return r;
}

/*
 * libdw gives register rules as op lists: none with ops == ops_mem is
 * "undefined", ops == NULL is "same value", [call_frame_cfa, plus_uconst N]
 * is the location CFA+N, [regx R] is "in register R", and a trailing
 * stack_value makes it a value rule.
 */
static struct cq_cfi_rule classify_register(struct builder *b, Dwarf_Frame *frame, int regno)
{
	Dwarf_Op mem[3], *ops = NULL;
	size_t n = 0;
	struct cq_cfi_rule r = {.kind = CQ_CFI_UNDEFINED};
	if (dwarf_frame_register(frame, regno, mem, &ops, &n) != 0)
		return r;
	if (ops == NULL) {
		r.kind = CQ_CFI_SAME;
		return r;
	}
	if (n == 0)
		return r;
	bool value = ops[n - 1].atom == DW_OP_stack_value;
	size_t m = value ? n - 1 : n;
	unsigned reg;
	int64_t off;
	if (m >= 1 && ops[0].atom == DW_OP_call_frame_cfa) {
		if (m == 1)
			off = 0;
		else if (m == 2 && ops[1].atom == DW_OP_plus_uconst)
			off = (int64_t)ops[1].number;
		else
			return expr_rule(b, ops, m, value);
		if (!fits_i32(off))
			return expr_rule(b, ops, m, value);
		r.kind = value ? CQ_CFI_VAL_OFFSET : CQ_CFI_OFFSET;
		r.value = (int32_t)off;
		return r;
	}
	/* DW_CFA_register arrives as a register location: [regx R] (or [regN]). */
	if (!value && n == 1 &&
	    (ops[0].atom == DW_OP_regx ||
	     (ops[0].atom >= DW_OP_reg0 && ops[0].atom <= DW_OP_reg31))) {
		reg = ops[0].atom == DW_OP_regx ? (unsigned)ops[0].number
		                                : (unsigned)(ops[0].atom - DW_OP_reg0);
		if (reg >= b->nregs || ops[0].number >= 256)
			return r;
		r.kind = CQ_CFI_REGISTER;
		r.reg = (uint8_t)reg;
		return r;
	}
	if (value && m == 1 && breg_of(&ops[0], &reg, &off) && off == 0 && reg < b->nregs) {
		r.kind = CQ_CFI_REGISTER;
		r.reg = (uint8_t)reg;
		return r;
	}
	return expr_rule(b, ops, m, value);
}

static struct cq_cfi_rule classify_cfa(struct builder *b, Dwarf_Frame *frame)
{
	Dwarf_Op *ops;
	size_t n;
	struct cq_cfi_rule r = {.kind = CQ_CFI_UNDEFINED};
	if (dwarf_frame_cfa(frame, &ops, &n) != 0 || n == 0)
		return r;
	unsigned reg;
	int64_t off;
	if (n == 1 && breg_of(&ops[0], &reg, &off) && reg < b->nregs && fits_i32(off)) {
		r.kind = CQ_CFI_CFA_REG_OFFSET;
		r.reg = (uint8_t)reg;
		r.value = (int32_t)off;
		return r;
	}
	r = expr_rule(b, ops, n, true);
	if (r.kind == CQ_CFI_VAL_EXPR)
		r.kind = CQ_CFI_CFA_EXPR;
	return r;
}

static bool ruleset_eq(const struct builder *b, uint32_t index, const void *key)
{
	size_t stride = b->nregs + 1;
	return memcmp(&b->rules[index * stride], key, stride * sizeof(struct cq_cfi_rule)) == 0;
}

/* Interns a rule set (CFA rule, then nregs rules); UINT32_MAX on allocation failure. */
static uint32_t intern_ruleset(struct builder *b, const struct cq_cfi_rule *set)
{
	size_t stride = b->nregs + 1;
	assert(b->nregs >= 1 && b->nregs <= CQ_CFI_MAX_REGS);
	assert(set[0].kind == CQ_CFI_CFA_REG_OFFSET || set[0].kind == CQ_CFI_CFA_EXPR);
	if (!intern_reserve(&b->ruleset_set))
		return UINT32_MAX;
	/* A rule is 8 bytes: fold whole rules, not bytes (the key is never stored). */
	uint64_t h = CQ_FNV_OFFSET;
	for (size_t i = 0; i < stride; i++) {
		uint64_t word;
		memcpy(&word, &set[i], sizeof(word));
		h = cq_fnv1a_step(h, word);
	}
	h ^= h >> 32; /* the table slot takes low bits: bring the high ones down */
	h *= 0x9e3779b97f4a7c15ull;
	h ^= h >> 29;
	size_t slot;
	uint32_t found = intern_find(b, &b->ruleset_set, h, set, ruleset_eq, &slot);
	if (found != UINT32_MAX)
		return found;
	struct cq_cfi_rule *rules =
	    grow(b->rules, &b->rules_cap, (b->nrulesets + 1) * stride, sizeof(*rules));
	if (!rules || b->nrulesets + 1 >= CQ_CFI_NO_CFI)
		return UINT32_MAX;
	b->rules = rules;
	memcpy(&rules[b->nrulesets * stride], set, stride * sizeof(set[0]));
	intern_insert(&b->ruleset_set, slot, h, (uint32_t)b->nrulesets);
	return (uint32_t)b->nrulesets++;
}

/* Interns the rule set of one row; CQ_CFI_NO_RULES without a CFA, UINT32_MAX without memory. */
static uint32_t intern_row(struct builder *b, Dwarf_Frame *frame, bool signal)
{
	struct cq_cfi_rule set[CQ_CFI_MAX_REGS + 1];
	memset(set, 0, sizeof(set));
	set[0] = classify_cfa(b, frame);
	if (set[0].kind == CQ_CFI_UNDEFINED)
		return CQ_CFI_NO_RULES;
	set[0].flags = signal ? CQ_CFI_SIGNAL_FRAME : 0;
	for (unsigned r = 0; r < b->nregs; r++) {
		set[r + 1] = classify_register(b, frame, (int)r);
		assert(set[r + 1].kind != CQ_CFI_REGISTER || set[r + 1].reg < b->nregs);
	}
	assert(set[0].kind != CQ_CFI_CFA_REG_OFFSET || set[0].reg < b->nregs);
	return intern_ruleset(b, set);
}

static struct cq_error *add_span(struct builder *b, uint64_t start, uint64_t end, uint32_t ruleset)
{
	if (b->nspans >= MAX_ROWS)
		return cq_error_create(CQ_ERR_LIMIT, "more than %u CFI rows", MAX_ROWS);
	struct span *s = grow(b->spans, &b->spans_cap, b->nspans + 1, sizeof(*s));
	if (!s)
		return &cq_error_nomem;
	b->spans = s;
	s[b->nspans++] = (struct span){start, end, ruleset, b->order};
	return NULL;
}

/* Walks the rows from pc on; returns where the walk stopped. */
static struct cq_error *walk_rows(struct builder *b, Dwarf_CFI *cfi, uint64_t pc, uint64_t *stop)
{
	for (;;) {
		Dwarf_Frame *frame;
		if (dwarf_cfi_addrframe(cfi, pc, &frame) != 0)
			break;
		Dwarf_Addr start, end;
		bool signal = false;
		if (dwarf_frame_info(frame, &start, &end, &signal) < 0 || end <= pc) {
			free(frame);
			break;
		}
		uint32_t rs = intern_row(b, frame, signal);
		free(frame);
		if (rs == UINT32_MAX)
			return &cq_error_nomem;
		struct cq_error *err = rs == CQ_CFI_NO_RULES ? NULL : add_span(b, pc, end, rs);
		if (err)
			return err;
		pc = end;
	}
	*stop = pc;
	return NULL;
}

/* ---- FDE enumeration -------------------------------------------------------- */

struct cie_enc {
	Dwarf_Off offset;
	uint8_t fde_encoding;
};

static size_t encoded_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		return 8;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		return 4;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		return 2;
	default:
		return 0; /* LEB128 and unknown forms are not used for FDE addresses */
	}
}

/* The FDE pointer encoding from a CIE's augmentation ('R'); absptr by default. */
static uint8_t cie_fde_encoding(const Dwarf_CIE *cie)
{
	const char *aug = cie->augmentation;
	const uint8_t *d = cie->augmentation_data, *end = d + cie->augmentation_data_size;
	if (!aug || aug[0] != 'z')
		return DW_EH_PE_absptr;
	for (const char *c = aug + 1; *c && d < end; c++) {
		if (*c == 'R')
			return *d;
		if (*c == 'L') {
			d++;
		} else if (*c == 'P') {
			size_t sz = encoded_size(*d);
			if (sz == 0)
				return DW_EH_PE_omit;
			d += 1 + sz;
		} else if (*c != 'S' && *c != 'B') {
			break;
		}
	}
	return DW_EH_PE_absptr;
}

static bool decode_pointer(const uint8_t *p, const uint8_t *end, uint8_t enc, uint64_t field_addr,
                           uint64_t *out)
{
	size_t sz = encoded_size(enc);
	if (sz == 0 || (size_t)(end - p) < sz || enc == DW_EH_PE_omit)
		return false;
	uint64_t v;
	switch (enc & 0x0f) {
	case DW_EH_PE_sdata4:
		v = (uint64_t)(int64_t)cq_load_i32(p);
		break;
	case DW_EH_PE_udata4:
		v = cq_load_u32(p);
		break;
	case DW_EH_PE_sdata2:
		v = (uint64_t)(int64_t)(int16_t)(p[0] | p[1] << 8);
		break;
	case DW_EH_PE_udata2:
		v = (uint64_t)(p[0] | p[1] << 8);
		break;
	default:
		v = cq_load_u64(p);
		break;
	}
	switch (enc & 0x70) {
	case 0:
		break;
	case DW_EH_PE_pcrel:
		v += field_addr;
		break;
	default:
		return false; /* datarel/textrel FDEs do not occur on x86_64/aarch64 */
	}
	*out = v;
	return true;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Collects the initial locations of all FDEs in a CFI section. */
static struct cq_error *fde_starts(Elf *elf, const char *section, bool eh, uint64_t **out,
                                   size_t *count)
{
	*out = NULL;
	*count = 0;
	GElf_Shdr shdr;
	Elf_Scn *scn = cq_elf_section(elf, section, &shdr);
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	if (!data || !data->d_buf || !ident)
		return NULL;
	struct cie_enc *cies = NULL;
	size_t ncies = 0, cies_cap = 0, cap = 0;
	uint64_t *starts = NULL;
	struct cq_error *err = NULL;
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry entry;
	for (size_t guard = 0; guard < MAX_ROWS; guard++, off = next) {
		int r = dwarf_next_cfi(ident, data, eh, off, &next, &entry);
		if (r != 0)
			break;
		if (dwarf_cfi_cie_p(&entry)) {
			struct cie_enc *c = grow(cies, &cies_cap, ncies + 1, sizeof(*c));
			if (!c) {
				err = &cq_error_nomem;
				break;
			}
			cies = c;
			cies[ncies++] = (struct cie_enc){off, eh ? cie_fde_encoding(&entry.cie)
			                                         : DW_EH_PE_absptr};
			continue;
		}
		uint8_t enc = eh ? DW_EH_PE_omit : DW_EH_PE_absptr;
		for (size_t i = 0; i < ncies && eh; i++)
			if (cies[i].offset == entry.fde.CIE_pointer)
				enc = cies[i].fde_encoding;
		const uint8_t *p = entry.fde.start, *base = data->d_buf;
		uint64_t start;
		if (p < base || p >= entry.fde.end ||
		    !decode_pointer(p, entry.fde.end, enc, shdr.sh_addr + (uint64_t)(p - base),
		                    &start))
			continue;
		if (!eh && start == 0)
			continue; /* discarded function in .debug_frame */
		uint64_t *s = grow(starts, &cap, *count + 1, sizeof(*s));
		if (!s) {
			err = &cq_error_nomem;
			break;
		}
		starts = s;
		starts[(*count)++] = start;
	}
	free(cies);
	if (err) {
		free(starts);
		*count = 0;
		return err;
	}
	if (*count > 1)
		qsort(starts, *count, sizeof(*starts), u64_cmp);
	*out = starts;
	return NULL;
}

static struct cq_error *add_cfi_section(struct builder *b, Elf *elf, Dwarf_CFI *cfi,
                                        const char *section, bool eh)
{
	uint64_t *starts;
	size_t n;
	struct cq_error *err = fde_starts(elf, section, eh, &starts, &n);
	uint64_t covered = 0;
	for (size_t i = 0; i < n && !err; i++) {
		if (starts[i] < covered)
			continue;
		err = walk_rows(b, cfi, starts[i], &covered);
	}
	free(starts);
	b->order++;
	return err;
}

/* ---- layout ------------------------------------------------------------------ */

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static struct cq_error *push_row(struct cq_cfi_table *t, size_t *cap, uint64_t start,
                                 uint32_t ruleset)
{
	if (t->nrows && t->rows[t->nrows - 1].ruleset == ruleset)
		return NULL;
	assert(start >= t->base);
	if (start - t->base > UINT32_MAX)
		return cq_error_create(CQ_ERR_UNSUPPORTED, "CFI spans more than 4 GiB");
	assert(!t->nrows || (uint32_t)(start - t->base) > t->rows[t->nrows - 1].start);
	struct cq_cfi_row *rows = grow(t->rows, cap, t->nrows + 1, sizeof(*rows));
	if (!rows)
		return &cq_error_nomem;
	t->rows = rows;
	rows[t->nrows++] = (struct cq_cfi_row){(uint32_t)(start - t->base), ruleset};
	return NULL;
}

/* Lays spans out as rows; eh_frame spans win where debug_frame overlaps. */
static struct cq_error *layout_rows(struct builder *b, struct cq_cfi_table *t)
{
	if (b->nspans > 1)
		qsort(b->spans, b->nspans, sizeof(*b->spans), span_cmp);
	t->base = b->nspans ? b->spans[0].start : 0;
	size_t cap = 0;
	uint64_t prev_end = t->base;
	struct cq_error *err = NULL;
	for (size_t i = 0; i < b->nspans && !err; i++) {
		struct span s = b->spans[i];
		assert(s.start < s.end); /* walk_rows adds only rows that hold a pc */
		if (s.end <= prev_end && t->nrows)
			continue;
		if (s.start < prev_end && t->nrows)
			s.start = prev_end;
		if (s.start > prev_end && t->nrows)
			err = push_row(t, &cap, prev_end, CQ_CFI_NO_RULES);
		if (!err)
			err = push_row(t, &cap, s.start, s.ruleset);
		prev_end = s.end;
	}
	if (!err && b->nspans)
		err = push_row(t, &cap, prev_end, CQ_CFI_NO_RULES);
	return err;
}

static void builder_free(struct builder *b)
{
	free(b->spans);
	free(b->rules);
	free(b->ops);
	free(b->ruleset_set.slot);
	free(b->ruleset_set.hash);
	free(b->expr_set.slot);
	free(b->expr_set.hash);
}

struct cq_error *cq_cfi_table_build(void *elf_, void *debug_elf_, unsigned nregs,
                                    struct cq_cfi_table **out)
{
	Elf *elf = elf_, *debug_elf = debug_elf_;
	*out = NULL;
	if (nregs == 0 || nregs > CQ_CFI_MAX_REGS)
		return cq_error_create(CQ_ERR_USAGE, "bad register count %u", nregs);
	struct builder b = {.nregs = nregs};
	struct cq_cfi_table *t = calloc(1, sizeof(*t));
	if (!t)
		return &cq_error_nomem;
	t->nregs = nregs;
	t->flags = CQ_CFI_TABLE_COMPLETE;
	struct cq_error *err = NULL;
	Dwarf_CFI *eh = elf ? dwarf_getcfi_elf(elf) : NULL;
	if (eh)
		err = add_cfi_section(&b, elf, eh, ".eh_frame", true);
	/*
	 * dwarf_begin_elf decompresses every compressed .debug_* section of the
	 * file, megabytes for a libc debug file that has no .debug_frame at all
	 * (x86_64 glibc has only .eh_frame): look for the section first.
	 */
	GElf_Shdr dbg_shdr;
	Dwarf *dw = NULL;
	if (!err && debug_elf && cq_elf_section(debug_elf, ".debug_frame", &dbg_shdr) &&
	    (dw = dwarf_begin_elf(debug_elf, DWARF_C_READ, NULL))) {
		Dwarf_CFI *dbg = dwarf_getcfi(dw);
		if (dbg)
			err = add_cfi_section(&b, debug_elf, dbg, ".debug_frame", false);
	}
	if (!err)
		err = layout_rows(&b, t);
	if (dw)
		dwarf_end(dw);
	if (eh)
		dwarf_cfi_end(eh);
	if (err) {
		builder_free(&b);
		cq_cfi_table_free(t);
		return err;
	}
	t->rules = b.rules;
	t->nrulesets = (uint32_t)b.nrulesets;
	t->ops = b.ops;
	t->nops = (uint32_t)b.nops;
	b.rules = NULL;
	b.ops = NULL;
	builder_free(&b);
	*out = t;
	return NULL;
}

void cq_cfi_table_free(struct cq_cfi_table *table)
{
	if (!table)
		return;
	free(table->rows);
	free(table->rules);
	free(table->ops);
	free(table);
}

/* Index of the row holding rel (the last row starting at or before it), or -1. */
static ptrdiff_t row_at(const struct cq_cfi_table *t, uint32_t rel)
{
	size_t lo = 0, hi = t->nrows;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->rows[mid].start <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (ptrdiff_t)lo - 1;
}

const struct cq_cfi_rule *cq_cfi_table_lookup(const struct cq_cfi_table *t, uint64_t pc)
{
	if (!t || t->nrows == 0 || pc < t->base || pc - t->base > UINT32_MAX)
		return NULL;
	ptrdiff_t i = row_at(t, (uint32_t)(pc - t->base));
	if (i < 0)
		return NULL;
	assert((size_t)i < t->nrows && t->rows[i].start <= pc - t->base);
	uint32_t rs = t->rows[i].ruleset;
	if (rs == CQ_CFI_NO_RULES || rs >= t->nrulesets)
		return NULL;
	return &t->rules[(size_t)rs * (t->nregs + 1)];
}

const struct cq_cfi_op *cq_cfi_table_expr(const struct cq_cfi_table *t,
                                          const struct cq_cfi_rule *rule, size_t *count)
{
	assert(t && rule && count);
	assert(rule->kind == CQ_CFI_CFA_EXPR || rule->kind == CQ_CFI_EXPR ||
	       rule->kind == CQ_CFI_VAL_EXPR);
	uint32_t index = (uint32_t)rule->value;
	*count = 0;
	if (rule->value < 0 || index >= t->nops || t->ops[index].number > t->nops - index - 1)
		return NULL;
	*count = (size_t)t->ops[index].number;
	return &t->ops[index + 1];
}

/* ---- compiled a row at a time ------------------------------------------------ */

struct cq_cfi_lazy {
	struct builder b;
	struct cq_cfi_table table; /* rows kept sorted; rules and ops are b's */
	size_t rows_cap;
	bool have_base, grew;
	Dwarf_CFI *eh;
	void *(*debug_elf)(void *arg); /* gives the debuginfo's Elf *, once */
	void *debug_arg;
	bool debug_tried; /* .debug_frame was looked for */
	Dwarf *dw;        /* the debuginfo's DWARF, once .debug_frame was needed */
	Dwarf_CFI *dbg;   /* its .debug_frame */
};

/* Takes seed's rule sets and expressions into b, interned as if compiled. */
static bool seed_builder(struct builder *b, const struct cq_cfi_table *seed)
{
	size_t stride = b->nregs + 1;
	for (uint32_t i = 0; i < seed->nops;) {
		size_t n = (size_t)seed->ops[i].number;
		Dwarf_Op ops[MAX_EXPR_OPS];
		if (n == 0 || n > MAX_EXPR_OPS)
			return false;
		for (size_t k = 0; k < n; k++)
			ops[k] = (Dwarf_Op){.atom = seed->ops[i + 1 + k].atom,
			                    .number = seed->ops[i + 1 + k].number,
			                    .number2 = seed->ops[i + 1 + k].number2,
			                    .offset = seed->ops[i + 1 + k].offset};
		if (intern_expr(b, ops, n) != i) /* the pool is rebuilt at the same indices */
			return false;
		i += (uint32_t)n + 1;
	}
	for (uint32_t r = 0; r < seed->nrulesets; r++)
		if (intern_ruleset(b, &seed->rules[(size_t)r * stride]) != r)
			return false;
	return true;
}

struct cq_error *cq_cfi_lazy_create(void *elf, void *(*debug_elf)(void *arg), void *arg,
                                    unsigned nregs, const struct cq_cfi_table *seed,
                                    struct cq_cfi_lazy **out)
{
	*out = NULL;
	if (nregs == 0 || nregs > CQ_CFI_MAX_REGS || (seed && seed->nregs != nregs))
		return cq_error_create(CQ_ERR_USAGE, "bad register count %u", nregs);
	struct cq_cfi_lazy *l = calloc(1, sizeof(*l));
	if (!l)
		return &cq_error_nomem;
	l->b.nregs = nregs;
	l->table.nregs = nregs;
	l->eh = elf ? dwarf_getcfi_elf(elf) : NULL;
	l->debug_elf = debug_elf;
	l->debug_arg = arg;
	if (seed && seed->nrows) {
		l->table.rows = malloc(seed->nrows * sizeof(*seed->rows));
		if (!l->table.rows) {
			cq_cfi_lazy_free(l);
			return &cq_error_nomem;
		}
		if (!seed_builder(&l->b, seed)) {
			cq_cfi_lazy_free(l);
			return cq_error_create(CQ_ERR_FORMAT, "CFI table: cannot be extended");
		}
		memcpy(l->table.rows, seed->rows, seed->nrows * sizeof(*seed->rows));
		l->rows_cap = l->table.nrows = seed->nrows;
		l->table.base = seed->base;
		l->have_base = true;
		l->table.rules = l->b.rules;
		l->table.nrulesets = (uint32_t)l->b.nrulesets;
		l->table.ops = l->b.ops;
		l->table.nops = (uint32_t)l->b.nops;
	}
	*out = l;
	return NULL;
}

const struct cq_cfi_table *cq_cfi_lazy_table(const struct cq_cfi_lazy *l)
{
	return &l->table;
}

bool cq_cfi_lazy_grew(const struct cq_cfi_lazy *l)
{
	return l && l->grew;
}

void cq_cfi_lazy_free(struct cq_cfi_lazy *l)
{
	if (!l)
		return;
	if (l->dw)
		dwarf_end(l->dw);
	if (l->eh)
		dwarf_cfi_end(l->eh);
	free(l->table.rows);
	builder_free(&l->b);
	free(l);
}

/*
 * The row libdw gives for pc in cfi, with its [start, end): a rule set,
 * CQ_CFI_NO_RULES if there is none, UINT32_MAX for want of memory.
 */
static uint32_t lazy_row(struct builder *b, Dwarf_CFI *cfi, uint64_t pc, uint64_t *start,
                         uint64_t *end)
{
	Dwarf_Frame *frame;
	if (!cfi || dwarf_cfi_addrframe(cfi, pc, &frame) != 0)
		return CQ_CFI_NO_RULES;
	Dwarf_Addr s, e;
	bool signal = false;
	uint32_t rs = CQ_CFI_NO_RULES;
	/*
	 * The row holds from pc to its end.  Not from its start: after a
	 * DW_CFA_restore_state, libdw 0.188 gives the start of the remembered
	 * row, which may lie before rows of other rules (the whole-module
	 * compiler, too, trusts only the end).
	 */
	if (dwarf_frame_info(frame, &s, &e, &signal) >= 0 && s <= pc && pc < e) {
		rs = intern_row(b, frame, signal);
		*start = pc;
		*end = e;
	}
	free(frame);
	return rs;
}

/*
 * Puts [start, end) with ruleset rs into the gap that holds it (row i, not
 * yet compiled, or -1 before the first row): rows already compiled keep
 * their ranges, the new one is clipped to the gap.
 */
static struct cq_error *lazy_insert(struct cq_cfi_lazy *l, ptrdiff_t i, uint64_t start,
                                    uint64_t end, uint32_t rs)
{
	struct cq_cfi_table *t = &l->table;
	size_t after = (size_t)(i + 1); /* the first row after the gap */
	uint64_t gap_lo = i >= 0 ? t->base + t->rows[i].start : t->base;
	uint64_t gap_hi = after < t->nrows ? t->base + t->rows[after].start : t->base + UINT32_MAX;
	if (start < gap_lo)
		start = gap_lo;
	if (end > gap_hi)
		end = gap_hi;
	/* pc, which start is, lies in the gap row_at found, and its row holds it. */
	assert(gap_lo <= start && start < end && end <= gap_hi);
	struct cq_cfi_row add[2];
	size_t nadd = 0;
	add[nadd++] = (struct cq_cfi_row){(uint32_t)(start - t->base), rs};
	if (end < gap_hi || after == t->nrows)
		add[nadd++] = (struct cq_cfi_row){(uint32_t)(end - t->base), CQ_CFI_NO_RULES};
	/* The gap's own row stays before the new one, unless the new one starts it. */
	size_t at = i >= 0 && start == gap_lo ? (size_t)i : after;
	size_t need = at + nadd + (t->nrows - after);
	struct cq_cfi_row *rows = grow(t->rows, &l->rows_cap, need, sizeof(*rows));
	if (!rows)
		return &cq_error_nomem;
	t->rows = rows;
	memmove(&rows[at + nadd], &rows[after], (t->nrows - after) * sizeof(*rows));
	memcpy(&rows[at], add, nadd * sizeof(*rows));
	t->nrows = (uint32_t)need;
	/* Still sorted around the rows put in. */
	assert(at == 0 || rows[at - 1].start < rows[at].start);
	assert(nadd == 1 || rows[at].start < rows[at + 1].start);
	assert(at + nadd == t->nrows || rows[at + nadd - 1].start < rows[at + nadd].start);
	l->grew = true;
	return NULL;
}

/* The rule set of pc from .eh_frame, else .debug_frame; CQ_CFI_NO_CFI if neither has one. */
static uint32_t lazy_compile(struct cq_cfi_lazy *l, uint64_t pc, uint64_t *start, uint64_t *end)
{
	uint32_t rs = lazy_row(&l->b, l->eh, pc, start, end);
	if (rs == CQ_CFI_NO_RULES && l->debug_elf) {
		if (!l->debug_tried) {
			l->debug_tried = true;
			/* dwarf_begin_elf inflates every section: only for a .debug_frame. */
			Elf *debug_elf = l->debug_elf(l->debug_arg);
			GElf_Shdr shdr;
			if (debug_elf && cq_elf_section(debug_elf, ".debug_frame", &shdr) &&
			    (l->dw = dwarf_begin_elf(debug_elf, DWARF_C_READ, NULL)))
				l->dbg = dwarf_getcfi(l->dw);
		}
		rs = lazy_row(&l->b, l->dbg, pc, start, end);
	}
	if (rs == CQ_CFI_NO_RULES) {
		*start = pc;
		*end = pc + 1;
		return CQ_CFI_NO_CFI;
	}
	return rs;
}

const struct cq_cfi_table *cq_cfi_lazy_at(struct cq_cfi_lazy *l, uint64_t pc,
                                          struct cq_error **error)
{
	struct cq_cfi_table *t = &l->table;
	*error = NULL;
	if (l->have_base && (pc < t->base || pc - t->base >= UINT32_MAX))
		return t; /* out of the table's reach, as for the complete table */
	ptrdiff_t i = l->have_base ? row_at(t, (uint32_t)(pc - t->base)) : -1;
	if (i >= 0 && t->rows[i].ruleset != CQ_CFI_NO_RULES)
		return t; /* compiled: rules, or none */
	uint64_t start = 0, end = 0;
	uint32_t rs = lazy_compile(l, pc, &start, &end);
	if (rs == UINT32_MAX) {
		*error = &cq_error_nomem;
		return t;
	}
	if (!l->have_base) {
		l->have_base = true;
		t->base = start & ~(uint64_t)UINT32_MAX;
		if (pc - t->base >= UINT32_MAX)
			return t;
	}
	*error = lazy_insert(l, i, start, end, rs);
	t->rules = l->b.rules;
	t->nrulesets = (uint32_t)l->b.nrulesets;
	t->ops = l->b.ops;
	t->nops = (uint32_t)l->b.nops;
	return t;
}
