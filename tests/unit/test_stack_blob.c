/*
 * test_stack_blob.c - the stacks.frames_blob encoding (libcore/formats/stack_blob.c).
 *
 * Round trips of random stacks (short, exactly 31 and 62 frames, long runs
 * past 256 frames, offsets with bit 63 set, the largest module id), a blob
 * walked by hand to check that it is made of valid lws records in the
 * documented order, and malformed blobs each refused with one line.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "libcore/formats/lws_codec.h"
#include "libcore/formats/stack_blob.h"

#define MODULE_LIMIT (INT64_C(1) << 50)

static uint64_t rng_state = 0x853c49e6748fea9bull;

static uint64_t next_random(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void check_ok(struct cq_error *err)
{
	if (err)
		fail_msg("unexpected error: %s", err->message);
}

static void check_fails(struct cq_error *err)
{
	assert_non_null(err);
	assert_int_equal(err->code, CQ_ERR_FORMAT);
	assert_null(strchr(err->message, '\n'));
	cq_error_free(err);
}

static void round_trip(const struct cq_stack_blob_frame *f, size_t n)
{
	uint8_t *blob;
	size_t len;
	check_ok(cq_stack_blob_encode(f, n, &blob, &len));
	struct cq_stack_blob_frame *back;
	size_t nback;
	check_ok(cq_stack_blob_decode(blob, len, &back, &nback));
	assert_int_equal(nback, n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(back[i].module_id, f[i].module_id);
		assert_int_equal(back[i].offset, f[i].offset);
		assert_int_equal(back[i].kind, f[i].kind);
	}
	free(back);
	free(blob);
}

/* A stack shaped like real ones: runs of frames in a few modules. */
static size_t random_stack(struct cq_stack_blob_frame *f, size_t cap)
{
	size_t n = (size_t)(next_random() % cap);
	int64_t module = 1 + (int64_t)(next_random() % 4);
	uint64_t base = next_random() % (UINT64_C(1) << 24);
	for (size_t i = 0; i < n; i++) {
		if (next_random() % 5 == 0) {
			module = (int64_t)(next_random() % 5); /* 0: in no module */
			base = next_random() % (UINT64_C(1) << 24);
		}
		uint64_t r = next_random();
		f[i].module_id = module;
		f[i].kind = (uint8_t)(r % 7 == 0 ? 1 : r % 11 == 0 ? 2 : 0);
		f[i].offset = r % 13 == 0 ? next_random() : base + (r >> 40) % 4096;
	}
	return n;
}

static void test_random_round_trips(void **state)
{
	(void)state;
	struct cq_stack_blob_frame f[300];
	for (int t = 0; t < 5000; t++)
		round_trip(f, random_stack(f, sizeof(f) / sizeof(f[0])));
}

static void test_chunk_boundaries(void **state)
{
	(void)state;
	struct cq_stack_blob_frame f[700];
	size_t sizes[] = {0, 1, 30, 31, 32, 61, 62, 63, 255, 256, 257, 700};
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		for (size_t i = 0; i < sizes[k]; i++)
			f[i] =
			    (struct cq_stack_blob_frame){.module_id = 7, .offset = 0x1000 + i * 5};
		round_trip(f, sizes[k]);
	}
}

static void test_extreme_values(void **state)
{
	(void)state;
	struct cq_stack_blob_frame f[] = {
	    {.module_id = 0, .offset = UINT64_MAX, .kind = 2},
	    {.module_id = 0, .offset = UINT64_C(1) << 63, .kind = 0},
	    {.module_id = MODULE_LIMIT - 1, .offset = 0, .kind = 1},
	    {.module_id = 3, .offset = (UINT64_C(1) << 63) - 1, .kind = 15},
	};
	round_trip(f, sizeof(f) / sizeof(f[0]));
	uint8_t *blob = NULL;
	size_t len;
	struct cq_stack_blob_frame bad = {.module_id = MODULE_LIMIT};
	struct cq_error *err = cq_stack_blob_encode(&bad, 1, &blob, &len);
	assert_non_null(err);
	assert_int_equal(err->code, CQ_ERR_UNSUPPORTED);
	cq_error_free(err);
	assert_null(blob);
}

