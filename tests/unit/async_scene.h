/*
 * async_scene.h - what the runtime tests (test_folly.c, test_rust.c,
 * test_tokio.c) share around the driver: writing words into a scene's
 * memory, reading a counter of the async statistics, and releasing what
 * the runtimes added to a struct cq_stacks.
 */
#ifndef CQ_TEST_ASYNC_SCENE_H
#define CQ_TEST_ASYNC_SCENE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/base/stats.h"
#include "unwind/frames.h"

/* The little-endian word v at target address addr of a buffer mapped at base_addr. */
static inline void as_put64(uint8_t *base, uint64_t base_addr, uint64_t addr, uint64_t v)
{
	memcpy(base + (addr - base_addr), &v, 8);
}

/* The top-level counter key of the async statistics (fails the test when missing). */
static inline uint64_t as_stat_u(const struct cq_stacks *st, const char *key)
{
	const struct cq_stat *e = cq_stats_find(&st->async, key);
	assert_non_null(e);
	assert_int_equal(e->type, CQ_STAT_UINT);
	return e->u;
}

/* Frees what the runtimes added: merged thread stacks, suspended stacks, statistics. */
static inline void as_stacks_free(struct cq_stacks *st)
{
	for (size_t t = 0; st->threads && t < st->nthreads; t++)
		if (st->threads[t].owns_frames)
			free(st->threads[t].frames);
	for (size_t i = 0; i < st->nsuspended; i++)
		free(st->suspended[i].frames);
	free(st->suspended);
	cq_stats_free(&st->async);
	cq_stats_free(&st->warnings);
}

#endif
