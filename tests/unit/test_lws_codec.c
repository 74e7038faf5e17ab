/*
 * test_lws_codec.c - libwebsockets compressed backtraces (libcore/formats/lws_codec.c).
 *
 * The one published vector pins the format; the rest checks the encoder's
 * choices (literal or delta, which reference) by walking its output with a
 * small bit reader of the test's own, round-trips many random stacks, and
 * feeds the decoder blobs built by hand to be malformed in one way each.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "libcore/formats/lws_codec.h"

static const char vector_text[] = "~m#IF0BmUQugNCkgCnkhdAYpQa6wAAV";
static const char vector_line[] = "~b#size: 7520, 0x406651 0x406852 0x406c1b 0x406294 ";
static const struct cq_lws_stack vector_stack = {
    .depth = 4,
    .addr = {0x406651, 0x406852, 0x406c1b, 0x406294},
    .size = 7520,
};

#define TOP_BIT (UINT64_C(1) << 63)

/* ---- helpers ---------------------------------------------------------------- */

static void check_ok(struct cq_error *err)
{
	if (err)
		fail_msg("unexpected error: %s", err->message);
}

/* Asserts err is a one-line error of the given code, and frees it. */
static void check_fails(struct cq_error *err, enum cq_error_code code)
{
	assert_non_null(err);
	assert_int_equal(err->code, code);
	assert_non_null(err->message);
	assert_true(err->message[0] != '\0');
	assert_null(strchr(err->message, '\n'));
	cq_error_free(err);
}

static void check_stack_equal(const struct cq_lws_stack *a, const struct cq_lws_stack *b)
{
	assert_int_equal(a->depth, b->depth);
	for (unsigned i = 0; i < a->depth; i++)
		assert_int_equal(a->addr[i], b->addr[i]);
	assert_int_equal(a->size, b->size);
}

static unsigned bits_of(uint64_t v)
{
	unsigned n = 1;
	while (n < 64 && v >> n)
		n++;
	return n;
}

/* Writes blobs bit by bit, with a chosen value for every field's extra bit. */
struct builder {
	uint8_t bytes[CQ_LWS_MAX_BLOB + 64];
	size_t pos;
	unsigned quirk;
};

static void put(struct builder *b, uint64_t value, unsigned width)
{
	for (unsigned i = width + 1; i-- > 0; b->pos++) {
		unsigned bit = i ? (unsigned)(value >> (i - 1) & 1) : b->quirk;
		if (bit)
			b->bytes[b->pos / 8] |= (uint8_t)(0x80 >> (b->pos % 8));
	}
}

static void put_literal(struct builder *b, uint64_t value)
{
	put(b, 0, 1);
	put(b, bits_of(value), 6);
	put(b, value, bits_of(value));
}

static void put_delta(struct builder *b, unsigned back, unsigned subtract, uint64_t magnitude)
{
	put(b, 1, 1);
	put(b, back, 3);
	put(b, subtract, 1);
	put(b, bits_of(magnitude), 6);
	put(b, magnitude, bits_of(magnitude));
}

static void put_size(struct builder *b, uint64_t size)
{
	put(b, bits_of(size), 6);
	put(b, size, bits_of(size));
}

/* Pads to a byte, appends the length trailer and returns the blob's length. */
static size_t finish(struct builder *b)
{
	size_t len = (b->pos + 7) / 8 + 2;
	b->bytes[len - 2] = (uint8_t)(len >> 8);
	b->bytes[len - 1] = (uint8_t)len;
	return len;
}

/* What the encoder chose for each item, read back from its blob. */
struct item_kinds {
	uint32_t delta;    /* bit i: item i is a delta */
	uint32_t subtract; /* bit i: item i's delta is subtracted */
	unsigned back[CQ_LWS_MAX_DEPTH];
};

static uint64_t take(const uint8_t *blob, size_t *pos, unsigned width)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < width; i++, (*pos)++)
		v = v << 1 | (uint64_t)(blob[*pos / 8] >> (7 - *pos % 8) & 1);
	(*pos)++;
	return v;
}

static struct item_kinds read_kinds(const uint8_t *blob)
{
	struct item_kinds k = {0};
	size_t pos = 0;
	unsigned depth = (unsigned)take(blob, &pos, 5);
	for (unsigned i = 0; i < depth; i++) {
		if (take(blob, &pos, 1)) {
			k.delta |= UINT32_C(1) << i;
			k.back[i] = (unsigned)take(blob, &pos, 3);
			k.subtract |= (uint32_t)take(blob, &pos, 1) << i;
		}
		take(blob, &pos, (unsigned)take(blob, &pos, 6));
	}
	return k;
}

