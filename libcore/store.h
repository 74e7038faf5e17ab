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
 */
#ifndef CQ_STORE_H
#define CQ_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/error.h"

struct cq_core;
struct cq_stacks;
struct cq_store;
struct sqlite3;

/* The default database path (malloc'd), or NULL if no home is known. */
char *cq_store_default_path(void);

/* Opens or creates the database at path, creating directories, migrating. */
struct cq_error *cq_store_open(const char *path, struct cq_store **out);
void cq_store_close(struct cq_store *store);
struct sqlite3 *cq_store_db(struct cq_store *store);

#define CQ_STORE_IDENTITY_MAX 48

/* "<size>-<hash of the notes and the first MiB>": a core's identity. */
void cq_store_identity(const struct cq_core *core, char out[CQ_STORE_IDENTITY_MAX]);

struct cq_bucket_signature;

/* What is known about a core besides the core itself (0/NULL: unknown). */
struct cq_store_meta {
	int64_t timestamp; /* crash time, unix seconds */
	const char *hostname;
	const struct cq_bucket_signature *signature; /* its crash bucket, if computed */
};

struct cq_store_result {
	int64_t core_id;
	bool duplicate; /* already stored: nothing written */
	size_t threads, stacks, new_stacks;
	size_t suspended; /* suspended async stacks stored */
	int64_t bucket_id; /* 0 without a signature */
	bool new_bucket;
};

/* The id of the core with this identity, or 0. */
struct cq_error *cq_store_find_core(struct cq_store *store, const char *identity, int64_t *id);

/* Stores core under identity (from cq_store_identity); a duplicate writes nothing. */
struct cq_error *cq_store_ingest(struct cq_store *store, const struct cq_core *core,
				 const char *identity, const struct cq_stacks *stacks,
				 const struct cq_store_meta *meta, struct cq_store_result *result);

#endif
