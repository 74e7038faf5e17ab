/*
 * cache.h - the per-build-id cache file (SQLite): compiled unwind tables,
 * symbolization results and the blobs async runtimes derive from a module
 * (their type layouts), so the thousandth core of a service skips the work
 * the first did.  Every entry is keyed by build-id and by the identity of
 * the files it was computed from (struct cq_cache_key).  Writes are batched in one transaction per
 * cache handle, committed by cq_cache_close.
 *
 * The cache is an optimisation.  If it cannot be opened or written, coreq
 * works without it; cq_cache_open reports why so the caller can warn.  Its
 * entries are believed as they stand, so cq_cache_open refuses a file that
 * is not the caller's own (libcore/base/own_file.h) before SQLite reads it.
 * Default path: $COREQ_CACHE, else $XDG_CACHE_HOME/coreq/cache.db, else
 * ~/.cache/coreq/cache.db.
 *
 * Layer: db (libcore/db/): SQLite files, migrations and the cache; above model.
 * The layer order is in docs/internals.md (Layout) and tests/check-layers.
 */
#ifndef CQ_CACHE_H
#define CQ_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

struct cq_cache;

/* The default cache path (malloc'd), or NULL if no home is known. */
char *cq_cache_default_path(void);

/* Opens (creating directories and schema as needed) the cache at path. */
struct cq_error *cq_cache_open(const char *path, struct cq_cache **out);
/*
 * Commits the handle's writes and closes it.  The cache is best-effort, so a
 * write SQLite refused (the disk full, the file damaged, the COMMIT itself)
 * stops nothing, but it is counted: the error says how many and why, for
 * the caller to warn about.
 */
struct cq_error *cq_cache_close(struct cq_cache *cache);

/*
 * Which cached entries a run may use: a module's build-id together with the
 * identity of the files its entries are computed from (the module's ELF file
 * and its debuginfo file as this run found them; libcore/symbols/provenance.h
 * builds it).  An entry is served only under the identity it was made from,
 * so a file that merely claims a build-id (--exe, --sysroot, --debug-dir, a
 * path a crafted core names) fills its own entries and never anyone else's.
 * source is the sources row, found (or, by a write, created) on first use:
 * 0 until then, -1 when the cache has no such row.
 */
struct cq_cache_key {
	const char *build_id; /* lower-case hex */
	const void *identity;
	size_t identity_len;
	int64_t source;
};

/* A malloc'd copy of the unwind table blob for key at format, or NULL. */
uint8_t *cq_cache_get_table(struct cq_cache *cache, struct cq_cache_key *key, unsigned format,
                            size_t *len);

/* Stores (replaces) the blob; a failure is counted for cq_cache_close. */
void cq_cache_put_table(struct cq_cache *cache, struct cq_cache_key *key, unsigned format,
                        unsigned rows, const uint8_t *blob, size_t len);

/* A malloc'd copy of the symbol blob for (key, address, debuginfo), or NULL. */
uint8_t *cq_cache_get_symbols(struct cq_cache *cache, struct cq_cache_key *key, uint64_t address,
                              int debuginfo, unsigned format, size_t *len);

/* Stores a symbol blob; a failure is counted for cq_cache_close. */
void cq_cache_put_symbols(struct cq_cache *cache, struct cq_cache_key *key, uint64_t address,
                          int debuginfo, unsigned format, const uint8_t *blob, size_t len);

/*
 * A malloc'd copy of the blob a runtime cached for key under (runtime,
 * name) at format, or NULL (runtime_blobs: the cache stores bytes and
 * never looks into them).
 */
uint8_t *cq_cache_get_blob(struct cq_cache *cache, struct cq_cache_key *key, const char *runtime,
                           const char *name, unsigned format, size_t *len);

/* Stores (replaces) it; a failure is counted for cq_cache_close. */
void cq_cache_put_blob(struct cq_cache *cache, struct cq_cache_key *key, const char *runtime,
                       const char *name, unsigned format, const uint8_t *blob, size_t len);

/*
 * Whether the analysis of a core of the executable with this build-id (hex)
 * has read its heap (stream_hints): a later core of it compressed as one
 * stream is kept whole (libcore/model/stream_image.h).  cache may be NULL.
 */
bool cq_cache_reads_heap(struct cq_cache *cache, const char *exe_build_id);

/* Records that it did; a failure is counted for cq_cache_close. */
void cq_cache_put_reads_heap(struct cq_cache *cache, const char *exe_build_id);

/*
 * The note the heap scan of a core of the executable with this build-id
 * (hex) left (scan_notes; libcore/model/scan_keep.h), malloc'd, or NULL.
 * The note is a guess the stream checks, so a damaged one costs time only.
 */
char *cq_cache_scan_note(struct cq_cache *cache, const char *exe_build_id);

/* Records it; a failure is counted for cq_cache_close. */
void cq_cache_put_scan_note(struct cq_cache *cache, const char *exe_build_id, const char *note);

/*
 * A row read from the cache was damaged: the reader drops it and rebuilds it
 * from the module (the rebuilt row replaces it).  Counted so that a command
 * can say so once.
 */
void cq_cache_reject(struct cq_cache *cache);
size_t cq_cache_rejected(const struct cq_cache *cache); /* 0 for NULL */
const char *cq_cache_path(const struct cq_cache *cache);

#endif
