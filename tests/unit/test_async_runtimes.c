/*
 * test_async_runtimes.c - the async-runtime driver (unwind/async/runtime.h)
 * on a synthetic target (no core: memory and an empty module list, through
 * struct cq_unwind_target alone): a program that uses no runtime is
 * detected as such (no state, nothing kept, nothing scanned, no suspended
 * stack) and every runtime still reports its statistics' keys; the
 * suspended list honours its bound, freeing what it does not take; every
 * runtime's descriptor names its kinds and how they are listed.
 *
 * Files tested: unwind/async/runtimes.c, unwind/async/stub.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/base/arch.h"
#include "libcore/base/memory.h"
#include "unwind/async/runtime.h"

static uint8_t heap[1 << 16];

static void test_a_program_without_runtimes_costs_nothing(void **state)
{
	(void)state;
	struct cq_mem mem;
	cq_mem_init(&mem);
	assert_null(cq_mem_add(&mem, CQ_MEM_LAYER_CORE, 0x100000, 0x100000 + sizeof(heap), heap,
	                       sizeof(heap), CQ_MEM_READ | CQ_MEM_WRITE));
	cq_mem_finish(&mem);
	static const struct cq_unwind_target_ops no_ops = {0};
	struct cq_unwind_target t = {.ops = &no_ops, .arch = &cq_arch_x86_64, .mem = &mem};
	struct cq_unwind_options uo;
	cq_unwind_options_default(&uo);
	struct cq_stacks stacks;
	memset(&stacks, 0, sizeof(stacks));
	struct cq_async_ctx ctx = {
	    .target = &t, .unwind = &uo, .max_suspended = 16, .stacks = &stacks};
	struct cq_async_states *states = NULL;
	bool native = true;
	assert_null(cq_async_detect(&ctx, &states, &native));
	assert_non_null(states);
	assert_false(native);
	assert_null(cq_async_stacks(&ctx, states));
	assert_int_equal(stacks.nsuspended, 0);
	const struct cq_stat *folly = cq_stats_find(&stacks.async, "folly");
	const struct cq_stat *scanned = cq_stats_find(&stacks.async, "scanned");
	const struct cq_stat *rust = cq_stats_find(&stacks.async, "rust_scanned_bytes");
	const struct cq_stat *tokio = cq_stats_find(&stacks.async, "tokio_tasks");
	assert_true(folly && folly->type == CQ_STAT_BOOL && !folly->b);
	assert_true(scanned && scanned->type == CQ_STAT_BOOL && !scanned->b);
	assert_true(rust && rust->type == CQ_STAT_UINT && rust->u == 0);
	assert_true(tokio && tokio->type == CQ_STAT_UINT && tokio->u == 0);
	assert_null(cq_stats_find(&stacks.async, "rust_rejected_unmapped")); /* nested, not top */
	assert_int_equal(stacks.warnings.n, 0);
	assert_true(ctx.scan_seconds == 0);
	cq_async_states_free(states);
	cq_stats_free(&stacks.async);
	cq_stats_free(&stacks.warnings);
	cq_mem_destroy(&mem);
}

static void test_suspended_list_is_bounded(void **state)
{
	(void)state;
	struct cq_stacks stacks;
	memset(&stacks, 0, sizeof(stacks));
	struct cq_async_ctx ctx = {.max_suspended = 2, .stacks = &stacks};
	for (int i = 0; i < 3; i++) {
		struct cq_suspended_stack s = {.kind = "test", .leaf = (uint64_t)i + 1};
		s.frames = calloc(2, sizeof(*s.frames));
		s.nframes = 2;
		bool added = false;
		assert_null(cq_async_add_suspended(&ctx, &s, &added));
		assert_int_equal(added, i < 2); /* the third is over the bound; its frames freed */
	}
	assert_int_equal(stacks.nsuspended, 2);
	assert_int_equal(stacks.suspended[1].leaf, 2);
	for (size_t i = 0; i < stacks.nsuspended; i++)
		free(stacks.suspended[i].frames);
	free(stacks.suspended);
}

/* Each descriptor carries what the commands print it by: kinds, listing, heading, nouns. */
static void test_descriptors_are_complete(void **state)
{
	(void)state;
	size_t n;
	const struct cq_async_runtime *const *rts = cq_async_runtimes(&n);
	assert_true(n >= 3);
	for (size_t i = 0; i < n; i++) {
		const struct cq_async_runtime *rt = rts[i];
		assert_non_null(rt->name);
		assert_non_null(rt->kinds);
		assert_non_null(rt->kinds[0]);
		assert_non_null(rt->heading);
		if (rt->listing == CQ_ASYNC_LIST_CHAINS) {
			assert_non_null(rt->noun);
			assert_non_null(rt->leaf);
		}
		assert_non_null(rt->detect);
		assert_non_null(rt->report);
		assert_non_null(rt->destroy);
		for (size_t j = 0; j < i; j++) /* a kind belongs to one runtime */
			for (size_t a = 0; rt->kinds[a]; a++)
				for (size_t b = 0; rts[j]->kinds[b]; b++)
					assert_string_not_equal(rt->kinds[a], rts[j]->kinds[b]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_program_without_runtimes_costs_nothing),
	    cmocka_unit_test(test_suspended_list_is_bounded),
	    cmocka_unit_test(test_descriptors_are_complete),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
