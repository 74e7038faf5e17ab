/*
 * hook_analysis.h - the hook's analysis child: forked before the core is
 * stored, it reads the raw copy the hook keeps in memory while the stored
 * copy is still being compressed, and writes nothing to the database until
 * the parent says the core is stored (and where).  Without a raw copy (too
 * big for the memory allowed, or none wanted) it analyses the stored file.
 *
 *   parent                          child
 *   hook_analysis_start  -- fork -> waits
 *   stores the core; once it is all in memory:
 *   hook_analysis_raw_complete  "R" -> analyses the raw copy, then waits
 *   stored, placeholder row:
 *   hook_analysis_stored    "S" path -> records the analysis under path
 *   hook_analysis_finish     waits  <- exits 0 stored, 1 failed
 *
 * If the core cannot be stored, the parent closes the channel and the child
 * exits without writing.
 *
 * When the core comes as a regular file (`coreq hook ... < core`) rather
 * than the kernel's pipe, that file is the raw copy: no memfd, and "R" goes
 * at once, so the analysis runs from the start of the compression.
 */
#ifndef CQ_CMD_HOOK_ANALYSIS_H
#define CQ_CMD_HOOK_ANALYSIS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "libcore/base/error.h"

struct cq_capture;

struct hook_analysis_config {
	const char *store_dir, *db, *cache;
	uint64_t memory;  /* RLIMIT_DATA of the analysis; 0: none */
	unsigned timeout; /* seconds of analysis; 0: none */
	const struct cq_capture *cap;
};

struct hook_analysis {
	pid_t pid;
	int ctl;          /* the parent's end of the channel; -1 once closed */
	int report;       /* the child writes the uid it analyses as here */
	int memfd;        /* the raw copy (-1: none) */
	char *spool_dir;  /* a spool directory the dropped account owns, or NULL */
	bool from_memory; /* the child was told to read the raw copy */
	bool from_input;  /* ... and that copy is the input file itself */
};

/*
 * Forks the child.  With input_file >= 0 (the core as a regular file, read
 * from its start to its end by the caller), the child reads that file as
 * the raw copy at once; else raw_memory > 0 makes a memfd for the raw copy
 * (an->memfd, to pass to cq_capture_store).  On error no child runs.
 */
struct cq_error *hook_analysis_start(const struct hook_analysis_config *cfg, uint64_t raw_memory,
                                     int input_file, struct hook_analysis *an);

/* cq_capture_raw.complete: the whole core is in the memfd; arg is the hook_analysis. */
void hook_analysis_raw_complete(void *arg, uint64_t size);

/* The core is stored at path (NULL: it could not be, the child stops). */
void hook_analysis_stored(struct hook_analysis *an, const char *path);

/*
 * Waits for the child.  With path (the core was stored): a child that failed
 * without saying why in the database gets a failed row for path.  Sets
 * *analysed_as to the uid the child analysed as (-1: it did not start).
 */
struct cq_error *hook_analysis_finish(const struct hook_analysis_config *cfg,
                                      struct hook_analysis *an, const char *path,
                                      int64_t *analysed_as);

#endif
