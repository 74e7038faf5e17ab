/*
 * rebucket.h - recompute every stored core's crash signature from the
 * frames the database holds (`coreq rebucket`), under new rules: no core
 * file is read again.  One transaction: the buckets change all at once or
 * not at all.  A bucket keeps its row (and id) when its signature survives;
 * counts, first/last seen and example cores move with the cores.
 */
#ifndef CQ_REBUCKET_H
#define CQ_REBUCKET_H

#include <stddef.h>

#include "libcore/base/error.h"

struct cq_bucket_rules;
struct cq_store;

struct cq_store_rebucket_result {
	size_t cores;         /* cores with a crashed thread, re-signed */
	size_t before, after; /* buckets holding them, before and after */
	size_t merged;        /* new buckets made of cores from two or more old ones */
	size_t split;         /* old buckets whose cores went to two or more new ones */
	size_t moved;         /* cores whose bucket changed */
};

struct cq_error *cq_store_rebucket(struct cq_store *store, const struct cq_bucket_rules *rules,
                                   unsigned nframes, struct cq_store_rebucket_result *out);

#endif
