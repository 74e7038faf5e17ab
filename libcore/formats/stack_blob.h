/*
 * stack_blob.h - the compact encoding of a stored stack's frames
 * (stacks.frames_blob): libwebsockets' backtrace records (lws_codec.h)
 * carrying every frame's module-relative offset, module id and kind.
 *
 * The blob is a sequence of complete lws records, each ending with its own
 * 16-bit big-endian length, so it is walked from its end backwards.  In
 * order:
 *
 *   offset records  ceil(n / 31) of them, at least one: the frames' offsets
 *                   (link-time address in the module, or the pc for a frame
 *                   in no module), 31 per record, innermost first.  The first
 *                   record's size field is n, the number of frames; the
 *                   others' is 0.
 *   run records     the frames' attributes, run-length coded, 31 runs per
 *                   record (size field 0).  A run is one item whose value is
 *                       module_id << 13 | top << 12 | kind << 8 | (length - 1)
 *                   for length (1..256) consecutive frames with the same
 *                   module id (frames.module_id, 0 for none), kind (0
 *                   native, 1 inline, 2 async, 3 python: enum cq_frame_kind) and top
 *                   bit: top = 1 means each of these offsets had bit 63 set,
 *                   which lws's 63-bit counts cannot carry, so it was cleared
 *                   in the offset record.  The runs cover exactly n frames.
 *
 * lws's delta coding does the compression: nearby return addresses in one
 * module cost a few bits each, and a run of frames in one module costs one
 * item.  Module ids must be below 2^50.
 */
#ifndef CQ_STACK_BLOB_H
#define CQ_STACK_BLOB_H

#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

/* Frames a blob may hold; longer stacks are refused by both directions. */
#define CQ_STACK_BLOB_MAX_FRAMES 65536

struct cq_stack_blob_frame {
	int64_t module_id; /* 0: in no module */
	uint64_t offset;   /* module-relative, or the pc */
	uint8_t kind;      /* enum cq_frame_kind */
};

/* Encodes frames[0..n) into a malloc'd *out of *len bytes. */
struct cq_error *cq_stack_blob_encode(const struct cq_stack_blob_frame *frames, size_t n,
                                      uint8_t **out, size_t *len);

/*
 * Decodes blob[0..len) into a malloc'd array *frames of *n entries (NULL for
 * none).  Fails with CQ_ERR_FORMAT if the blob is malformed in any way.
 */
struct cq_error *cq_stack_blob_decode(const uint8_t *blob, size_t len,
                                      struct cq_stack_blob_frame **frames, size_t *n);

#endif
