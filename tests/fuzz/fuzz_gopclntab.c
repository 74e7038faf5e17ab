/*
 * fuzz_gopclntab.c - libFuzzer target for libcore/symbols/gopclntab.c, which
 * names Go functions from a binary's .gopclntab (untrusted input).
 *
 * The input is the section.  Every name and file found must lie inside the
 * input and end there with its NUL, a line be positive, and a function's
 * entry be at or below the address asked about (its frame size and its
 * inlined frames, with the input as go:func.*, are asked too); the addresses asked about are each
 * function's entry, the byte before it and the last entry.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/symbols/gopclntab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* s is a NUL-terminated string inside the input. */
static bool inside(const char *s, const uint8_t *data, size_t size)
{
	return (const uint8_t *)s >= data && (const uint8_t *)s < data + size &&
	       memchr(s, 0, size - (size_t)((const uint8_t *)s - data));
}

static void check(const struct cq_gopclntab *t, const uint8_t *data, size_t size, uint64_t addr)
{
	uint64_t entry = 0, frame;
	const char *n = cq_gopclntab_find(t, addr, &entry);
	const char *file = NULL;
	int line = 0;
	if (cq_gopclntab_line(t, addr, &file, &line) && (!inside(file, data, size) || line <= 0))
		abort();
	(void)cq_gopclntab_frame_size(t, addr, &frame);
	struct cq_gopclntab_frame fs[8];
	size_t nf = cq_gopclntab_frames(t, addr, fs, 8);
	for (size_t i = 0; i < nf; i++)
		if (nf > 8 || !inside(fs[i].function, data, size) ||
		    (fs[i].file && !inside(fs[i].file, data, size)))
			abort();
	if (n && (!inside(n, data, size) || entry > addr))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cq_gopclntab t;
	if (!cq_gopclntab_init(&t, data, size))
		return 0;
	cq_gopclntab_set_gofunc(&t, data, size); /* inline trees read from the input too */
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
