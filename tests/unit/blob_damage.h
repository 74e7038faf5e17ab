/*
 * blob_damage.h - the damage every cache blob test puts a blob through
 * (test_cxx_types_blob.c, test_rust_index_blob.c): blobs that end in a
 * CRC-32 (zlib's) of the bytes before it.  Include after <cmocka.h> and
 * <zlib.h>.
 */
#ifndef CQ_TEST_BLOB_DAMAGE_H
#define CQ_TEST_BLOB_DAMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Writes the right CRC over b's first len - 4 bytes into its last four. */
static inline void reseal(uint8_t *b, size_t len)
{
	uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), b, (uInt)(len - 4));
	memcpy(b + len - 4, &crc, 4);
}

/*
 * Every truncation of blob (len bytes) is rejected by accepted, with the
 * CRC it had and behind a right one; every byte under the CRC flipped is
 * rejected, and flipped or set to 0xff behind a right CRC is read with any
 * outcome but a crash or a leak.
 */
static inline void damage_every_byte(const uint8_t *blob, size_t len,
                                     bool (*accepted)(const uint8_t *, size_t))
{
	uint8_t *b = malloc(len);
	assert_non_null(b);
	for (size_t cut = 0; cut < len; cut++) {
		memcpy(b, blob, cut);
		assert_false(accepted(b, cut)); /* the CRC no longer matches */
		if (cut >= 4) {
			reseal(b, cut);
			assert_false(accepted(b, cut)); /* behind a right CRC: too short */
		}
	}
	for (size_t i = 0; i + 4 < len; i++) {
		memcpy(b, blob, len);
		b[i] ^= 0x01;
		assert_false(accepted(b, len));
		reseal(b, len);
		(void)accepted(b, len); /* any outcome but a crash or a leak */
		memcpy(b, blob, len);
		b[i] = 0xff;
		reseal(b, len);
		(void)accepted(b, len);
	}
	free(b);
}

#endif
