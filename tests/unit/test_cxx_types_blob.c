/*
 * test_cxx_types_blob.c - the C++ coroutine type cache rows
 * (unwind/async/cxx_types_blob.h): a gcc frame type, a clang one with its
 * __coro_frame_ty and a clang one from its symbols alone survive
 * encode/decode field for field, and so does a module without coroutines;
 * every truncation, every damaged byte under the CRC, and every row the
 * DWARF reader could not have written behind a correct CRC is rejected (or
 * decodes to rows that encode back to the same bytes), never read past.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "blob_damage.h"

#include "unwind/async/cxx_types_blob.h"

static const struct cq_cxx_type_row sample[] = {
    /* gcc: _Z….Frame with _Coro_resume_index at 0x22 */
    {.actor = 0x1000,
     .actor_end = 0x1400,
     .destroy = 0x1400,
     .size = 0x68,
     .promise_off = 0x10,
     .promise_size = 0x10,
     .index_off = 0x22,
     .max_index = 9},
    /* clang with __coro_frame_ty: a 3-bit index at bit 0 of byte 0x18c */
    {.actor = 0x2000,
     .actor_end = 0x2900,
     .destroy = 0x2900,
     .destroy2 = 0x3100,
     .clang = true,
     .layout = true,
     .index_bytes = 1,
     .index_shift = 0,
     .index_bits = 3,
     .size = 0x190,
     .promise_off = 0x10,
     .promise_size = 0x78,
     .index_off = 0x18c,
     .max_index = 7},
    /* clang without debug info: the fixed guess */
    {.actor = 0x4000,
     .actor_end = 0x4010,
     .destroy = 0x4100,
     .clang = true,
     .size = 16,
     .promise_off = 16,
     .promise_size = 8,
     .max_index = UINT16_MAX},
};
#define NSAMPLE (sizeof(sample) / sizeof(sample[0]))

static void test_round_trip(void **state)
{
	(void)state;
	size_t len, n;
	bool dwarf;
	struct cq_cxx_type_row *rows;
	uint8_t *blob = cq_cxx_types_blob_encode(sample, NSAMPLE, true, &len);
	assert_non_null(blob);
	assert_int_equal(len, 1 + 4 + 72 * NSAMPLE + 4);
	assert_null(cq_cxx_types_blob_decode(blob, len, &rows, &n, &dwarf));
	assert_int_equal(n, NSAMPLE);
	assert_true(dwarf);
	for (size_t i = 0; i < n; i++)
		assert_memory_equal(&rows[i], &sample[i], sizeof(rows[i]));
	free(rows);
	free(blob);
	/* A module without coroutines (no DWARF read): no rows. */
	blob = cq_cxx_types_blob_encode(NULL, 0, false, &len);
	assert_non_null(blob);
	assert_int_equal(len, 9);
	assert_null(cq_cxx_types_blob_decode(blob, len, &rows, &n, &dwarf));
	assert_int_equal(n, 0);
	assert_null(rows);
	assert_false(dwarf);
	free(blob);
}

/* Decodes b; accepted rows must encode back to b. */
static bool accepted(const uint8_t *b, size_t len)
{
	size_t n, len2;
	bool dwarf;
	struct cq_cxx_type_row *rows;
	struct cq_error *err = cq_cxx_types_blob_decode(b, len, &rows, &n, &dwarf);
	if (err) {
		cq_error_free(err);
		return false;
	}
	uint8_t *again = cq_cxx_types_blob_encode(rows, n, dwarf, &len2);
	assert_non_null(again);
	assert_int_equal(len2, len);
	assert_memory_equal(again, b, len);
	free(again);
	free(rows);
	return true;
}

/* One row changed by f, encoded and sealed: rejected. */
static void rejects(void (*f)(struct cq_cxx_type_row *), size_t which)
{
	struct cq_cxx_type_row rows[NSAMPLE];
	memcpy(rows, sample, sizeof(rows));
	f(&rows[which]);
	size_t len;
	uint8_t *blob = cq_cxx_types_blob_encode(rows, NSAMPLE, true, &len);
	assert_non_null(blob);
	assert_false(accepted(blob, len));
	free(blob);
}

static void no_actor(struct cq_cxx_type_row *t)
{
	t->actor = 0;
}
static void empty_actor(struct cq_cxx_type_row *t)
{
	t->actor_end = t->actor;
}
static void no_destroy(struct cq_cxx_type_row *t)
{
	t->destroy = 0;
}
static void tiny(struct cq_cxx_type_row *t)
{
	t->size = 8;
}
static void promise_out(struct cq_cxx_type_row *t)
{
	t->promise_off = UINT64_MAX - 4;
}
static void index_out(struct cq_cxx_type_row *t)
{
	t->index_off = t->size - 1;
}
static void gcc_cleanup(struct cq_cxx_type_row *t)
{
	t->destroy2 = 0x5000;
}
static void gcc_layout(struct cq_cxx_type_row *t)
{
	t->layout = true;
}
static void wide_bits(struct cq_cxx_type_row *t)
{
	t->index_bits = 9;
}
static void shifted(struct cq_cxx_type_row *t)
{
	t->index_shift = 6;
}
static void bad_max(struct cq_cxx_type_row *t)
{
	t->max_index = 8;
}
static void big_max(struct cq_cxx_type_row *t)
{
	t->max_index = 70000;
}
static void guess_size(struct cq_cxx_type_row *t)
{
	t->size = 32;
}

static void test_damage_is_rejected(void **state)
{
	(void)state;
	size_t len;
	uint8_t *blob = cq_cxx_types_blob_encode(sample, NSAMPLE, true, &len);
	assert_non_null(blob);
	assert_true(accepted(blob, len));
	uint8_t *b = malloc(len);
	assert_non_null(b);
	damage_every_byte(blob, len, accepted);
	/* The dwarf flag is 0 or 1; flags hold two bits; the count fits the bytes. */
	memcpy(b, blob, len);
	b[0] = 2;
	reseal(b, len);
	assert_false(accepted(b, len));
	memcpy(b, blob, len);
	b[1 + 4 + 32] = 4;
	reseal(b, len);
	assert_false(accepted(b, len));
	memcpy(b, blob, len);
	b[1] = NSAMPLE + 1;
	reseal(b, len);
	assert_false(accepted(b, len));
	free(b);
	free(blob);
	void (*gcc[])(struct cq_cxx_type_row *) = {no_actor,    empty_actor, no_destroy,
	                                           tiny,        promise_out, index_out,
	                                           gcc_cleanup, gcc_layout,  big_max};
	for (size_t i = 0; i < sizeof(gcc) / sizeof(gcc[0]); i++)
		rejects(gcc[i], 0);
	void (*clang[])(struct cq_cxx_type_row *) = {wide_bits, shifted, bad_max, index_out};
	for (size_t i = 0; i < sizeof(clang) / sizeof(clang[0]); i++)
		rejects(clang[i], 1);
	rejects(guess_size, 2);
	rejects(bad_max, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_damage_is_rejected),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
