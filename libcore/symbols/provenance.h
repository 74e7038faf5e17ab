/*
 * provenance.h - the identity of the files a module's cached entries are
 * computed from (the key of the cache's `sources` table, libcore/db/cache.h).
 *
 * The rule: a cached unwind table, symbol or Rust type index is served only
 * to a run that uses the very same files.  A module's identity is
 *   - for a module read from a file: that file as opened (real path, device,
 *     inode, size, modification time) and its separate debuginfo file as
 *     cq_debuginfo_find finds it (the same facts, or "none");
 *   - for a module read from the core's memory (the vdso): its bytes.
 * A build-id alone proves nothing: any file can carry any build-id.  So a
 * file named by --exe, --sysroot or --debug-dir, or a module path a crafted
 * core names, fills entries of its own identity and never replaces or
 * serves those of the genuine file.  Replacing a file (a package upgrade)
 * changes its inode or mtime, and its entries are computed afresh.
 *
 * Layer: symbols.
 */
#ifndef CQ_PROVENANCE_H
#define CQ_PROVENANCE_H

#include <stddef.h>
#include <stdint.h>

#include "libcore/db/cache.h"

struct cq_module;

/* A module's identity bytes (malloc'd) and its cache key. */
struct cq_provenance {
	char build_id[129];
	uint8_t *identity;
	size_t identity_len;
	struct cq_cache_key key; /* points into this struct: do not copy it */
};

/*
 * Fills p for mod, whose separate debuginfo is at debuginfo_path (NULL: none).
 * On failure (no build-id, out of memory, a file that cannot be stat'ed) p's
 * key has no identity, and the cache is simply not used for the module.
 */
void cq_provenance_init(struct cq_provenance *p, const struct cq_module *mod,
                        const char *debuginfo_path);

/* The same, finding the debuginfo with cq_debuginfo_find(mod, debug_dirs). */
void cq_provenance_find(struct cq_provenance *p, const struct cq_module *mod,
                        const char *const *debug_dirs);

/* dst made a copy of src (its own identity bytes; no identity when out of memory). */
void cq_provenance_copy(struct cq_provenance *dst, const struct cq_provenance *src);

void cq_provenance_free(struct cq_provenance *p);

#endif