static struct item_kinds encode_kinds(const struct cq_lws_stack *s)
{
	uint8_t blob[CQ_LWS_MAX_BLOB];
	size_t len;
	check_ok(cq_lws_encode(s, blob, sizeof(blob), &len));
	return read_kinds(blob);
}

/* Encodes s in binary and text, decodes both and compares; returns the blob length. */
static size_t round_trip(const struct cq_lws_stack *s)
{
	uint8_t blob[CQ_LWS_MAX_BLOB], again[CQ_LWS_MAX_BLOB];
	char text[CQ_LWS_MAX_TEXT], line[CQ_LWS_MAX_LINE];
	struct cq_lws_stack back;
	size_t len, len2;

	check_ok(cq_lws_encode(s, blob, sizeof(blob), &len));
	check_ok(cq_lws_decode(blob, len, &back));
	check_stack_equal(s, &back);
	check_ok(cq_lws_encode(&back, again, sizeof(again), &len2));
	assert_int_equal(len, len2);
	assert_memory_equal(blob, again, len);

	check_ok(cq_lws_encode_text(s, text, sizeof(text)));
	memset(&back, 0, sizeof(back));
	check_ok(cq_lws_decode_text(text, strlen(text), &back));
	check_stack_equal(s, &back);
	check_ok(cq_lws_format_decoded(&back, line, sizeof(line)));
	return len;
}

/* splitmix64: a fixed sequence on every platform. */
static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* A value of a random bit length from 0 to max_bits (<= 63). */
static uint64_t random_bits(uint64_t *state, unsigned max_bits)
{
	unsigned n = (unsigned)(next_random(state) % (max_bits + 1));
	return n ? next_random(state) >> (64 - n) : 0;
}

static uint64_t random_address(uint64_t *state, unsigned kind, uint64_t base, uint64_t prev)
{
	uint64_t offset;
	switch (kind) {
	case 0: /* clustered around base, sometimes repeating the last one */
		if (next_random(state) % 8 == 0)
			return prev;
		offset = random_bits(state, 24);
		return (next_random(state) & 1) && offset <= base ? base - offset : base + offset;
	case 1:
		return random_bits(state, 63);
	default:
		return next_random(state) % 4 ? random_bits(state, 8) : 0;
	}
}

static void random_stack(uint64_t *state, struct cq_lws_stack *s)
{
	unsigned mode = (unsigned)(next_random(state) % 4);
	uint64_t base = random_bits(state, 47);
	memset(s, 0, sizeof(*s));
	s->depth = (unsigned)(next_random(state) % (CQ_LWS_MAX_DEPTH + 1));
	for (unsigned i = 0; i < s->depth; i++) {
		unsigned kind = mode == 3 ? (unsigned)(next_random(state) % 3) : mode;
		s->addr[i] = random_address(state, kind, base, i ? s->addr[i - 1] : base);
	}
	s->size = random_bits(state, 63);
}

/* ---- the published vector ------------------------------------------------------ */

static void test_vector_decodes(void **state)
{
	(void)state;
	struct cq_lws_stack s;
	char line[CQ_LWS_MAX_LINE];
	check_ok(cq_lws_decode_text(vector_text, strlen(vector_text), &s));
	check_stack_equal(&s, &vector_stack);
	check_ok(cq_lws_format_decoded(&s, line, sizeof(line)));
	assert_string_equal(line, vector_line);
}

static void test_vector_encodes(void **state)
{
	(void)state;
	char text[CQ_LWS_MAX_TEXT];
	check_ok(cq_lws_encode_text(&vector_stack, text, sizeof(text)));
	assert_string_equal(text, vector_text);

	struct item_kinds k = encode_kinds(&vector_stack);
	assert_int_equal(k.delta, 1u << 2);
	assert_int_equal(k.back[2], 0);
	assert_int_equal(k.subtract, 0);
}

