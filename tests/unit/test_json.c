/*
 * test_json.c - the JSON writer (libcore/base/json.h): separators and nesting,
 * escaping, and bytes from cores that are not valid UTF-8, which must still
 * come out as valid JSON.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/base/json.h"

struct capture {
	char *buf;
	size_t len;
	FILE *f;
	struct cq_json j;
};

static void open_capture(struct capture *c)
{
	c->buf = NULL;
	c->len = 0;
	c->f = open_memstream(&c->buf, &c->len);
	assert_non_null(c->f);
	cq_json_init(&c->j, c->f);
}

static const char *close_capture(struct capture *c)
{
	cq_json_flush(&c->j);
	fclose(c->f);
	return c->buf;
}

static void check_string(const char *in, size_t len, const char *want)
{
	struct capture c;
	open_capture(&c);
	cq_json_string_len(&c.j, in, len);
	assert_string_equal(close_capture(&c), want);
	free(c.buf);
}

static void test_nesting_and_commas(void **state)
{
	(void)state;
	struct capture c;
	open_capture(&c);
	cq_json_object_begin(&c.j);
	cq_json_key(&c.j, "a");
	cq_json_array_begin(&c.j);
	cq_json_int(&c.j, -1);
	cq_json_uint(&c.j, 18446744073709551615ull);
	cq_json_object_begin(&c.j);
	cq_json_object_end(&c.j);
	cq_json_array_end(&c.j);
	cq_json_key(&c.j, "b");
	cq_json_hex(&c.j, 0x7f00);
	cq_json_key(&c.j, "c");
	cq_json_null(&c.j);
	cq_json_key(&c.j, "d");
	cq_json_bool(&c.j, true);
	cq_json_key(&c.j, "e");
	cq_json_string(&c.j, NULL);
	cq_json_object_end(&c.j);
	cq_json_finish(&c.j);
	assert_string_equal(close_capture(&c),
	                    "{\"a\":[-1,18446744073709551615,{}],\"b\":\"0x7f00\","
	                    "\"c\":null,\"d\":true,\"e\":null}\n");
	free(c.buf);
}

static void test_escapes(void **state)
{
	(void)state;
	check_string("a\"b\\c", 5, "\"a\\\"b\\\\c\"");
	check_string("l1\nl2\tx", 7, "\"l1\\nl2\\tx\"");
	check_string("\x01\x1f\x7f", 3, "\"\\u0001\\u001f\\u007f\"");
	check_string("nul\0in", 6, "\"nul\\u0000in\"");
}

static void test_utf8(void **state)
{
	(void)state;
	check_string("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14,
	             "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
	/* Invalid: a lone continuation byte, a truncated sequence, an overlong
	 * encoding, a surrogate.  Each bad byte becomes \u00XX. */
	check_string("\x80", 1, "\"\\u0080\"");
	check_string("a\xe2\x82", 3, "\"a\\u00e2\\u0082\"");
	check_string("\xc0\xaf", 2, "\"\\u00c0\\u00af\"");
	check_string("\xed\xa0\x80", 3, "\"\\u00ed\\u00a0\\u0080\"");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nesting_and_commas),
	    cmocka_unit_test(test_escapes),
	    cmocka_unit_test(test_utf8),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
