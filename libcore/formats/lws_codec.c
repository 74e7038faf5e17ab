/*
 * lws_codec.c - encode and decode libwebsockets' compressed backtraces.
 *
 * The blob is a bit stream, MSB first within each byte, followed by its
 * length.  Every field of nominal width W takes W + 1 bits: the W value bits,
 * most significant first, then one bit that carries nothing (lws writes 0; we
 * write 0 and ignore its value when reading).  In order:
 *
 *   depth      5 bits, the number of items (at most 31)
 *   per item   flag, 1 bit: 0 = literal, 1 = delta (the first item is literal)
 *     literal  count n, 6 bits; then n bits of the address
 *     delta    back-index r, 3 bits (the reference is item i - (r + 1));
 *              sign, 1 bit (1 = subtract from the reference);
 *              count q, 6 bits; then q bits of |address - reference|
 *   size       count, 6 bits; then that many bits of the allocation size
 *   padding    zero bits up to a byte boundary
 *   length     16 bits big-endian: the whole blob's length, these 2 included
 *
 * A count is the index of the value's top set bit + 1, and 1 for zero, so a
 * value of 2^63 or more cannot be written.  The encoder reproduces lws's
 * choices exactly: among the previous (up to 8) items it takes the reference
 * with the smallest |delta|, the earliest item winning a tie and a zero delta
 * counting as a subtraction; it emits that delta only if the reference is not
 * item 0 and q + 11 < n + 7, and a literal otherwise.
 *
 * In text, a blob is "~m#" + standard base64 (with '=' padding) of the whole
 * blob; lws prints a decoded one as "~b#size: N, 0xA 0xB ".
 *
 * The decoder trusts nothing: the length must match the trailer, every field
 * must lie inside the stream, a delta must refer to an earlier item and must
 * not wrap around 64 bits.  Bits after the size field are ignored.
 *
 * Invariants (asserted): a reader never stands past its stream and a field
 * is at most 63 bits; a depth field (5 bits) cannot exceed the item array;
 * a writer writes only inside its room, and each field's value fits its
 * width (a reference lies at most 8 items back, a count is at most 63).
 */
#include "libcore/formats/lws_codec.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define DEPTH_BITS 5
#define COUNT_BITS 6
#define BACK_BITS  3
#define TRAILER    2 /* bytes of big-endian length at the end */
#define MAX_BACK   8 /* references reach at most this many items back */
#define TOP_BIT    (UINT64_C(1) << 63)

_Static_assert((1u << DEPTH_BITS) - 1 <= CQ_LWS_MAX_DEPTH, "a depth field indexes addr[]");
_Static_assert(1u << BACK_BITS == MAX_BACK, "a back-index reaches MAX_BACK items");

/* Bits needed to write v: its top set bit's index + 1, and 1 for zero. */
static unsigned significant_bits(uint64_t v)
{
	return v ? 64u - (unsigned)__builtin_clzll(v) : 1u;
}

/* ---- reading -------------------------------------------------------------- */

struct bit_reader {
	const uint8_t *bytes;
	size_t nbits; /* bits in the stream, trailer excluded */
	size_t pos;   /* next bit to read */
};

/* Reads a field of width (<= 63) value bits plus its empty trailing bit. */
static struct cq_error *read_field(struct bit_reader *r, unsigned width, const char *what,
                                   uint64_t *value)
{
	assert(width <= 63 && r->pos <= r->nbits);
	if (r->nbits - r->pos < (size_t)width + 1)
		return cq_error_create(
		    CQ_ERR_FORMAT,
		    "%s (%u bits at bit %zu) runs past the end of the %zu-bit stream", what,
		    width + 1, r->pos, r->nbits);
	uint64_t v = 0;
	for (unsigned i = 0; i < width; i++, r->pos++)
		v = v << 1 | (uint64_t)(r->bytes[r->pos >> 3] >> (7 - (r->pos & 7)) & 1);
	r->pos++;
	*value = v;
	return NULL;
}

/* Reads a 6-bit count and then a value of that many bits. */
static struct cq_error *read_counted(struct bit_reader *r, const char *what, uint64_t *value)
{
	uint64_t count;
	struct cq_error *err = read_field(r, COUNT_BITS, "count", &count);
	if (err)
		return cq_error_prefix(err, "%s", what);
	err = read_field(r, (unsigned)count, "value", value);
	return err ? cq_error_prefix(err, "%s", what) : NULL;
}