static void test_vector_binary(void **state)
{
	(void)state;
	uint8_t blob[CQ_LWS_MAX_BLOB];
	size_t len;
	struct cq_lws_stack s;
	check_ok(cq_lws_base64_decode(vector_text + 3, strlen(vector_text) - 3, blob, sizeof(blob),
	                              &len));
	assert_int_equal(len, 21);
	assert_int_equal(blob[19], 0x00);
	assert_int_equal(blob[20], 21);
	check_ok(cq_lws_decode(blob, len, &s));
	check_stack_equal(&s, &vector_stack);
}

/* ---- the encoder's choices --------------------------------------------------------- */

static void test_all_literal(void **state)
{
	(void)state;
	struct cq_lws_stack s = {.depth = CQ_LWS_MAX_DEPTH, .size = 12345};
	for (unsigned i = 0; i < s.depth; i++)
		s.addr[i] = (uint64_t)(i + 1) << 58;
	assert_int_equal(encode_kinds(&s).delta, 0);
	round_trip(&s);
}

static void test_all_delta(void **state)
{
	(void)state;
	/* Item 1 can only refer to item 0, which lws never uses: it stays literal. */
	const uint32_t all_but_two = ((UINT32_C(1) << CQ_LWS_MAX_DEPTH) - 1) & ~UINT32_C(3);
	struct cq_lws_stack up = {.depth = CQ_LWS_MAX_DEPTH, .size = 64};
	struct cq_lws_stack down = up;
	up.addr[0] = down.addr[0] = 0x7f1234567000;
	for (unsigned i = 1; i < CQ_LWS_MAX_DEPTH; i++) {
		up.addr[i] = 0x400000 + 0x10 * i;
		down.addr[i] = 0x500000 - 0x10 * i;
	}
	struct item_kinds k = encode_kinds(&up);
	assert_int_equal(k.delta, all_but_two);
	assert_int_equal(k.subtract, 0);
	k = encode_kinds(&down);
	assert_int_equal(k.delta, all_but_two);
	assert_int_equal(k.subtract, all_but_two);
	for (unsigned i = 2; i < CQ_LWS_MAX_DEPTH; i++)
		assert_int_equal(k.back[i], 0);
	round_trip(&up);
	round_trip(&down);
}

static void test_item0_never_a_reference(void **state)
{
	(void)state;
	/* Item 2 is as near to item 0 as to item 1: the earlier, item 0, wins. */
	struct cq_lws_stack s = {.depth = 3, .addr = {0x400000, 0x400100, 0x400080}};
	assert_int_equal(encode_kinds(&s).delta, 0);
	round_trip(&s);
}

static void test_tie_goes_to_earliest(void **state)
{
	(void)state;
	struct cq_lws_stack s = {.depth = 4,
	                         .addr = {0x7f0000000000, 0x400000, 0x400100, 0x400080}};
	struct item_kinds k = encode_kinds(&s);
	assert_int_equal(k.delta, (1u << 2) | (1u << 3));
	assert_int_equal(k.back[3], 1);
	assert_int_equal(k.subtract, 0);
	round_trip(&s);
}

static void test_zero_delta_subtracts(void **state)
{
	(void)state;
	struct cq_lws_stack s = {.depth = 3, .addr = {0x7f0000000000, 0x400000, 0x400000}};
	struct item_kinds k = encode_kinds(&s);
	assert_int_equal(k.delta, 1u << 2);
	assert_int_equal(k.subtract, 1u << 2);
	round_trip(&s);
}

static void test_reference_window_is_eight(void **state)
{
	(void)state;
	struct cq_lws_stack s = {.depth = 11};
	s.addr[0] = 0x7f0000000000;
	s.addr[1] = 0x400000;
	for (unsigned i = 2; i < 11; i++)
		s.addr[i] = (uint64_t)i << 56;
	s.addr[9] = 0x400001;  /* 8 back from item 9 is item 1: a delta */
	s.addr[10] = 0x400002; /* item 1 is 9 back, item 9 only 1 back */
	struct item_kinds k = encode_kinds(&s);
	assert_true(k.delta & (1u << 9));
	assert_int_equal(k.back[9], 7);
	assert_true(k.delta & (1u << 10));
	assert_int_equal(k.back[10], 0);

	s.addr[9] = 9ull << 56; /* now only item 1 is near item 10, out of reach */
	k = encode_kinds(&s);
	assert_false(k.delta & (1u << 10));
	round_trip(&s);
}

/* ---- round trips ----------------------------------------------------------------- */

