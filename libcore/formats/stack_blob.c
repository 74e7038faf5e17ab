/*
 * stack_blob.c - encode and decode stacks.frames_blob (see stack_blob.h for
 * the format) on top of the lws backtrace codec.
 *
 * Invariants (asserted): a record being filled never holds more than
 * CQ_LWS_MAX_DEPTH items and a run at most RUN_MAX frames; the encoder's
 * buffer keeps a whole record's room; the decoder's record starts run from
 * 0 upwards, and frames are written only below the count the first record
 * gave.
 */
#include "libcore/formats/stack_blob.h"

#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/formats/lws_codec.h"

#define RUN_MAX      256
#define KIND_SHIFT   8
#define KIND_MASK    15u
#define TOP_SHIFT    12
#define MODULE_SHIFT 13
#define MODULE_LIMIT (INT64_C(1) << 50)
#define TOP_BIT      (UINT64_C(1) << 63)

/* A growing output buffer. */
struct out_buf {
	uint8_t *bytes;
	size_t len, cap;
};

static struct cq_error *append_record(struct out_buf *b, const struct cq_lws_stack *s)
{
	if (b->cap - b->len < CQ_LWS_MAX_BLOB) {
		size_t cap = b->cap ? b->cap * 2 : 2 * CQ_LWS_MAX_BLOB;
		uint8_t *p = realloc(b->bytes, cap);
		if (!p)
			return &cq_error_nomem;
		b->bytes = p;
		b->cap = cap;
	}
	size_t n;
	assert(b->cap - b->len >= CQ_LWS_MAX_BLOB);
	struct cq_error *err = cq_lws_encode(s, b->bytes + b->len, b->cap - b->len, &n);
	if (!err)
		b->len += n;
	assert(b->len <= b->cap);
	return err;
}

/* Adds one item to the record being filled, flushing it when full. */
static struct cq_error *push_item(struct out_buf *b, struct cq_lws_stack *rec, uint64_t value)
{
	assert(rec->depth < CQ_LWS_MAX_DEPTH);
	rec->addr[rec->depth++] = value;
	if (rec->depth < CQ_LWS_MAX_DEPTH)
		return NULL;
	struct cq_error *err = append_record(b, rec);
	*rec = (struct cq_lws_stack){0};
	return err;
}

static uint64_t run_attributes(const struct cq_stack_blob_frame *f)
{
	return (uint64_t)f->module_id << MODULE_SHIFT | (uint64_t)(f->offset >> 63) << TOP_SHIFT |
	       (uint64_t)f->kind << KIND_SHIFT;
}

static struct cq_error *encode_offsets(struct out_buf *b, const struct cq_stack_blob_frame *f,
                                       size_t n)
{
	struct cq_lws_stack rec = {.size = n};
	struct cq_error *err = NULL;
	for (size_t i = 0; i < n && !err; i++)
		err = push_item(b, &rec, f[i].offset & ~TOP_BIT);
	if (!err && (rec.depth || n == 0))
		err = append_record(b, &rec);
	return err;
}

static struct cq_error *encode_runs(struct out_buf *b, const struct cq_stack_blob_frame *f,
                                    size_t n)
{
	struct cq_lws_stack rec = {0};
	struct cq_error *err = NULL;
	for (size_t i = 0; i < n && !err;) {
		uint64_t attr = run_attributes(&f[i]);
		size_t len = 1;
		while (i + len < n && len < RUN_MAX && run_attributes(&f[i + len]) == attr)
			len++;
		assert(len >= 1 && len <= RUN_MAX && (attr & (RUN_MAX - 1)) == 0);
		err = push_item(b, &rec, attr | (len - 1));
		i += len;
	}
	if (!err && rec.depth)
		err = append_record(b, &rec);
	return err;
}

struct cq_error *cq_stack_blob_encode(const struct cq_stack_blob_frame *frames, size_t n,
                                      uint8_t **out, size_t *len)
{
	assert((frames || n == 0) && out && len);
	*out = NULL;
	*len = 0;
	if (n > CQ_STACK_BLOB_MAX_FRAMES)
		return cq_error_create(CQ_ERR_LIMIT, "stack blob: %zu frames, more than %d", n,
		                       CQ_STACK_BLOB_MAX_FRAMES);
	for (size_t i = 0; i < n; i++) {
		if (frames[i].module_id < 0 || frames[i].module_id >= MODULE_LIMIT ||
		    frames[i].kind > KIND_MASK)
			return cq_error_create(CQ_ERR_UNSUPPORTED,
			                       "stack blob: frame %zu: module id %lld or kind %u "
			                       "out of range",
			                       i, (long long)frames[i].module_id, frames[i].kind);
	}
	struct out_buf b = {0};
	struct cq_error *err = encode_offsets(&b, frames, n);
	if (!err)
		err = encode_runs(&b, frames, n);
	if (err) {
		free(b.bytes);
		return err;
	}
	*out = b.bytes;
	*len = b.len;
	return NULL;
}

/* ---- decoding ------------------------------------------------------------- */

