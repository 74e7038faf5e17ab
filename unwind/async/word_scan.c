/*
 * word_scan.c - the suspended-frame cookie scan (see word_scan.h).
 *
 * The loop compares four aligned words per iteration and only then looks at
 * which one matched, so the compiler keeps it branch-light; hits are rare.
 */
#include "unwind/async/word_scan.h"

#include "libcore/base/bytes.h"

size_t cq_word_scan(const uint8_t *data, uint64_t start, uint64_t len, uint64_t value,
                    uint64_t *hits, size_t max_hits)
{
	size_t found = 0;
	uint64_t skip = (8 - (start & 7)) & 7; /* to the first aligned word */
	if (len < skip)
		return 0;
	const uint8_t *p = data + skip, *end = p + ((len - skip) & ~7ull);
	uint64_t addr = start + skip;
	while (p < end) {
		if ((size_t)(end - p) >= 32) {
			uint64_t a = cq_load_u64(p), b = cq_load_u64(p + 8),
			         c = cq_load_u64(p + 16), d = cq_load_u64(p + 24);
			if (a != value && b != value && c != value && d != value) {
				p += 32;
				addr += 32;
				continue;
			}
		}
		if (cq_load_u64(p) == value) {
			if (found < max_hits)
				hits[found] = addr;
			found++;
		}
		p += 8;
		addr += 8;
	}
	return found;
}
