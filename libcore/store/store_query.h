/*
 * store_query.h - reading the analysis database: unique stacks with their
 * counts, cores, and one core's modules and threads.
 *
 * Each query calls back once per row; a row and everything it points to is
 * valid only during the call.  Times are unix seconds.
 */
#ifndef CQ_STORE_QUERY_H
#define CQ_STORE_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "libcore/base/error.h"

struct cq_store;

/*
 * Whether stored text s is want.  A database may come from elsewhere: any
 * text a row gives may be NULL (or of another type), so rows are compared
 * through this, never with a bare strcmp.
 */
static inline bool cq_store_text_is(const char *s, const char *want)
{
	return s && strcmp(s, want) == 0;
}

struct cq_store_frame_row {
	size_t index;
	const char *kind, *trust;      /* as stored: may be NULL or anything (cq_store_text_is) */
	const char *module, *build_id; /* NULL when the pc is in no module */
	uint64_t offset;               /* link-time address, or the pc */
	const char *function, *file;
	int line;          /* 0 when unknown */
	const char *state; /* a suspended future's state ("Suspend0", ...), else NULL */
};

struct cq_store_stack_row {
	int64_t id;
	const char *hash;
	int64_t threads, cores;
	int64_t suspended; /* suspended async chains with this stack (schema 005) */
	int64_t first_seen, last_seen;
	const struct cq_store_frame_row *frames;
	size_t nframes;
};

struct cq_store_stack_filter {
	int64_t core_id;    /* 0: all cores */
	const char *bucket; /* NULL: all buckets; else its hash or id (cq_store_bucket_key) */
	const char *exe;    /* NULL: all; else the executable's path or basename */
	int64_t limit;      /* 0: no limit */
};

struct cq_store_core_row {
	int64_t id;
	const char *path, *exe, *cmdline, *signal_name, *hostname, *status, *message;
	int64_t pid, signal, crashed_tid, nthreads, ingested_at;
	bool has_uid, has_si_code, has_fault_address, has_timestamp;
	int64_t uid, si_code, timestamp;
	uint64_t fault_address;
	int64_t bucket_id;       /* 0: none */
	const char *bucket_hash; /* NULL: none */
	/* Where it came from (schema 003); NULL when unknown. */
	const char *comm, *source, *stored_path, *meta_conflicts;
	int64_t size; /* bytes of the raw (decompressed) core, as recorded */
	/* Who sent the signal (schema 010): si_pid and si_uid, when a process did. */
	bool has_sender;
	int64_t sender_pid, sender_uid;
	/* What timestamp is (schema 012): "capture" (the crash time), "file" (the
	 * core file's modification time), or NULL (a crash time when set: rows
	 * before 012). */
	const char *time_source;
	/* The writer of a snapshot of a live process ("gcore", schema 014); NULL: a crash. */
	const char *snapshot;
	/* They are only what the signal claims (schema 015, sender_claimed.h). */
	bool sender_claimed;
	/* What the runtime said the crash was (schema 016, crash_message.h); NULL: nothing. */
	const char *crash_message;
};

struct cq_store_core_filter {
	int64_t id;           /* 0: every core; else just this one (CQ_ERR_NOT_FOUND if absent) */
	const char *bucket;   /* NULL: every bucket; else its hash or id (cq_store_bucket_key) */
	int64_t since, until; /* 0: open; else crashed at or after / before (unix seconds) */
	const char *exe;      /* NULL: all; else the executable's path or basename */
	int64_t pid, signal;  /* 0: all */
	int64_t limit;        /* 0: all; else the newest limit cores */
	bool newest_first;    /* order newest first (default oldest first) */
};

/*
 * A bucket named by a person or a log: its 16-hex-digit hash (the id that
 * is the same in every database) or its row id in this one.  Whether key
 * has one of these forms; queries match nothing for a bucket that is not
 * stored.
 */
