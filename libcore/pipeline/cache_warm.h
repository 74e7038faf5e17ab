/*
 * cache_warm.h - fill the per-build-id cache for a library or executable
 * before any core of it arrives (coreq cache warm): its complete unwind
 * table, and the blobs every async runtime caches for it (each runtime's
 * warm hook, unwind/async/runtime.h).  A package upgrade
 * can run it so the first crash of the new build pays what the thousandth
 * does.  Symbols are cached per frame address, so they are not: a core
 * names its frames once, the first time.
 *
 * Layer: pipeline (libcore/pipeline/): whole jobs over cores and files.
 */
#ifndef CQ_CACHE_WARM_H
#define CQ_CACHE_WARM_H

#include <stdbool.h>
#include <stddef.h>

#include "libcore/base/error.h"
#include "libcore/base/stats.h"
#include "libcore/model/module.h"

struct cq_cache;

struct cq_cache_warm_result {
	char build_id[2 * CQ_BUILD_ID_MAX + 1];
	unsigned rows;     /* rows of its unwind table */
	bool table_cached; /* the cache held the complete table already */
	bool debug_frame;  /* its debuginfo was found (its .debug_frame read) */
	/* What the runtimes' warm hooks did, under keys of their own (the JSON's). */
	struct cq_stats runtimes;
	/* The same for a person: "Rust index 12 types, ..." (malloc'd; "" for nothing). */
	char *runtimes_text;
};

/*
 * Warms the cache for the ELF file at path; debug_dirs is NULL-terminated,
 * may be NULL.  Release r with cq_cache_warm_result_free, error or not.
 */
struct cq_error *cq_cache_warm(const char *path, const char *const *debug_dirs,
                               struct cq_cache *cache, struct cq_cache_warm_result *r);
void cq_cache_warm_result_free(struct cq_cache_warm_result *r);

#endif
