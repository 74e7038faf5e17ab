/*
 * test_heap_chunks.c - glibc malloc chunk chains (unwind/async/heap_chunks.h)
 * over heaps laid out by hand as glibc 2.36 lays them out: a main (brk)
 * heap chained from its first byte, a thread arena heap (64 MiB aligned,
 * heap_info and arena before the first chunk), a tcache_perthread_struct
 * whose safe-linked list holds a chunk that still looks in use, and memory
 * that is no heap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/base/memory.h"
#include "unwind/async/heap_chunks.h"

#define MAIN_BASE   0x55550000ull
#define ARENA_BASE  0x7f0004000000ull /* 64 MiB aligned */
#define FIRST_CHUNK 0x8d0u            /* after heap_info (48) and the arena (2200), aligned */
#define HEAP_LEN    0x4000u

static uint8_t main_heap[HEAP_LEN] __attribute__((aligned(16)));
static uint8_t arena_heap[HEAP_LEN] __attribute__((aligned(16)));
static uint8_t not_heap[HEAP_LEN] __attribute__((aligned(16)));

static void put(uint8_t *heap, uint64_t base, uint64_t addr, uint64_t v)
{
	memcpy(heap + (addr - base), &v, 8);
}

/* Lays chunks of the given sizes from first; the last one (the top) runs to the end. */
static void lay(uint8_t *heap, uint64_t base, uint64_t first, const uint64_t *sizes, size_t n,
                uint64_t flags)
{
	uint64_t p = first;
	for (size_t i = 0; i < n; i++) {
		put(heap, base, p + 8, sizes[i] | flags | 1); /* every previous chunk in use */
		p += sizes[i];
	}
	put(heap, base, p + 8, (base + HEAP_LEN - p) | flags | 1); /* top */
}

static struct cq_mem mem;

static int setup(void **state)
{
	(void)state;
	memset(main_heap, 0, sizeof(main_heap));
	memset(arena_heap, 0, sizeof(arena_heap));
	memset(not_heap, 0xa5, sizeof(not_heap));
	/* main heap: a tcache struct, then chunks of 0x30, 0x110, 0x40 (freed to tcache), 0x50 */
	static const uint64_t msizes[] = {0x290, 0x30, 0x110, 0x40, 0x50};
	lay(main_heap, MAIN_BASE, MAIN_BASE, msizes, 5, 0);
	/* the 0x40 chunk at MAIN_BASE + 0x3d0 is on tcache bin 2 (size 0x40) */
	uint64_t tc = MAIN_BASE + 0x10, freed = MAIN_BASE + 0x3d0 + 16;
	uint16_t count = 1;
	memcpy(main_heap + (tc - MAIN_BASE) + 2 * 2, &count, 2);
	put(main_heap, MAIN_BASE, tc + 128 + 8 * 2, freed);
	put(main_heap, MAIN_BASE, freed, 0 ^ (freed >> 12)); /* end of list, safe-linked */
	/* thread arena heap: heap_info.size at +16, chunks of 0x100 and 0x80 */
	put(arena_heap, ARENA_BASE, ARENA_BASE + 16, HEAP_LEN);
	static const uint64_t asizes[] = {0x100, 0x80};
	lay(arena_heap, ARENA_BASE, ARENA_BASE + FIRST_CHUNK, asizes, 2, 4);
	cq_mem_init(&mem);
	assert_null(cq_mem_add(&mem, CQ_MEM_LAYER_CORE, MAIN_BASE, MAIN_BASE + HEAP_LEN, main_heap,
	                       HEAP_LEN, CQ_MEM_READ | CQ_MEM_WRITE));
	assert_null(cq_mem_add(&mem, CQ_MEM_LAYER_CORE, ARENA_BASE, ARENA_BASE + HEAP_LEN,
	                       arena_heap, HEAP_LEN, CQ_MEM_READ | CQ_MEM_WRITE));
	assert_null(cq_mem_add(&mem, CQ_MEM_LAYER_CORE, 0x10000000, 0x10000000 + HEAP_LEN, not_heap,
	                       HEAP_LEN, CQ_MEM_READ | CQ_MEM_WRITE));
	cq_mem_finish(&mem);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	cq_mem_destroy(&mem);
	return 0;
}

