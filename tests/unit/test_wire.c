/*
 * test_wire.c - the cache rows' byte writer and checked reader
 * (libcore/base/wire.h).  The writer's bytes are compared with a row laid
 * out by hand (little-endian integers, strings as u32 length + 1 and their
 * bytes, a zlib CRC-32 of everything before it); the reader is fed that row
 * and rows broken one way each, and must fail, stay failed and never read
 * past its buffer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "libcore/base/wire.h"

/* A row as the header describes it, built without the writer. */
static size_t reference_row(uint8_t *b)
{
	static const uint8_t body[] = {
	    0x7e,                                           /* u8 */
	    0x04, 0x03, 0x02, 0x01,                         /* u32 0x01020304 */
	    0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, /* u64 0x1122334455667788 */
	    0x03, 0x00, 0x00, 0x00, 'h',  'i',              /* "hi" */
	    0x00, 0x00, 0x00, 0x00,                         /* NULL */
	    0x01, 0x00, 0x00, 0x00,                         /* "" */
	};
	memcpy(b, body, sizeof(body));
	uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), body, sizeof(body));
	for (int i = 0; i < 4; i++)
		b[sizeof(body) + (size_t)i] = (uint8_t)(crc >> (8 * i));
	return sizeof(body) + 4;
}

static void test_writer_lays_out_the_documented_bytes(void **state)
{
	(void)state;
	struct cq_wire_writer w = {0};
	cq_wire_put_u8(&w, 0x7e);
	cq_wire_put_u32(&w, 0x01020304);
	cq_wire_put_u64(&w, 0x1122334455667788ull);
	cq_wire_put_str(&w, "hi");
	cq_wire_put_str(&w, NULL);
	cq_wire_put_str(&w, "");
	size_t len = 0;
	uint8_t *row = cq_wire_seal(&w, &len);
	assert_non_null(row);
	assert_null(w.bytes); /* handed over */
	uint8_t want[64];
	size_t want_len = reference_row(want);
	assert_int_equal(len, want_len);
	assert_memory_equal(row, want, len);
	free(row);
}

static void test_writer_grows_past_its_first_buffer(void **state)
{
	(void)state;
	struct cq_wire_writer w = {0};
	for (uint32_t i = 0; i < 10000; i++)
		cq_wire_put_u32(&w, i);
	size_t len;
	uint8_t *row = cq_wire_seal(&w, &len);
	assert_int_equal(len, 40004);
	struct cq_wire_reader r;
	assert_true(cq_wire_open(&r, row, len));
	for (uint32_t i = 0; i < 10000; i++)
		assert_int_equal(cq_wire_get_u32(&r), i);
	assert_true(cq_wire_done(&r));
	free(row);
	/* A writer that ran out of memory hands over nothing. */
	struct cq_wire_writer bad = {0};
	cq_wire_put_u32(&bad, 1);
	bad.nomem = true;
	cq_wire_put_u32(&bad, 2);
	assert_null(cq_wire_seal(&bad, &len));
	assert_null(bad.bytes);
}

static void test_reader_reads_the_reference_row(void **state)
{
	(void)state;
	uint8_t row[64];
	size_t len = reference_row(row);
	struct cq_wire_reader r;
	assert_true(cq_wire_open(&r, row, len));
	assert_int_equal(cq_wire_get_u8(&r), 0x7e);
	assert_int_equal(cq_wire_get_u32(&r), 0x01020304);
	assert_true(cq_wire_get_u64(&r) == 0x1122334455667788ull);
	assert_false(cq_wire_done(&r)); /* bytes remain */
	char *s = cq_wire_get_str(&r, 16);
	assert_string_equal(s, "hi");
	free(s);
	assert_null(cq_wire_get_str(&r, 16)); /* NULL, and not a failure */
	assert_false(r.failed);
	s = cq_wire_get_str(&r, 16);
	assert_string_equal(s, "");
	free(s);
	assert_true(cq_wire_done(&r));
}

static void test_bad_crc_or_short_row_does_not_open(void **state)
{
	(void)state;
	uint8_t row[64];
	size_t len = reference_row(row);
	struct cq_wire_reader r;
	for (size_t i = 0; i < len; i++) {
		row[i] ^= 0x20;
		assert_false(cq_wire_open(&r, row, len));
		assert_true(r.failed);
		assert_int_equal(cq_wire_get_u8(&r), 0);
		row[i] ^= 0x20;
	}
	assert_false(cq_wire_open(&r, row, len - 1));
	assert_false(cq_wire_open(&r, row, 3));
	assert_false(cq_wire_open(&r, NULL, 0));
	/* Four bytes: the CRC of nothing, an empty row. */
	uint32_t crc0 = (uint32_t)crc32(0L, Z_NULL, 0);
	uint8_t empty[4] = {(uint8_t)crc0, (uint8_t)(crc0 >> 8), (uint8_t)(crc0 >> 16),
	                    (uint8_t)(crc0 >> 24)};
	assert_true(cq_wire_open(&r, empty, 4));
	assert_true(cq_wire_done(&r));
}