static void test_random_round_trips(void **state)
{
	(void)state;
	uint64_t seed = 0x5eed;
	unsigned deltas = 0, subtracts = 0;
	for (unsigned n = 0; n < 10000; n++) {
		struct cq_lws_stack s;
		random_stack(&seed, &s);
		size_t len = round_trip(&s);
		assert_in_range(len, 4, CQ_LWS_MAX_BLOB);
		struct item_kinds k = encode_kinds(&s);
		for (unsigned i = 0; i < s.depth; i++) {
			if (k.delta >> i & 1)
				assert_int_not_equal(i - k.back[i] - 1, 0);
		}
		deltas += (unsigned)__builtin_popcount(k.delta);
		subtracts += (unsigned)__builtin_popcount(k.subtract);
	}
	/* The mix must really exercise both kinds of delta. */
	assert_true(deltas > 10000);
	assert_true(subtracts > 1000);
}

static void test_depths_and_sizes(void **state)
{
	(void)state;
	const unsigned depths[] = {0, 1, CQ_LWS_MAX_DEPTH};
	const uint64_t sizes[] = {0, 1, TOP_BIT - 1};
	for (unsigned d = 0; d < 3; d++) {
		for (unsigned z = 0; z < 3; z++) {
			struct cq_lws_stack s = {.depth = depths[d], .size = sizes[z]};
			for (unsigned i = 0; i < s.depth; i++)
				s.addr[i] = i % 2 ? TOP_BIT - 1 - i : 0x55aa00 + i;
			round_trip(&s);
		}
	}
}

static void test_empty_stack_bytes(void **state)
{
	(void)state;
	const struct cq_lws_stack s = {0};
	const uint8_t want[] = {0x00, 0x10, 0x00, 0x04}; /* depth 0, count 1, size 0 */
	uint8_t blob[CQ_LWS_MAX_BLOB];
	char line[CQ_LWS_MAX_LINE];
	size_t len;
	check_ok(cq_lws_encode(&s, blob, sizeof(blob), &len));
	assert_int_equal(len, sizeof(want));
	assert_memory_equal(blob, want, sizeof(want));
	check_ok(cq_lws_format_decoded(&s, line, sizeof(line)));
	assert_string_equal(line, "~b#size: 0, ");
}

static void test_largest_values(void **state)
{
	(void)state;
	struct cq_lws_stack s = {.depth = CQ_LWS_MAX_DEPTH, .size = TOP_BIT - 1};
	for (unsigned i = 0; i < s.depth; i++)
		s.addr[i] = TOP_BIT - 1 - ((uint64_t)i << 57);
	round_trip(&s);
	char line[CQ_LWS_MAX_LINE];
	check_ok(cq_lws_format_decoded(&s, line, sizeof(line)));
	const char start[] = "~b#size: 9223372036854775807, 0x7fffffffffffffff 0x7dffffffffffffff ";
	assert_memory_equal(line, start, sizeof(start) - 1);

	/* The longest line: every number at its widest. */
	s.size = UINT64_MAX;
	for (unsigned i = 0; i < s.depth; i++)
		s.addr[i] = UINT64_MAX - i;
	check_ok(cq_lws_format_decoded(&s, line, sizeof(line)));
	assert_int_equal(strlen(line), CQ_LWS_MAX_LINE - 1);
}

/* The longest blob: a 63-bit literal, then 30 deltas of 63 bits, and a 63-bit size. */
static void test_longest_blob(void **state)
{
	(void)state;
	struct builder b = {0};
	put(&b, CQ_LWS_MAX_DEPTH, 5);
	put_literal(&b, TOP_BIT - 1);
	for (unsigned i = 1; i < CQ_LWS_MAX_DEPTH; i++)
		put_delta(&b, 0, i % 2, TOP_BIT - 1);
	put_size(&b, TOP_BIT - 1);
	size_t len = finish(&b);
	assert_int_equal(len, CQ_LWS_MAX_BLOB);

	struct cq_lws_stack s;
	check_ok(cq_lws_decode(b.bytes, len, &s));
	for (unsigned i = 0; i < CQ_LWS_MAX_DEPTH; i++)
		assert_int_equal(s.addr[i], i % 2 ? 0 : TOP_BIT - 1);
	round_trip(&s);

	char text[CQ_LWS_MAX_TEXT];
	size_t text_len;
	memcpy(text, "~m#", 3);
	check_ok(cq_lws_base64_encode(b.bytes, len, text + 3, sizeof(text) - 3, &text_len));
	assert_int_equal(text_len + 3 + 1, CQ_LWS_MAX_TEXT);
	check_ok(cq_lws_decode_text(text, strlen(text), &s));
}

