/*
 * resymbolize.h - naming stored frames whose module had no symbols when the
 * core was ingested, from debuginfo that arrives later (a --debug-dir tree,
 * or debuginfod servers by build-id), then re-bucketing the cores whose
 * signatures change.  Never run by the hook: it may use the network.
 */
#ifndef CQ_RESYMBOLIZE_H
#define CQ_RESYMBOLIZE_H

#include <stdint.h>

#include "libcore/base/error.h"
#include "libcore/store/rebucket.h"

struct cq_bucket_rules;
struct cq_store;

struct cq_resymbolize_options {
	const char *const
	    *debug_dirs; /* build-id trees looked in first; NULL-terminated, may be NULL */
	const char
	    *debuginfod_urls; /* space-separated; NULL: $DEBUGINFOD_URLS, "" or unset: none */
	const struct cq_bucket_rules *rules;
	unsigned signature_frames;
};

struct cq_resymbolize_result {
	int64_t modules; /* modules with unnamed frames */
	int64_t found;   /* of those, whose debuginfo was found */
	int64_t frames;  /* frames named */
	struct cq_store_rebucket_result rebucket;
};

struct cq_error *cq_resymbolize(struct cq_store *store, const struct cq_resymbolize_options *o,
                                struct cq_resymbolize_result *r);

#endif
