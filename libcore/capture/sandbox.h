/*
 * sandbox.h - the analysis child of `coreq hook`: a process forked before
 * the core is stored, under a time and memory budget and (when the hook is
 * root) as the crashed process's own account, that analyses the core while
 * the hook compresses it.  What the child does is the caller's (struct
 * cq_sandbox_work: the hook pipeline ingests); this file keeps the process,
 * the privileges, the limits and the protocol with the parent.
 *
 *   parent                          child
 *   cq_sandbox_start  -- fork ----> waits
 *   stores the core; once it is all in memory:
 *   cq_sandbox_raw_complete  "R" -> budget, prepare() as root, drop to the
 *                                   account, analyse() the raw copy, which
 *                                   waits for the stored path before writing
 *   stored, placeholder row:
 *   cq_sandbox_stored   "S" path -> the analysis records under path
 *   cq_sandbox_finish  waits    <-- the account (U), a failure it did not
 *                                   record (F); exits 0 done, 1 failed
 *
 * Without a raw copy (too big for the memory allowed, or none wanted) "S"
 * comes first and the child analyses the stored file.  If the core cannot
 * be stored, the parent closes the channel and the child exits without
 * analysing.  When the core comes as a regular file (`coreq hook ... <
 * core`) that file is the raw copy: "R" goes at once.
 *
 * An analysis that fails records why itself (work.analyse); a failure
 * before it runs (no budget, no database, no drop), or one the analysis
 * could not record, goes to the parent (F), whose outcome then carries the
 * reason to record.  A memory budget that cannot be applied fails the
 * analysis: the core is never analysed unbounded.
 *
 * The time budget is kept twice: by the child's alarm(), and by the parent,
 * which waits at most that budget and a few seconds more (its own clock,
 * a pidfd to see the exit) and then kills the child's process group.  Once
 * dropped, the child is the crashed account's to signal: a SIGSTOP would
 * otherwise hold its alarm, the hook and its analysis slot forever, so a
 * child the parent sees stopped is killed at once.  The parent then
 * removes the child's spool directory, whatever it holds.  A
 * child whose hook dies is killed (PR_SET_PDEATHSIG, set again after the
 * drop): left behind, it would keep the analysis slot it inherited.
 *
 * Layer: capture (libcore/capture/): where a core came from and how it was kept; above triage.
 * The layer order is in docs/internals.md (Layout) and tests/check-layers.
 */
#ifndef CQ_SANDBOX_H
#define CQ_SANDBOX_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "libcore/base/error.h"

struct cq_capture;

/* The core as the child's analysis reads it. */
struct cq_sandbox_core {
	const char *path; /* "-": standard input holds the core; else the stored file */
	/* With path "-": the stored file it is, when already known (else NULL). */
	const char *stored_path;
	/*
	 * With path "-" and no stored_path: waits (the time budget paused) until
	 * the core is stored and sets *stored_path (malloc'd).  An error means
	 * it never was: nothing may be written.
	 */
	struct cq_error *(*await_stored)(void *ctx, char **stored_path);
	void *await_ctx;
};

/* What the child does; every function runs in the child. */
struct cq_sandbox_work {
	/* As root, before the drop: opens what needs privileges (the database). */
	struct cq_error *(*prepare)(void *arg);
	/*
	 * As the account: analyses the core.  On failure, *record_error says
	 * why the failure could not be recorded (NULL: it was, or there was no
	 * stored core to record it under).
	 */
	struct cq_error *(*analyse)(void *arg, const struct cq_sandbox_core *core,
	                            struct cq_error **record_error);
	void *arg;
};

struct cq_sandbox_config {
	const char *work_dir;         /* the store: spool directories and TMPDIR go here */
	uint64_t memory;              /* RLIMIT_DATA of the analysis; 0: none */
	unsigned timeout;             /* seconds of analysis; 0: none */
	const struct cq_capture *cap; /* whose crash: the account the child drops to */
	struct cq_sandbox_work work;
};

struct cq_sandbox {
	const struct cq_sandbox_config *cfg;
	pid_t pid;
	int ctl;          /* the parent's end of the channel; -1 once closed */
	int report;       /* the child's messages to the parent */
	int memfd;        /* the raw copy (-1: none) */
	char *spool_dir;  /* a spool directory the dropped account owns, or NULL */
	bool from_memory; /* the child was told to read the raw copy */
	bool from_input;  /* ... and that copy is the input file itself */
};

/* How the child ended. */
struct cq_sandbox_outcome {
	int64_t uid;   /* the uid the child analysed as; -1: it did not get that far */
	bool failed;   /* it did not finish its analysis */
	bool recorded; /* ... and has probably recorded why (it exited, sending no reason) */
	char reason[512];
};

/*
 * Forks the child (cfg must outlive it).  With input_file >= 0 (the core as
 * a regular file, read from its start to its end by the caller), the child
 * reads that file as the raw copy at once; else raw_memory > 0 makes a
 * memfd for the raw copy (sb->memfd, to pass to cq_spool_store).  On
 * error no child runs.
 */
struct cq_error *cq_sandbox_start(const struct cq_sandbox_config *cfg, uint64_t raw_memory,
                                  int input_file, struct cq_sandbox *sb);

/* cq_spool_raw.complete: the whole core is in the memfd; arg is the cq_sandbox. */
void cq_sandbox_raw_complete(void *arg, uint64_t size);

/* The core is stored at path (NULL: it could not be, the child stops). */
void cq_sandbox_stored(struct cq_sandbox *sb, const char *path);

/*
 * Waits for the child and says how it ended; a child stopped, or still
 * running past its time budget (and a grace), is killed, and that is its
 * failure.  With
 * stored false (nothing was stored) a failure is not one: there was
 * nothing to analyse.
 */
struct cq_error *cq_sandbox_finish(struct cq_sandbox *sb, bool stored,
                                   struct cq_sandbox_outcome *out);

#endif
