/*
 * wire.c - the cache rows' byte writer and checked reader (see wire.h).
 */
#include "libcore/base/wire.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "libcore/base/bytes.h"

#define CRC_LEN 4u

static uint32_t crc_of(const uint8_t *p, size_t len)
{
	uint32_t crc = (uint32_t)crc32(0L, Z_NULL, 0);
	while (len > 0) { /* zlib takes a uInt length */
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;
		crc = (uint32_t)crc32(crc, p, n);
		p += n;
		len -= n;
	}
	return crc;
}

static void put_bytes(struct cq_wire_writer *w, const void *p, size_t n)
{
	if (w->nomem)
		return;
	if (w->cap - w->len < n) {
		size_t cap = w->cap ? w->cap : 256;
		while (cap - w->len < n)
			cap *= 2;
		uint8_t *b = realloc(w->bytes, cap);
		if (!b) {
			w->nomem = true;
			return;
		}
		w->bytes = b;
		w->cap = cap;
	}
	memcpy(w->bytes + w->len, p, n);
	w->len += n;
}

void cq_wire_put_u8(struct cq_wire_writer *w, uint8_t v)
{
	put_bytes(w, &v, 1);
}

void cq_wire_put_u32(struct cq_wire_writer *w, uint32_t v)
{
	put_bytes(w, &v, 4);
}

void cq_wire_put_u64(struct cq_wire_writer *w, uint64_t v)
{
	put_bytes(w, &v, 8);
}

void cq_wire_put_str(struct cq_wire_writer *w, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n >= UINT32_MAX) {
		w->nomem = true;
		return;
	}
	cq_wire_put_u32(w, s ? (uint32_t)n + 1 : 0);
	if (n)
		put_bytes(w, s, n);
}

uint8_t *cq_wire_seal(struct cq_wire_writer *w, size_t *len)
{
	if (!w->nomem)
		cq_wire_put_u32(w, crc_of(w->bytes, w->len));
	if (w->nomem) {
		free(w->bytes);
		*w = (struct cq_wire_writer){0};
		return NULL;
	}
	uint8_t *b = w->bytes;
	*len = w->len;
	*w = (struct cq_wire_writer){0};
	return b;
}

bool cq_wire_open(struct cq_wire_reader *r, const uint8_t *blob, size_t len)
{
	*r = (struct cq_wire_reader){.failed = true};
	if (!blob || len < CRC_LEN ||
	    cq_load_u32(blob + len - CRC_LEN) != crc_of(blob, len - CRC_LEN))
		return false;
	*r = (struct cq_wire_reader){.p = blob, .end = blob + len - CRC_LEN};
	return true;
}

/* The next n bytes, or NULL (and the reader failed). */
static const uint8_t *take(struct cq_wire_reader *r, size_t n)
{
	if (r->failed || (size_t)(r->end - r->p) < n) {
		r->failed = true;
		return NULL;
	}
	const uint8_t *p = r->p;
	r->p += n;
	return p;
}

uint8_t cq_wire_get_u8(struct cq_wire_reader *r)
{
	const uint8_t *p = take(r, 1);
	return p ? *p : 0;
}

uint32_t cq_wire_get_u32(struct cq_wire_reader *r)
{
	const uint8_t *p = take(r, 4);
	return p ? cq_load_u32(p) : 0;
}

uint64_t cq_wire_get_u64(struct cq_wire_reader *r)
{
	const uint8_t *p = take(r, 8);
	return p ? cq_load_u64(p) : 0;
}

uint32_t cq_wire_get_count(struct cq_wire_reader *r, size_t min_item_bytes)
{
	uint32_t n = cq_wire_get_u32(r);
	if (r->failed || (min_item_bytes && n > (size_t)(r->end - r->p) / min_item_bytes)) {
		r->failed = true;
		return 0;
	}
	return n;
}

char *cq_wire_get_str(struct cq_wire_reader *r, size_t max_len)
{
	uint32_t n = cq_wire_get_u32(r);
	if (r->failed || n == 0)
		return NULL;
	size_t len = (size_t)n - 1;
	const uint8_t *p = len <= max_len ? take(r, len) : NULL;
	if (!p || memchr(p, '\0', len)) {
		r->failed = true;
		return NULL;
	}
	char *s = malloc(len + 1);
	if (!s) {
		r->failed = true;
		return NULL;
	}
	memcpy(s, p, len);
	s[len] = '\0';
	return s;
}

bool cq_wire_done(const struct cq_wire_reader *r)
{
	return !r->failed && r->p == r->end;
}
