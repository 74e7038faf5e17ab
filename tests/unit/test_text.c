/*
 * test_text.c - strings from a core made safe to print (libcore/base/text.h).
 *
 * UTF-8 validity is checked against the rules of RFC 3629 (shortest form
 * only, no surrogates, nothing past U+10FFFF) with byte sequences written
 * out by hand; escaping against the header's table (\n, \t, \r, else \xNN
 * for control bytes, DEL and bytes of invalid UTF-8).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/base/text.h"

static size_t seq(const char *s, size_t n)
{
	return cq_utf8_sequence((const unsigned char *)s, n);
}

static void test_utf8_sequences(void **state)
{
	(void)state;
	assert_int_equal(seq("a", 1), 1);
	assert_int_equal(seq("\x7f", 1), 1);
	assert_int_equal(seq("\xc3\xa9", 2), 2);         /* U+00E9 */
	assert_int_equal(seq("\xc2\x80", 2), 2);         /* U+0080, the smallest 2-byte */
	assert_int_equal(seq("\xe2\x82\xac", 3), 3);     /* U+20AC */
	assert_int_equal(seq("\xef\xbf\xbf", 3), 3);     /* U+FFFF */
	assert_int_equal(seq("\xf0\x9d\x84\x9e", 4), 4); /* U+1D11E */
	assert_int_equal(seq("\xf4\x8f\xbf\xbf", 4), 4); /* U+10FFFF, the last */
	/* Overlong forms. */
	assert_int_equal(seq("\xc0\x80", 2), 0);
	assert_int_equal(seq("\xc1\xbf", 2), 0);
	assert_int_equal(seq("\xe0\x80\x80", 3), 0);
	assert_int_equal(seq("\xe0\x9f\xbf", 3), 0);
	assert_int_equal(seq("\xf0\x80\x80\x80", 4), 0);
	assert_int_equal(seq("\xf0\x8f\xbf\xbf", 4), 0);
	/* Surrogates, and past U+10FFFF. */
	assert_int_equal(seq("\xed\xa0\x80", 3), 0);
	assert_int_equal(seq("\xed\xbf\xbf", 3), 0);
	assert_int_equal(seq("\xed\x9f\xbf", 3), 3); /* U+D7FF is fine */
	assert_int_equal(seq("\xf4\x90\x80\x80", 4), 0);
	assert_int_equal(seq("\xf7\xbf\xbf\xbf", 4), 0);
	/* A stray continuation byte, 5- and 6-byte leads, 0xfe, 0xff. */
	assert_int_equal(seq("\x80", 1), 0);
	assert_int_equal(seq("\xbf", 1), 0);
	assert_int_equal(seq("\xf8\x88\x80\x80\x80", 5), 0);
	assert_int_equal(seq("\xfc\x84\x80\x80\x80\x80", 6), 0);
	assert_int_equal(seq("\xfe", 1), 0);
	assert_int_equal(seq("\xff", 1), 0);
	/* Cut short by n, or by a byte that is no continuation. */
	assert_int_equal(seq("\xe2\x82\xac", 2), 0);
	assert_int_equal(seq("\xf0\x9d\x84\x9e", 3), 0);
	assert_int_equal(seq("\xe2\x28\xac", 3), 0);
	assert_int_equal(seq("\xc3\xc3", 2), 0);
}

static void test_safe_text(void **state)
{
	(void)state;
	assert_true(cq_text_is_safe(""));
	assert_true(cq_text_is_safe("/usr/lib/libc.so.6 (deleted)"));
	assert_true(cq_text_is_safe("caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e ~"));
	assert_false(cq_text_is_safe("a\nb"));
	assert_false(cq_text_is_safe("tab\there"));
	assert_false(cq_text_is_safe("\x1b[31mred"));
	assert_false(cq_text_is_safe("del\x7f"));
	assert_false(cq_text_is_safe("latin1 caf\xe9"));
	assert_false(cq_text_is_safe("\xed\xa0\x80"));
}

static void escapes(const char *s, const char *want)
{
	char *buf = NULL;
	size_t cap = 0;
	const char *got = cq_text_escape(s, &buf, &cap);
	assert_string_equal(got, want);
	free(buf);
}

static void test_escaping(void **state)
{
	(void)state;
	/* Safe text is returned as it is, without a copy. */
	char *buf = NULL;
	size_t cap = 0;
	const char *s = "fine \xc3\xa9";
	assert_ptr_equal(cq_text_escape(s, &buf, &cap), s);
	assert_null(buf);
	assert_null(cq_text_escape(NULL, &buf, &cap));

	escapes("a\nb\tc\rd", "a\\nb\\tc\\rd");
	escapes("\x1b[2J", "\\x1b[2J");
	escapes("\x01\x1f\x7f", "\\x01\\x1f\\x7f");
	escapes("caf\xe9!", "caf\\xe9!");
	escapes("\xc3\xa9\xff\xc3\xa9", "\xc3\xa9\\xff\xc3\xa9");
	escapes("\xc0\xaf", "\\xc0\\xaf");
	escapes("\xed\xa0\x80x", "\\xed\\xa0\\x80x");
	escapes("\xe2\x82", "\\xe2\\x82");
	/* A backslash is printable and stays as it is. */
	escapes("a\\n\n", "a\\n\\n");
}

static void test_escape_buffer_is_reused_and_grown(void **state)
{
	(void)state;
	char *buf = NULL;
	size_t cap = 0;
	assert_string_equal(cq_text_escape("\n", &buf, &cap), "\\n");
	assert_non_null(buf);
	size_t small = cap;
	assert_true(small >= 3);
	/* Every byte escaped takes four: the buffer grows to fit. */
	char longer[300];
	memset(longer, '\x02', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	const char *got = cq_text_escape(longer, &buf, &cap);
	assert_int_equal(strlen(got), 4 * (sizeof(longer) - 1));
	for (size_t i = 0; i < sizeof(longer) - 1; i++)
		assert_memory_equal(got + 4 * i, "\\x02", 4);
	assert_true(cap > small);
	/* A shorter one afterwards is written into the same buffer. */
	char *before = buf;
	assert_ptr_equal(cq_text_escape("\t", &buf, &cap), before);
	assert_string_equal(buf, "\\t");
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_utf8_sequences),
	    cmocka_unit_test(test_safe_text),
	    cmocka_unit_test(test_escaping),
	    cmocka_unit_test(test_escape_buffer_is_reused_and_grown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