/* ---- the encoder's refusals --------------------------------------------------------- */

static void test_64_bit_values_refused(void **state)
{
	(void)state;
	uint8_t blob[CQ_LWS_MAX_BLOB];
	char text[CQ_LWS_MAX_TEXT];
	size_t len;
	struct cq_lws_stack s = vector_stack;
	s.addr[2] = TOP_BIT;
	check_fails(cq_lws_encode(&s, blob, sizeof(blob), &len), CQ_ERR_UNSUPPORTED);
	check_fails(cq_lws_encode_text(&s, text, sizeof(text)), CQ_ERR_UNSUPPORTED);
	s = vector_stack;
	s.size = UINT64_MAX;
	check_fails(cq_lws_encode(&s, blob, sizeof(blob), &len), CQ_ERR_UNSUPPORTED);
	s = vector_stack;
	s.depth = CQ_LWS_MAX_DEPTH + 1;
	check_fails(cq_lws_encode(&s, blob, sizeof(blob), &len), CQ_ERR_USAGE);
}

static void test_small_buffers(void **state)
{
	(void)state;
	uint8_t blob[CQ_LWS_MAX_BLOB];
	char text[sizeof(vector_text)], line[sizeof(vector_line)];
	size_t len;
	check_fails(cq_lws_encode(&vector_stack, blob, 20, &len), CQ_ERR_LIMIT);
	check_fails(cq_lws_encode(&vector_stack, blob, 1, &len), CQ_ERR_LIMIT);
	check_ok(cq_lws_encode(&vector_stack, blob, 21, &len));
	assert_int_equal(len, 21);
	check_fails(cq_lws_encode_text(&vector_stack, text, sizeof(text) - 1), CQ_ERR_LIMIT);
	check_ok(cq_lws_encode_text(&vector_stack, text, sizeof(text)));
	check_fails(cq_lws_format_decoded(&vector_stack, line, sizeof(line) - 1), CQ_ERR_LIMIT);
	check_fails(cq_lws_format_decoded(&vector_stack, line, 5), CQ_ERR_LIMIT);
	check_ok(cq_lws_format_decoded(&vector_stack, line, sizeof(line)));
	assert_string_equal(line, vector_line);
}

/* ---- malformed input ---------------------------------------------------------------- */

/* Decodes a blob that must be refused, and checks *s was left alone. */
static void check_blob_refused(const uint8_t *blob, size_t len)
{
	struct cq_lws_stack s, before;
	memset(&s, 0xa5, sizeof(s));
	before = s;
	check_fails(cq_lws_decode(blob, len, &s), CQ_ERR_FORMAT);
	assert_memory_equal(&s, &before, sizeof(s));
}

static void check_text_refused(const char *text)
{
	struct cq_lws_stack s, before;
	memset(&s, 0xa5, sizeof(s));
	before = s;
	check_fails(cq_lws_decode_text(text, strlen(text), &s), CQ_ERR_FORMAT);
	assert_memory_equal(&s, &before, sizeof(s));
}

static size_t vector_blob(uint8_t *blob)
{
	size_t len;
	check_ok(cq_lws_encode(&vector_stack, blob, CQ_LWS_MAX_BLOB, &len));
	return len;
}

static void test_bad_base64_refused(void **state)
{
	(void)state;
	check_text_refused("~m#IF0B!mUQugNCkgCnkhdAYpQa6wAAV");
	check_text_refused("~m#IF0BmUQugNCkgCnkhdAYpQa6wAAV\x01");
	check_text_refused("~m#IF0BmUQugNCkgCnkhdAYpQa6wAA=V");
	check_text_refused("~m#IF0BmUQugNCkgCnkhdAYpQa6wAAV====");
	check_text_refused("~m#IF0BmUQugNCkgCnkhdAYpQa6wAAVQ");
	check_text_refused("~m#IF0BmUQugNCkgCnkhdAYpQa6wAAVQQ=");
	check_text_refused("~b#size: 7520, 0x406651 ");
	check_text_refused("m#IF0BmUQugNCkgCnkhdAYpQa6wAAV");
	const char nul[] = "~m#IF0BmUQu\0gNCkgCnkhdAYpQa6wAAV";
	struct cq_lws_stack s;
	check_fails(cq_lws_decode_text(nul, sizeof(nul) - 1, &s), CQ_ERR_FORMAT);
}

