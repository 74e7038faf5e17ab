/*
 * hash.h - FNV-1a, the one small non-cryptographic hash coreq uses for
 * hash-table keys, stack identities and bucket ids.  Its values are stored
 * in databases (stacks.hash, buckets.hash), so it must never change.
 */
#ifndef CQ_HASH_H
#define CQ_HASH_H

#include <stddef.h>
#include <stdint.h>

#define CQ_FNV_OFFSET 0xcbf29ce484222325ull

/* Folds len bytes at data into h (start with CQ_FNV_OFFSET). */
static inline uint64_t cq_fnv1a(uint64_t h, const void *data, size_t len)
{
	const uint8_t *p = data;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

#endif
