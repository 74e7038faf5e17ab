/*
 * source.h - where a core's bytes come from.
 *
 * A core arrives as a path to a raw ELF file (used in place and mmapped), as
 * a compressed file (zstd, lz4, xz, gzip, bzip2: detected by content), or as
 * "-", standard input, which may be a pipe that cannot seek.  Anything that
 * is not a seekable raw file is decompressed/spooled through libarchive's raw
 * format into an unlinked temporary file, so the rest of coreq always sees a
 * seekable, mmappable file descriptor and never holds the whole core in memory.
 *
 * A zstd file in zstd's seekable format (independent frames and a seek
 * table: what coreq's own store writes, libcore/capture/spool.c) is not
 * spooled: image points at memory whose frames are decompressed when first
 * touched and dropped again beyond CQ_SOURCE_FRAME_BUDGET bytes
 * (libcore/base/lazy_map.h), so reading a few stacks of a 4 GiB core costs
 * a few frames, in time and in memory.
 */
#ifndef CQ_SOURCE_H
#define CQ_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

struct cq_source_frames;
struct cq_stream_image;
struct cq_stream_hint;
struct cq_source_spool_args;

struct cq_source {
	int fd;               /* seekable, readable; owned; -1 when image is set */
	const uint8_t *image; /* a seekable zstd core: its bytes, decompressed on touch */
	struct cq_source_frames *frames;          /* what serves image (source.c) */
	struct cq_stream_image *stream;           /* or this: a one-stream core (stream_image.h) */
	struct cq_source_spool_args *stream_args; /* its second pass's spool limits */
	uint64_t size;                            /* bytes of raw core */
	const char *compression; /* "none", "zstd", "xz", "lz4", "gzip", "bzip2", ... */
	int spooled;             /* fd is a temporary copy */
	uint64_t cut_at;         /* nonzero: the stream went on past this cap and was cut */
	bool heap_hint;          /* an earlier core of this build had its heap read: kept whole */
	uint64_t feed_bytes;     /* most bytes a feed held (cq_source_feed_start) */
};

/* Decompressed frames of a seekable core kept in memory at once. */
#define CQ_SOURCE_FRAME_BUDGET (128ull << 20)

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
 * want_fd: the caller needs fd (a debugger inherits it), so a seekable core
 * is spooled like any other.  hint (may be NULL): for a one-stream core,
 * whether its analysis will read the heap (libcore/model/stream_image.h).
 */
struct cq_error *cq_source_open(const char *path, uint64_t max_spool, bool regular_only,
                                bool want_fd, const struct cq_stream_hint *hint,
                                struct cq_source *out);

/* How a seekable core's frames were read; all 0 for any other source. */
struct cq_source_frame_stats {
	uint64_t frames;     /* in the file */
	uint64_t fills;      /* decompressed (again after being dropped: counted again) */
	uint64_t bad;        /* that would not decompress to their size: read as zeros */
	uint64_t peak_bytes; /* most decompressed bytes held at once */
};
struct cq_source_frame_stats cq_source_frame_stats(const struct cq_source *src);

/* How the core's bytes were read, for a person and for the benchmarks. */
struct cq_source_read {
	const char *how;         /* "mapped", "seekable frames", "stream", "spooled" */
	const char *compression; /* as cq_source.compression */
	uint64_t size;           /* bytes of raw core */
	/* bytes decompressed and held at most: kept from a stream (and its second pass's
	 * chunks and spool), a seekable core's frames, a spool; and a feed's buffers */
	uint64_t held;
	bool second_pass;    /* a stream: a page not kept was read, so the core was spooled too */
	uint64_t bad_chunks; /* a stream: chunks its second pass could not give (read as zeros) */
	bool heap_hint;      /* an earlier core of this build had its heap read: kept whole */
	/* A stream's scan keep (scan_keep.h): armed with an earlier core's note, the bytes
	 * it kept, whether it gave up, and whether a heap scan was given its pages alone. */
	bool scan_hint;
	uint64_t scan_kept_bytes;
	bool scan_gave_up;
	bool kept_feed;
	const char *scan_note;    /* this core's scan note, when new (for the cache), or NULL */
	const char *exe_build_id; /* a stream: the executable's build-id ("" unknown), or NULL */
};
struct cq_source_read cq_source_read(const struct cq_source *src);

/*
 * Reading spans of the raw core once, in order, ahead of the reader
 * (libcore/base/feed.h): a compressed core's frames are decompressed on
 * other CPUs into buffers of the feed's own rather than mapped into the
 * image, for a scan that reads each byte once.  *out is NULL, and no error,
 * when the source offers none (a raw or spooled core is read fastest where
 * it lies; a one-stream core kept whole has its bytes already).  spans are
 * offsets into the raw core, ascending, within its size; words are the
 * values its reader acts on (cq_feed_words; none: not said).
 */
struct cq_feed_span;
struct cq_feed_words;
struct cq_source_feed;
struct cq_error *cq_source_feed_start(struct cq_source *src, const struct cq_feed_span *spans,
                                      size_t n, const struct cq_feed_words *words, size_t nwords,
                                      struct cq_source_feed **out);
/*
 * The next span's bytes, valid until the next call; NULL: read that span
 * from the image, unless *none is set: it holds no word in words, and its
 * bytes are not given.
 */
const uint8_t *cq_source_feed_next(struct cq_source_feed *sf, bool *none);
void cq_source_feed_stop(struct cq_source_feed *sf);

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
