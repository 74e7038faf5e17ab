/*
 * cfi_serialize.c - the versioned binary form of a struct cq_cfi_table
 * (layout in cfi_table.h), and validation of tables that come from outside
 * the compiler: a cached blob may be stale or damaged, so every index in it
 * is checked before the unwinder trusts it.
 */
#include "unwind/cfi_table.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "libcore/base/bytes.h"

static const char magic[8] = "CQCFI\0\0";
#define HEADER_SIZE (8 + 4 + 4 + 8 + 4 + 4 + 4 + 4)
#define ROW_SIZE    8
#define RULE_SIZE   8
#define OP_SIZE     25
#define CRC_SIZE    4 /* CRC-32 of everything before it, last in the blob */

static uint32_t crc_of(const uint8_t *p, size_t len)
{
	return (uint32_t)crc32(crc32(0L, Z_NULL, 0), p, (uInt)len);
}

static bool rule_valid(const struct cq_cfi_table *t, const struct cq_cfi_rule *r, bool is_cfa)
{
	size_t n;
	switch (r->kind) {
	case CQ_CFI_CFA_REG_OFFSET:
		return is_cfa && r->reg < t->nregs;
	case CQ_CFI_CFA_EXPR:
		return is_cfa && cq_cfi_table_expr(t, r, &n) != NULL;
	case CQ_CFI_UNDEFINED:
	case CQ_CFI_SAME:
	case CQ_CFI_OFFSET:
	case CQ_CFI_VAL_OFFSET:
		return !is_cfa;
	case CQ_CFI_REGISTER:
		return !is_cfa && r->reg < t->nregs;
	case CQ_CFI_EXPR:
	case CQ_CFI_VAL_EXPR:
		return !is_cfa && cq_cfi_table_expr(t, r, &n) != NULL;
	default:
		return false;
	}
}

/* Checks that rows are sorted and every index points inside the table. */
static struct cq_error *table_validate(const struct cq_cfi_table *t)
{
	if (t->nregs == 0 || t->nregs > CQ_CFI_MAX_REGS)
		return cq_error_create(CQ_ERR_FORMAT, "CFI table: bad register count");
	if (t->flags & ~CQ_CFI_TABLE_COMPLETE)
		return cq_error_create(CQ_ERR_FORMAT, "CFI table: unknown flags");
	for (uint32_t i = 0; i < t->nrows; i++) {
		if (i > 0 && t->rows[i].start <= t->rows[i - 1].start)
			return cq_error_create(CQ_ERR_FORMAT, "CFI table: rows not sorted");
		uint32_t rs = t->rows[i].ruleset;
		if (rs != CQ_CFI_NO_RULES && rs != CQ_CFI_NO_CFI && rs >= t->nrulesets)
			return cq_error_create(CQ_ERR_FORMAT, "CFI table: bad rule set index");
	}
	for (uint32_t i = 0; i < t->nops;) {
		uint64_t count = t->ops[i].number;
		if (count > t->nops - i - 1)
			return cq_error_create(CQ_ERR_FORMAT, "CFI table: bad expression");
		i += (uint32_t)count + 1;
	}
	size_t stride = t->nregs + 1;
	for (size_t i = 0; i < (size_t)t->nrulesets * stride; i++)
		if (!rule_valid(t, &t->rules[i], i % stride == 0))
			return cq_error_create(CQ_ERR_FORMAT, "CFI table: bad rule");
	return NULL;
}

static struct cq_cfi_table *table_alloc(uint32_t nregs, uint32_t nrows, uint32_t nrulesets,
                                        uint32_t nops)
{
	struct cq_cfi_table *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->nregs = nregs;
	t->nrows = nrows;
	t->nrulesets = nrulesets;
	t->nops = nops;
	t->rows = calloc(nrows ? nrows : 1, sizeof(*t->rows));
	t->rules = calloc((size_t)nrulesets * (nregs + 1) + 1, sizeof(*t->rules));
	t->ops = calloc(nops ? nops : 1, sizeof(*t->ops));
	if (!t->rows || !t->rules || !t->ops) {
		cq_cfi_table_free(t);
		return NULL;
	}
	return t;
}

struct cq_error *cq_cfi_table_from_parts(uint64_t base, unsigned nregs,
                                         const struct cq_cfi_row *rows, size_t nrows,
                                         const struct cq_cfi_rule *rules, size_t nrulesets,
                                         const struct cq_cfi_op *ops, size_t nops,
                                         struct cq_cfi_table **out)
{
	*out = NULL;
	if (nregs == 0 || nregs > CQ_CFI_MAX_REGS || nrows > UINT32_MAX ||
	    nrulesets >= CQ_CFI_NO_CFI || nops > INT32_MAX)
		return cq_error_create(CQ_ERR_USAGE, "CFI table: bad sizes");
	struct cq_cfi_table *t =
	    table_alloc(nregs, (uint32_t)nrows, (uint32_t)nrulesets, (uint32_t)nops);
	if (!t)
		return &cq_error_nomem;
	t->base = base;
	t->flags = CQ_CFI_TABLE_COMPLETE;
	memcpy(t->rows, rows, nrows * sizeof(*rows));
	memcpy(t->rules, rules, nrulesets * (nregs + 1) * sizeof(*rules));
	if (nops)
		memcpy(t->ops, ops, nops * sizeof(*ops));
	struct cq_error *err = table_validate(t);
	if (err) {
		cq_cfi_table_free(t);
		return err;
	}
	*out = t;
	return NULL;
}

