/*
 * lws_codec.h - libwebsockets' compressed allocation backtraces (lws_backtrace).
 *
 * libwebsockets can hide, in front of each heap block, a bit-packed record of
 * the call stack that allocated it and the size asked for, and dumps live ones
 * as "~m#<base64>" lines.  coreq finds these records in cores and logs; this
 * module turns one record into a struct cq_lws_stack and back, byte-for-byte
 * compatible with lws.
 *
 * A stack is at most CQ_LWS_MAX_DEPTH return addresses (innermost first) and
 * the allocation size.  The format counts bits in a 6-bit field, so a value
 * that needs all 64 bits (>= 2^63) cannot be encoded; the decoder can still
 * produce such addresses by a delta, and returns them.
 *
 * Every function works in caller-provided fixed-size buffers; none allocates
 * except to build a returned struct cq_error.  The layout of the blob is
 * described at the top of lws_codec.c.
 *
 * Layer: formats (libcore/formats/): byte formats that know nothing of cores; above base and
 * unwind.
 * The layer order is in docs/internals.md (Layout) and tests/check-layers.
 */
#ifndef CQ_LWS_CODEC_H
#define CQ_LWS_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

/* The depth field is 5 bits wide. */
#define CQ_LWS_MAX_DEPTH 31

/*
 * The longest blob there can be, trailer included: 6 bits of depth, a 73-bit
 * literal, 30 deltas of 79 bits and 71 bits of size make 315 bytes, + 2.
 * Longer input is refused, so this also bounds what the decoders read.
 */
#define CQ_LWS_MAX_BLOB 317

/* "~m#" + base64 of CQ_LWS_MAX_BLOB bytes + NUL. */
#define CQ_LWS_MAX_TEXT (3 + 4 * ((CQ_LWS_MAX_BLOB + 2) / 3) + 1)

/* "~b#size: " + 20 digits + ", " + 31 * "0x" + 16 digits + " ", + NUL. */
#define CQ_LWS_MAX_LINE (9 + 20 + 2 + CQ_LWS_MAX_DEPTH * 19 + 1)

struct cq_lws_stack {
	unsigned depth;                  /* entries used in addr[] */
	uint64_t addr[CQ_LWS_MAX_DEPTH]; /* return addresses, innermost first */
	uint64_t size;                   /* bytes the allocation asked for */
};

/*
 * Packs s into out[0..cap) and sets *out_len to the blob's length.  Fails with
 * CQ_ERR_USAGE for a depth over CQ_LWS_MAX_DEPTH, CQ_ERR_UNSUPPORTED for a
 * value of 2^63 or more, and CQ_ERR_LIMIT if cap is too small
 * (CQ_LWS_MAX_BLOB always suffices).  Out is unspecified after a failure.
 */
struct cq_error *cq_lws_encode(const struct cq_lws_stack *s, uint8_t *out, size_t cap,
                               size_t *out_len);

/*
 * Unpacks blob[0..len), whose last two bytes are its length, big-endian.
 * Fails with CQ_ERR_FORMAT, leaving *s untouched, if the blob is malformed.
 */
struct cq_error *cq_lws_decode(const uint8_t *blob, size_t len, struct cq_lws_stack *s);

/*
 * Writes "~m#" + base64 of s's blob, NUL-terminated, to text[0..cap)
 * (CQ_LWS_MAX_TEXT always suffices).  Fails like cq_lws_encode.
 */
struct cq_error *cq_lws_encode_text(const struct cq_lws_stack *s, char *text, size_t cap);

/*
 * Decodes text[0..len): optional leading whitespace and "~m#", then base64 in
 * the standard or URL-safe alphabet, with optional '=' padding and any
 * whitespace between characters.  Fails with CQ_ERR_FORMAT, leaving *s
 * untouched.
 */
struct cq_error *cq_lws_decode_text(const char *text, size_t len, struct cq_lws_stack *s);

/*
 * Writes lws's rendering of a decoded stack, NUL-terminated and without a
 * newline: "~b#size: 7520, 0x406651 0x406852 " (every address followed by one
 * space).  CQ_LWS_MAX_LINE always suffices.  Fails with CQ_ERR_USAGE for a
 * depth over CQ_LWS_MAX_DEPTH and CQ_ERR_LIMIT if cap is too small.
 */
struct cq_error *cq_lws_format_decoded(const struct cq_lws_stack *s, char *buf, size_t cap);

/*
 * Standard base64 with '=' padding, as lws writes it: text[0..cap) receives a
 * NUL-terminated string and *text_len its length without the NUL.  Fails with
 * CQ_ERR_LIMIT unless cap > 4 * ceil(len / 3).
 */
struct cq_error *cq_lws_base64_encode(const uint8_t *in, size_t len, char *text, size_t cap,
                                      size_t *text_len);

/*
 * Decodes base64 as cq_lws_decode_text reads it (either alphabet, whitespace
 * anywhere, optional padding) into out[0..cap), setting *out_len.  Fails with
 * CQ_ERR_FORMAT if the text is malformed or holds more than cap bytes.
 */
struct cq_error *cq_lws_base64_decode(const char *text, size_t len, uint8_t *out, size_t cap,
                                      size_t *out_len);

#endif
