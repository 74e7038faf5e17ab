/*
 * fuzz_lws_codec.c - libFuzzer target for libcore/formats/lws_codec.c.
 *
 * The input goes to the binary decoder and, as text, to the text decoder.
 * Whatever decodes must render as a "~b#" line and, when every value fits in
 * 63 bits, re-encode to a blob and a text line that decode to the same stack
 * and re-encode to the same bytes.  Any difference aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/formats/lws_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int stacks_equal(const struct cq_lws_stack *a, const struct cq_lws_stack *b)
{
	return a->depth == b->depth && a->size == b->size &&
	       !memcmp(a->addr, b->addr, a->depth * sizeof(a->addr[0]));
}

static int encodable(const struct cq_lws_stack *s)
{
	uint64_t all = s->size;
	for (unsigned i = 0; i < s->depth; i++)
		all |= s->addr[i];
	return !(all >> 63);
}

/* Aborts unless err is NULL: these steps cannot fail on a decoded stack. */
static void must_succeed(struct cq_error *err)
{
	if (err)
		abort();
}

static void check_round_trip(const struct cq_lws_stack *s)
{
	char line[CQ_LWS_MAX_LINE], text[CQ_LWS_MAX_TEXT];
	uint8_t blob[CQ_LWS_MAX_BLOB], again[CQ_LWS_MAX_BLOB];
	struct cq_lws_stack back;
	size_t len, len2;

	must_succeed(cq_lws_format_decoded(s, line, sizeof(line)));
	if (!encodable(s)) {
		struct cq_error *err = cq_lws_encode(s, blob, sizeof(blob), &len);
		if (!err || err->code != CQ_ERR_UNSUPPORTED)
			abort();
		cq_error_free(err);
		return;
	}
	must_succeed(cq_lws_encode(s, blob, sizeof(blob), &len));
	must_succeed(cq_lws_decode(blob, len, &back));
	if (!stacks_equal(s, &back))
		abort();
	must_succeed(cq_lws_encode(&back, again, sizeof(again), &len2));
	if (len != len2 || memcmp(blob, again, len))
		abort();
	must_succeed(cq_lws_encode_text(s, text, sizeof(text)));
	must_succeed(cq_lws_decode_text(text, strlen(text), &back));
	if (!stacks_equal(s, &back))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cq_lws_stack s;
	struct cq_error *err = cq_lws_decode(data, size, &s);
	if (err)
		cq_error_free(err);
	else
		check_round_trip(&s);

	err = cq_lws_decode_text((const char *)data, size, &s);
	if (err)
		cq_error_free(err);
	else
		check_round_trip(&s);
	return 0;
}
