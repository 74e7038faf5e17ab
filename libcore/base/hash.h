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
#define CQ_FNV_PRIME  0x100000001b3ull

/* One FNV-1a step: folds the value v (a byte, or a whole word for in-memory
 * hash-table keys that are never stored) into h. */
static inline uint64_t cq_fnv1a_step(uint64_t h, uint64_t v)
{
	return (h ^ v) * CQ_FNV_PRIME;
}

/* Folds len bytes at data into h (start with CQ_FNV_OFFSET). */
static inline uint64_t cq_fnv1a(uint64_t h, const void *data, size_t len)
{
	const uint8_t *p = data;
	for (size_t i = 0; i < len; i++)
		h = cq_fnv1a_step(h, p[i]);
	return h;
}

#endif
