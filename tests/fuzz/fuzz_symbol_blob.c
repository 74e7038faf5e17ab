/*
 * fuzz_symbol_blob.c - libFuzzer target for libcore/symbols/symbol_blob.c,
 * the symbol cache's row decoder (rows of a cache file are untrusted).
 *
 * The input is decoded as a cache row.  What decodes must re-encode to the
 * same bytes (the format has one encoding), so a decoder that accepts more
 * than the encoder writes aborts.  The input is also decoded with the CRC
 * recomputed, so the checks behind the checksum are reached too.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "libcore/symbols/symbol_blob.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void roundtrip(const uint8_t *data, size_t size)
{
	struct cq_symbol_frame frames[CQ_SYMBOLIZER_MAX_INLINE + 1];
	size_t n = cq_symbol_blob_decode(data, size, frames, CQ_SYMBOLIZER_MAX_INLINE + 1);
	if (!n)
		return;
	size_t len;
	uint8_t *again = cq_symbol_blob_encode(frames, n, &len);
	if (!again || len != size || memcmp(again, data, size) != 0)
		abort();
	free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	roundtrip(data, size);
	/* The same bytes with a correct CRC-32 appended. */
	uint8_t *sealed = malloc(size + 4);
	if (!sealed)
		return 0;
	memcpy(sealed, data, size);
	uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), data, (uInt)size);
	memcpy(sealed + size, &crc, 4);
	roundtrip(sealed, size + 4);
	free(sealed);
	return 0;
}
