/*
 * zstd_seek.h - the seek table of zstd's seekable format: a zstd stream of
 * independent frames followed by one skippable frame that lists each
 * frame's compressed and decompressed size, so that a reader can find and
 * decompress only the frames that hold the bytes it wants.  The file stays a
 * valid .zst: `zstd -d` skips the table and joins the frames.
 *
 * Layout (zstd's contrib/seekable_format, little-endian throughout):
 *
 *   frame 0 | frame 1 | ... | frame N-1 | seek table
 *   seek table = 0x184D2A5E  u32   skippable frame magic
 *                size        u32   bytes that follow (entries + 9)
 *                entry * N         compressed u32, decompressed u32,
 *                                  [checksum u32 when the flag is set]
 *                N           u32
 *                descriptor  u8    bit 7: entries carry a checksum;
 *                                  bits 2-6 reserved, must be 0
 *                0x8F92EAB1  u32   seekable magic
 *
 * The table is untrusted: cq_zseek_parse checks it against the file's size
 * and against limits on frame sizes before any offset is believed.
 * Layer: formats.
 */
#ifndef CQ_ZSTD_SEEK_H
#define CQ_ZSTD_SEEK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

#define CQ_ZSEEK_FOOTER     9
#define CQ_ZSEEK_SKIP_MAGIC 0x184D2A5Eu
#define CQ_ZSEEK_MAGIC      0x8F92EAB1u
/* A frame decompressing to more than this is refused (the format's own bound is 1 GiB). */
#define CQ_ZSEEK_MAX_FRAME (64u << 20)
/* More frames than this are refused: the table's arrays stay within 40 MiB. */
#define CQ_ZSEEK_MAX_FRAMES (1u << 20)
/* Frames coreq writes: 2 MiB of core each, a multiple of every page size. */
#define CQ_ZSEEK_WRITE_FRAME (2u << 20)

struct cq_zseek_frame {
	uint64_t comp_off; /* where the frame starts in the file */
	uint64_t raw_off;  /* where its bytes start in the decompressed stream */
	uint32_t comp_size, raw_size;
};

struct cq_zseek {
	struct cq_zseek_frame *frame; /* malloc'd, n of them, in stream order */
	size_t n;
	uint64_t raw_size;   /* sum of the frames' decompressed sizes */
	uint64_t table_size; /* bytes of the seek table at the file's end */
};

/*
 * Whether the last bytes of a file end in the seekable magic: worth reading
 * the whole table.  tail holds the file's last n bytes (n >= 9 to say yes).
 */
bool cq_zseek_has_footer(const uint8_t *tail, size_t n);

/*
 * The table's size in bytes from its footer (the file's last 9 bytes), or 0
 * when the footer is not a seekable footer or lies about its size (more
 * entries than file_size allows, or more than CQ_ZSEEK_MAX_FRAMES).
 */
uint64_t cq_zseek_table_size(const uint8_t footer[CQ_ZSEEK_FOOTER], uint64_t file_size);

/*
 * Parses the seek table held in table[0, table_size) that ends a file of
 * file_size bytes.  Checked: the skippable magic and its size field, the
 * reserved bits, every frame at least one byte compressed and at most
 * CQ_ZSEEK_MAX_FRAME decompressed and at most zstd's compress bound of that
 * compressed, the compressed frames exactly filling
 * the file before the table, and the decompressed total at most max_raw
 * (0: no bound).  On error *out is empty and the error says which rule
 * the table broke (CQ_ERR_FORMAT, or CQ_ERR_LIMIT for max_raw).
 */
struct cq_error *cq_zseek_parse(const uint8_t *table, size_t table_size, uint64_t file_size,
                                uint64_t max_raw, struct cq_zseek *out);

/* The frame holding decompressed byte raw_off, or n when none does. */
size_t cq_zseek_find(const struct cq_zseek *z, uint64_t raw_off);

void cq_zseek_free(struct cq_zseek *z);

/*
 * The seek table for n frames of the given sizes (no checksums), written to
 * buf (cq_zseek_encoded_size bytes).  For writers.
 */
size_t cq_zseek_encoded_size(size_t n);
void cq_zseek_encode(const uint32_t *comp_size, const uint32_t *raw_size, size_t n, uint8_t *buf);

#endif