/* Applies a delta to the reference, refusing to wrap around 64 bits. */
static struct cq_error *apply_delta(uint64_t ref, uint64_t subtract, uint64_t magnitude,
                                    uint64_t *value)
{
	if (subtract ? magnitude > ref : magnitude > UINT64_MAX - ref)
		return cq_error_create(CQ_ERR_FORMAT,
		                       "delta %c0x%" PRIx64 " from 0x%" PRIx64
		                       " leaves the 64-bit range",
		                       subtract ? '-' : '+', magnitude, ref);
	*value = subtract ? ref - magnitude : ref + magnitude;
	return NULL;
}

/* Reads item i, given items 0 .. i-1 in addr[]. */
static struct cq_error *read_item(struct bit_reader *r, const uint64_t *addr, unsigned i,
                                  uint64_t *value)
{
	uint64_t is_delta, back, subtract, magnitude;
	struct cq_error *err = read_field(r, 1, "flag", &is_delta);
	if (err)
		return err;
	if (!is_delta)
		return read_counted(r, "literal", value);
	if (i == 0)
		return cq_error_create(CQ_ERR_FORMAT,
		                       "a delta, with nothing before it to refer to");
	if ((err = read_field(r, BACK_BITS, "back-index", &back)) ||
	    (err = read_field(r, 1, "sign", &subtract)) ||
	    (err = read_counted(r, "delta", &magnitude)))
		return err;
	if (back + 1 > i)
		return cq_error_create(
		    CQ_ERR_FORMAT, "delta refers %" PRIu64 " items back, before item 0", back + 1);
	return apply_delta(addr[i - back - 1], subtract, magnitude, value);
}

/* Checks the blob's length against its bounds and its trailer. */
static struct cq_error *check_length(const uint8_t *blob, size_t len)
{
	if (len < TRAILER)
		return cq_error_create(CQ_ERR_FORMAT, "%zu bytes, too short for the length trailer",
		                       len);
	if (len > CQ_LWS_MAX_BLOB)
		return cq_error_create(CQ_ERR_FORMAT, "%zu bytes, longer than any blob (%d)", len,
		                       CQ_LWS_MAX_BLOB);
	unsigned trailer = (unsigned)blob[len - 2] << 8 | blob[len - 1];
	if (trailer == 0)
		return cq_error_create(
		    CQ_ERR_FORMAT,
		    "length trailer is 0, lws's mark for a backtrace that did not fit");
	if (trailer != len)
		return cq_error_create(CQ_ERR_FORMAT, "length trailer says %u bytes, blob has %zu",
		                       trailer, len);
	return NULL;
}

static struct cq_error *decode_stream(struct bit_reader *r, struct cq_lws_stack *s)
{
	uint64_t depth;
	struct cq_error *err = read_field(r, DEPTH_BITS, "depth", &depth);
	if (err)
		return err;
	s->depth = (unsigned)depth;
	assert(s->depth <= CQ_LWS_MAX_DEPTH);
	for (unsigned i = 0; i < s->depth; i++) {
		if ((err = read_item(r, s->addr, i, &s->addr[i])))
			return cq_error_prefix(err, "item %u (depth %u)", i, s->depth);
	}
	return read_counted(r, "size", &s->size);
}

struct cq_error *cq_lws_decode(const uint8_t *blob, size_t len, struct cq_lws_stack *s)
{
	struct cq_error *err = check_length(blob, len);
	if (err)
		return cq_error_prefix(err, "lws blob");
	struct bit_reader r = {.bytes = blob, .nbits = (len - TRAILER) * 8, .pos = 0};
	struct cq_lws_stack out = {0};
	if ((err = decode_stream(&r, &out)))
		return cq_error_prefix(err, "lws blob");
	*s = out;
	return NULL;
}

/* ---- writing -------------------------------------------------------------- */

struct bit_writer {
	uint8_t *bytes;
	size_t cap_bits; /* room for the stream, trailer excluded */
	size_t pos;      /* next bit to write */
	int overflow;    /* a field did not fit; later ones are dropped */
};

static void put_bit(struct bit_writer *w, unsigned bit)
{
	assert(w->pos < w->cap_bits && bit <= 1);
	if (!(w->pos & 7))
		w->bytes[w->pos >> 3] = 0;
	w->bytes[w->pos >> 3] |= (uint8_t)(bit << (7 - (w->pos & 7)));
	w->pos++;
}

/* Writes width (<= 63) value bits, MSB first, and the empty trailing bit. */
static void write_field(struct bit_writer *w, uint64_t value, unsigned width)
{
	assert(width <= 63 && value >> width == 0);
	if (w->overflow || w->cap_bits - w->pos < (size_t)width + 1) {
		w->overflow = 1;
		return;
	}
	for (unsigned i = width; i-- > 0;)
		put_bit(w, (unsigned)(value >> i & 1));
	put_bit(w, 0);
}

static void write_counted(struct bit_writer *w, uint64_t value)
{
	unsigned count = significant_bits(value);
	write_field(w, count, COUNT_BITS);
	write_field(w, value, count);
}

