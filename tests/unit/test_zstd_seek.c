/*
 * test_zstd_seek.c - the seek table of zstd's seekable format
 * (libcore/formats/zstd_seek.c): what the writer encodes reads back, and
 * every lie a table can tell about the file it ends is refused.  Tables are
 * built here byte by byte from the format's description, not by the
 * encoder under test, except in the round trip.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/formats/zstd_seek.h"

struct forged {
	uint8_t b[4096];
	size_t len;
};

static void put32(struct forged *f, uint32_t v)
{
	memcpy(f->b + f->len, &v, 4);
	f->len += 4;
}

/* A table of n (comp, raw) entries; size_field 0: the honest size. */
static struct forged forge(const uint32_t (*e)[2], size_t n, uint32_t count, uint8_t desc,
                           uint32_t size_field)
{
	struct forged f = {.len = 0};
	size_t esize = desc & 0x80 ? 12 : 8;
	put32(&f, 0x184D2A5E);
	put32(&f, size_field ? size_field : (uint32_t)(n * esize + 9));
	for (size_t i = 0; i < n; i++) {
		put32(&f, e[i][0]);
		put32(&f, e[i][1]);
		if (esize == 12)
			put32(&f, 0xdeadbeef);
	}
	put32(&f, count);
	f.b[f.len++] = desc;
	put32(&f, 0x8F92EAB1);
	return f;
}

static struct cq_error *parse(const struct forged *f, uint64_t data_bytes, struct cq_zseek *z)
{
	return cq_zseek_parse(f->b, f->len, data_bytes + f->len, 0, z);
}

static void test_round_trip(void **state)
{
	(void)state;
	uint32_t comp[3] = {100, 50, 7}, raw[3] = {4096, 8192, 10};
	uint8_t buf[64];
	size_t size = cq_zseek_encoded_size(3);
	assert_int_equal(size, 8 + 24 + 9);
	cq_zseek_encode(comp, raw, 3, buf);
	assert_true(cq_zseek_has_footer(buf, size));
	assert_int_equal(cq_zseek_table_size(buf + size - 9, 157 + size), size);
	struct cq_zseek z;
	assert_null(cq_zseek_parse(buf, size, 157 + size, 0, &z));
	assert_int_equal(z.n, 3);
	assert_int_equal(z.raw_size, 4096 + 8192 + 10);
	assert_int_equal(z.frame[1].comp_off, 100);
	assert_int_equal(z.frame[2].comp_off, 150);
	assert_int_equal(z.frame[2].raw_off, 4096 + 8192);
	assert_int_equal(cq_zseek_find(&z, 0), 0);
	assert_int_equal(cq_zseek_find(&z, 4095), 0);
	assert_int_equal(cq_zseek_find(&z, 4096), 1);
	assert_int_equal(cq_zseek_find(&z, 4096 + 8192 + 9), 2);
	assert_int_equal(cq_zseek_find(&z, 4096 + 8192 + 10), 3); /* past the end: n */
	cq_zseek_free(&z);
}

static void test_checksums_are_skipped(void **state)
{
	(void)state;
	const uint32_t e[2][2] = {{10, 4096}, {20, 100}};
	struct forged f = forge(e, 2, 2, 0x80, 0);
	struct cq_zseek z;
	assert_null(parse(&f, 30, &z));
	assert_int_equal(z.frame[1].comp_off, 10);
	assert_int_equal(z.raw_size, 4196);
	cq_zseek_free(&z);
}

static void expect_refused(const struct forged *f, uint64_t data_bytes, const char *why)
{
	struct cq_zseek z;
	struct cq_error *err = parse(f, data_bytes, &z);
	if (!err)
		fail_msg("accepted a table that %s", why);
	assert_null(z.frame);
	assert_int_equal(z.n, 0);
	cq_error_free(err);
}

static void test_lies_are_refused(void **state)
{
	(void)state;
	const uint32_t honest[2][2] = {{10, 4096}, {20, 100}};
	struct forged f = forge(honest, 2, 2, 0, 0);
	expect_refused(&f, 31, "leaves a byte before it uncovered");
	expect_refused(&f, 29, "has frames reaching into the table");
	f.b[f.len - 5] = 0x04; /* a reserved descriptor bit */
	expect_refused(&f, 30, "sets a reserved bit");
	f = forge(honest, 2, 2, 0, 99);
	expect_refused(&f, 30, "gives its skippable frame a wrong size");
	f = forge(honest, 2, 3, 0, 0);
	expect_refused(&f, 30, "counts more entries than it holds");
	const uint32_t zero[2][2] = {{0, 4096}, {30, 100}};
	f = forge(zero, 2, 2, 0, 0);
	expect_refused(&f, 30, "has a frame of 0 bytes");
	const uint32_t empty[2][2] = {{10, 0}, {20, 100}};
	f = forge(empty, 2, 2, 0, 0);
	expect_refused(&f, 30, "has a frame that decompresses to nothing");
	const uint32_t huge[1][2] = {{30, CQ_ZSEEK_MAX_FRAME + 1}};
	f = forge(huge, 1, 1, 0, 0);
	expect_refused(&f, 30, "has a frame bigger than the bound");
	const uint32_t bomb[1][2] = {{100000, 16}};
	f = forge(bomb, 1, 1, 0, 0);
	expect_refused(&f, 100000, "has a frame far bigger compressed than zstd can make it");
	const uint32_t past[2][2] = {{0xfffffff0u, 4096}, {0x20, 100}};
	f = forge(past, 2, 2, 0, 0);
	expect_refused(&f, 0x10, "has offsets that wrap past the file");
	f = forge(honest, 0, 0, 0, 0);
	expect_refused(&f, 30, "has no frames");
}

static void test_footer_bounds(void **state)
{
	(void)state;
	uint8_t foot[9] = {0};
	uint32_t n = 0xffffffffu, magic = 0x8F92EAB1;
	memcpy(foot, &n, 4);
	memcpy(foot + 5, &magic, 4);
	assert_true(cq_zseek_has_footer(foot, 9));
	assert_false(cq_zseek_has_footer(foot, 8));
	/* 4 billion entries do not fit a file of a megabyte: no size, no allocation */
	assert_int_equal(cq_zseek_table_size(foot, 1 << 20), 0);
	n = 2;
	memcpy(foot, &n, 4);
	assert_int_equal(cq_zseek_table_size(foot, 1 << 20), 8 + 16 + 9);
	assert_int_equal(cq_zseek_table_size(foot, 8 + 16 + 9 + 1), 0); /* no room for 2 frames */
}

static void test_max_raw(void **state)
{
	(void)state;
	const uint32_t e[2][2] = {{10, 4096}, {20, 4096}};
	struct forged f = forge(e, 2, 2, 0, 0);
	struct cq_zseek z;
	struct cq_error *err = cq_zseek_parse(f.b, f.len, 30 + f.len, 8191, &z);
	assert_non_null(err);
	assert_int_equal(err->code, CQ_ERR_LIMIT);
	cq_error_free(err);
	assert_null(cq_zseek_parse(f.b, f.len, 30 + f.len, 8192, &z));
	cq_zseek_free(&z);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),       cmocka_unit_test(test_checksums_are_skipped),
	    cmocka_unit_test(test_lies_are_refused), cmocka_unit_test(test_footer_bounds),
	    cmocka_unit_test(test_max_raw),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
