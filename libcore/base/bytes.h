/*
 * bytes.h - unaligned little-endian loads from untrusted buffers.
 *
 * Callers check bounds first; these only avoid unaligned-access UB.
 */
#ifndef CQ_BYTES_H
#define CQ_BYTES_H

#include <stdint.h>
#include <string.h>

static inline uint64_t cq_load_u64(const void *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t cq_load_u32(const void *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline int32_t cq_load_i32(const void *p)
{
	int32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline int16_t cq_load_i16(const void *p)
{
	int16_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

#endif
