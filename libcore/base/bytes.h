/*
 * bytes.h - unaligned little-endian loads from untrusted buffers.
 *
 * Callers check bounds first; these only avoid unaligned-access UB.
 * The loads are the host's native ones, and coreq reads ELF64 cores and
 * objects (a big-endian or 32-bit core is refused by the core model) into
 * 64-bit offsets and sizes: it builds only for little-endian LP64 hosts
 * (x86_64, aarch64), and says so at compile time on any other.
 */
#ifndef CQ_BYTES_H
#define CQ_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "coreq reads little-endian formats with the host's own loads");
_Static_assert(sizeof(void *) == 8 && sizeof(size_t) == 8, "coreq needs a 64-bit (LP64) host");

static inline uint64_t cq_load_u64(const void *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t cq_load_u32(const void *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline int32_t cq_load_i32(const void *p)
{
	int32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline int16_t cq_load_i16(const void *p)
{
	int16_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * How many of n items (stride bytes each, sorted by the uint64_t each
 * starts with) start below key: the index of the first at or above it.
 */
static inline size_t cq_sorted_below(const void *items, size_t n, size_t stride, uint64_t key)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cq_load_u64((const uint8_t *)items + mid * stride) < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif
