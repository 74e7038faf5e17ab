/*
 * test_lws_log.c - finding "~m#" records in log text (libcore/formats/lws_log.h).
 *
 * The reader is fed byte strings through fmemopen: line splitting, CR
 * stripping, the last line without a newline, a line longer than the
 * buffer (kept cut, flagged, the next line intact), counts, and the hash of
 * every byte (FNV-1a, whose published vectors test_base.c checks).  The
 * record finder follows the header's rule (a record is "~m#" and the
 * longest run of base64 bytes after it), including the line of issue 31
 * where text follows the record: the record found decodes to the stack
 * worked out by hand from the format (FACTS.md section 5), and the rest of
 * the line does not belong to it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/base/hash.h"
#include "libcore/formats/lws_codec.h"
#include "libcore/formats/lws_log.h"

/* Reads every line of text[0..len) into lines (joined by '|'); returns the count. */
static unsigned read_all(const char *text, size_t len, char *joined, size_t cap,
                         struct cq_lws_log_reader *r)
{
	FILE *f = fmemopen((void *)text, len, "r");
	assert_non_null(f);
	assert_null(cq_lws_log_reader_init(r, f));
	joined[0] = '\0';
	unsigned n = 0;
	struct cq_error *err = NULL;
	while (cq_lws_log_next_line(r, &err)) {
		assert_int_equal(strlen(r->line), r->len);
		assert_int_equal(r->lineno, ++n);
		snprintf(joined + strlen(joined), cap - strlen(joined), "%s%s", n > 1 ? "|" : "",
		         r->line);
	}
	assert_null(err);
	fclose(f);
	return n;
}

static void test_lines_are_split_and_counted(void **state)
{
	(void)state;
	static const char text[] = "first\nsecond\r\n\nin\rside\r\nlast";
	char joined[128];
	struct cq_lws_log_reader r;
	assert_int_equal(read_all(text, sizeof(text) - 1, joined, sizeof(joined), &r), 5);
	/* A CR only before the newline is dropped; the last line needs no newline. */
	assert_string_equal(joined, "first|second||in\rside|last");
	assert_int_equal(r.bytes, sizeof(text) - 1);
	assert_true(r.hash == cq_fnv1a(CQ_FNV_OFFSET, text, sizeof(text) - 1));
	cq_lws_log_reader_free(&r);
}

static void test_empty_input_has_no_line(void **state)
{
	(void)state;
	char joined[16];
	struct cq_lws_log_reader r;
	assert_int_equal(read_all("", 0, joined, sizeof(joined), &r), 0);
	assert_int_equal(r.lineno, 0);
	assert_int_equal(r.bytes, 0);
	assert_true(r.hash == CQ_FNV_OFFSET);
	cq_lws_log_reader_free(&r);
	/* A lone newline is one empty line. */
	assert_int_equal(read_all("\n", 1, joined, sizeof(joined), &r), 1);
	assert_string_equal(joined, "");
	cq_lws_log_reader_free(&r);
}

static void test_long_line_is_cut_and_flagged(void **state)
{
	(void)state;
	size_t long_len = CQ_LWS_LOG_MAX_LINE + 100;
	size_t len = long_len + sizeof("\nnext\n") - 1;
	char *text = malloc(len);
	assert_non_null(text);
	for (size_t i = 0; i < long_len; i++)
		text[i] = (char)('a' + i % 26);
	memcpy(text + long_len, "\nnext\n", 6);
	FILE *f = fmemopen(text, len, "r");
	assert_non_null(f);
	struct cq_lws_log_reader r;
	struct cq_error *err;
	assert_null(cq_lws_log_reader_init(&r, f));
	assert_true(cq_lws_log_next_line(&r, &err));
	assert_true(r.truncated);
	assert_int_equal(r.len, CQ_LWS_LOG_MAX_LINE);
	assert_memory_equal(r.line, text, CQ_LWS_LOG_MAX_LINE);
	assert_int_equal(r.line[r.len], '\0');
	assert_true(cq_lws_log_next_line(&r, &err));
	assert_false(r.truncated);
	assert_string_equal(r.line, "next");
	assert_int_equal(r.lineno, 2);
	assert_false(cq_lws_log_next_line(&r, &err));
	assert_null(err);
	/* Every byte is counted and hashed, the dropped ones too. */
	assert_int_equal(r.bytes, len);
	assert_true(r.hash == cq_fnv1a(CQ_FNV_OFFSET, text, len));
	cq_lws_log_reader_free(&r);
	fclose(f);
	free(text);
}

