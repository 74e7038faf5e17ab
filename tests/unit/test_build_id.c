/*
 * test_build_id.c - the one rule for a build-id given as text
 * (libcore/base/build_id.h): 2 to 128 hex digits, an even number, nothing
 * else; the error quotes at most 40 bytes of a bad one, escaped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/base/build_id.h"

static void test_valid_ids(void **state)
{
	(void)state;
	char max[129];
	memset(max, 'f', 128);
	max[128] = '\0';
	static const char *const good[] = {
	    "00", "aB", "0123456789abcdefABCDEF0123456789abcdef01", /* SHA1, mixed case */
	    "d41d8cd98f00b204e9800998ecf8427e",                     /* MD5 */
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_true(cq_build_id_hex_valid(good[i]));
		assert_null(cq_build_id_check(good[i]));
	}
	assert_true(cq_build_id_hex_valid(max));
}

static void test_invalid_ids(void **state)
{
	(void)state;
	char long_id[131];
	memset(long_id, 'a', 130);
	long_id[130] = '\0';
	static const char *const bad[] = {
	    "",      "a",     "abc", "0x12", "12 4", " 123", "gg", "../../etc/passwd",
	    "ab/cd", "ab\n1", "-1",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_false(cq_build_id_hex_valid(bad[i]));
		struct cq_error *err = cq_build_id_check(bad[i]);
		assert_non_null(err);
		assert_int_equal(err->code, CQ_ERR_FORMAT);
		cq_error_free(err);
	}
	assert_false(cq_build_id_hex_valid(long_id));
	assert_false(cq_build_id_hex_valid(NULL));
	struct cq_error *err = cq_build_id_check(NULL);
	assert_int_equal(err->code, CQ_ERR_FORMAT);
	assert_string_equal(err->message, "missing build-id");
	cq_error_free(err);
}

static void test_error_quotes_a_bounded_escaped_prefix(void **state)
{
	(void)state;
	struct cq_error *err = cq_build_id_check("xyz");
	assert_non_null(strstr(err->message, "\"xyz\""));
	cq_error_free(err);
	/* Quotes, backslashes and control bytes never reach the message raw. */
	err = cq_build_id_check("a\"b\\c\n\x1b");
	assert_non_null(strstr(err->message, "\"a\\x22b\\x5cc\\x0a\\x1b\""));
	assert_null(strchr(err->message, '\n'));
	assert_null(strchr(err->message, '\x1b'));
	cq_error_free(err);
	/* 41 bytes and more: the first 40, then "...". */
	char s[200];
	memset(s, 'z', sizeof(s) - 1);
	s[sizeof(s) - 1] = '\0';
	err = cq_build_id_check(s);
	char want[64] = "\"";
	memset(want + 1, 'z', 40);
	strcpy(want + 41, "...\"");
	assert_non_null(strstr(err->message, want));
	assert_true(strlen(err->message) < 120);
	cq_error_free(err);
	/* Exactly 40 bytes: no "...". */
	s[40] = '\0';
	err = cq_build_id_check(s);
	assert_null(strstr(err->message, "..."));
	cq_error_free(err);
	/* 40 bytes that each need escaping fit. */
	memset(s, '\x01', 45);
	s[45] = '\0';
	err = cq_build_id_check(s);
	assert_non_null(strstr(err->message, "\\x01\\x01"));
	assert_non_null(strstr(err->message, "...\""));
	cq_error_free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_valid_ids),
	    cmocka_unit_test(test_invalid_ids),
	    cmocka_unit_test(test_error_quotes_a_bounded_escaped_prefix),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
