/*
 * test_crash_message.c - the crash message a store keeps (libcore/store/
 * crash_message.h): NULL for none, kept whole up to 1024 bytes, a longer one
 * cut to 1024 bytes at a character boundary and ending in " [cut]"; and the
 * kept bytes, which are the core's, escaped as text output shows them
 * (text.h) and written as valid UTF-8 in JSON (json.h).
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
#include "libcore/base/text.h"
#include "libcore/store/crash_message.h"

#define MARK     CQ_CRASH_MESSAGE_CUT
#define MARK_LEN (sizeof(CQ_CRASH_MESSAGE_CUT) - 1)

/* True when s is valid UTF-8 throughout. */
static bool valid_utf8(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s);
	for (size_t i = 0; i < n;) {
		size_t seq = cq_utf8_sequence(u + i, n - i);
		if (!seq)
			return false;
		i += seq;
	}
	return true;
}

/* n copies of unit (a string) into a malloc'd string. */
static char *repeat(const char *unit, size_t n)
{
	size_t len = strlen(unit);
	char *s = malloc(len * n + 1);
	assert_non_null(s);
	for (size_t i = 0; i < n; i++)
		memcpy(s + i * len, unit, len);
	s[len * n] = '\0';
	return s;
}

static void test_none(void **state)
{
	(void)state;
	char out[CQ_CRASH_MESSAGE_MAX + 1];
	assert_null(cq_crash_message_bound(NULL, out, sizeof(out)));
	assert_null(cq_crash_message_bound("", out, sizeof(out)));
}

static void test_short_kept(void **state)
{
	(void)state;
	char out[CQ_CRASH_MESSAGE_MAX + 1];
	const char *m = "panic: assignment to entry in nil map";
	assert_string_equal(cq_crash_message_bound(m, out, sizeof(out)), m);
	/* exactly the bound: kept whole, no marker */
	char *full = repeat("x", CQ_CRASH_MESSAGE_MAX);
	assert_string_equal(cq_crash_message_bound(full, out, sizeof(out)), full);
	free(full);
}

static void test_long_cut(void **state)
{
	(void)state;
	char out[CQ_CRASH_MESSAGE_MAX + 1];
	char *m = repeat("y", CQ_CRASH_MESSAGE_MAX + 1);
	const char *got = cq_crash_message_bound(m, out, sizeof(out));
	assert_non_null(got);
	assert_int_equal(strlen(got), CQ_CRASH_MESSAGE_MAX);
	assert_memory_equal(got, m, CQ_CRASH_MESSAGE_MAX - MARK_LEN);
	assert_string_equal(got + CQ_CRASH_MESSAGE_MAX - MARK_LEN, MARK);
	free(m);
	/* a megabyte of message: still 1024 bytes */
	m = repeat("z", 1 << 20);
	got = cq_crash_message_bound(m, out, sizeof(out));
	assert_int_equal(strlen(got), CQ_CRASH_MESSAGE_MAX);
	free(m);
}

/* A cut never splits a character: 3-byte characters do not divide the room. */
static void test_cut_at_character(void **state)
{
	(void)state;
	char out[CQ_CRASH_MESSAGE_MAX + 1];
	char *m = repeat("\xe2\x82\xac", 400); /* U+20AC, 1200 bytes */
	const char *got = cq_crash_message_bound(m, out, sizeof(out));
	size_t room = CQ_CRASH_MESSAGE_MAX - MARK_LEN, keep = room / 3 * 3;
	assert_int_equal(strlen(got), keep + MARK_LEN);
	assert_true(keep < room); /* 1018 is not a multiple of 3 */
	assert_memory_equal(got, m, keep);
	assert_string_equal(got + keep, MARK);
	assert_true(valid_utf8(got));
	free(m);
	/* invalid bytes count one each */
	m = repeat("\xff", 2000);
	got = cq_crash_message_bound(m, out, sizeof(out));
	assert_int_equal(strlen(got), CQ_CRASH_MESSAGE_MAX);
	free(m);
}

/* A smaller buffer bounds the message to it. */
static void test_small_buffer(void **state)
{
	(void)state;
	char out[10];
	assert_string_equal(cq_crash_message_bound("ValueError: bad job 7", out, sizeof(out)),
	                    "Val" MARK);
	assert_string_equal(cq_crash_message_bound("KeyError", out, sizeof(out)), "KeyError");
	char tiny[4];
	assert_null(cq_crash_message_bound("ValueError", tiny, sizeof(tiny)));
}

/* What the core says is shown, not obeyed: escaped in text, valid UTF-8 in JSON. */
static void test_escaped(void **state)
{
	(void)state;
	char out[CQ_CRASH_MESSAGE_MAX + 1];
	const char *m = "panic: a\nforged line\x1b[31m red \xff\xfe caf\xc3\xa9";
	const char *kept = cq_crash_message_bound(m, out, sizeof(out));
	assert_string_equal(kept, m); /* the store keeps the core's bytes */
	char *buf = NULL;
	size_t cap = 0;
	assert_string_equal(cq_text_escape(kept, &buf, &cap),
	                    "panic: a\\nforged line\\x1b[31m red \\xff\\xfe caf\xc3\xa9");
	free(buf);

	char *json = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&json, &len);
	assert_non_null(f);
	struct cq_json j;
	cq_json_init(&j, f);
	cq_json_string(&j, kept);
	cq_json_finish(&j); /* ends the line */
	fclose(f);
	assert_string_equal(
	    json, "\"panic: a\\nforged line\\u001b[31m red \\u00ff\\u00fe caf\xc3\xa9\"\n");
	assert_true(valid_utf8(json));
	free(json);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_none),         cmocka_unit_test(test_short_kept),
	    cmocka_unit_test(test_long_cut),     cmocka_unit_test(test_cut_at_character),
	    cmocka_unit_test(test_small_buffer), cmocka_unit_test(test_escaped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
