/*
 * test_base.c - the base layer's small shared pieces: strict number parsing
 * (libcore/base/parse.h), the FNV-1a hash whose values are stored in
 * databases (libcore/base/hash.h), the monotonic clock (clock.h), and the
 * rule for a build-id given as text (build_id.h), and tables sorted by a
 * leading address (addr_table.h).
 *
 * Files tested: libcore/base/parse.c, libcore/base/addr_table.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <stdlib.h>

#include "libcore/base/addr_table.h"
#include "libcore/base/build_id.h"
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

static void test_build_id_text(void **state)
{
	(void)state;
	char longest[CQ_BUILD_ID_HEX_MAX + 2];
	memset(longest, 'a', CQ_BUILD_ID_HEX_MAX);
	longest[CQ_BUILD_ID_HEX_MAX] = '\0';
	assert_true(cq_build_id_hex_valid("ab"));
	assert_true(cq_build_id_hex_valid("0123456789abcdefABCDEF0123456789abcdef01"));
	assert_true(cq_build_id_hex_valid(longest));
	static const char *const bad[] = {"",      "a",    "abc",  "zz",   "../../x", "ab/cd",
	                                  "ab cd", "ab\n", "0x12", "-1ab", NULL};
	for (size_t i = 0; bad[i]; i++) {
		assert_false(cq_build_id_hex_valid(bad[i]));
		struct cq_error *err = cq_build_id_check(bad[i]);
		assert_non_null(err);
		assert_int_equal(err->code, CQ_ERR_FORMAT);
		cq_error_free(err);
	}
	assert_false(cq_build_id_hex_valid(NULL));
	longest[CQ_BUILD_ID_HEX_MAX] = 'a';
	longest[CQ_BUILD_ID_HEX_MAX + 1] = '\0';
	assert_false(cq_build_id_hex_valid(longest)); /* 129 digits */
	assert_null(cq_build_id_check("ABcd"));

	/* A hostile id is quoted escaped and cut. */
	struct cq_error *err = cq_build_id_check("\x1b[31m\"x\"");
	assert_string_equal(err->message,
	                    "bad build-id \"\\x1b[31m\\x22x\\x22\" (want 2 to 128 hex digits)");
	cq_error_free(err);

	uint8_t id[4];
	size_t len = 99;
	assert_true(cq_build_id_from_hex("0aFf10", id, sizeof(id), &len));
	assert_int_equal(len, 3);
	assert_int_equal(id[0], 0x0a);
	assert_int_equal(id[1], 0xff);
	assert_int_equal(id[2], 0x10);
	assert_false(cq_build_id_from_hex("0011223344", id, sizeof(id), &len)); /* 5 bytes > 4 */
	assert_false(cq_build_id_from_hex("../x", id, sizeof(id), &len));
	assert_int_equal(len, 3);
}

/* Elements that start with their address: sorted, then each found; absent ones are not. */
static void test_addr_table(void **state)
{
	(void)state;
	struct lock {
		uint64_t addr;
		int tag;
	} l[] = {{0xffffffffffff0000u, 1}, {0x10, 2}, {0x7f0000001000, 3}, {0x18, 4}, {0, 5}};
	size_t n = sizeof(l) / sizeof(l[0]);
	qsort(l, n, sizeof(l[0]), cq_addr_order);
	for (size_t i = 1; i < n; i++)
		assert_true(l[i - 1].addr < l[i].addr);
	struct lock *f = cq_addr_find(l, n, sizeof(l[0]), 0x7f0000001000);
	assert_non_null(f);
	assert_int_equal(f->tag, 3);
	assert_int_equal(((struct lock *)cq_addr_find(l, n, sizeof(l[0]), 0))->tag, 5);
	assert_null(cq_addr_find(l, n, sizeof(l[0]), 0x11));
	assert_null(cq_addr_find(l, 0, sizeof(l[0]), 0x10));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_decimal_and_hex),
	    cmocka_unit_test(test_parse_refuses_what_is_not_a_number),
	    cmocka_unit_test(test_fnv1a_known_values),
	    cmocka_unit_test(test_clock_is_monotonic),
	    cmocka_unit_test(test_build_id_text),
	    cmocka_unit_test(test_addr_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
