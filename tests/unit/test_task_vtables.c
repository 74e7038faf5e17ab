/*
 * test_task_vtables.c - the task vtables and scan candidates tokio and
 * async_task share (unwind/async/task_vtables.h), on synthetic records and
 * chunks: records added out of order and twice come back sorted, one per
 * address, with their range; a lookup finds exactly the added addresses;
 * the scan hands over every word equal to a vtable's address (and only
 * those: not the chunk's overlap word, not a chunk without bytes), in
 * address order; the candidate list stops at its bound without calling it
 * out of memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/base/arch.h"
#include "unwind/async/task_vtables.h"

struct rec {
	uint64_t addr;
	int tag;
};

static const struct cq_unwind_target_ops no_ops = {0};

/* A set of four vtables, added out of order, one twice. */
static void make_set(struct cq_task_vtables *v)
{
	*v = (struct cq_task_vtables){.size = sizeof(struct rec)};
	const struct rec in[] = {{0x3000, 3}, {0x1000, 1}, {0x5000, 5}, {0x1000, 1}, {0x2000, 2}};
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
		assert_true(cq_task_vtables_add(v, &in[i]));
	struct cq_unwind_target t = {.ops = &no_ops, .arch = &cq_arch_x86_64}; /* no modules */
	struct cq_async_ctx ctx = {.target = &t};
	assert_true(cq_task_vtables_find(v, &ctx, NULL, 0, 0, 0, NULL, NULL));
}

static void test_sorted_unique_with_range(void **state)
{
	(void)state;
	struct cq_task_vtables v;
	make_set(&v);
	assert_int_equal(v.n, 4);
	assert_int_equal(v.lo, 0x1000);
	assert_int_equal(v.hi, 0x5000);
	const struct rec *r = v.items;
	for (size_t i = 1; i < v.n; i++)
		assert_true(r[i - 1].addr < r[i].addr);
	const struct rec *at = cq_task_vtables_at(&v, 0x3000);
	assert_non_null(at);
	assert_int_equal(at->tag, 3);
	assert_int_equal(cq_task_vtables_index(&v, at), 2);
	assert_null(cq_task_vtables_at(&v, 0x3008));
	assert_null(cq_task_vtables_at(&v, 0x0fff));
	assert_null(cq_task_vtables_at(&v, 0x5001));
	cq_task_vtables_free(&v);
	assert_null(cq_task_vtables_at(&v, 0x3000));
}

static void found(void *arg, const void *vtable, uint64_t where)
{
	struct cq_task_candidates *c = arg;
	uint64_t *slot = cq_task_candidates_push(c);
	if (slot)
		*slot = where ^ ((const struct rec *)vtable)->addr;
}

static void test_scan_finds_vtable_words(void **state)
{
	(void)state;
	struct cq_task_vtables v;
	make_set(&v);
	/* Words at 0x9000..: the overlap word (a vtable's address, seen by the previous chunk). */
	uint64_t words[] = {0x2000, 7, 0x1000, 0x1008, 0x5000, 0x4000, 0x3000, 0};
	struct cq_async_chunk c = {
	    .addr = 0x9000, .data = (const uint8_t *)words, .len = sizeof(words), .overlap = 8};
	struct cq_task_candidates cands = {.size = sizeof(uint64_t), .max = 1024};
	cq_task_vtables_scan(&v, &cands, &c, found, &cands);
	assert_int_equal(cands.n, 3);
	const uint64_t *got = cands.items;
	assert_int_equal(got[0], 0x9010 ^ 0x1000);
	assert_int_equal(got[1], 0x9020 ^ 0x5000);
	assert_int_equal(got[2], 0x9030 ^ 0x3000);
	assert_false(cands.full);
	/* A chunk known to hold no such word comes without its bytes. */
	c.data = NULL;
	cq_task_vtables_scan(&v, &cands, &c, found, &cands);
	assert_int_equal(cands.n, 3);
	cq_task_candidates_free(&cands);
	cq_task_vtables_free(&v);
}

static void test_candidates_bounded(void **state)
{
	(void)state;
	struct cq_task_vtables v;
	make_set(&v);
	uint64_t words[200];
	for (size_t i = 0; i < 200; i++)
		words[i] = 0x1000;
	struct cq_async_chunk c = {
	    .addr = 0x10000, .data = (const uint8_t *)words, .len = sizeof(words)};
	struct cq_task_candidates cands = {.size = sizeof(uint64_t), .max = 128};
	cq_task_vtables_scan(&v, &cands, &c, found, &cands);
	assert_int_equal(cands.n, 128); /* 64, then 128; a third doubling is over the bound */
	assert_true(cands.full);
	assert_false(cands.nomem);
	assert_null(cq_task_candidates_push(&cands));
	cq_task_vtables_scan(&v, &cands, &c, found, &cands); /* full: nothing more */
	assert_int_equal(cands.n, 128);
	cq_task_candidates_free(&cands);
	cq_task_vtables_free(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sorted_unique_with_range),
	    cmocka_unit_test(test_scan_finds_vtable_words),
	    cmocka_unit_test(test_candidates_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
