/*
 * test_async_runtimes.c - the async-runtime driver (unwind/async/runtime.h)
 * on a synthetic core: a program that uses no runtime is detected as such
 * (no state, nothing kept, nothing scanned, no suspended stack), and the
 * suspended list honours its bound, freeing what it does not take.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/analysis/stacktrace.h"
#include "libcore/base/arch.h"
#include "libcore/model/core.h"
#include "unwind/async/runtime.h"

static uint8_t heap[1 << 16];

static void test_a_program_without_runtimes_costs_nothing(void **state)
{
	(void)state;
	struct cq_core core;
	memset(&core, 0, sizeof(core));
	core.arch = &cq_arch_x86_64;
	cq_mem_init(&core.mem);
	assert_null(cq_mem_add(&core.mem, CQ_MEM_LAYER_CORE, 0x100000, 0x100000 + sizeof(heap),
	                       heap, sizeof(heap), CQ_MEM_READ | CQ_MEM_WRITE));
	cq_mem_finish(&core.mem);
	struct cq_stack_options o;
	cq_stack_options_default(&o);
	struct cq_stacks stacks;
	memset(&stacks, 0, sizeof(stacks));
	struct cq_async_ctx ctx = {.core = &core, .options = &o, .stacks = &stacks};
	struct cq_async_states *states = NULL;
	bool native = true;
	assert_null(cq_async_detect(&ctx, &states, &native));
	assert_non_null(states);
	assert_false(native);
	assert_null(cq_async_stacks(&ctx, states));
	assert_int_equal(stacks.nsuspended, 0);
	assert_false(stacks.async.folly);
	assert_false(stacks.async.scanned);
	assert_int_equal(stacks.async.rust.scan_bytes, 0);
	assert_true(ctx.scan_seconds == 0);
	cq_async_states_free(states);
	cq_mem_destroy(&core.mem);
}

static void test_suspended_list_is_bounded(void **state)
{
	(void)state;
	struct cq_stack_options o;
	cq_stack_options_default(&o);
	o.max_suspended = 2;
	struct cq_stacks stacks;
	memset(&stacks, 0, sizeof(stacks));
	struct cq_async_ctx ctx = {.options = &o, .stacks = &stacks};
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_program_without_runtimes_costs_nothing),
	    cmocka_unit_test(test_suspended_list_is_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
