/*
 * stream_image.h - a core that arrives as one compressed stream (systemd-
 * coredump's one-frame .zst; xz, gzip, lz4, bzip2) read once, at the
 * decompressor's speed, into memory that holds only what the analysis reads.
 *
 * An ELF core puts its program headers and notes first, so the threads'
 * registers, the segments and the mapped files are known before any memory
 * streams past.  From them a keep plan is made: the headers and notes; every
 * segment of a mapped file (module headers, .data, .bss); every small
 * segment; each thread's stack from just below its sp to the segment's end;
 * the pages around every register's value (a futex word, the struct pthread
 * at the thread pointer).  Kept pages are installed into a lazy region
 * (libcore/base/lazy_map.h) as they stream past; the rest is decompressed
 * and dropped.  A core whose memory is small is kept whole.
 *
 * A touch of a dropped page is not an error: the first one runs a second
 * pass that spools the whole core (the caller's spool function, the same
 * one a pipe uses) and every page not kept is then served from that spool,
 * so the analysis always reads the core's true bytes; only its cost depends
 * on the plan (an async runtime's heap scan reads the heap: such a core
 * costs the first pass more than before).  The stats say what happened.
 *
 * Layer: model.
 */
#ifndef CQ_STREAM_IMAGE_H
#define CQ_STREAM_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"
#include "libcore/base/feed.h"

/* The core's first bytes, always kept: a core's identity in the store hashes them. */
#define CQ_STREAM_KEEP_PREFIX (1u << 20)

/* Keep the whole core when its bytes are at most this (COREQ_STREAM_KEEP_ALL_BELOW overrides). */
#define CQ_STREAM_KEEP_ALL_BELOW (64ull << 20)

/*
 * The second pass: decompress all of in_fd (positioned at 0) into a new
 * seekable file of at most cap bytes; *fd and *size describe it.
 */
typedef struct cq_error *(*cq_stream_spool_fn)(void *arg, int in_fd, uint64_t cap, int *fd,
                                               uint64_t *size);

struct cq_stream_image_stats {
	uint64_t kept_bytes;    /* installed as the stream passed */
	uint64_t dropped_bytes; /* decompressed and not kept */
	bool second_pass;       /* a page not kept was read: the core was spooled */
	uint64_t second_fills;  /* chunks served from that spool */
	uint64_t bad_chunks;    /* chunks the second pass could not give: read as zeros */
	uint64_t peak_bytes;    /* most bytes of chunks the second pass held at once */
	uint64_t spool_bytes;   /* the second pass's spool (0: none was needed) */
	/* The scan keep (scan_keep.h): */
	/* an earlier core's scan note (or, without one, a probe of the head) was looked for */
	bool scan_armed;
	uint64_t scan_kept_bytes; /* pages that hold such words (the plan's too) */
	bool scan_gave_up; /* it would have kept too much, or saw a word it could not check */
	bool kept_feed;    /* a heap scan was given those pages alone: no second decompression */
	/*
	 * The note of this core's heap scan when it is new (not the one armed
	 * with), else NULL; valid until the next feed starts.
	 */
	const char *scan_note;
};

struct cq_stream_image;

/*
 * Asked once the executable's build-id is known (hex, read from its ELF
 * notes in the core's first MiB): true when an earlier core of that build
 * had its heap read by the analysis (the cache's stream_hints), so this one
 * is kept whole as it streams (within the same budget as any plan; beyond
 * it, spooled) instead of read through the keep plan and again.
 */
struct cq_stream_hint {
	bool (*reads_heap)(void *arg, const char *exe_build_id);
	void *arg;
	/*
	 * Optional: the note an earlier core of that build's heap scan left
	 * (malloc'd, cq_stream_image_stats.scan_note), or NULL: the pages it
	 * names are kept as the stream passes (scan_keep.h).
	 */
	char *(*scan_note)(void *arg, const char *exe_build_id);
	/*
	 * Optional, asked when there is no note and the keep plan drops bytes:
	 * the words the core's heap scan will look for, found from its head
	 * (its first len bytes) alone (libcore/analysis/scan_probe.h), into out
	 * (room for max); how many.  None found is noted as an empty note, so
	 * a later core of the build is not probed again (until a scan of one
	 * notes words).
	 */
	size_t (*scan_probe)(void *arg, const uint8_t *head, uint64_t len,
	                     struct cq_feed_words *out, size_t max);
};

