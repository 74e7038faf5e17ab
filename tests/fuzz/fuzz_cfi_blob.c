/*
 * fuzz_cfi_blob.c - libFuzzer target for unwind/cfi_serialize.c, the
 * unwind-table rows of the cache file (untrusted input).
 *
 * The input is deserialised (as is, and with its trailing CRC-32 made
 * right so that the structural checks behind it are reached).  A table
 * that is accepted must serialise back to the same bytes, and every row's
 * rules must be readable through the table's own lookup.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/reseal.h"
#include "unwind/cfi_table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const uint8_t *data, size_t size)
{
	struct cq_cfi_table *t = NULL;
	struct cq_error *err = cq_cfi_table_deserialize(data, size, &t);
	if (err) {
		cq_error_free(err);
		return;
	}
	uint8_t *blob;
	size_t len;
	if (cq_cfi_table_serialize(t, &blob, &len))
		abort();
	if (len != size || memcmp(blob, data, size) != 0)
		abort();
	free(blob);
	volatile uint64_t sink = 0;
	for (uint32_t i = 0; i < t->nrows; i++) {
		const struct cq_cfi_rule *rules =
		    cq_cfi_table_lookup(t, t->base + t->rows[i].start);
		for (uint32_t r = 0; rules && r <= t->nregs; r++) {
			size_t count = 0;
			const struct cq_cfi_op *ops = NULL;
			if (rules[r].kind == CQ_CFI_EXPR || rules[r].kind == CQ_CFI_VAL_EXPR ||
			    rules[r].kind == CQ_CFI_CFA_EXPR)
				ops = cq_cfi_table_expr(t, &rules[r], &count);
			for (size_t k = 0; ops && k < count; k++)
				sink += ops[k].atom;
		}
	}
	(void)sink;
	cq_cfi_table_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_as_is_and_resealed(data, size, check);
	return 0;
}
