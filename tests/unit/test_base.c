/*
 * test_base.c - the base layer's small shared pieces: strict number parsing
 * (libcore/base/parse.h), the FNV-1a hash whose values are stored in
 * databases (libcore/base/hash.h), and the monotonic clock (clock.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/base/clock.h"
#include "libcore/base/hash.h"
#include "libcore/base/parse.h"

static void test_parse_decimal_and_hex(void **state)
{
	(void)state;
	uint64_t v = 7;
	assert_int_equal(cq_parse_u64("0", false, &v), CQ_PARSE_OK);
	assert_int_equal(v, 0);
	assert_int_equal(cq_parse_u64("18446744073709551615", false, &v), CQ_PARSE_OK);
	assert_true(v == UINT64_MAX);
	assert_int_equal(cq_parse_u64("0x1f", true, &v), CQ_PARSE_OK);
	assert_int_equal(v, 31);
	assert_int_equal(cq_parse_u64("0X1F", true, &v), CQ_PARSE_OK);
	assert_int_equal(v, 31);
	/* Without allow_hex, 0x is a stray character. */
	v = 5;
	assert_int_equal(cq_parse_u64("0x1f", false, &v), CQ_PARSE_SYNTAX);
	assert_int_equal(v, 5);
}

static void test_parse_refuses_what_is_not_a_number(void **state)
{
	(void)state;
	static const char *const bad[] = {"", "-1", "+1", " 1", "1 ", "12a", "0x", "0x-1", "\t3"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t v = 42;
		assert_int_equal(cq_parse_u64(bad[i], true, &v), CQ_PARSE_SYNTAX);
		assert_int_equal(v, 42);
	}
	uint64_t v = 42;
	assert_int_equal(cq_parse_u64("18446744073709551616", false, &v), CQ_PARSE_RANGE);
	assert_int_equal(cq_parse_u64("0x10000000000000000", true, &v), CQ_PARSE_RANGE);
	assert_int_equal(v, 42);
}

static void test_fnv1a_known_values(void **state)
{
	(void)state;
	/* The published FNV-1a 64-bit test vectors. */
	assert_true(cq_fnv1a(CQ_FNV_OFFSET, "", 0) == 0xcbf29ce484222325ull);
	assert_true(cq_fnv1a(CQ_FNV_OFFSET, "a", 1) == 0xaf63dc4c8601ec8cull);
	assert_true(cq_fnv1a(CQ_FNV_OFFSET, "foobar", 6) == 0x85944171f73967e8ull);
	/* Folding in pieces equals hashing the whole. */
	assert_true(cq_fnv1a(cq_fnv1a(CQ_FNV_OFFSET, "foo", 3), "bar", 3) ==
	            cq_fnv1a(CQ_FNV_OFFSET, "foobar", 6));
}

static void test_clock_is_monotonic(void **state)
{
	(void)state;
	double a = cq_clock_seconds(), b = cq_clock_seconds();
	assert_true(a > 0);
	assert_true(b >= a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_decimal_and_hex),
	    cmocka_unit_test(test_parse_refuses_what_is_not_a_number),
	    cmocka_unit_test(test_fnv1a_known_values),
	    cmocka_unit_test(test_clock_is_monotonic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
