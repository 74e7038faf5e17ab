/*
 * resymbolize.h - naming stored frames whose module had no symbols when the
 * core was ingested, from debuginfo that arrives later (a --debug-dir tree,
 * or debuginfod servers by build-id), then re-bucketing the cores whose
 * signatures change.  Never run by the hook: it may use the network.
 *
 * The database may come from elsewhere: a stored build-id is used (as a
 * file name in a build-id tree, as a debuginfod request) only when it is
 * valid (libcore/base/build_id.h), and a file found for it only when it
 * carries that build-id.  Servers may be slow or hostile: each lookup has a
 * size cap and a time limit, and the whole run a deadline after which no
 * server is asked.  What became of every module is reported.
 */
#ifndef CQ_RESYMBOLIZE_H
#define CQ_RESYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"
#include "libcore/store/rebucket.h"

struct cq_bucket_rules;
struct cq_store;

#define CQ_RESYMBOLIZE_DEFAULT_MAX_SIZE       (512ull << 20)
#define CQ_RESYMBOLIZE_DEFAULT_MODULE_SECONDS 120
#define CQ_RESYMBOLIZE_DEFAULT_DEADLINE       600

struct cq_resymbolize_options {
	const char *const
	    *debug_dirs; /* build-id trees looked in first; NULL-terminated, may be NULL */
	const char
	    *debuginfod_urls; /* space-separated; NULL: $DEBUGINFOD_URLS, "" or unset: none */
	const struct cq_bucket_rules *rules;
	unsigned signature_frames;
	uint64_t max_size;       /* bytes of one debuginfo file from a server; 0: no cap */
	unsigned module_seconds; /* one module's debuginfod lookup, retries included; 0: none */
	unsigned deadline;       /* seconds after the start when no server is asked any more and a
	                            lookup under way stops; 0: none */
};

/* What became of one module with unnamed frames. */
enum cq_resymbolize_outcome {
	CQ_RESYM_DEBUG_DIR,    /* its debuginfo was in a --debug-dir tree */
	CQ_RESYM_FETCHED,      /* from a debuginfod server */
	CQ_RESYM_NOT_FOUND,    /* in no tree, on no server */
	CQ_RESYM_TOO_BIG,      /* a server's file passed the size cap */
	CQ_RESYM_TIMED_OUT,    /* no complete answer within the module's time or the deadline */
	CQ_RESYM_SKIPPED,      /* the deadline had passed: no server was asked */
	CQ_RESYM_BAD_BUILD_ID, /* the stored build-id is not one: never looked up */
	CQ_RESYM_MISMATCH,     /* a server sent a file with another build-id: not used */
	CQ_RESYM_FAILED,       /* anything else: the reason says */
};

struct cq_resymbolize_module {
	int64_t id;     /* modules.id */
	char *build_id; /* as stored when valid, else NULL */
	enum cq_resymbolize_outcome outcome;
	int64_t frames; /* frames named from it */
	char *reason;   /* why it was not used, or NULL */
};

struct cq_resymbolize_result {
	int64_t modules; /* modules with unnamed frames */
	int64_t found;   /* of those, whose debuginfo was found (DEBUG_DIR or FETCHED) */
	int64_t frames;  /* frames named */
	struct cq_store_rebucket_result rebucket;
	struct cq_resymbolize_module *each; /* one per module, in modules.id order */
	size_t neach;
};

/* Fills r (release it with cq_resymbolize_result_free, also after an error). */
struct cq_error *cq_resymbolize(struct cq_store *store, const struct cq_resymbolize_options *o,
                                struct cq_resymbolize_result *r);

void cq_resymbolize_result_free(struct cq_resymbolize_result *r);

/* "debug_dir", "fetched", "not_found", "too_big", "timed_out", "skipped", ... */
const char *cq_resymbolize_outcome_name(enum cq_resymbolize_outcome outcome);

#endif
