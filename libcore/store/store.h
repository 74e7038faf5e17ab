/*
 * store.h - the analysis database (SQLite; schema/001_init.sql).
 *
 * Writing: cq_store_ingest stores one analysed core in one transaction
 * (BEGIN IMMEDIATE, so concurrent writers queue on the busy timeout instead
 * of deadlocking): the core row, its modules, its threads, and every stack
 * not stored before.  A core is identified by content (cq_store_identity), so
 * ingesting it again is a no-op.  Reading: store_query.c.
 *
 * Default path: $COREQ_DB, else $XDG_STATE_HOME/coreq/coreq.db, else
 * ~/.local/state/coreq/coreq.db.
 *
 * Layer: store (libcore/store/): the crash database; above capture.
 * The layer order is in docs/internals.md (Layout) and tests/check-layers.
 */
#ifndef CQ_STORE_H
#define CQ_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

struct cq_core;
struct cq_stacks;
struct cq_store;
struct cq_waits;
struct sqlite3;

/* The default database path (malloc'd), or NULL if no home is known. */
char *cq_store_default_path(void);

/* How a command opens the database (libcore/db/schema.h has the details). */
enum cq_store_open_how {
	CQ_STORE_CREATE,    /* created (and its directories) if missing, migrated */
	CQ_STORE_EXISTING,  /* must exist; migrated where it can be written, else read-only */
	CQ_STORE_READ_ONLY, /* must exist; only read: never migrated nor written */
};

/* Opens or creates the database at path, creating directories, migrating. */
struct cq_error *cq_store_open(const char *path, struct cq_store **out);
struct cq_error *cq_store_open_mode(const char *path, enum cq_store_open_how how,
                                    struct cq_store **out);
void cq_store_close(struct cq_store *store);

#define CQ_STORE_IDENTITY_MAX 48

/* "<size>-<hash of the notes and the first MiB>": a core's identity. */
void cq_store_identity(const struct cq_core *core, char out[CQ_STORE_IDENTITY_MAX]);

struct cq_bucket_namer;
struct cq_bucket_signature;
struct cq_capture;

/* What is known about a core besides the core itself (NULL: unknown). */
struct cq_store_meta {
	const struct cq_capture *capture; /* outside metadata, reconciled with the core */
	/*
	 * The absolute path the core was read from: a placeholder row the hook
	 * left for this file (see capture_rows.h) is replaced, keeping its id.
	 */
	const char *stored_path;
	const struct cq_bucket_signature *signature; /* its crash bucket, if computed */
	/* Names frames for later rebucketing (frames.sig_name); may be NULL. */
	struct cq_bucket_namer *namer;
	/* The wait-for graph (table waits, schema 011); NULL: no thread blocked on a lock. */
	const struct cq_waits *waits;
};

struct cq_store_result {
	int64_t core_id;
	bool duplicate; /* already stored: nothing written */
	size_t threads, stacks, new_stacks;
	size_t suspended;  /* suspended async stacks stored */
	int64_t bucket_id; /* 0 without a signature */
	bool new_bucket;
};

/* The id of the core with this identity, or 0. */
struct cq_error *cq_store_find_core(struct cq_store *store, const char *identity, int64_t *id);

/* Stores core under identity (from cq_store_identity); a duplicate writes nothing. */
struct cq_error *cq_store_ingest(struct cq_store *store, const struct cq_core *core,
                                 const char *identity, const struct cq_stacks *stacks,
                                 const struct cq_store_meta *meta, struct cq_store_result *result);

/* ---- libwebsockets allocation logs (coreq lws ingest) ---- */

struct cq_module;
struct cq_stack_frame;

/* One allocation site of a log: a stack, a size, and how many records had both. */
struct cq_store_lws_site {
	const struct cq_stack_frame *frames; /* innermost first, in the log's ELF */
	size_t nframes;
	uint64_t size, count;
};

struct cq_store_lws_log {
	const char *path;
	const char *identity; /* content and ELF; a stored identity is a duplicate */
	const struct cq_module *elf;
	uint64_t bytes, lines, records, malformed;
};

struct cq_store_lws_result {
	int64_t log_id;
	bool duplicate; /* already stored: nothing written */
	size_t stacks, new_stacks;
};

/*
 * Stores a log's allocation sites in one transaction: the ELF as a module,
 * every stack not stored before (frames and frames_blob, as for cores), the
 * log row, and a count per (stack, size).  A log already stored under
 * identity writes nothing.
 */
struct cq_error *cq_store_ingest_lws(struct cq_store *store, const struct cq_store_lws_log *log,
                                     const struct cq_store_lws_site *sites, size_t nsites,
                                     struct cq_store_lws_result *result);

#endif
