/*
 * rust_index_blob.h - the row format of the Rust type index cache: one
 * module's index (rust_index.h), at link-time addresses, encoded when the
 * module's DWARF is first read and decoded, strictly, for every later core
 * of the same build-id.  A cache row is input like a core: the decoder
 * checks a CRC-32 over the row, every count against the bytes left, every
 * enum, every type reference and every string, and rejects the row rather
 * than return an index the decoders could trip over.
 */
#ifndef CQ_RUST_INDEX_BLOB_H
#define CQ_RUST_INDEX_BLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"
#include "unwind/target.h"

struct cq_rust_index;

/* The cache's `format` column for rows written by this codec. */
/* 2: `(dyn Future + Send)` fat pointers are wrappers; 3: functions monomorphized over a future;
 * 4: those too whose code DIE names its declaration (DW_AT_specification, -O2);
 * 5: an Unresumed variant's captured future is its awaitee; 6: tokio task kinds of LocalSets;
 * 7: current_thread's block_on, a struct's `future` member as a wrapper's target;
 * 8: block_on's callers over the same F, locations in registers (base 3) and at any
 *    register (base 4), each mono's code range, the runtimes' parts (tokio's task kinds)
 *    after the monos instead of in the generic header */
#define CQ_RUST_INDEX_BLOB_FORMAT 8

/* The blob as the cache knows it: runtime "rust", name "index", this format (rust_index_load.c). */
extern const struct cq_target_blob cq_rust_index_blob;

/* A malloc'd blob of ix (one module's, origins 0); NULL when out of memory. */
uint8_t *cq_rust_index_blob_encode(const struct cq_rust_index *ix, size_t *len);

/* A type reference in a blob (for a runtime part's encode/decode): an index below ntypes, or -1
 * where none_ok; a bad one sets r->failed. */
struct cq_wire_writer;
struct cq_wire_reader;
void cq_rust_blob_put_ref(struct cq_wire_writer *w, int32_t ref);
int32_t cq_rust_blob_get_ref(struct cq_wire_reader *r, size_t ntypes, bool none_ok);

/*
 * A new index from blob (origins 0), its runtime parts read as parts' (the
 * order they were encoded in), or CQ_ERR_FORMAT when the blob is malformed.
 */
struct cq_rust_parts;
struct cq_error *cq_rust_index_blob_decode(const uint8_t *blob, size_t len,
                                           const struct cq_rust_parts *parts,
                                           struct cq_rust_index **out);

#endif
