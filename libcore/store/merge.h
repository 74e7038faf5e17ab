/*
 * merge.h - folding other hosts' crash databases into one: for a small fleet
 * without a fleet store, and for tests of the fleet path.
 *
 * Every analysed core of a source (status ok or partial) that the target does
 * not hold (by identity) is copied with its modules, threads and suspended
 * chains; stacks, modules and buckets are matched by their natural keys
 * (hash, build-id, hash), so merging the same database twice adds nothing.
 * Bucket counts and first/last seen are recomputed from the cores.  All of it
 * in one transaction.  The hook's placeholders (pending, failed, not stored)
 * stay with the host that can still analyse them.
 *
 * A source may come from anywhere, so what it claims is checked before
 * anything is copied: its schema must be coreq's (libcore/db/guard.h), it
 * is attached read-only, and a core is refused (not copied, counted in
 * refused) when one of its new stacks has a stored hash that is not the
 * hash of its frames (stack_hash.h), its new bucket a hash that is not its
 * signature's (bucket.h), or one of its modules a key that is neither a
 * build-id (build_id.h) nor "path:...".  Stacks and buckets the target
 * already holds are the target's: a source's rows never replace them.
 * Function names and files are not checked: they are what the source's
 * host read from its binaries (resymbolize can name frames again).
 */
#ifndef CQ_MERGE_H
#define CQ_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

struct cq_store;

struct cq_merge_result {
	int64_t cores;   /* cores copied */
	int64_t skipped; /* cores the target already held */
	int64_t refused; /* cores not copied: a hash or build-id of theirs did not check */
	int64_t stacks;  /* stacks new to the target */
};

/* Merges the databases at paths[0..n) into store; the sources are only read. */
struct cq_error *cq_store_merge(struct cq_store *store, const char *const *paths, size_t n,
                                struct cq_merge_result *r);

#endif
