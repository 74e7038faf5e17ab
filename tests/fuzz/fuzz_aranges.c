/*
 * fuzz_aranges.c - libFuzzer target for libcore/symbols/aranges.c, which
 * reads a debuginfo file's .debug_aranges (untrusted input).
 *
 * The input is the section.  The table must be sorted, hold no empty range
 * and no more ranges than one per 16 bytes, and every range's start must
 * find a unit.
 */
#include <stdint.h>
#include <stdlib.h>

#include "libcore/symbols/aranges.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cq_aranges a;
	if (cq_aranges_parse(data, size, &a))
		return 0;
	if (a.n > size / 16)
		abort();
	for (size_t i = 0; i < a.n; i++) {
		uint64_t unit;
		if (a.ranges[i].end <= a.ranges[i].start ||
		    (i && a.ranges[i - 1].start > a.ranges[i].start) ||
		    !cq_aranges_find(&a, a.ranges[i].start, &unit))
			abort();
	}
	cq_aranges_free(&a);
	return 0;
}