static void test_trailer_mismatch_refused(void **state)
{
	(void)state;
	uint8_t blob[CQ_LWS_MAX_BLOB];
	size_t len = vector_blob(blob);
	blob[len - 1]++;
	check_blob_refused(blob, len);
	blob[len - 1] = 0; /* lws's empty record: a trailer of 0 */
	check_blob_refused(blob, len);
	blob[len - 2] = 1;
	blob[len - 1] = (uint8_t)len;
	check_blob_refused(blob, len);
	check_text_refused("~m#AAA=");
}

static void test_truncated_refused(void **state)
{
	(void)state;
	uint8_t blob[CQ_LWS_MAX_BLOB];
	size_t len = vector_blob(blob);
	for (size_t cut = 0; cut < len; cut++)
		check_blob_refused(blob, cut);
	/* Cut, with the trailer fixed up: the fields run out instead. */
	for (size_t keep = 0; keep < len - 2; keep++) {
		uint8_t cut[CQ_LWS_MAX_BLOB];
		memcpy(cut, blob, keep);
		cut[keep] = 0;
		cut[keep + 1] = (uint8_t)(keep + 2);
		check_blob_refused(cut, keep + 2);
	}
}

static void test_empty_refused(void **state)
{
	(void)state;
	uint8_t blob[1] = {0};
	check_blob_refused(blob, 0);
	check_blob_refused(blob, 1);
	check_text_refused("");
	check_text_refused("~m#");
	check_text_refused(" \n");
	check_text_refused("~m#====");
}

static void test_too_long_refused(void **state)
{
	(void)state;
	uint8_t blob[CQ_LWS_MAX_BLOB + 1];
	size_t len = vector_blob(blob);
	memset(blob + len - 2, 0, sizeof(blob) - len + 2);
	blob[CQ_LWS_MAX_BLOB - 1] = (CQ_LWS_MAX_BLOB + 1) >> 8;
	blob[CQ_LWS_MAX_BLOB] = (CQ_LWS_MAX_BLOB + 1) & 0xff;
	check_blob_refused(blob, sizeof(blob));

	/* One byte shorter it is the longest blob, its tail ignored padding. */
	struct cq_lws_stack s;
	blob[CQ_LWS_MAX_BLOB - 2] = CQ_LWS_MAX_BLOB >> 8;
	blob[CQ_LWS_MAX_BLOB - 1] = CQ_LWS_MAX_BLOB & 0xff;
	check_ok(cq_lws_decode(blob, CQ_LWS_MAX_BLOB, &s));
	check_stack_equal(&s, &vector_stack);
}

static void test_first_item_delta_refused(void **state)
{
	(void)state;
	struct builder b = {0};
	put(&b, 1, 5);
	put_delta(&b, 0, 0, 5);
	put_size(&b, 8);
	check_blob_refused(b.bytes, finish(&b));
}

static void test_delta_before_item0_refused(void **state)
{
	(void)state;
	for (unsigned back = 0; back < 8; back++) {
		struct builder b = {0};
		put(&b, 3, 5);
		put_literal(&b, 0x400000);
		put_literal(&b, 0x400100);
		put_delta(&b, back, 0, 5);
		put_size(&b, 8);
		size_t len = finish(&b);
		struct cq_lws_stack s;
		if (back < 2) {
			check_ok(cq_lws_decode(b.bytes, len, &s));
			assert_int_equal(s.addr[2], (back ? 0x400000 : 0x400100) + 5);
		} else {
			check_blob_refused(b.bytes, len);
		}
	}
}

