/*
 * fuzz_gopclntab.c - libFuzzer target for libcore/symbols/gopclntab.c, which
 * names Go functions from a binary's .gopclntab (untrusted input).
 *
 * The input is the section.  Every name found must lie inside the input
 * and end there with its NUL, and its function's entry must be at or below
 * the address asked about; the addresses asked about are each function's
 * entry, the byte before it and the last entry.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/symbols/gopclntab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct cq_gopclntab *t, const uint8_t *data, size_t size, uint64_t addr)
{
	uint64_t entry = 0;
	const char *n = cq_gopclntab_find(t, addr, &entry);
	if (!n)
		return;
	if ((const uint8_t *)n < data || (const uint8_t *)n >= data + size ||
	    !memchr(n, 0, size - (size_t)((const uint8_t *)n - data)) || entry > addr)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cq_gopclntab t;
	if (!cq_gopclntab_init(&t, data, size))
		return 0;
	uint64_t n = t.nfunc < 4096 ? t.nfunc : 4096;
	for (uint64_t i = 0; i <= n; i++) {
		uint64_t e;
		if (!cq_gopclntab_entry(&t, i, &e))
			abort(); /* init promised the table lies in the section */
		check(&t, data, size, e);
		check(&t, data, size, e - 1);
	}
	return 0;
}
