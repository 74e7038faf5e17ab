/*
 * cxx_types_blob.h - the row format of the C++ coroutine type cache: one
 * module's coroutine types (unwind/async/cxx.c), at link-time addresses,
 * encoded when the module's symbols and DWARF are first read and decoded,
 * strictly, for every later core of the same build-id.  A cache row is
 * input like a core: the decoder checks a CRC-32 over the row, the count
 * against the bytes left, and every type against the rules the DWARF reader
 * applies (a frame holds its promise and resume index, a clang index
 * bit-field fits its bytes), and rejects the row rather than return a type
 * the frame scan could trip over.
 */
#ifndef CQ_CXX_TYPES_BLOB_H
#define CQ_CXX_TYPES_BLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

/* The cache's `format` column for rows written by this codec. */
#define CQ_CXX_TYPES_BLOB_FORMAT 1

/* One coroutine of a module, as cxx.c reads it (addresses at link time). */
struct cq_cxx_type_row {
	uint64_t actor, actor_end;  /* gcc's NAME.Frame.actor, clang's NAME.resume */
	uint64_t destroy, destroy2; /* the destroy word(s); destroy2 clang's other one, or 0 */
	bool clang;                 /* found from clang's symbols */
	bool layout;                /* clang: __coro_frame_ty was read */
	uint8_t index_bytes, index_shift, index_bits; /* clang's __coro_index bit-field */
	uint64_t size, promise_off, promise_size, index_off;
	uint32_t max_index; /* highest valid resume index */
};

/*
 * A malloc'd blob of a module's n rows; dwarf: the module's debug info was
 * read.  NULL when out of memory.
 */
uint8_t *cq_cxx_types_blob_encode(const struct cq_cxx_type_row *rows, size_t n, bool dwarf,
                                  size_t *len);

/*
 * The rows of blob (malloc'd, *rows NULL when *n is 0) and its dwarf flag,
 * or CQ_ERR_FORMAT when the blob is malformed.
 */
struct cq_error *cq_cxx_types_blob_decode(const uint8_t *blob, size_t len,
                                          struct cq_cxx_type_row **rows, size_t *n, bool *dwarf);

#endif