static void test_read_error_is_reported(void **state)
{
	(void)state;
	FILE *f = fopen("/", "r"); /* opens; reading a directory fails with EISDIR */
	assert_non_null(f);
	struct cq_lws_log_reader r;
	struct cq_error *err = NULL;
	assert_null(cq_lws_log_reader_init(&r, f));
	assert_false(cq_lws_log_next_line(&r, &err));
	assert_non_null(err);
	assert_int_equal(err->code, CQ_ERR_IO);
	cq_error_free(err);
	cq_lws_log_reader_free(&r);
	fclose(f);
}

static void find(const char *line, size_t from, bool want, size_t want_start, size_t want_end)
{
	size_t start = 999, end = 999;
	bool found = cq_lws_log_find_record(line, strlen(line), from, &start, &end);
	assert_int_equal(found, want);
	if (want) {
		assert_int_equal(start, want_start);
		assert_int_equal(end, want_end);
	}
}

static void test_record_stops_at_first_non_base64_byte(void **state)
{
	(void)state;
	/* The line of issue 31, finding 4: the record is 16 base64 bytes. */
	static const char line[] = "app: leak ~m#EDUAAHIAAOgAAAs= (from pool)";
	size_t start, end;
	assert_true(cq_lws_log_find_record(line, strlen(line), 0, &start, &end));
	assert_int_equal(start, 10);
	assert_int_equal(end, 10 + 3 + 16);
	/*
	 * 10 35 00 00 72 00 00 e8 00 | 00 0b by FACTS.md section 5: depth 2
	 * (00010), literal 13 bits 0x1000, literal 14 bits 0x2000 (a delta
	 * from item 0 is never emitted), size 7 bits 64, then the length 11.
	 */
	struct cq_lws_stack s;
	assert_null(cq_lws_decode_text(line + start, end - start, &s));
	assert_int_equal(s.depth, 2);
	assert_int_equal(s.addr[0], 0x1000);
	assert_int_equal(s.addr[1], 0x2000);
	assert_int_equal(s.size, 64);
	/* The text after it is no part of the record. */
	struct cq_error *err = cq_lws_decode_text(line + start, strlen(line) - start, &s);
	assert_non_null(err);
	cq_error_free(err);
}

static void test_records_anywhere_in_a_line(void **state)
{
	(void)state;
	/* The published vector behind a log prefix, ending the line. */
	find("[2024/01/01 10:00:00] N: ~m#IF0BmUQugNCkgCnkhdAYpQa6wAAV", 0, true, 25, 25 + 31);
	/* Both alphabets and padding belong to the record; ':' ends it. */
	find("x~m#ab+/cd-_EF==:tail", 0, true, 1, 16);
	/* "~m#" with nothing after it is an empty record. */
	find("end ~m#", 0, true, 4, 7);
	/* Blanks run inside a record only when nothing else follows it (a wrapped paste). */
	find("~m# 1234", 0, true, 0, 8);
	find("~m#ab cd\t", 0, true, 0, 8);
	find("~m#ab cd (x)", 0, true, 0, 5);
	/* Near misses are not records. */
	find("~m", 0, false, 0, 0);
	find("~M#abcd ~n#abcd m#abcd ~m abcd", 0, false, 0, 0);
	find("", 0, false, 0, 0);
	/* A second record is found by searching on from the first one's end. */
	static const char two[] = "a ~m#AAAA b ~m#BBBB";
	find(two, 0, true, 2, 9);
	find(two, 9, true, 12, 19);
	find(two, 13, false, 0, 0);
	/* from past the end finds nothing. */
	find(two, 100, false, 0, 0);
}

static void test_record_search_respects_len(void **state)
{
	(void)state;
	/* Only line[0..len) is looked at, though more bytes follow. */
	static const char line[] = "ab ~m#QUJD more";
	size_t start, end;
	assert_false(cq_lws_log_find_record(line, 4, 0, &start, &end)); /* "ab ~" */
	assert_true(cq_lws_log_find_record(line, 8, 0, &start, &end));
	assert_int_equal(start, 3);
	assert_int_equal(end, 8);
	/* A NUL inside the line is not base64: it ends the record. */
	static const char nul[] = "~m#QU\0JD";
	assert_true(cq_lws_log_find_record(nul, sizeof(nul) - 1, 0, &start, &end));
	assert_int_equal(end, 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lines_are_split_and_counted),
	    cmocka_unit_test(test_empty_input_has_no_line),
	    cmocka_unit_test(test_long_line_is_cut_and_flagged),
	    cmocka_unit_test(test_read_error_is_reported),
	    cmocka_unit_test(test_record_stops_at_first_non_base64_byte),
	    cmocka_unit_test(test_records_anywhere_in_a_line),
	    cmocka_unit_test(test_record_search_respects_len),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
