/*
 * feed.h - spans of a compressed core read in order, ahead of their
 * reader, into buffers of our own.
 *
 * A one-pass scan of a compressed core's heap (unwind/async/runtimes.c)
 * wants every byte once, in order, and none of it mapped: reading it
 * through the core's lazy image would decompress each chunk into memory
 * that must be faulted in, installed and dropped again, which costs more
 * than the decompression.  A feed instead runs workers on other CPUs that
 * decompress the spans into a small ring of buffers while the reader scans
 * the ones before: the ring holds a few spans, whatever the core's size.
 *
 * The producer is the caller's fill function: one worker for a stream
 * that only moves forward, one per CPU for independent frames.  A span the
 * fill cannot make is handed out as NULL: the reader then reads it the way
 * it would without a feed, so a feed changes how fast bytes come, never
 * which bytes.  The one-stream reader (libcore/model/stream_image.c) uses
 * one too, for its input: the compressed file's pieces read ahead by a
 * thread while the decompressor works on the ones before.
 *
 * Layer: base.
 */
#ifndef CQ_FEED_H
#define CQ_FEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

/*
 * Bytes [off, off + len) of the raw core.  The first lead bytes (below
 * len) are the previous span's last, which must end at off + lead: they
 * are copied from it rather than filled again (a scan's chunks overlap by
 * a word, and a frame is then decompressed for one span only).
 */
struct cq_feed_span {
	uint64_t off, len, lead;
};

/*
 * Word values [lo, hi] (inclusive) a feed's reader acts on: a heap scan
 * that looks only for words in these ranges, and reads at most
 * CQ_FEED_WORD_REACH bytes either side of one, finds the same whatever
 * the other bytes are.  A one-stream core that kept the pages around such
 * words as it streamed can then give the scan those pages alone.
 */
struct cq_feed_words {
	uint64_t lo, hi;
};
#define CQ_FEED_WORD_REACH 16

/*
 * Writes span's bytes to dst (room for span->len bytes; its lead is 0:
 * the feed asks for what follows the lead).  worker (below
 * the count given to cq_feed_start) says which worker calls: a worker
 * calls it for one span at a time, for spans in ascending order.
 */
typedef bool (*cq_feed_fill_fn)(void *arg, unsigned worker, const struct cq_feed_span *span,
                                uint8_t *dst);

struct cq_feed;

/*
 * Starts workers (at least 1) filling spans[0, n) in order; spans is
 * copied.  An error only when memory or threads are short.
 */
struct cq_error *cq_feed_start(const struct cq_feed_span *spans, size_t n, unsigned workers,
                               cq_feed_fill_fn fill, void *arg, struct cq_feed **out);

/*
 * The next span's bytes, valid until the next call: the i-th call gives
 * span i, or NULL when its fill failed (or n calls were made).
 */
const uint8_t *cq_feed_next(struct cq_feed *f);

/* Bytes of the ring's buffers. */
uint64_t cq_feed_ring_bytes(const struct cq_feed *f);

/* Stops the workers (at any point) and frees the feed. */
void cq_feed_stop(struct cq_feed *f);

/* How many workers a fill of independent pieces is worth: the CPUs we may run on, 1 to 4. */
unsigned cq_feed_workers(void);

#endif
