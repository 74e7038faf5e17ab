/*
 * reseal.h - for fuzz targets of cache rows that end in a CRC-32 (zlib's):
 * runs check on the input as it is, then on a copy whose last four bytes
 * are made the right CRC of the rest, so that the structural checks behind
 * the CRC are reached too.
 */
#ifndef CQ_FUZZ_RESEAL_H
#define CQ_FUZZ_RESEAL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static inline void fuzz_as_is_and_resealed(const uint8_t *data, size_t size,
                                           void (*check)(const uint8_t *, size_t))
{
	check(data, size);
	if (size < 4)
		return;
	uint8_t *sealed = malloc(size);
	if (!sealed)
		return;
	memcpy(sealed, data, size);
	uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), data, (uInt)(size - 4));
	memcpy(sealed + size - 4, &crc, 4);
	check(sealed, size);
	free(sealed);
}

#endif
