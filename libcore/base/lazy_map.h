/*
 * lazy_map.h - a read-only region of memory whose bytes are produced on
 * first touch, chunk by chunk, and dropped again when too many are
 * resident.  It lets the whole analysis read a compressed core through
 * plain pointers, as it reads an mmapped raw core, while only the chunks
 * it touches are decompressed (libcore/model/source.c: a seekable zstd
 * core, one chunk per zstd frame).
 *
 * How: the region is anonymous memory registered with userfaultfd(2).  A
 * thread of ours receives each fault on a missing page, asks the caller's
 * fill function for the chunk that holds it and installs the whole chunk
 * (UFFDIO_COPY).  When more than the budget is resident, the chunk filled
 * longest ago is dropped (MADV_DONTNEED); a later touch faults and fills
 * it again, so a pointer into the region stays valid for the region's life.
 *
 * Only this process's own loads may touch the region: a page not yet filled
 * is served to a user-mode fault only where the kernel offers no more
 * (UFFD_USER_MODE_ONLY, an unprivileged process), so a pointer into it must
 * not be handed to a system call (write(2) from it fails with EFAULT).  A
 * forked child does not inherit the region (MADV_DONTFORK).  At least four
 * chunks' worth stay resident, so a read across two chunks and a second
 * reading thread never evict each other for ever.
 *
 * Where the kernel refuses userfaultfd (an unprivileged process where
 * vm.unprivileged_userfaultfd is 0 and user-mode-only faults are not
 * offered, or a seccomp filter), cq_lazy_map_create fails with
 * CQ_ERR_UNSUPPORTED and the caller decompresses eagerly instead.
 *
 * Layer: base.
 */
#ifndef CQ_LAZY_MAP_H
#define CQ_LAZY_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

/*
 * Writes chunk i's bytes, exactly len of them, to dst (len is the chunk's
 * size; dst has room for len rounded up to a page).  Called from the
 * region's own thread, one call at a time.  A false return fills the chunk
 * with zeros and counts it in cq_lazy_map_stats.bad_chunks.
 */
typedef bool (*cq_lazy_fill_fn)(void *arg, size_t i, uint8_t *dst, size_t len);

struct cq_lazy_map_stats {
	uint64_t fills;      /* chunks produced (a chunk dropped and touched again counts twice) */
	uint64_t drops;      /* chunks dropped to stay within the budget */
	uint64_t bad_chunks; /* fills that failed (read as zeros) */
	uint64_t peak_bytes; /* most bytes resident at once */
};

struct cq_lazy_map;

/*
 * A region of size bytes cut into n chunks: chunk i is
 * [bound[i], bound[i + 1]), bound[0] == 0, bound[n] == size, and every
 * bound but the last a multiple of the page size.  budget: bytes that may
 * be resident at once (at least the largest chunk's worth is kept).
 * bound is copied.
 */
struct cq_error *cq_lazy_map_create(uint64_t size, const uint64_t *bound, size_t n, uint64_t budget,
                                    cq_lazy_fill_fn fill, void *arg, struct cq_lazy_map **out);

/*
 * Installs the len bytes at src as the region's bytes at off, now, before
 * anyone touches them: off is a multiple of the page size, and len is too
 * unless the range ends at the region's end (src then has len rounded up
 * to a page).  A chunk with pages put is never dropped: when a page of it
 * that was not put is touched, the chunk is filled (around the pages put)
 * and stays, outside the budget.
 */
struct cq_error *cq_lazy_map_put(struct cq_lazy_map *m, uint64_t off, const uint8_t *src,
                                 uint64_t len);

/* The region's first byte. */
const uint8_t *cq_lazy_map_data(const struct cq_lazy_map *m);

struct cq_lazy_map_stats cq_lazy_map_stats(struct cq_lazy_map *m);

/* Stops the thread and unmaps the region; m may be NULL. */
void cq_lazy_map_destroy(struct cq_lazy_map *m);

#endif
