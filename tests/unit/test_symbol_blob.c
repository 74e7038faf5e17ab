/*
 * test_symbol_blob.c - the symbol cache's row format (libcore/symbols/symbol_blob.h).
 *
 * Rows are built by hand from the layout written at the top of
 * symbol_blob.c (u8 count; per frame u8 flags INLINED 1, FUNCTION 2, FILE
 * 4, u32 line little-endian, the present strings NUL-terminated; a CRC-32
 * of all of it computed here with zlib): the encoder must produce exactly
 * those bytes and the decoder read them back.  Then rows damaged one way
 * each, with a correct CRC so that the check under test is the one that
 * rejects them, and every truncation and single-byte change of a good row.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "libcore/symbols/symbol_blob.h"

/* A row under construction. */
struct row {
	uint8_t b[512];
	size_t len;
};

static void put(struct row *r, const void *p, size_t n)
{
	assert_true(r->len + n <= sizeof(r->b));
	memcpy(r->b + r->len, p, n);
	r->len += n;
}

static void put_u8(struct row *r, uint8_t v)
{
	put(r, &v, 1);
}

static void put_u32le(struct row *r, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	put(r, b, 4);
}

static void put_str(struct row *r, const char *s)
{
	put(r, s, strlen(s) + 1);
}

static void seal(struct row *r)
{
	put_u32le(r, (uint32_t)crc32(crc32(0L, Z_NULL, 0), r->b, (uInt)r->len));
}

/* Decodes r and returns the frame count (0: rejected). */
static size_t decode(const struct row *r, struct cq_symbol_frame *f, size_t max)
{
	return cq_symbol_blob_decode(r->b, r->len, f, max);
}

static void test_encoder_writes_the_documented_layout(void **state)
{
	(void)state;
	const struct cq_symbol_frame frames[] = {
	    {.function = "inner", .file = "a.c", .line = 7, .inlined = true},
	    {.function = "outer", .file = NULL, .line = 0},
	    {.function = NULL, .file = "b.h", .line = 65536},
	    {0},
	};
	struct row want = {.len = 0};
	put_u8(&want, 4);
	put_u8(&want, 1 | 2 | 4);
	put_u32le(&want, 7);
	put_str(&want, "inner");
	put_str(&want, "a.c");
	put_u8(&want, 2);
	put_u32le(&want, 0);
	put_str(&want, "outer");
	put_u8(&want, 4);
	put_u32le(&want, 65536);
	put_str(&want, "b.h");
	put_u8(&want, 0);
	put_u32le(&want, 0);
	seal(&want);

	size_t len = 0;
	uint8_t *blob = cq_symbol_blob_encode(frames, 4, &len);
	assert_non_null(blob);
	assert_int_equal(len, want.len);
	assert_memory_equal(blob, want.b, len);
	free(blob);

	struct cq_symbol_frame got[4];
	assert_int_equal(decode(&want, got, 4), 4);
	assert_string_equal(got[0].function, "inner");
	assert_string_equal(got[0].file, "a.c");
	assert_int_equal(got[0].line, 7);
	assert_true(got[0].inlined);
	assert_string_equal(got[1].function, "outer");
	assert_null(got[1].file);
	assert_false(got[1].inlined);
	assert_null(got[2].function);
	assert_string_equal(got[2].file, "b.h");
	assert_int_equal(got[2].line, 65536);
	assert_null(got[3].function);
	assert_null(got[3].file);
	assert_int_equal(got[3].line, 0);
	/* The names point into the blob. */
	assert_ptr_equal(got[0].function, (const char *)want.b + 6);
}

static void test_round_trip_and_limits(void **state)
{
	(void)state;
	/* 255 frames is the most a row holds; a negative line is stored as 0. */
	static struct cq_symbol_frame frames[255], got[255];
	char names[255][16];
	for (size_t i = 0; i < 255; i++) {
		snprintf(names[i], sizeof(names[i]), "f%zu", i);
		frames[i] = (struct cq_symbol_frame){.function = names[i],
		                                     .file = i % 3 ? "x.c" : NULL,
		                                     .line = i == 5 ? -3 : (int)i,
		                                     .inlined = i % 2};
	}
	size_t len;
	uint8_t *blob = cq_symbol_blob_encode(frames, 255, &len);
	assert_non_null(blob);
	assert_int_equal(cq_symbol_blob_decode(blob, len, got, 255), 255);
	for (size_t i = 0; i < 255; i++) {
		assert_string_equal(got[i].function, names[i]);
		if (i % 3)
			assert_string_equal(got[i].file, "x.c");
		else
			assert_null(got[i].file);
		assert_int_equal(got[i].line, i == 5 ? 0 : (int)i);
		assert_int_equal(got[i].inlined, i % 2);
	}
	/* Room for fewer frames than the row holds: rejected, not cut. */
	assert_int_equal(cq_symbol_blob_decode(blob, len, got, 254), 0);
	free(blob);
	/* No frames, or more than a u8 counts, cannot be encoded. */
	assert_null(cq_symbol_blob_encode(frames, 0, &len));
	static struct cq_symbol_frame many[256];
	assert_null(cq_symbol_blob_encode(many, 256, &len));
}