/* Splits blob into its records, walking the length trailers from the end. */
static struct cq_error *split_records(const uint8_t *blob, size_t len, size_t *starts, size_t cap,
                                      size_t *count)
{
	size_t end = len, n = 0;
	while (end > 0) {
		if (end < 2)
			return cq_error_create(CQ_ERR_FORMAT,
			                       "stack blob: %zu stray byte at the start", end);
		size_t rec_len = (size_t)blob[end - 2] << 8 | blob[end - 1];
		if (rec_len < 2 || rec_len > end)
			return cq_error_create(
			    CQ_ERR_FORMAT, "stack blob: record ending at byte %zu claims %zu bytes",
			    end, rec_len);
		if (n == cap)
			return cq_error_create(CQ_ERR_FORMAT, "stack blob: more than %zu records",
			                       cap);
		end -= rec_len;
		starts[n++] = end;
	}
	assert(end == 0 && n <= cap);
	/* starts[] holds the records last first; put them in order. */
	for (size_t i = 0; i < n / 2; i++) {
		size_t t = starts[i];
		starts[i] = starts[n - 1 - i];
		starts[n - 1 - i] = t;
	}
	*count = n;
	return NULL;
}

static struct cq_error *decode_record(const uint8_t *blob, size_t len, const size_t *starts,
                                      size_t count, size_t i, struct cq_lws_stack *rec)
{
	size_t end = i + 1 < count ? starts[i + 1] : len;
	assert(i < count && starts[i] < end && end <= len);
	struct cq_error *err = cq_lws_decode(blob + starts[i], end - starts[i], rec);
	if (err)
		return cq_error_prefix(err, "stack blob: record %zu", i);
	if (i > 0 && rec->size != 0)
		return cq_error_create(CQ_ERR_FORMAT, "stack blob: record %zu has size field %llu",
		                       i, (unsigned long long)rec->size);
	return NULL;
}

/* Applies one run item to frames[*at ..]. */
static struct cq_error *apply_run(uint64_t item, struct cq_stack_blob_frame *frames, size_t n,
                                  size_t *at)
{
	size_t run = (size_t)(item & (RUN_MAX - 1)) + 1;
	if (run > n - *at)
		return cq_error_create(
		    CQ_ERR_FORMAT, "stack blob: a run of %zu frames after %zu of %zu", run, *at, n);
	for (size_t k = 0; k < run; k++) {
		struct cq_stack_blob_frame *f = &frames[(*at)++];
		f->module_id = (int64_t)(item >> MODULE_SHIFT);
		f->kind = (uint8_t)(item >> KIND_SHIFT & KIND_MASK);
		if (item >> TOP_SHIFT & 1)
			f->offset |= TOP_BIT;
	}
	return NULL;
}

static struct cq_error *decode_all(const uint8_t *blob, size_t len, const size_t *starts,
                                   size_t count, struct cq_stack_blob_frame **out, size_t *nout)
{
	struct cq_lws_stack rec;
	struct cq_error *err = decode_record(blob, len, starts, count, 0, &rec);
	if (err)
		return err;
	if (rec.size > CQ_STACK_BLOB_MAX_FRAMES)
		return cq_error_create(CQ_ERR_FORMAT, "stack blob: %llu frames",
		                       (unsigned long long)rec.size);
	size_t n = (size_t)rec.size;
	size_t noffsets = n ? (n + CQ_LWS_MAX_DEPTH - 1) / CQ_LWS_MAX_DEPTH : 1;
	if (noffsets > count)
		return cq_error_create(CQ_ERR_FORMAT,
		                       "stack blob: %zu frames need %zu records, "
		                       "it has %zu",
		                       n, noffsets, count);
	struct cq_stack_blob_frame *frames = n ? calloc(n, sizeof(*frames)) : NULL;
	if (n && !frames)
		return &cq_error_nomem;
	size_t at = 0;
	for (size_t i = 0; i < noffsets && !err; i++) {
		if (i > 0)
			err = decode_record(blob, len, starts, count, i, &rec);
		size_t want = n - at < CQ_LWS_MAX_DEPTH ? n - at : CQ_LWS_MAX_DEPTH;
		if (!err && rec.depth != want)
			err = cq_error_create(
			    CQ_ERR_FORMAT, "stack blob: offset record %zu holds %u frames, not %zu",
			    i, rec.depth, want);
		assert(err || at + rec.depth <= n);
		for (unsigned k = 0; !err && k < rec.depth; k++)
			frames[at++].offset = rec.addr[k];
	}
	size_t covered = 0;
	for (size_t i = noffsets; i < count && !err; i++) {
		err = decode_record(blob, len, starts, count, i, &rec);
		if (!err && rec.depth == 0)
			err = cq_error_create(CQ_ERR_FORMAT, "stack blob: empty run record %zu", i);
		for (unsigned k = 0; !err && k < rec.depth; k++)
			err = apply_run(rec.addr[k], frames, n, &covered);
	}
	if (!err && covered != n)
		err = cq_error_create(CQ_ERR_FORMAT, "stack blob: runs cover %zu of %zu frames",
		                      covered, n);
	if (err) {
		free(frames);
		return err;
	}
	*out = frames;
	*nout = n;
	return NULL;
}

struct cq_error *cq_stack_blob_decode(const uint8_t *blob, size_t len,
                                      struct cq_stack_blob_frame **frames, size_t *n)
{
	assert((blob || len == 0) && frames && n);
	*frames = NULL;
	*n = 0;
	if (len == 0)
		return cq_error_create(CQ_ERR_FORMAT, "stack blob: empty");
	/* Every record is at least 3 bytes (depth + size fields, trailer). */
	size_t cap = len / 3 + 1;
	size_t *starts = malloc(cap * sizeof(*starts));
	if (!starts)
		return &cq_error_nomem;
	size_t count = 0;
	struct cq_error *err = split_records(blob, len, starts, cap, &count);
	if (!err)
		err = decode_all(blob, len, starts, count, frames, n);
	free(starts);
	return err;
}
