/*
 * fuzz_heap_chunks.c - libFuzzer target for unwind/async/heap_chunks.c, the
 * glibc malloc chunk walk over core memory (untrusted input).
 *
 * Input layout: byte 0 the number of queries (up to 16), then 16 query
 * offsets of 2 bytes and sizes of 1 byte (x 16), then memory: its first
 * half is a segment at a 64 MiB-aligned address (the thread-arena path),
 * the rest a segment at a page-aligned address (the brk-heap path); a
 * query's offset picks an address in either, or just past them.  The walk
 * must give every query a verdict of the enum, and an address in no
 * segment no verdict.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/memory.h"
#include "unwind/async/heap_chunks.h"

#define ARENA_BASE 0x7f0004000000ull
#define BRK_BASE   0x555500001000ull
#define HDR        (1 + 16 * 3)
#define MAX_Q      16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int cmp_query(const void *a, const void *b)
{
	const struct cq_heap_query *x = a, *y = b;
	return (x->addr > y->addr) - (x->addr < y->addr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < HDR + 16)
		return 0;
	size_t len = size - HDR, half = (len / 2) & ~(size_t)7;
	uint8_t *bytes = malloc(len);
	if (!bytes)
		return 0;
	memcpy(bytes, data + HDR, len);
	struct cq_mem mem;
	cq_mem_init(&mem);
	cq_mem_add(&mem, CQ_MEM_LAYER_CORE, ARENA_BASE, ARENA_BASE + half, bytes, half,
	           CQ_MEM_READ | CQ_MEM_WRITE);
	cq_mem_add(&mem, CQ_MEM_LAYER_CORE, BRK_BASE, BRK_BASE + (len - half), bytes + half,
	           len - half, CQ_MEM_READ | CQ_MEM_WRITE);
	cq_mem_finish(&mem);
	struct cq_heap_query q[MAX_Q];
	size_t n = data[0] % (MAX_Q + 1);
	for (size_t i = 0; i < n; i++) {
		uint16_t off;
		memcpy(&off, data + 1 + 2 * i, 2);
		uint64_t base = (off & 1) ? BRK_BASE : ARENA_BASE;
		q[i] = (struct cq_heap_query){.addr = base + (off >> 1),
		                              .size = data[1 + 32 + i] * 8u};
	}
	qsort(q, n, sizeof(q[0]), cmp_query);
	cq_heap_classify(&mem, q, n);
	for (size_t i = 0; i < n; i++) {
		if ((unsigned)q[i].verdict > CQ_HEAP_TOO_SMALL)
			abort();
		int in_arena = q[i].addr >= ARENA_BASE && q[i].addr < ARENA_BASE + half;
		int in_brk = q[i].addr >= BRK_BASE && q[i].addr < BRK_BASE + (len - half);
		if (!in_arena && !in_brk && q[i].verdict != CQ_HEAP_UNKNOWN)
			abort();
	}
	cq_mem_destroy(&mem);
	free(bytes);
	return 0;
}
