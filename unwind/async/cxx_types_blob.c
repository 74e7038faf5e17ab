/*
 * cxx_types_blob.c - encoding and strict decoding of C++ coroutine type
 * cache rows (see cxx_types_blob.h).
 *
 * Layout (format 1), little-endian (libcore/base/wire.h): u8 dwarf, u32
 * count; per type: u64 actor, u64 actor_end, u64 destroy, u64 destroy2,
 * u8 flags (1 clang, 2 layout), u64 size, u64 promise_off, u64
 * promise_size, u64 index_off, u8 index_bytes, u8 index_shift, u8
 * index_bits, u32 max_index (72 bytes); then the CRC-32 of every byte
 * before it.
 */
#include "unwind/async/cxx_types_blob.h"

#include <stdlib.h>

#include "libcore/base/wire.h"

#define ROW_BYTES 72u
#define MAX_ROWS  (1u << 20)

uint8_t *cq_cxx_types_blob_encode(const struct cq_cxx_type_row *rows, size_t n, bool dwarf,
                                  size_t *len)
{
	struct cq_wire_writer w = {0};
	cq_wire_put_u8(&w, dwarf);
	cq_wire_put_u32(&w, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		const struct cq_cxx_type_row *t = &rows[i];
		cq_wire_put_u64(&w, t->actor);
		cq_wire_put_u64(&w, t->actor_end);
		cq_wire_put_u64(&w, t->destroy);
		cq_wire_put_u64(&w, t->destroy2);
		cq_wire_put_u8(&w, (uint8_t)(t->clang | t->layout << 1));
		cq_wire_put_u64(&w, t->size);
		cq_wire_put_u64(&w, t->promise_off);
		cq_wire_put_u64(&w, t->promise_size);
		cq_wire_put_u64(&w, t->index_off);
		cq_wire_put_u8(&w, t->index_bytes);
		cq_wire_put_u8(&w, t->index_shift);
		cq_wire_put_u8(&w, t->index_bits);
		cq_wire_put_u32(&w, t->max_index);
	}
	return cq_wire_seal(&w, len);
}

/* off + n bytes lie within size, without overflow. */
static bool within(uint64_t off, uint64_t n, uint64_t size)
{
	return off <= size && n <= size - off;
}

/* A row cxx.c's DWARF reader could have written (index_module). */
static bool valid(const struct cq_cxx_type_row *t)
{
	if (t->actor == 0 || t->actor >= t->actor_end || t->destroy == 0 ||
	    t->max_index > UINT16_MAX)
		return false;
	if (t->clang && !t->layout) /* clang without __coro_frame_ty: the fixed guess */
		return t->size == 16 && t->promise_off == 16 && t->promise_size == 8 &&
		       t->index_off == 0 && t->max_index == UINT16_MAX && t->index_bytes == 0 &&
		       t->index_shift == 0 && t->index_bits == 0;
	if (t->size < 16 || !within(t->promise_off, t->promise_size, t->size) ||
	    !within(t->index_off, 2, t->size))
		return false;
	if (!t->clang) /* gcc: _Coro_resume_index, two bytes; no .cleanup */
		return !t->layout && t->destroy2 == 0 && t->index_bytes == 0 &&
		       t->index_shift == 0 && t->index_bits == 0;
	return t->index_bytes >= 1 && t->index_bytes <= 2 && t->index_bits >= 1 &&
	       t->index_bits <= 16 && t->index_shift + t->index_bits <= t->index_bytes * 8 &&
	       t->max_index == (1u << t->index_bits) - 1;
}

struct cq_error *cq_cxx_types_blob_decode(const uint8_t *blob, size_t len,
                                          struct cq_cxx_type_row **rows, size_t *n, bool *dwarf)
{
	*rows = NULL;
	*n = 0;
	*dwarf = false;
	struct cq_wire_reader r;
	if (!cq_wire_open(&r, blob, len))
		return cq_error_create(CQ_ERR_FORMAT,
		                       "C++ coroutine types blob: checksum mismatch");
	uint8_t dw = cq_wire_get_u8(&r);
	uint32_t count = cq_wire_get_count(&r, ROW_BYTES);
	if (dw > 1 || count > MAX_ROWS)
		r.failed = true;
	struct cq_cxx_type_row *out = NULL;
	if (!r.failed && count && !(out = calloc(count, sizeof(*out))))
		return &cq_error_nomem;
	for (uint32_t i = 0; i < count && !r.failed; i++) {
		struct cq_cxx_type_row *t = &out[i];
		t->actor = cq_wire_get_u64(&r);
		t->actor_end = cq_wire_get_u64(&r);
		t->destroy = cq_wire_get_u64(&r);
		t->destroy2 = cq_wire_get_u64(&r);
		uint8_t flags = cq_wire_get_u8(&r);
		t->clang = flags & 1;
		t->layout = flags & 2;
		t->size = cq_wire_get_u64(&r);
		t->promise_off = cq_wire_get_u64(&r);
		t->promise_size = cq_wire_get_u64(&r);
		t->index_off = cq_wire_get_u64(&r);
		t->index_bytes = cq_wire_get_u8(&r);
		t->index_shift = cq_wire_get_u8(&r);
		t->index_bits = cq_wire_get_u8(&r);
		t->max_index = cq_wire_get_u32(&r);
		if (r.failed || flags > 3 || !valid(t))
			r.failed = true;
	}
	if (!cq_wire_done(&r)) {
		free(out);
		return cq_error_create(CQ_ERR_FORMAT, "C++ coroutine types blob: malformed");
	}
	*rows = out;
	*n = count;
	*dwarf = dw;
	return NULL;
}
