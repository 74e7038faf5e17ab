/*
 * wire.h - a growing little-endian byte writer and a bounds-checked reader,
 * for the cache's row formats.
 *
 * A cache row is input like a core: the reader never reads past its buffer.
 * Every get on a reader that has failed (or would run past the end) returns
 * zero and leaves the reader failed, so a decoder reads a whole record and
 * checks cq_wire_ok() once.  The writer likewise records running out of
 * memory and keeps going as a no-op.  cq_wire_seal() appends a CRC-32
 * (zlib's) of every byte before it; cq_wire_open() checks and strips it.
 */
#ifndef CQ_WIRE_H
#define CQ_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cq_wire_writer {
	uint8_t *bytes;
	size_t len, cap;
	bool nomem;
};

void cq_wire_put_u8(struct cq_wire_writer *w, uint8_t v);
void cq_wire_put_u32(struct cq_wire_writer *w, uint32_t v);
void cq_wire_put_u64(struct cq_wire_writer *w, uint64_t v);
/* A string: u32 length + 1 (0 for NULL), then its bytes without the NUL. */
void cq_wire_put_str(struct cq_wire_writer *w, const char *s);
/*
 * Appends the CRC and hands over the bytes (malloc'd; NULL when out of
 * memory at any point, the writer's bytes then freed).
 */
uint8_t *cq_wire_seal(struct cq_wire_writer *w, size_t *len);

struct cq_wire_reader {
	const uint8_t *p, *end;
	bool failed;
};

/* A reader over blob[0, len - 4) when its trailing CRC matches; false otherwise. */
bool cq_wire_open(struct cq_wire_reader *r, const uint8_t *blob, size_t len);
uint8_t cq_wire_get_u8(struct cq_wire_reader *r);
uint32_t cq_wire_get_u32(struct cq_wire_reader *r);
uint64_t cq_wire_get_u64(struct cq_wire_reader *r);
/*
 * A count of items at least min_item_bytes each, which the rest of the
 * buffer must be able to hold (so a damaged count cannot ask for a huge
 * allocation); 0 and failed when it cannot.
 */
uint32_t cq_wire_get_count(struct cq_wire_reader *r, size_t min_item_bytes);
/*
 * A string written by cq_wire_put_str, malloc'd, at most max_len bytes and
 * holding no NUL; NULL for a NULL string.  Fails the reader on anything
 * else (and out of memory).
 */
char *cq_wire_get_str(struct cq_wire_reader *r, size_t max_len);
/* True when nothing failed and every byte was read. */
bool cq_wire_done(const struct cq_wire_reader *r);

#endif
