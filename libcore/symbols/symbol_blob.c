/*
 * symbol_blob: encoding and strict decoding of symbol-cache rows.
 *
 * Layout (formats 6 and 7): u8 frame count (>= 1); per frame u8 flags (INLINED,
 * FUNCTION, FILE, SYMBOL; no other bit), u32 line (little-endian, <=
 * INT_MAX), the function name, the file name and the symbol's name, each
 * NUL-terminated and present only when its flag is set; then a u32 CRC-32
 * (zlib's) of every byte before it.
 */
#include "libcore/symbols/symbol_blob.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "libcore/base/bytes.h"

#define FLAG_INLINED  1u
#define FLAG_FUNCTION 2u
#define FLAG_FILE     4u
#define FLAG_SYMBOL   8u
#define FLAG_ALL      (FLAG_INLINED | FLAG_FUNCTION | FLAG_FILE | FLAG_SYMBOL)
#define CRC_LEN       4u

static size_t kept_len(const char *s)
{
	return s ? strnlen(s, CQ_SYMBOL_BLOB_MAX_STRING - 1) + 1 : 0;
}

/* Appends s (cut to the maximum) and its NUL; nothing for NULL. */
static uint8_t *put_string(uint8_t *p, const char *s)
{
	if (!s)
		return p;
	size_t len = kept_len(s) - 1;
	memcpy(p, s, len);
	p[len] = '\0';
	return p + len + 1;
}

static uint32_t crc_of(const uint8_t *p, size_t len)
{
	return (uint32_t)crc32(crc32(0L, Z_NULL, 0), p, (uInt)len);
}

uint8_t *cq_symbol_blob_encode(const struct cq_symbol_frame *frames, size_t n, size_t *len)
{
	if (n == 0 || n > UINT8_MAX)
		return NULL;
	size_t size = 1 + CRC_LEN;
	for (size_t i = 0; i < n; i++)
		size += 5 + kept_len(frames[i].function) + kept_len(frames[i].file) +
		        kept_len(frames[i].symbol);
	uint8_t *blob = malloc(size), *p = blob;
	if (!blob)
		return NULL;
	*p++ = (uint8_t)n;
	for (size_t i = 0; i < n; i++) {
		const struct cq_symbol_frame *f = &frames[i];
		*p++ =
		    (uint8_t)((f->inlined ? FLAG_INLINED : 0) | (f->function ? FLAG_FUNCTION : 0) |
		              (f->file ? FLAG_FILE : 0) | (f->symbol ? FLAG_SYMBOL : 0));
		uint32_t line = f->line > 0 ? (uint32_t)f->line : 0;
		memcpy(p, &line, 4);
		p = put_string(put_string(put_string(p + 4, f->function), f->file), f->symbol);
	}
	uint32_t crc = crc_of(blob, (size_t)(p - blob));
	memcpy(p, &crc, CRC_LEN);
	*len = (size_t)(p - blob) + CRC_LEN;
	return blob;
}

/*
 * The NUL-terminated string at *p, which must end before end and be no
 * longer than the encoder writes; NULL when it does not (then *p is left
 * where it was: callers stop at the first failure).
 */
static const char *take_string(const uint8_t **p, const uint8_t *end)
{
	size_t avail = (size_t)(end - *p);
	if (avail > CQ_SYMBOL_BLOB_MAX_STRING)
		avail = CQ_SYMBOL_BLOB_MAX_STRING;
	const uint8_t *nul = memchr(*p, '\0', avail);
	if (!nul)
		return NULL;
	const char *s = (const char *)*p;
	*p = nul + 1;
	return s;
}

size_t cq_symbol_blob_decode(const uint8_t *blob, size_t len, struct cq_symbol_frame *frames,
                             size_t max)
{
	if (!blob || len < 1 + CRC_LEN)
		return 0;
	const uint8_t *p = blob, *end = blob + len - CRC_LEN;
	if (cq_load_u32(end) != crc_of(blob, len - CRC_LEN))
		return 0;
	size_t n = *p++;
	if (n == 0 || n > max)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if ((size_t)(end - p) < 5)
			return 0;
		unsigned flags = *p;
		uint32_t line = cq_load_u32(p + 1);
		p += 5;
		if ((flags & ~FLAG_ALL) || line > INT_MAX)
			return 0;
		const char *function = NULL, *file = NULL, *symbol = NULL;
		if ((flags & FLAG_FUNCTION) && !(function = take_string(&p, end)))
			return 0;
		if ((flags & FLAG_FILE) && !(file = take_string(&p, end)))
			return 0;
		if ((flags & FLAG_SYMBOL) && !(symbol = take_string(&p, end)))
			return 0;
		frames[i] = (struct cq_symbol_frame){.function = function,
		                                     .symbol = symbol,
		                                     .file = file,
		                                     .line = (int)line,
		                                     .inlined = (flags & FLAG_INLINED) != 0};
	}
	return p == end ? n : 0;
}