/* Room for a build-id in hex: 64 bytes of id at most. */
#define CQ_STREAM_BUILD_ID_HEX 129

/*
 * Streams the compressed regular file fd (not consumed: it is dup'd for
 * the second pass) when it is a core that can be read so: an ELF64 core
 * whose headers and notes come first, of at most cap bytes.  Otherwise
 * *out is NULL, and no error: the caller spools it as before.  *hinted:
 * hint said the analysis will read the heap (the core is then kept whole).
 * hint may be NULL.  An error is only what stops the open (out of memory).
 */
struct cq_error *cq_stream_image_open(int fd, uint64_t cap, cq_stream_spool_fn spool,
                                      void *spool_arg, const struct cq_stream_hint *hint,
                                      bool *hinted, struct cq_stream_image **out);

const uint8_t *cq_stream_image_data(const struct cq_stream_image *s);
uint64_t cq_stream_image_size(const struct cq_stream_image *s);
/* "zstd", "xz", "gzip", ... */
const char *cq_stream_image_compression(const struct cq_stream_image *s);
/* The executable's build-id in hex, "" when the core's first MiB does not show it. */
const char *cq_stream_image_exe_build_id(const struct cq_stream_image *s);
struct cq_stream_image_stats cq_stream_image_stats(struct cq_stream_image *s);

/* Whether the stream passed bytes it did not keep. */
bool cq_stream_image_dropped(const struct cq_stream_image *s);

/*
 * A feed of spans of the core (libcore/base/feed.h) for a reader that acts
 * on words[0, nwords) (none: it did not say).  When the pages the stream
 * kept for such words are all it needs (cq_scan_keep_covers), they alone
 * are given: *feed is NULL and cq_stream_image_feed_kept_next reads them.
 * Otherwise one more decompression, forward only, on a thread of its own:
 * a heap scan of a core that was not kept whole then costs one
 * decompression more, and no installed page; *feed is what cq_feed_next
 * reads.  The words' note is remembered for the stats either way.
 */
struct cq_feed;
struct cq_stream_feed;
struct cq_error *cq_stream_image_feed_start(struct cq_stream_image *s,
                                            const struct cq_feed_span *spans, size_t n,
                                            const struct cq_feed_words *words, size_t nwords,
                                            struct cq_stream_feed **out, struct cq_feed **feed);
/*
 * The next span of a feed of kept pages: its bytes (zeros where no page
 * was kept), valid until the next call, or NULL with *none set when it
 * holds no kept page; NULL after the last.
 */
const uint8_t *cq_stream_image_feed_kept_next(struct cq_stream_feed *sf, bool *none);
/* Bytes it holds beyond the feed's ring. */
uint64_t cq_stream_image_feed_bytes(const struct cq_stream_feed *sf);
void cq_stream_image_feed_stop(struct cq_stream_feed *sf);

void cq_stream_image_destroy(struct cq_stream_image *s);

/* The keep plan: ranges of the core file's offsets, page-aligned, sorted, disjoint. */
struct cq_stream_range {
	uint64_t lo, hi;
};
struct cq_stream_plan {
	struct cq_stream_range *v;
	size_t n, cap;
	uint64_t size;     /* where the core's segments end */
	uint64_t head_len; /* bytes its headers and notes take */
};

/*
 * The keep plan of a core whose first len bytes are b (they must hold its
 * headers and notes), keeping it whole when its segments end at most
 * keep_all_below bytes in.  False: no core to read as a stream, or no memory.
 */
bool cq_stream_plan_make(const uint8_t *b, uint64_t len, uint64_t keep_all_below,
                         struct cq_stream_plan *p);
void cq_stream_plan_free(struct cq_stream_plan *p);

/* libarchive's filter code as coreq names it ("zstd", "none", "other"). */
const char *cq_stream_filter_name(int code);

#endif