struct delta {
	unsigned ref;       /* index of the reference item */
	unsigned subtract;  /* 1 if the item is at or below the reference */
	uint64_t magnitude; /* |item - reference| */
};

/* lws's choice of reference for item i > 0: the nearest, earliest on ties. */
static struct delta nearest_reference(const uint64_t *addr, unsigned i)
{
	struct delta best = {0};
	unsigned first = i > MAX_BACK ? i - MAX_BACK : 0;
	for (unsigned m = first; m < i; m++) {
		unsigned subtract = addr[i] <= addr[m];
		uint64_t magnitude = subtract ? addr[m] - addr[i] : addr[i] - addr[m];
		if (m > first && magnitude >= best.magnitude)
			continue;
		best.ref = m;
		best.subtract = subtract;
		best.magnitude = magnitude;
	}
	return best;
}

static void write_item(struct bit_writer *w, const uint64_t *addr, unsigned i)
{
	struct delta d = i ? nearest_reference(addr, i) : (struct delta){0};
	if (d.ref == 0 || significant_bits(d.magnitude) + 11 >= significant_bits(addr[i]) + 7) {
		write_field(w, 0, 1);
		write_counted(w, addr[i]);
		return;
	}
	assert(d.ref < i && i - d.ref <= MAX_BACK);
	write_field(w, 1, 1);
	write_field(w, i - d.ref - 1, BACK_BITS);
	write_field(w, d.subtract, 1);
	write_counted(w, d.magnitude);
}

static struct cq_error *check_encodable(const struct cq_lws_stack *s)
{
	if (s->depth > CQ_LWS_MAX_DEPTH)
		return cq_error_create(CQ_ERR_USAGE, "lws blob: depth %u exceeds %d", s->depth,
		                       CQ_LWS_MAX_DEPTH);
	for (unsigned i = 0; i < s->depth; i++) {
		if (s->addr[i] & TOP_BIT)
			return cq_error_create(CQ_ERR_UNSUPPORTED,
			                       "lws blob: address 0x%" PRIx64 " (item %u) needs 64 "
			                       "bits, the format's counts stop at 63",
			                       s->addr[i], i);
	}
	if (s->size & TOP_BIT)
		return cq_error_create(CQ_ERR_UNSUPPORTED,
		                       "lws blob: size %" PRIu64 " needs 64 bits, the format's "
		                       "counts stop at 63",
		                       s->size);
	return NULL;
}

struct cq_error *cq_lws_encode(const struct cq_lws_stack *s, uint8_t *out, size_t cap,
                               size_t *out_len)
{
	struct cq_error *err = check_encodable(s);
	if (err)
		return err;
	size_t room = cap < CQ_LWS_MAX_BLOB ? cap : CQ_LWS_MAX_BLOB;
	struct bit_writer w = {.bytes = out, .cap_bits = room > TRAILER ? (room - TRAILER) * 8 : 0};
	write_field(&w, s->depth, DEPTH_BITS);
	for (unsigned i = 0; i < s->depth; i++)
		write_item(&w, s->addr, i);
	write_counted(&w, s->size);
	if (w.overflow)
		return cq_error_create(CQ_ERR_LIMIT,
		                       "lws blob: output buffer of %zu bytes is too small", cap);
	size_t len = (w.pos + 7) / 8 + TRAILER;
	assert(len <= room && len <= CQ_LWS_MAX_BLOB);
	out[len - 2] = (uint8_t)(len >> 8);
	out[len - 1] = (uint8_t)len;
	*out_len = len;
	return NULL;
}

/* ---- base64 --------------------------------------------------------------- */

static const char base64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The 6-bit value of c in either alphabet, or -1. */
static int base64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

struct cq_error *cq_lws_base64_encode(const uint8_t *in, size_t len, char *text, size_t cap,
                                      size_t *text_len)
{
	size_t need = (len + 2) / 3 * 4;
	if (cap <= need)
		return cq_error_create(CQ_ERR_LIMIT, "base64 of %zu bytes needs %zu, have %zu", len,
		                       need + 1, cap);
	char *p = text;
	for (size_t i = 0; i < len; i += 3) {
		size_t left = len - i;
		uint32_t group = (uint32_t)in[i] << 16 | (left > 1 ? (uint32_t)in[i + 1] << 8 : 0) |
		                 (left > 2 ? in[i + 2] : 0);
		*p++ = base64_alphabet[group >> 18];
		*p++ = base64_alphabet[group >> 12 & 63];
		*p++ = left > 1 ? base64_alphabet[group >> 6 & 63] : '=';
		*p++ = left > 2 ? base64_alphabet[group & 63] : '=';
	}
	*p = '\0';
	*text_len = need;
	return NULL;
}