static void test_delta_wrap_refused(void **state)
{
	(void)state;
	struct builder below = {0}, above = {0};
	put(&below, 3, 5);
	put_literal(&below, 1);
	put_literal(&below, 5);
	put_delta(&below, 0, 1, 6);
	put_size(&below, 0);
	check_blob_refused(below.bytes, finish(&below));

	/* A delta may reach past 2^63, which the encoder then cannot write... */
	put(&above, 3, 5);
	put_literal(&above, 1);
	put_literal(&above, TOP_BIT - 1);
	put_delta(&above, 0, 0, TOP_BIT - 1);
	put_size(&above, 0);
	struct cq_lws_stack s;
	uint8_t blob[CQ_LWS_MAX_BLOB];
	size_t len;
	check_ok(cq_lws_decode(above.bytes, finish(&above), &s));
	assert_int_equal(s.addr[2], UINT64_MAX - 1);
	check_fails(cq_lws_encode(&s, blob, sizeof(blob), &len), CQ_ERR_UNSUPPORTED);

	/* ...but not past 2^64. */
	struct builder beyond = {0};
	put(&beyond, 4, 5);
	put_literal(&beyond, 1);
	put_literal(&beyond, TOP_BIT - 1);
	put_delta(&beyond, 0, 0, TOP_BIT - 1);
	put_delta(&beyond, 0, 0, 2);
	put_size(&beyond, 0);
	check_blob_refused(beyond.bytes, finish(&beyond));
}

static void test_count_past_end_refused(void **state)
{
	(void)state;
	struct builder b = {0};
	put(&b, 1, 5);
	put(&b, 0, 1);
	put(&b, 63, 6);
	put(&b, 0x3ff, 10);
	check_blob_refused(b.bytes, finish(&b));

	struct builder d = {0}; /* 31 items promised, 2 given */
	put(&d, CQ_LWS_MAX_DEPTH, 5);
	put_literal(&d, 0x400000);
	put_literal(&d, 0x400100);
	put_size(&d, 8);
	check_blob_refused(d.bytes, finish(&d));

	struct builder z = {0}; /* the size's bits run out */
	put(&z, 1, 5);
	put_literal(&z, 0x400000);
	put(&z, 40, 6);
	put(&z, 1, 3);
	check_blob_refused(z.bytes, finish(&z));
}

/* ---- what the decoder accepts -------------------------------------------------------- */

static void test_quirk_bit_one_accepted(void **state)
{
	(void)state;
	for (unsigned quirk = 0; quirk < 2; quirk++) {
		struct builder b = {.quirk = quirk};
		put(&b, 4, 5);
		put_literal(&b, 0x406651);
		put_literal(&b, 0x406852);
		put_delta(&b, 0, 0, 0x3c9);
		put_literal(&b, 0x406294);
		put_size(&b, 7520);
		size_t len = finish(&b);
		if (!quirk) {
			uint8_t blob[CQ_LWS_MAX_BLOB];
			assert_int_equal(len, vector_blob(blob));
			assert_memory_equal(b.bytes, blob, len);
		}
		struct cq_lws_stack s;
		check_ok(cq_lws_decode(b.bytes, len, &s));
		check_stack_equal(&s, &vector_stack);
	}
}

static void test_padding_garbage_ignored(void **state)
{
	(void)state;
	/* The vector's stream ends on a byte boundary: add a byte of garbage. */
	uint8_t blob[CQ_LWS_MAX_BLOB];
	size_t len = vector_blob(blob);
	blob[len - 2] = 0xff;
	blob[len - 1] = 0;
	blob[len] = (uint8_t)(len + 1);
	struct cq_lws_stack s;
	check_ok(cq_lws_decode(blob, len + 1, &s));
	check_stack_equal(&s, &vector_stack);

	/* An empty stack takes 15 bits: set the one padding bit. */
	const uint8_t padded[] = {0x00, 0x11, 0x00, 0x04};
	check_ok(cq_lws_decode(padded, sizeof(padded), &s));
	assert_int_equal(s.depth, 0);
	assert_int_equal(s.size, 0);
}

static void test_literal_count_zero_accepted(void **state)
{
	(void)state;
	struct builder b = {0};
	put(&b, 1, 5);
	put(&b, 0, 1);
	put(&b, 0, 6);
	put(&b, 0, 0);
	put_size(&b, 0);
	struct cq_lws_stack s;
	check_ok(cq_lws_decode(b.bytes, finish(&b), &s));
	assert_int_equal(s.depth, 1);
	assert_int_equal(s.addr[0], 0);
}

/* Finds a random stack whose text uses both '+' and '/', which URL-safe changes. */
static void stack_with_url_unsafe_text(struct cq_lws_stack *s, char *text)
{
	uint64_t seed = 42;
	do {
		random_stack(&seed, s);
		check_ok(cq_lws_encode_text(s, text, CQ_LWS_MAX_TEXT));
	} while (!strchr(text, '+') || !strchr(text, '/'));
}

