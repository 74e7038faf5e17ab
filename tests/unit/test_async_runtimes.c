/*
 * test_async_runtimes.c - the async-runtime driver (unwind/async/runtime.h)
 * on a synthetic target (no core: memory and an empty module list, through
 * struct cq_unwind_target alone): a program that uses no runtime is
 * detected as such (no state, nothing kept, nothing scanned, no suspended
 * stack) and every runtime still reports its statistics' keys; the
 * suspended list honours its bound, freeing what it does not take; every
 * runtime's descriptor names its kinds and how they are listed.
 *
 * Files tested: unwind/async/runtime_driver.c, unwind/async/runtime_table.c,
 * unwind/async/runtime_services.c, unwind/async/stub.c (every runtime of the
 * table, the test-only one too).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <elfutils/libdw.h>

#include "libcore/analysis/unwind_target.h"
#include "libcore/base/arch.h"
#include "libcore/base/memory.h"
#include "libcore/model/module.h"
#include "tests/unit/corpus.h"
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

/* Each declared blob names its own runtime, once, with a format. */
static void test_blobs_are_declared(void **state)
{
	(void)state;
	size_t n;
	const struct cq_async_runtime *const *rts = cq_async_runtimes(&n);
	for (size_t i = 0; i < n; i++) {
		const struct cq_async_runtime *rt = rts[i];
		size_t nb = 0;
		for (; rt->blobs && rt->blobs[nb]; nb++) {
			const struct cq_target_blob *b = rt->blobs[nb];
			assert_string_equal(b->runtime, rt->name);
			assert_non_null(b->name);
			assert_true(b->format > 0);
			for (size_t k = 0; k < nb; k++)
				assert_string_not_equal(rt->blobs[k]->name, b->name);
		}
		if (rt->warm) /* warming is filling the cache: there is something to fill */
			assert_true(nb > 0);
	}
}

/* A target over one file that records which blobs the runtimes ask for and store. */
struct recorder {
	struct cq_module mod;
	Dwarf *dwarf;
	bool tried;
	size_t gets, puts, undeclared;
};

static bool declared(const struct cq_target_blob *b)
{
	size_t n;
	const struct cq_async_runtime *const *rts = cq_async_runtimes(&n);
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; rts[i]->blobs && rts[i]->blobs[k]; k++)
			if (rts[i]->blobs[k] == b)
				return true;
	return false;
}

static struct Dwarf *rec_dwarf(void *ctx, size_t m)
{
	(void)m;
	struct recorder *r = ctx;
	if (!r->tried)
		r->dwarf = dwarf_begin_elf(r->mod.elf, DWARF_C_READ, NULL);
	r->tried = true;
	return r->dwarf;
}

static uint8_t *rec_get(void *ctx, size_t m, const struct cq_target_blob *b, size_t *len)
{
	(void)m, (void)len;
	struct recorder *r = ctx;
	r->gets++;
	r->undeclared += !declared(b);
	return NULL;
}

static void rec_put(void *ctx, size_t m, const struct cq_target_blob *b, const uint8_t *data,
                    size_t len)
{
	(void)m, (void)data, (void)len;
	struct recorder *r = ctx;
	r->puts++;
	r->undeclared += !declared(b);
}

static size_t rec_symbols(void *ctx, size_t m, struct cq_target_symbol *q, size_t n)
{
	(void)m;
	return cq_core_target_find_symbols(&((struct recorder *)ctx)->mod, q, n);
}

static const struct cq_unwind_target_ops rec_ops = {
    .dwarf = rec_dwarf, .cache_get = rec_get, .cache_put = rec_put, .find_symbols = rec_symbols};

static void warm_records(const char *exe, struct recorder *r)
{
	memset(r, 0, sizeof(*r));
	assert_null(cq_module_open_elf(exe, &r->mod));
	struct cq_target_module view = cq_core_target_module_view(&r->mod);
	view.found = true;
	struct cq_unwind_target t = {
	    .ops = &rec_ops, .ctx = r, .arch = &cq_arch_x86_64, .modules = &view, .nmodules = 1};
	struct cq_stats figures = {0};
	char *text = NULL;
	assert_null(cq_async_warm(&t, 0, &figures, &text));
	free(text);
	cq_stats_free(&figures);
	if (r->dwarf)
		dwarf_end(r->dwarf);
	cq_module_destroy(&r->mod);
}

static void test_warm_uses_declared_blobs(void **state)
{
	(void)state;
	const char *cases[] = {"rust_async.O2", "stub_chain.O0", "cxx_task.O2g"};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct corpus_case c;
		CORPUS_CASE(cases[i], &c);
		struct recorder r;
		warm_records(c.exe, &r);
		assert_true(r.gets > 0);
		assert_true(r.puts > 0);
		assert_int_equal(r.undeclared, 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_program_without_runtimes_costs_nothing),
	    cmocka_unit_test(test_suspended_list_is_bounded),
	    cmocka_unit_test(test_descriptors_are_complete),
	    cmocka_unit_test(test_blobs_are_declared),
	    cmocka_unit_test(test_warm_uses_declared_blobs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
