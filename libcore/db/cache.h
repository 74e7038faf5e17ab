/*
 * cache.h - the per-build-id cache file (SQLite): compiled unwind tables,
 * symbolization results and Rust type indexes, so the thousandth core of a service skips the work
 * the first did.  Writes are batched in one transaction per cache handle,
 * committed by cq_cache_close.
 *
 * The cache is an optimisation.  If it cannot be opened or written, coreq
 * works without it; cq_cache_open reports why so the caller can warn.
 * Default path: $COREQ_CACHE, else $XDG_CACHE_HOME/coreq/cache.db, else
 * ~/.cache/coreq/cache.db.
 *
 * Layer: db (libcore/db/): SQLite files, migrations and the cache; above model.
 * The layer order is in the README (Layout) and tests/check-layers.
 */
#ifndef CQ_CACHE_H
#define CQ_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

struct cq_cache;

/* The default cache path (malloc'd), or NULL if no home is known. */
char *cq_cache_default_path(void);

/* Opens (creating directories and schema as needed) the cache at path. */
struct cq_error *cq_cache_open(const char *path, struct cq_cache **out);
void cq_cache_close(struct cq_cache *cache);

/* A malloc'd copy of the unwind table blob for build_id at format, or NULL. */
uint8_t *cq_cache_get_table(struct cq_cache *cache, const char *build_id, unsigned format,
                            size_t *len);

/* Stores (replaces) the blob; failures are ignored, the cache is best-effort. */
void cq_cache_put_table(struct cq_cache *cache, const char *build_id, unsigned format,
                        unsigned rows, const uint8_t *blob, size_t len);

/* A malloc'd copy of the symbol blob for (build_id, address, debuginfo), or NULL. */
uint8_t *cq_cache_get_symbols(struct cq_cache *cache, const char *build_id, uint64_t address,
                              int debuginfo, unsigned format, size_t *len);

/* Stores a symbol blob; best-effort like the table cache. */
void cq_cache_put_symbols(struct cq_cache *cache, const char *build_id, uint64_t address,
                          int debuginfo, unsigned format, const uint8_t *blob, size_t len);

/* A malloc'd copy of the Rust type index blob of build_id at format, or NULL. */
uint8_t *cq_cache_get_rust_index(struct cq_cache *cache, const char *build_id, unsigned format,
                                 size_t *len);

/* Stores (replaces) a Rust type index blob; best-effort like the table cache. */
void cq_cache_put_rust_index(struct cq_cache *cache, const char *build_id, unsigned format,
                             const uint8_t *blob, size_t len);

/*
 * A row read from the cache was damaged: the reader drops it and rebuilds it
 * from the module (the rebuilt row replaces it).  Counted so that a command
 * can say so once.
 */
void cq_cache_reject(struct cq_cache *cache);
size_t cq_cache_rejected(const struct cq_cache *cache); /* 0 for NULL */
const char *cq_cache_path(const struct cq_cache *cache);

#endif
