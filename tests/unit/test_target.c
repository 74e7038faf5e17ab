/*
 * test_target.c - lookups over a target's modules (unwind/target.h):
 * cq_target_module_at finds the module whose [start, end) holds an address
 * among modules sorted by start, at both edges, in the gaps between them,
 * before the first and after the last, and in a target with no modules.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "unwind/target.h"

static const struct cq_target_module mods[] = {
    {.name = "a", .start = 0x1000, .end = 0x2000},
    {.name = "b", .start = 0x2000, .end = 0x3000}, /* adjacent to a */
    {.name = "c", .start = 0x8000, .end = 0x9000}, /* after a gap */
    {.name = "d", .start = 0xfffffffffffff000ull, .end = 0xffffffffffffffffull},
};

static void test_module_at(void **state)
{
	(void)state;
	struct cq_unwind_target t = {.modules = mods, .nmodules = 4};
	assert_int_equal(cq_target_module_at(&t, 0), -1);
	assert_int_equal(cq_target_module_at(&t, 0xfff), -1);
	assert_int_equal(cq_target_module_at(&t, 0x1000), 0);
	assert_int_equal(cq_target_module_at(&t, 0x1fff), 0);
	assert_int_equal(cq_target_module_at(&t, 0x2000), 1); /* end is exclusive */
	assert_int_equal(cq_target_module_at(&t, 0x2fff), 1);
	assert_int_equal(cq_target_module_at(&t, 0x3000), -1);
	assert_int_equal(cq_target_module_at(&t, 0x7fff), -1);
	assert_int_equal(cq_target_module_at(&t, 0x8000), 2);
	assert_int_equal(cq_target_module_at(&t, 0x8abc), 2);
	assert_int_equal(cq_target_module_at(&t, 0x9000), -1);
	assert_int_equal(cq_target_module_at(&t, 0xfffffffffffff000ull), 3);
	assert_int_equal(cq_target_module_at(&t, 0xfffffffffffffffeull), 3);
	assert_int_equal(cq_target_module_at(&t, 0xffffffffffffffffull), -1);
}

static void test_every_address_of_many_modules(void **state)
{
	(void)state;
	enum { N = 37 };
	struct cq_target_module m[N];
	for (size_t i = 0; i < N; i++) /* module i: [0x100 * (2i + 1), 0x100 * (2i + 2)) */
		m[i] = (struct cq_target_module){.start = 0x100 * (2 * i + 1),
		                                 .end = 0x100 * (2 * i + 2)};
	struct cq_unwind_target t = {.modules = m, .nmodules = N};
	for (uint64_t a = 0; a < 0x100 * (2 * N + 2); a += 0x40) {
		uint64_t slot = a / 0x100;
		ptrdiff_t want = slot % 2 && slot / 2 < N ? (ptrdiff_t)(slot / 2) : -1;
		assert_int_equal(cq_target_module_at(&t, a), want);
	}
}

static void test_no_modules(void **state)
{
	(void)state;
	struct cq_unwind_target t = {.modules = NULL, .nmodules = 0};
	assert_int_equal(cq_target_module_at(&t, 0), -1);
	assert_int_equal(cq_target_module_at(&t, 0x1000), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_module_at),
	    cmocka_unit_test(test_every_address_of_many_modules),
	    cmocka_unit_test(test_no_modules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
