/*
 * addr_table.c - sorted arrays keyed by a leading uint64_t address (see
 * addr_table.h).
 */
#include "libcore/base/addr_table.h"

#include <string.h>

#include "libcore/base/bytes.h"

static uint64_t addr_of(const void *e)
{
	uint64_t a;
	memcpy(&a, e, sizeof(a));
	return a;
}

int cq_addr_order(const void *a, const void *b)
{
	uint64_t x = addr_of(a), y = addr_of(b);
	return (x > y) - (x < y);
}

void *cq_addr_find(void *base, size_t n, size_t size, uint64_t addr)
{
	size_t i = cq_sorted_below(base, n, size, addr);
	return i < n && addr_of((const uint8_t *)base + i * size) == addr
	           ? (uint8_t *)base + i * size
	           : NULL;
}
