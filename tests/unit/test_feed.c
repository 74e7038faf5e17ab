/*
 * test_feed.c - the read-ahead ring (libcore/base/feed.c): spans come out
 * in order, whole, whatever the number of workers and however their fills
 * interleave; a failed fill is a NULL for that span only; each worker sees
 * its spans in ascending order; a feed stopped early ends its workers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "libcore/base/feed.h"

#define NSPANS 600
#define FAILS  137 /* the span whose fill fails */

struct filler {
	pthread_mutex_t lock;
	uint64_t last[8]; /* per worker: the last span's offset + 1 */
	bool out_of_order;
	unsigned calls;
};

static uint8_t byte_at(uint64_t off)
{
	return (uint8_t)(off * 131 + (off >> 9));
}

static bool fill(void *arg, unsigned worker, const struct cq_feed_span *span, uint8_t *dst)
{
	struct filler *f = arg;
	pthread_mutex_lock(&f->lock);
	f->calls++;
	if (worker >= 8 || span->off + 1 <= f->last[worker])
		f->out_of_order = true;
	else
		f->last[worker] = span->off + 1;
	pthread_mutex_unlock(&f->lock);
	if (span->off % 7 == 3)
		sched_yield(); /* uneven fills: workers finish out of turn */
	for (uint64_t i = 0; i < span->len; i++)
		dst[i] = byte_at(span->off + i);
	return span->off != (uint64_t)FAILS * 1000;
}

static void spans_make(struct cq_feed_span *s)
{
	for (size_t i = 0; i < NSPANS; i++)
		s[i] = (struct cq_feed_span){i * 1000, 1 + (i * 37) % 3000, 0};
}

static void run(unsigned workers)
{
	struct cq_feed_span spans[NSPANS];
	spans_make(spans);
	struct filler f = {.lock = PTHREAD_MUTEX_INITIALIZER};
	struct cq_feed *feed;
	assert_null(cq_feed_start(spans, NSPANS, workers, fill, &f, &feed));
	for (size_t i = 0; i < NSPANS; i++) {
		const uint8_t *b = cq_feed_next(feed);
		if (i == FAILS) {
			assert_null(b);
			continue;
		}
		assert_non_null(b);
		for (uint64_t k = 0; k < spans[i].len; k++)
			assert_int_equal(b[k], byte_at(spans[i].off + k));
	}
	assert_null(cq_feed_next(feed));
	cq_feed_stop(feed);
	assert_false(f.out_of_order);
	assert_int_equal(f.calls, NSPANS);
}

static void test_in_order(void **state)
{
	(void)state;
	run(1);
	run(2);
	run(4);
}

static void test_stopped_early(void **state)
{
	(void)state;
	struct cq_feed_span spans[NSPANS];
	spans_make(spans);
	struct filler f = {.lock = PTHREAD_MUTEX_INITIALIZER};
	struct cq_feed *feed;
	assert_null(cq_feed_start(spans, NSPANS, 3, fill, &f, &feed));
	assert_non_null(cq_feed_next(feed));
	assert_non_null(cq_feed_next(feed));
	cq_feed_stop(feed);
	/* the ring bounds how far the workers ran ahead */
	assert_true(f.calls < 2 + 3 + 2 + 1);
	assert_null(cq_feed_start(spans, 0, 2, fill, &f, &feed));
	assert_null(cq_feed_next(feed));
	cq_feed_stop(feed);
}

/*
 * Contiguous spans that overlap by 8 bytes: the lead is copied from the
 * span before, never filled; after a span whose fill failed, the next one
 * (whose lead it should give) is NULL too, and the one after is whole.
 */
static void test_lead(void **state)
{
	(void)state;
	struct cq_feed_span spans[NSPANS];
	for (size_t i = 0; i < NSPANS; i++)
		spans[i] = i ? (struct cq_feed_span){i * 1000 - 8, 1008, 8}
		             : (struct cq_feed_span){0, 1000, 0};
	struct filler f = {.lock = PTHREAD_MUTEX_INITIALIZER};
	struct cq_feed *feed;
	assert_null(cq_feed_start(spans, NSPANS, 2, fill, &f, &feed));
	for (size_t i = 0; i < NSPANS; i++) {
		const uint8_t *b = cq_feed_next(feed);
		if (i == FAILS || i == FAILS + 1) {
			/* span 137's fill fails: 138 has no lead to copy */
			assert_null(b);
			continue;
		}
		assert_non_null(b);
		for (uint64_t k = 0; k < spans[i].len; k++)
			assert_int_equal(b[k], byte_at(spans[i].off + k));
	}
	cq_feed_stop(feed);
	assert_false(f.out_of_order);
	/*
	 * Spans that fill less than their leads (12 bytes, 8 of them lead):
	 * span 5's fill fails, and every lead after it would come from bytes
	 * never made, so each is refused (NULL), not copied stale.
	 */
	struct cq_feed_span tiny[NSPANS];
	for (size_t i = 0; i < NSPANS; i++)
		tiny[i] = (struct cq_feed_span){FAILS * 1000 - 28 + i * 4, 12, i ? 8 : 0};
	assert_null(cq_feed_start(tiny, NSPANS, 2, fill, &f, &feed));
	bool after_failure = false;
	for (size_t i = 0; i < NSPANS; i++) {
		const uint8_t *b = cq_feed_next(feed);
		if (!b) {
			after_failure = true;
			continue;
		}
		assert_false(after_failure); /* every span after the failure leads from it */
		for (uint64_t k = 0; k < tiny[i].len; k++)
			assert_int_equal(b[k], byte_at(tiny[i].off + k));
	}
	assert_true(after_failure);
	cq_feed_stop(feed);
	struct cq_feed_span bad = {0, 4, 8};
	struct cq_error *err = cq_feed_start(&bad, 1, 1, fill, &f, &feed);
	assert_non_null(err);
	cq_error_free(err);
}

static void test_workers(void **state)
{
	(void)state;
	unsigned n = cq_feed_workers();
	assert_true(n >= 1 && n <= 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_in_order),
	    cmocka_unit_test(test_stopped_early),
	    cmocka_unit_test(test_lead),
	    cmocka_unit_test(test_workers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
