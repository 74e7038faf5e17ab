/*
 * byte_buf.h - a small buffer for unit tests that lay out binary sections
 * by hand (test_aranges.c, test_line_files.c): little-endian integers of any
 * width, zero beyond 8 bytes.
 */
#ifndef CQ_TEST_BYTE_BUF_H
#define CQ_TEST_BYTE_BUF_H

#include <stddef.h>
#include <stdint.h>

struct buf {
	uint8_t b[512];
	size_t n;
};

static inline void put(struct buf *b, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		b->b[b->n++] = i < 8 ? (uint8_t)(v >> (8 * i)) : 0;
}

#endif