static void test_long_names_are_cut(void **state)
{
	(void)state;
	size_t n = CQ_SYMBOL_BLOB_MAX_STRING + 10;
	char *name = malloc(n + 1);
	assert_non_null(name);
	memset(name, 'n', n);
	name[n] = '\0';
	struct cq_symbol_frame f = {.function = name, .file = "f.c", .line = 1}, got;
	size_t len;
	uint8_t *blob = cq_symbol_blob_encode(&f, 1, &len);
	assert_non_null(blob);
	assert_int_equal(cq_symbol_blob_decode(blob, len, &got, 1), 1);
	assert_int_equal(strlen(got.function), CQ_SYMBOL_BLOB_MAX_STRING - 1);
	assert_memory_equal(got.function, name, CQ_SYMBOL_BLOB_MAX_STRING - 1);
	assert_string_equal(got.file, "f.c");
	free(blob);
	free(name);
}

/* A one-frame row: flags, line, then raw bytes for the strings. */
static void one_frame(struct row *r, uint8_t count, uint8_t flags, uint32_t line,
                      const void *strings, size_t slen)
{
	r->len = 0;
	put_u8(r, count);
	put_u8(r, flags);
	put_u32le(r, line);
	put(r, strings, slen);
	seal(r);
}

static void test_damaged_rows_are_rejected(void **state)
{
	(void)state;
	struct cq_symbol_frame got[4];
	struct row r;
	/* The good row the others depart from. */
	one_frame(&r, 1, 2 | 4, 3, "fn\0f.c", 7);
	assert_int_equal(decode(&r, got, 4), 1);
	/* An unknown flag bit. */
	one_frame(&r, 1, 2 | 4 | 8, 3, "fn\0f.c", 7);
	assert_int_equal(decode(&r, got, 4), 0);
	one_frame(&r, 1, 0x80, 3, "", 0);
	assert_int_equal(decode(&r, got, 4), 0);
	/* A line past INT_MAX. */
	one_frame(&r, 1, 0, (uint32_t)INT_MAX + 1, "", 0);
	assert_int_equal(decode(&r, got, 4), 0);
	one_frame(&r, 1, 0, INT_MAX, "", 0);
	assert_int_equal(decode(&r, got, 4), 1);
	assert_int_equal(got[0].line, INT_MAX);
	/* Zero frames, or more frames than the row holds. */
	one_frame(&r, 0, 0, 0, "", 0);
	assert_int_equal(decode(&r, got, 4), 0);
	one_frame(&r, 2, 2, 3, "fn", 3);
	assert_int_equal(decode(&r, got, 4), 0);
	/* A flagged string without its terminator. */
	one_frame(&r, 1, 2 | 4, 3, "fn\0f.c", 6);
	assert_int_equal(decode(&r, got, 4), 0);
	/* A flag for a string that is not there. */
	one_frame(&r, 1, 2, 3, "", 0);
	assert_int_equal(decode(&r, got, 4), 0);
	/* Bytes left over after the last frame. */
	one_frame(&r, 1, 2, 3, "fn\0x", 4);
	assert_int_equal(decode(&r, got, 4), 0);
	/* A string longer than the encoder ever writes. */
	size_t big = CQ_SYMBOL_BLOB_MAX_STRING + 1;
	uint8_t *blob = calloc(1, 6 + big + 4);
	assert_non_null(blob);
	blob[0] = 1;
	blob[1] = 2;
	memset(blob + 6, 'a', big - 1); /* big - 1 characters, then the NUL */
	uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), blob, (uInt)(6 + big));
	for (int i = 0; i < 4; i++)
		blob[6 + big + (size_t)i] = (uint8_t)(crc >> (8 * i));
	assert_int_equal(cq_symbol_blob_decode(blob, 6 + big + 4, got, 4), 0);
	free(blob);
	/* Too short to hold a count and a CRC; no blob at all. */
	assert_int_equal(cq_symbol_blob_decode((const uint8_t *)"\1\0\0\0", 4, got, 4), 0);
	assert_int_equal(cq_symbol_blob_decode(NULL, 0, got, 4), 0);
}

static void test_every_cut_and_flipped_byte_is_caught(void **state)
{
	(void)state;
	const struct cq_symbol_frame frames[] = {
	    {.function = "std::vector<int>::at",
	     .file = "/usr/include/c++/12/vector",
	     .line = 1120},
	    {.function = "main", .file = "m.cc", .line = 9, .inlined = true},
	};
	size_t len;
	uint8_t *blob = cq_symbol_blob_encode(frames, 2, &len);
	assert_non_null(blob);
	struct cq_symbol_frame got[2];
	for (size_t cut = 0; cut < len; cut++) {
		/* A copy of exactly cut bytes, so ASan sees any read past it. */
		uint8_t *part = malloc(cut ? cut : 1);
		assert_non_null(part);
		memcpy(part, blob, cut);
		assert_int_equal(cq_symbol_blob_decode(part, cut, got, 2), 0);
		free(part);
	}
	for (size_t i = 0; i < len; i++) {
		for (unsigned bit = 0; bit < 8; bit++) {
			blob[i] ^= (uint8_t)(1u << bit);
			assert_int_equal(cq_symbol_blob_decode(blob, len, got, 2), 0);
			blob[i] ^= (uint8_t)(1u << bit);
		}
	}
	assert_int_equal(cq_symbol_blob_decode(blob, len, got, 2), 2);
	free(blob);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_encoder_writes_the_documented_layout),
	    cmocka_unit_test(test_round_trip_and_limits),
	    cmocka_unit_test(test_long_names_are_cut),
	    cmocka_unit_test(test_damaged_rows_are_rejected),
	    cmocka_unit_test(test_every_cut_and_flipped_byte_is_caught),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