/* A sealed row of the given body bytes, in a buffer of exactly its size. */
static uint8_t *sealed(const void *body, size_t n, size_t *len)
{
	struct cq_wire_writer w = {0};
	for (size_t i = 0; i < n; i++)
		cq_wire_put_u8(&w, ((const uint8_t *)body)[i]);
	uint8_t *tmp = cq_wire_seal(&w, len);
	assert_non_null(tmp);
	uint8_t *exact = malloc(*len);
	assert_non_null(exact);
	memcpy(exact, tmp, *len);
	free(tmp);
	return exact;
}

static void test_reads_past_the_end_fail_and_stay_failed(void **state)
{
	(void)state;
	size_t len;
	uint8_t *row = sealed("\x05\x00\x00\x00\x09", 5, &len);
	struct cq_wire_reader r;
	assert_true(cq_wire_open(&r, row, len));
	assert_int_equal(cq_wire_get_u32(&r), 5);
	assert_int_equal(cq_wire_get_u64(&r), 0); /* one byte left: fails */
	assert_true(r.failed);
	assert_int_equal(cq_wire_get_u8(&r), 0); /* that byte is not given now */
	assert_false(cq_wire_done(&r));
	free(row);
}

static void test_counts_are_bounded_by_the_bytes_left(void **state)
{
	(void)state;
	size_t len;
	struct cq_wire_reader r;
	/* Count 3, then 12 bytes: three items of 4 fit, of 5 do not. */
	uint8_t body[16] = {3};
	uint8_t *row = sealed(body, sizeof(body), &len);
	assert_true(cq_wire_open(&r, row, len));
	assert_int_equal(cq_wire_get_count(&r, 4), 3);
	assert_false(r.failed);
	assert_true(cq_wire_open(&r, row, len));
	assert_int_equal(cq_wire_get_count(&r, 5), 0);
	assert_true(r.failed);
	free(row);
	/* A huge count is refused before anything is allocated for it. */
	uint8_t huge[8] = {0xff, 0xff, 0xff, 0xff};
	row = sealed(huge, sizeof(huge), &len);
	assert_true(cq_wire_open(&r, row, len));
	assert_int_equal(cq_wire_get_count(&r, 1), 0);
	assert_true(r.failed);
	/* Items of no size: any count. */
	assert_true(cq_wire_open(&r, row, len));
	assert_int_equal(cq_wire_get_count(&r, 0), 0xffffffffu);
	assert_false(r.failed);
	free(row);
}

static void test_bad_strings_fail_the_reader(void **state)
{
	(void)state;
	size_t len;
	struct cq_wire_reader r;
	/* "abc" asked for with room for 2. */
	uint8_t *row = sealed("\x04\x00\x00\x00"
	                      "abc",
	                      7, &len);
	assert_true(cq_wire_open(&r, row, len));
	assert_null(cq_wire_get_str(&r, 2));
	assert_true(r.failed);
	assert_true(cq_wire_open(&r, row, len));
	char *s = cq_wire_get_str(&r, 3);
	assert_string_equal(s, "abc");
	free(s);
	free(row);
	/* A NUL inside. */
	row = sealed("\x04\x00\x00\x00"
	             "a\0c",
	             7, &len);
	assert_true(cq_wire_open(&r, row, len));
	assert_null(cq_wire_get_str(&r, 100));
	assert_true(r.failed);
	free(row);
	/* A length past the end of the row. */
	row = sealed("\x40\x00\x00\x00"
	             "abc",
	             7, &len);
	assert_true(cq_wire_open(&r, row, len));
	assert_null(cq_wire_get_str(&r, 1000));
	assert_true(r.failed);
	free(row);
	/* The largest length there is, with no bytes. */
	row = sealed("\xff\xff\xff\xff", 4, &len);
	assert_true(cq_wire_open(&r, row, len));
	assert_null(cq_wire_get_str(&r, SIZE_MAX));
	assert_true(r.failed);
	free(row);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_writer_lays_out_the_documented_bytes),
	    cmocka_unit_test(test_writer_grows_past_its_first_buffer),
	    cmocka_unit_test(test_reader_reads_the_reference_row),
	    cmocka_unit_test(test_bad_crc_or_short_row_does_not_open),
	    cmocka_unit_test(test_reads_past_the_end_fail_and_stay_failed),
	    cmocka_unit_test(test_counts_are_bounded_by_the_bytes_left),
	    cmocka_unit_test(test_bad_strings_fail_the_reader),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