static enum cq_heap_verdict one(uint64_t addr, uint64_t size)
{
	struct cq_heap_query q = {.addr = addr, .size = size};
	cq_heap_classify(&mem, &q, 1);
	return q.verdict;
}

static void test_main_heap(void **state)
{
	(void)state;
	uint64_t c30 = MAIN_BASE + 0x290, c110 = c30 + 0x30, c50 = c110 + 0x110 + 0x40;
	assert_int_equal(one(c30 + 16, 0x28), CQ_HEAP_OBJECT); /* usable: 0x30 - 8 */
	assert_int_equal(one(c30 + 16, 0x29), CQ_HEAP_TOO_SMALL);
	assert_int_equal(one(c110 + 16, 0x100), CQ_HEAP_OBJECT);
	assert_int_equal(one(c110 + 16 + 64, 0x10), CQ_HEAP_INSIDE);
	assert_int_equal(one(c110 + 16 + 0x20, 0x10), CQ_HEAP_INSIDE);     /* no Arc counts there */
	assert_int_equal(one(MAIN_BASE + 0x3d0 + 16, 0x20), CQ_HEAP_FREE); /* on the tcache */
	assert_int_equal(one(c50 + 16, 0x40), CQ_HEAP_OBJECT);
	assert_int_equal(one(c50 + 0x50 + 16, 0x10), CQ_HEAP_FREE); /* the top chunk */
}

static void test_arc_value(void **state)
{
	(void)state;
	uint64_t c110 = MAIN_BASE + 0x290 + 0x30;
	put(main_heap, MAIN_BASE, c110 + 16, 1);                /* strong */
	put(main_heap, MAIN_BASE, c110 + 24, 1);                /* weak */
	assert_int_equal(one(c110 + 32, 0xf0), CQ_HEAP_OBJECT); /* 16 + 0xf0 in 0x108 usable */
	assert_int_equal(one(c110 + 32, 0x100), CQ_HEAP_TOO_SMALL);
	/* a smaller value at offset 16 is part of a larger Arc'd struct, not an Arc<T> of it */
	assert_int_equal(one(c110 + 32, 0x40), CQ_HEAP_INSIDE);
	assert_int_equal(one(c110 + 32, 0xe8), CQ_HEAP_INSIDE);
}

static void test_arena_heap_and_batch(void **state)
{
	(void)state;
	uint64_t first = ARENA_BASE + FIRST_CHUNK;
	struct cq_heap_query q[] = {
	    {.addr = 0x10000000 + 0x100, .size = 8},    /* no heap: no verdict */
	    {.addr = ARENA_BASE + 0x40, .size = 8},     /* the arena itself: before the chain */
	    {.addr = first + 16, .size = 0xf0},         /* object */
	    {.addr = first + 0x100 + 16, .size = 0x78}, /* object */
	    {.addr = first + 0x100 + 48, .size = 8},    /* inside */
	    {.addr = first + 0x180 + 16, .size = 8},    /* the top: free */
	};
	cq_heap_classify(&mem, q, sizeof(q) / sizeof(q[0]));
	assert_int_equal(q[0].verdict, CQ_HEAP_UNKNOWN);
	assert_int_equal(q[1].verdict, CQ_HEAP_UNKNOWN);
	assert_int_equal(q[2].verdict, CQ_HEAP_OBJECT);
	assert_int_equal(q[3].verdict, CQ_HEAP_OBJECT);
	assert_int_equal(q[4].verdict, CQ_HEAP_INSIDE);
	assert_int_equal(q[5].verdict, CQ_HEAP_FREE);
}

static void test_broken_chain_gives_no_verdict(void **state)
{
	(void)state;
	uint64_t c110 = MAIN_BASE + 0x290 + 0x30;
	put(main_heap, MAIN_BASE, c110 + 8, 0x7); /* a size of 0: the chain breaks here */
	assert_int_equal(one(MAIN_BASE + 0x290 + 16, 8), CQ_HEAP_UNKNOWN); /* not confirmed */
	assert_int_equal(one(c110 + 16, 8), CQ_HEAP_UNKNOWN);
	assert_int_equal(one(0x20000000, 8), CQ_HEAP_UNKNOWN); /* unmapped */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_main_heap, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_arc_value, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_arena_heap_and_batch, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_broken_chain_gives_no_verdict, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