bool cq_store_bucket_key_valid(const char *key);

struct cq_store_bucket_row {
	int64_t id;
	const char *hash, *signature;
	int64_t count; /* cores matching the filter */
	int64_t first_seen, last_seen, example_core;
	const char *const *exes;   /* distinct executables, NULL-terminated */
	const char *rules_version; /* of the rules that made the signature; NULL before 007 */
};

struct cq_store_bucket_filter {
	int64_t since;   /* 0: all time; else cores seen at or after (unix seconds) */
	int64_t until;   /* 0: no end; else cores seen before (unix seconds) */
	const char *exe; /* NULL: all; else the executable's path or basename */
};

struct cq_store_module_row {
	const char *path, *build_id, *status;
	uint64_t start, end;
};

struct cq_store_thread_row {
	int64_t tid, stack_id;
	const char *name, *end;
	bool crashed;
	const struct cq_store_frame_row *frames;
	size_t nframes;
};

/* One allocation site of lws logs: a stack and what was allocated from it. */
/* A suspended async chain of a core (schema 005): its runtime and stack. */
struct cq_store_suspended_row {
	int64_t idx, stack_id;
	const char *kind, *end;
	const struct cq_store_frame_row *frames;
	size_t nframes;
};

struct cq_store_lws_site_row {
	int64_t id; /* the stack */
	const char *hash;
	int64_t allocations, bytes, logs;
	int64_t min_size, max_size;
	const struct cq_store_frame_row *frames;
	size_t nframes;
};

typedef void (*cq_store_stack_fn)(void *ctx, const struct cq_store_stack_row *row);
typedef void (*cq_store_core_fn)(void *ctx, const struct cq_store_core_row *row);
typedef void (*cq_store_module_fn)(void *ctx, const struct cq_store_module_row *row);
typedef void (*cq_store_thread_fn)(void *ctx, const struct cq_store_thread_row *row);
typedef void (*cq_store_bucket_fn)(void *ctx, const struct cq_store_bucket_row *row);
typedef void (*cq_store_lws_site_fn)(void *ctx, const struct cq_store_lws_site_row *row);
typedef void (*cq_store_suspended_fn)(void *ctx, const struct cq_store_suspended_row *row);

/* Unique stacks, most shared first (threads, then cores). */
struct cq_error *cq_store_each_stack(struct cq_store *store,
                                     const struct cq_store_stack_filter *filter,
                                     cq_store_stack_fn fn, void *ctx);

/* Cores, oldest first; fn may be NULL (to ask whether core f->id exists). */
struct cq_error *cq_store_each_core(struct cq_store *store, const struct cq_store_core_filter *f,
                                    cq_store_core_fn fn, void *ctx);

/* Crash buckets, most cores first. */
struct cq_error *cq_store_each_bucket(struct cq_store *store,
                                      const struct cq_store_bucket_filter *filter,
                                      cq_store_bucket_fn fn, void *ctx);

struct cq_error *cq_store_each_module(struct cq_store *store, int64_t core_id,
                                      cq_store_module_fn fn, void *ctx);

/* A core's threads, the crashed one first, each with its frames. */
struct cq_error *cq_store_each_thread(struct cq_store *store, int64_t core_id,
                                      cq_store_thread_fn fn, void *ctx);

/*
 * Allocation sites of `coreq lws ingest`, heaviest first (total bytes, then
 * allocations).  filter->exe matches the ELF's path or basename;
 * filter->limit applies; the core and bucket filters do not.
 */
/* A core's suspended async chains, in the order they were found. */
struct cq_error *cq_store_each_suspended(struct cq_store *store, int64_t core_id,
                                         cq_store_suspended_fn fn, void *ctx);

struct cq_error *cq_store_each_lws_site(struct cq_store *store,
                                        const struct cq_store_stack_filter *filter,
                                        cq_store_lws_site_fn fn, void *ctx);

#endif
