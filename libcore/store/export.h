/*
 * export.h - the crash database as records for a fleet store: one JSON
 * object per line (NDJSON), the format ClickHouse loads with
 * `INSERT ... FORMAT JSONEachRow` (schema/clickhouse/).
 *
 * Four record types, each with a stable natural key, so that loading the
 * same records twice (from one host or several) changes nothing:
 *   core    key identity (size + hash of the core's notes and first MiB):
 *           the host (hostname, boot id, machine id), the process, the
 *           signal, the crash time, the bucket's hash, the coreq version
 *   thread  key (core, kind, idx): a thread (kind "thread") or a suspended
 *           async chain (kind "folly", "rust"), with its stack's hash
 *   stack   key hash: every frame as build-id + module-relative offset +
 *           kind + trust, and its function, file and line where known
 *   bucket  key hash: the crash signature and the rules that made it
 *   wait    key (core, idx): a thread blocked on a lock when the core was
 *           taken (libcore/analysis/waits.h, the store's table waits): its
 *           tid, the primitive (mutex, rwlock, condvar, thread for a join,
 *           futex, semaphore), the object's and the futex word's addresses, the owner
 *           (owner says thread, inferred, not-in-core, readers, none, unreadable or
 *           unknown; owner_tid when a tid is known; owner_confirmed_by
 *           what confirms an inferred owner, "with" or "rlock-owner", else
 *           null), and the deadlock (cycle) number it is on with its
 *           verdict ("deadlock" on a cycle whose owners are recorded,
 *           "deadlock-inferred-confirmed" through inferred owners that are
 *           all confirmed, "possible-deadlock" through an unconfirmed one;
 *           else "waits")
 * Only analysed cores are exported (status ok or partial); the hook's
 * placeholders (pending, failed, not stored) are not crash records yet.
 * A cursor selects what is new: cores whose local row id is above after_id
 * (every core record carries its local_id), or crashed at or after since.
 */
#ifndef CQ_EXPORT_H
#define CQ_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "libcore/base/error.h"

struct cq_store;

enum {
	CQ_EXPORT_CORES = 1,
	CQ_EXPORT_THREADS = 2,
	CQ_EXPORT_STACKS = 4,
	CQ_EXPORT_BUCKETS = 8,
	CQ_EXPORT_WAITS = 16,
	CQ_EXPORT_ALL = 31,
};

struct cq_export_options {
	int64_t after_id;       /* cores with a local id above this (0: all) */
	int64_t since;          /* and crashed at or after this (unix seconds; 0: all time) */
	int64_t limit;          /* at most this many cores (0: no limit) */
	int64_t until_id;       /* and a local id at most this (0: no bound) */
	unsigned types;         /* CQ_EXPORT_* bits (0: all) */
	const char *host;       /* this host's name, for cores that do not record theirs */
	const char *machine_id; /* /etc/machine-id, or NULL */
};

struct cq_export_result {
	int64_t cores, threads, stacks, buckets, waits; /* records written */
	int64_t
	    last_id; /* the highest local core id exported (the next cursor); after_id if none */
};

/*
 * The highest local id among the next limit exportable cores after after_id
 * (after_id itself when there are none): the bound that keeps the several
 * exports of one batch (one per record type) to the same cores.
 */
struct cq_error *cq_store_export_window(struct cq_store *store, int64_t after_id, int64_t limit,
                                        int64_t *until_id);

/* Writes the selected records to out, one per line, in one read transaction. */
struct cq_error *cq_store_export(struct cq_store *store, const struct cq_export_options *o,
                                 FILE *out, struct cq_export_result *r);

#endif
