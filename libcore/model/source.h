/*
 * source.h - where a core's bytes come from.
 *
 * A core arrives as a path to a raw ELF file (used in place and mmapped), as
 * a compressed file (zstd, lz4, xz, gzip, bzip2: detected by content), or as
 * "-", standard input, which may be a pipe that cannot seek.  Anything that
 * is not a seekable raw file is decompressed/spooled through libarchive's raw
 * format into an unlinked temporary file, so the rest of coreq always sees a
 * seekable, mmappable file descriptor and never holds the whole core in memory.
 */
#ifndef CQ_SOURCE_H
#define CQ_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

struct cq_source {
	int fd;                  /* seekable, readable; owned */
	uint64_t size;           /* bytes of raw core */
	const char *compression; /* "none", "zstd", "xz", "lz4", "gzip", "bzip2", ... */
	int spooled;             /* fd is a temporary copy */
	uint64_t cut_at;         /* nonzero: the stream went on past this cap and was cut */
};

/* Upper bound for a spooled (decompressed or piped) core: 64 GiB. */
#define CQ_SOURCE_DEFAULT_MAX_SPOOL (64ull << 30)
/* Left free in the spool's file system when no cap is given (as the hook's --keep-free). */
#define CQ_SOURCE_KEEP_FREE (1ull << 30)

/*
 * Opens path ("-" for stdin).  max_spool caps how many bytes a spooled core
 * may grow to; 0 means the free space of the spool's file system less
 * CQ_SOURCE_KEEP_FREE, at most CQ_SOURCE_DEFAULT_MAX_SPOOL.  A longer stream
 * (a decompression bomb) is cut at the cap: the core is then as truncated,
 * and cut_at says so.  With regular_only (a path a database names rather
 * than a person) path is a file name even when it is "-", anything but a
 * regular file (a FIFO, a device) is refused without being opened, and a
 * max_spool the database gave is bounded by the room as 0 would be.
 */
struct cq_error *cq_source_open(const char *path, uint64_t max_spool, bool regular_only,
                                struct cq_source *out);

void cq_source_close(struct cq_source *src);

/* Bytes of a file's start that cq_source_looks_like_core wants. */
#define CQ_SOURCE_SNIFF_BYTES 18

/*
 * Whether a file starting with these n bytes is worth opening as a core:
 * a little-endian ELF ET_CORE, or a stream in one of the compressed
 * formats systemd-coredump writes (zstd, xz, lz4, gzip, bzip2).
 */
bool cq_source_looks_like_core(const unsigned char *head, size_t n);

#endif