static struct cq_error *bad_character(const char *text, size_t at)
{
	unsigned char c = (unsigned char)text[at];
	if (c > ' ' && c < 0x7f)
		return cq_error_create(CQ_ERR_FORMAT, "bad base64 character '%c' at offset %zu", c,
		                       at);
	return cq_error_create(CQ_ERR_FORMAT, "bad base64 byte 0x%02x at offset %zu", c, at);
}

/* Checks the character and padding counts once the input is consumed. */
static struct cq_error *check_base64_end(size_t chars, size_t pads)
{
	if (chars % 4 == 1)
		return cq_error_create(CQ_ERR_FORMAT, "base64 ends with a lone 6-bit character");
	if (pads && (pads > 2 || (chars + pads) % 4))
		return cq_error_create(
		    CQ_ERR_FORMAT,
		    "%zu '=' do not complete a group of 4 after %zu base64 characters", pads,
		    chars);
	return NULL;
}

/* Decodes text[start..len), reporting offsets from text. */
static struct cq_error *base64_decode_from(const char *text, size_t start, size_t len, uint8_t *out,
                                           size_t cap, size_t *out_len)
{
	uint32_t bits = 0;
	unsigned nbits = 0;
	size_t n = 0, chars = 0, pads = 0;
	for (size_t i = start; i < len; i++) {
		if (is_space(text[i]))
			continue;
		if (text[i] == '=') {
			pads++;
			continue;
		}
		int v = base64_value(text[i]);
		if (v < 0)
			return bad_character(text, i);
		if (pads)
			return cq_error_create(CQ_ERR_FORMAT,
			                       "base64 goes on after '=' at offset %zu", i);
		bits = (bits << 6 | (uint32_t)v) & 0xfff;
		nbits += 6;
		chars++;
		if (nbits < 8)
			continue;
		nbits -= 8;
		if (n == cap)
			return cq_error_create(CQ_ERR_FORMAT, "base64 decodes to over %zu bytes",
			                       cap);
		out[n++] = (uint8_t)(bits >> nbits);
	}
	struct cq_error *err = check_base64_end(chars, pads);
	if (!err)
		*out_len = n;
	return err;
}

struct cq_error *cq_lws_base64_decode(const char *text, size_t len, uint8_t *out, size_t cap,
                                      size_t *out_len)
{
	return base64_decode_from(text, 0, len, out, cap, out_len);
}

/* ---- text ----------------------------------------------------------------- */

struct cq_error *cq_lws_encode_text(const struct cq_lws_stack *s, char *text, size_t cap)
{
	uint8_t blob[CQ_LWS_MAX_BLOB];
	size_t len, text_len;
	struct cq_error *err = cq_lws_encode(s, blob, sizeof(blob), &len);
	if (err)
		return err;
	if (cap < 3)
		return cq_error_create(CQ_ERR_LIMIT,
		                       "lws text: output buffer of %zu bytes is too small", cap);
	memcpy(text, "~m#", 3);
	err = cq_lws_base64_encode(blob, len, text + 3, cap - 3, &text_len);
	return err ? cq_error_prefix(err, "lws text") : NULL;
}

struct cq_error *cq_lws_decode_text(const char *text, size_t len, struct cq_lws_stack *s)
{
	size_t start = 0;
	while (start < len && is_space(text[start]))
		start++;
	if (len - start >= 3 && !memcmp(text + start, "~m#", 3))
		start += 3;
	uint8_t blob[CQ_LWS_MAX_BLOB];
	size_t blob_len;
	struct cq_error *err = base64_decode_from(text, start, len, blob, sizeof(blob), &blob_len);
	if (err)
		return cq_error_prefix(err, "lws text");
	return cq_lws_decode(blob, blob_len, s);
}

struct cq_error *cq_lws_format_decoded(const struct cq_lws_stack *s, char *buf, size_t cap)
{
	if (s->depth > CQ_LWS_MAX_DEPTH)
		return cq_error_create(CQ_ERR_USAGE, "lws line: depth %u exceeds %d", s->depth,
		                       CQ_LWS_MAX_DEPTH);
	size_t used = 0;
	int n = snprintf(buf, cap, "~b#size: %" PRIu64 ", ", s->size);
	for (unsigned i = 0; n >= 0 && (size_t)n < cap - used && i < s->depth; i++) {
		used += (size_t)n;
		n = snprintf(buf + used, cap - used, "0x%" PRIx64 " ", s->addr[i]);
	}
	if (n < 0 || (size_t)n >= cap - used)
		return cq_error_create(CQ_ERR_LIMIT,
		                       "lws line: output buffer of %zu bytes is too small", cap);
	return NULL;
}
