/*
 * hook.h - `coreq hook`'s whole flow: a crashed process's core, handed over
 * by the kernel (kernel.core_pattern=|coreq hook ...) on a descriptor, into
 * the store and the crash database.  Order matters, because nothing may be
 * lost:
 *   1. the core is stored first (zstd, atomically, named and xattr'd as
 *      systemd-coredump would; libcore/capture/capture.h), and the input is
 *      closed so the kernel can reap the crashed process;
 *   2. a placeholder row (status "pending") records it in the database;
 *   3. a child process (libcore/capture/sandbox.h) analyses and ingests it
 *      exactly as `coreq ingest FILE` would, under a time and memory budget
 *      and as the crashed process's account.  The child reads the stored
 *      seekable file frame by frame once step 1 is done (or, with
 *      raw_memory, a raw copy kept in memory while step 1 compresses); it
 *      writes nothing to the database before steps 1 and 2 are done;
 *   4. if the child fails or runs out of budget, the row says "failed" and
 *      why; a later `coreq ingest` of the stored file can complete it.
 * At most max_analyses hooks analyse at once (lock files in the store); the
 * cores beyond are stored and left "pending".  A core that may not be kept
 * (RLIMIT_CORE 0, no room) is recorded "not_stored".
 *
 * Layer: pipeline (libcore/pipeline/): the top library layer, what commands call; above store.
 * The layer order is in docs/internals.md (Layout) and tests/check-layers.
 */
#ifndef CQ_HOOK_H
#define CQ_HOOK_H

#include <stdint.h>

#include "libcore/base/error.h"
#include "libcore/capture/capture.h"
#include "libcore/capture/spool.h"
#include "libcore/store/capture_rows.h"

struct cq_hook_options {
	/* NULL: the default, by the rule of every command (paths.h, config.h). */
	const char *store_dir, *db, *cache;
	uint64_t max_size;     /* raw bytes stored at most (0: no bound) */
	uint64_t keep_free;    /* bytes left free in the store's file system (0: no check) */
	uint64_t memory;       /* the analysis's RLIMIT_DATA (0: none) */
	unsigned timeout;      /* seconds of analysis (0: none) */
	unsigned max_analyses; /* analyses at once (0: store only) */
	uint64_t raw_memory;   /* room for the raw copy the analysis reads (0: none) */
	int input_fd;          /* where the core comes from; /dev/null replaces it once read */
	struct cq_capture cap; /* the kernel's facts about the crash */
};

/* Defaults: 32 GiB stored, 1 GiB kept free, a 2 GiB and 120 s budget, one
 * analysis per CPU, no raw copy (the stored file is analysed), standard input. */
void cq_hook_options_init(struct cq_hook_options *o);

struct cq_hook_result {
	struct cq_spool_result stored;   /* stored.path NULL: the core was not stored */
	struct cq_store_outcome outcome; /* what the database says of it */
	int64_t analysed_as;             /* the uid the analysis ran as; -1: none ran */
	const char *analysed_from;       /* "input file", "memory", "stored file"; NULL: none ran */
};

/*
 * Runs the hook.  Success with no stored path: the core was not kept, and
 * outcome.message says why (outcome.core_id its row).  On error, stored
 * says what was stored, if anything.  Free r with cq_hook_result_free.
 */
struct cq_error *cq_hook_run(const struct cq_hook_options *o, struct cq_hook_result *r);
void cq_hook_result_free(struct cq_hook_result *r);

#endif
