/*
 * push.h - ship the crash records that are new since the last push to a
 * fleet store (ClickHouse's HTTP interface), in batches of cores.
 *
 * Per batch: the records of the next `batch` cores after the cursor are
 * exported into memory (libcore/store/export.h) and sent one table at a
 * time, in the order stacks, buckets, threads, waits, cores, so that a core never
 * arrives before what it points to; only when every send of the batch
 * succeeded is the cursor (the highest local core id shipped) written,
 * atomically.  A failed send is retried with exponential backoff (1, 2, 4
 * ... 32 s between attempts); if it still fails the push stops with the
 * cursor where it was, so nothing is lost, and the next push sends that
 * batch again, which the tables' natural keys (ReplacingMergeTree) make
 * harmless.
 *
 * The cursor file holds one decimal core id and a newline.  A missing file
 * means "nothing pushed yet" (cursor 0); a file that cannot be read, or
 * holds anything else, is an error: guessing 0 would send everything again,
 * guessing more would skip cores.
 *
 * Layer: pipeline (libcore/pipeline/): the top library layer, what commands call; above store.
 * The layer order is in docs/internals.md (Layout) and tests/check-layers.
 */
#ifndef CQ_PUSH_H
#define CQ_PUSH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

struct cq_store;

struct cq_push_options {
	const char *url;         /* the server's HTTP endpoint, e.g. http://127.0.0.1:8123 */
	const char *cursor_path; /* the cursor file */
	unsigned batch;          /* cores per batch (> 0) */
	unsigned max_batches;    /* stop after this many batches (0: until all is sent) */
	unsigned retries;        /* attempts per request (> 0) */
	unsigned timeout;        /* seconds per request */
	const char *host;        /* host name for cores that do not record theirs; may be NULL */
	/*
	 * May be NULL: then records go to url over HTTP (libcurl, curl_api.h),
	 * as `INSERT INTO coreq.TABLE FORMAT JSONEachRow`.  Otherwise one
	 * attempt to send the NDJSON body of table; an error is retried.
	 */
	struct cq_error *(*send)(void *arg, const char *table, const char *body, size_t len);
	void *send_arg;
	/* May be NULL (sleep(3)): waits seconds before a retry. */
	void (*wait)(void *arg, unsigned seconds);
	void *wait_arg;
};

struct cq_push_result {
	int64_t cores, threads, stacks, buckets, waits; /* records sent */
	unsigned batches;                               /* batches sent whole */
	int64_t cursor_before, cursor;                  /* the cursor read, and the cursor now */
	/*
	 * False when the push failed before sending anything: the cursor could
	 * not be read, or the HTTP client could not start; cursor is then
	 * meaningless.
	 */
	bool started;
};

/* Pushes what is new after the cursor; on error r says what was sent. */
struct cq_error *cq_push(struct cq_store *store, const struct cq_push_options *o,
                         struct cq_push_result *r);

/* The cursor in path: 0 when there is no such file; an error when it is not one. */
struct cq_error *cq_push_cursor_read(const char *path, int64_t *cursor);

/* Replaces the cursor in path atomically (a fsynced temporary renamed over it). */
struct cq_error *cq_push_cursor_write(const char *path, int64_t cursor);

#endif