static void test_url_safe_and_whitespace(void **state)
{
	(void)state;
	struct cq_lws_stack s, back;
	char text[CQ_LWS_MAX_TEXT], spaced[3 * CQ_LWS_MAX_TEXT];
	stack_with_url_unsafe_text(&s, text);

	size_t n = 0;
	n += (size_t)sprintf(spaced, " \t");
	for (const char *p = text; *p && *p != '='; p++) {
		spaced[n++] = *p == '+' ? '-' : *p == '/' ? '_' : *p;
		if ((p - text) % 5 == 4)
			spaced[n++] = (p - text) % 2 ? '\n' : ' ';
	}
	n += (size_t)sprintf(spaced + n, "\r\n");
	check_ok(cq_lws_decode_text(spaced, n, &back));
	check_stack_equal(&s, &back);

	/* Bare base64, no prefix. */
	check_ok(cq_lws_decode_text(text + 3, strlen(text) - 3, &back));
	check_stack_equal(&s, &back);
	check_ok(cq_lws_decode_text(vector_text + 3, strlen(vector_text) - 3, &back));
	check_stack_equal(&back, &vector_stack);
}

/* ---- base64 ------------------------------------------------------------------------ */

static void test_base64_rfc4648(void **state)
{
	(void)state;
	static const char *const plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
	static const char *const coded[] = {"",         "Zg==",     "Zm8=",    "Zm9v",
	                                    "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
	for (unsigned i = 0; i < 7; i++) {
		char text[16];
		uint8_t bytes[16];
		size_t len;
		check_ok(cq_lws_base64_encode((const uint8_t *)plain[i], strlen(plain[i]), text,
		                              sizeof(text), &len));
		assert_string_equal(text, coded[i]);
		assert_int_equal(len, strlen(coded[i]));
		check_ok(
		    cq_lws_base64_decode(coded[i], strlen(coded[i]), bytes, sizeof(bytes), &len));
		assert_int_equal(len, strlen(plain[i]));
		assert_memory_equal(bytes, plain[i], len);
		/* Without padding too. */
		size_t bare = strcspn(coded[i], "=");
		check_ok(cq_lws_base64_decode(coded[i], bare, bytes, sizeof(bytes), &len));
		assert_int_equal(len, strlen(plain[i]));
	}
	char small[4];
	size_t len;
	check_fails(cq_lws_base64_encode((const uint8_t *)"f", 1, small, 4, &len), CQ_ERR_LIMIT);
	uint8_t one[1];
	check_fails(cq_lws_base64_decode("Zm8=", 4, one, 1, &len), CQ_ERR_FORMAT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_vector_decodes),
	    cmocka_unit_test(test_vector_encodes),
	    cmocka_unit_test(test_vector_binary),
	    cmocka_unit_test(test_all_literal),
	    cmocka_unit_test(test_all_delta),
	    cmocka_unit_test(test_item0_never_a_reference),
	    cmocka_unit_test(test_tie_goes_to_earliest),
	    cmocka_unit_test(test_zero_delta_subtracts),
	    cmocka_unit_test(test_reference_window_is_eight),
	    cmocka_unit_test(test_random_round_trips),
	    cmocka_unit_test(test_depths_and_sizes),
	    cmocka_unit_test(test_empty_stack_bytes),
	    cmocka_unit_test(test_largest_values),
	    cmocka_unit_test(test_longest_blob),
	    cmocka_unit_test(test_64_bit_values_refused),
	    cmocka_unit_test(test_small_buffers),
	    cmocka_unit_test(test_bad_base64_refused),
	    cmocka_unit_test(test_trailer_mismatch_refused),
	    cmocka_unit_test(test_truncated_refused),
	    cmocka_unit_test(test_empty_refused),
	    cmocka_unit_test(test_too_long_refused),
	    cmocka_unit_test(test_first_item_delta_refused),
	    cmocka_unit_test(test_delta_before_item0_refused),
	    cmocka_unit_test(test_delta_wrap_refused),
	    cmocka_unit_test(test_count_past_end_refused),
	    cmocka_unit_test(test_quirk_bit_one_accepted),
	    cmocka_unit_test(test_padding_garbage_ignored),
	    cmocka_unit_test(test_literal_count_zero_accepted),
	    cmocka_unit_test(test_url_safe_and_whitespace),
	    cmocka_unit_test(test_base64_rfc4648),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