static uint8_t *put_u32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
	return p + 4;
}

static uint8_t *put_u64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
	return p + 8;
}

struct cq_error *cq_cfi_table_serialize(const struct cq_cfi_table *t, uint8_t **blob, size_t *len)
{
	size_t nrules = (size_t)t->nrulesets * (t->nregs + 1);
	size_t size = HEADER_SIZE + (size_t)t->nrows * ROW_SIZE + nrules * RULE_SIZE +
	              (size_t)t->nops * OP_SIZE + CRC_SIZE;
	uint8_t *buf = malloc(size), *p = buf;
	if (!buf)
		return &cq_error_nomem;
	memcpy(p, magic, 8);
	p = put_u32(p + 8, CQ_CFI_TABLE_VERSION);
	p = put_u32(p, t->nregs);
	p = put_u64(p, t->base);
	p = put_u32(p, t->nrows);
	p = put_u32(p, t->nrulesets);
	p = put_u32(p, t->nops);
	p = put_u32(p, t->flags);
	for (uint32_t i = 0; i < t->nrows; i++) {
		p = put_u32(p, t->rows[i].start);
		p = put_u32(p, t->rows[i].ruleset);
	}
	for (size_t i = 0; i < nrules; i++) {
		const struct cq_cfi_rule *r = &t->rules[i];
		*p++ = r->kind;
		*p++ = r->reg;
		*p++ = r->flags;
		*p++ = 0;
		p = put_u32(p, (uint32_t)r->value);
	}
	for (uint32_t i = 0; i < t->nops; i++) {
		*p++ = t->ops[i].atom;
		p = put_u64(p, t->ops[i].number);
		p = put_u64(p, t->ops[i].number2);
		p = put_u64(p, t->ops[i].offset);
	}
	put_u32(p, crc_of(buf, size - CRC_SIZE));
	*blob = buf;
	*len = size;
	return NULL;
}

struct cq_error *cq_cfi_table_deserialize(const uint8_t *blob, size_t len,
                                          struct cq_cfi_table **out)
{
	*out = NULL;
	if (len < HEADER_SIZE + CRC_SIZE || memcmp(blob, magic, 8) != 0)
		return cq_error_create(CQ_ERR_FORMAT, "not a CFI table blob");
	if (cq_load_u32(blob + 8) != CQ_CFI_TABLE_VERSION)
		return cq_error_create(CQ_ERR_FORMAT, "CFI table blob has version %u, not %u",
		                       cq_load_u32(blob + 8), CQ_CFI_TABLE_VERSION);
	uint32_t nregs = cq_load_u32(blob + 12), nrows = cq_load_u32(blob + 24);
	uint32_t nrulesets = cq_load_u32(blob + 28), nops = cq_load_u32(blob + 32);
	if (nregs == 0 || nregs > CQ_CFI_MAX_REGS || nrulesets >= CQ_CFI_NO_CFI)
		return cq_error_create(CQ_ERR_FORMAT, "CFI table blob: bad header");
	uint64_t need = HEADER_SIZE + (uint64_t)nrows * ROW_SIZE +
	                (uint64_t)nrulesets * (nregs + 1) * RULE_SIZE + (uint64_t)nops * OP_SIZE +
	                CRC_SIZE;
	if (need != len)
		return cq_error_create(CQ_ERR_FORMAT, "CFI table blob: size mismatch");
	if (cq_load_u32(blob + len - CRC_SIZE) != crc_of(blob, len - CRC_SIZE))
		return cq_error_create(CQ_ERR_FORMAT, "CFI table blob: checksum mismatch");
	struct cq_cfi_table *t = table_alloc(nregs, nrows, nrulesets, nops);
	if (!t)
		return &cq_error_nomem;
	t->base = cq_load_u64(blob + 16);
	t->flags = cq_load_u32(blob + 36);
	const uint8_t *p = blob + HEADER_SIZE;
	for (uint32_t i = 0; i < nrows; i++, p += ROW_SIZE)
		t->rows[i] = (struct cq_cfi_row){cq_load_u32(p), cq_load_u32(p + 4)};
	bool padded = true; /* the pad byte is 0: the form has one encoding */
	for (size_t i = 0; i < (size_t)nrulesets * (nregs + 1); i++, p += RULE_SIZE) {
		t->rules[i] = (struct cq_cfi_rule){
		    .kind = p[0], .reg = p[1], .flags = p[2], .value = (int32_t)cq_load_u32(p + 4)};
		padded &= p[3] == 0;
	}
	for (uint32_t i = 0; i < nops; i++, p += OP_SIZE)
		t->ops[i] = (struct cq_cfi_op){.atom = p[0],
		                               .number = cq_load_u64(p + 1),
		                               .number2 = cq_load_u64(p + 9),
		                               .offset = cq_load_u64(p + 17)};
	struct cq_error *err = padded
	                           ? table_validate(t)
	                           : cq_error_create(CQ_ERR_FORMAT, "CFI table blob: bad padding");
	if (err) {
		cq_cfi_table_free(t);
		return err;
	}
	*out = t;
	return NULL;
}