/* The documented layout: offset records first (first size field = n), then runs. */
static void test_layout_is_lws_records(void **state)
{
	(void)state;
	struct cq_stack_blob_frame f[40];
	for (size_t i = 0; i < 40; i++)
		f[i] = (struct cq_stack_blob_frame){
		    .module_id = i < 35 ? 2 : 9, .offset = 0x401000 + i, .kind = i == 3};
	uint8_t *blob;
	size_t len;
	check_ok(cq_stack_blob_encode(f, 40, &blob, &len));
	struct cq_lws_stack rec[4];
	size_t at = 0, n = 0;
	while (at < len && n < 4) {
		/* Each record's length is its own trailer: find it by trying lengths. */
		size_t l = 4;
		while (at + l <= len && ((size_t)blob[at + l - 2] << 8 | blob[at + l - 1]) != l)
			l++;
		assert_true(at + l <= len);
		check_ok(cq_lws_decode(blob + at, l, &rec[n++]));
		at += l;
	}
	assert_int_equal(at, len);
	assert_int_equal(n, 3);
	assert_int_equal(rec[0].depth, 31);
	assert_int_equal(rec[0].size, 40);
	assert_int_equal(rec[0].addr[30], 0x401000 + 30);
	assert_int_equal(rec[1].depth, 9);
	assert_int_equal(rec[1].size, 0);
	/* Runs: 3 native in module 2, 1 inline, 31 native, 5 native in module 9. */
	assert_int_equal(rec[2].depth, 4);
	assert_int_equal(rec[2].addr[0], (UINT64_C(2) << 13) | 2);
	assert_int_equal(rec[2].addr[1], (UINT64_C(2) << 13) | (1 << 8) | 0);
	assert_int_equal(rec[2].addr[2], (UINT64_C(2) << 13) | 30);
	assert_int_equal(rec[2].addr[3], (UINT64_C(9) << 13) | 4);
	free(blob);
}

/* Encodes a stack, lets mutate damage the blob, and expects a refusal. */
static void refused_after(void (*mutate)(uint8_t *blob, size_t *len))
{
	struct cq_stack_blob_frame f[40];
	for (size_t i = 0; i < 40; i++)
		f[i] = (struct cq_stack_blob_frame){.module_id = 1, .offset = 0x1000 + 16 * i};
	uint8_t *blob;
	size_t len;
	check_ok(cq_stack_blob_encode(f, 40, &blob, &len));
	uint8_t copy[4096];
	assert_true(len + 64 <= sizeof(copy));
	memcpy(copy, blob, len);
	mutate(copy, &len);
	struct cq_stack_blob_frame *out = NULL;
	size_t n = 0;
	check_fails(cq_stack_blob_decode(copy, len, &out, &n));
	assert_null(out);
	free(blob);
}

static void drop_first_byte(uint8_t *b, size_t *len)
{
	memmove(b, b + 1, --*len);
}

static void drop_last_record(uint8_t *b, size_t *len)
{
	*len -= (size_t)b[*len - 2] << 8 | b[*len - 1];
}

static void bad_last_trailer(uint8_t *b, size_t *len)
{
	b[*len - 1] ^= 0x40;
}

static void append_empty_record(uint8_t *b, size_t *len)
{
	struct cq_lws_stack empty = {0};
	size_t n;
	check_ok(cq_lws_encode(&empty, b + *len, 64, &n));
	*len += n;
}

static void test_malformed_refused(void **state)
{
	(void)state;
	refused_after(drop_first_byte);
	refused_after(drop_last_record);
	refused_after(bad_last_trailer);
	refused_after(append_empty_record);
	struct cq_stack_blob_frame *out;
	size_t n;
	check_fails(cq_stack_blob_decode((const uint8_t *)"", 0, &out, &n));
	static const uint8_t zeros[8] = {0};
	check_fails(cq_stack_blob_decode(zeros, sizeof(zeros), &out, &n));
	/* One offset record claiming 5 frames but holding none. */
	struct cq_lws_stack lie = {.depth = 0, .size = 5};
	uint8_t b[CQ_LWS_MAX_BLOB];
	size_t len;
	check_ok(cq_lws_encode(&lie, b, sizeof(b), &len));
	check_fails(cq_stack_blob_decode(b, len, &out, &n));
}

static void test_random_bytes_never_crash(void **state)
{
	(void)state;
	uint8_t b[600];
	for (int t = 0; t < 20000; t++) {
		size_t len = 1 + (size_t)(next_random() % sizeof(b));
		for (size_t i = 0; i < len; i++)
			b[i] = (uint8_t)next_random();
		/* Make the last trailer plausible so decoding gets past the split. */
		if (len >= 4 && t % 2) {
			size_t l = 4 + (size_t)(next_random() % (len - 3));
			b[len - 2] = (uint8_t)(l >> 8);
			b[len - 1] = (uint8_t)l;
		}
		struct cq_stack_blob_frame *out;
		size_t n;
		struct cq_error *err = cq_stack_blob_decode(b, len, &out, &n);
		if (err)
			cq_error_free(err);
		else
			free(out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_random_round_trips),
	    cmocka_unit_test(test_chunk_boundaries),
	    cmocka_unit_test(test_extreme_values),
	    cmocka_unit_test(test_layout_is_lws_records),
	    cmocka_unit_test(test_malformed_refused),
	    cmocka_unit_test(test_random_bytes_never_crash),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
