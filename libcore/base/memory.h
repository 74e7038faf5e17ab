/*
 * memory.h - the target's address space, as read from a core.
 *
 * A struct cq_mem is a set of segments, each a range of target addresses
 * backed by bytes that are already in our address space (the mmapped core,
 * an mmapped module file, or a test buffer).  A segment may back only a
 * prefix of its range (a PT_LOAD with p_filesz < p_memsz, or a core cut
 * short): the rest is absent.
 *
 * Segments live in layers.  A read looks in layer CQ_MEM_LAYER_CORE first and
 * falls back to CQ_MEM_LAYER_FILE for bytes the core does not hold (text and
 * rodata, which the default coredump_filter leaves out; a file segment has
 * the protection the file's program headers give it, as gdb's gcore writes
 * no segment at all for unmodified text).  Reads that span segments work; a
 * read of absent memory fails cleanly.
 *
 * Invariants: within a layer, segments are sorted by start and do not overlap
 * (cq_mem_finish enforces it by trimming later overlapping segments).
 */
#ifndef CQ_MEMORY_H
#define CQ_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

enum cq_mem_layer {
	CQ_MEM_LAYER_CORE,
	CQ_MEM_LAYER_FILE,
	CQ_MEM_LAYERS,
};

enum {
	CQ_MEM_READ = 1,
	CQ_MEM_WRITE = 2,
	CQ_MEM_EXEC = 4,
};

struct cq_mem_segment {
	uint64_t start, end; /* [start, end) in the target */
	const uint8_t *data; /* bytes of [start, start + data_len) */
	uint64_t data_len;   /* <= end - start; the rest is absent */
	unsigned flags;      /* CQ_MEM_READ | CQ_MEM_WRITE | CQ_MEM_EXEC */
	uint64_t file_off;   /* where data lies in the file it comes from (0: no file) */
};

struct cq_mem_layer_set {
	struct cq_mem_segment *seg;
	size_t n, cap;
};

struct cq_mem {
	struct cq_mem_layer_set layer[CQ_MEM_LAYERS];
	size_t last_hit[CQ_MEM_LAYERS]; /* lookup cache: index of the last segment found */
};

void cq_mem_init(struct cq_mem *mem);
void cq_mem_destroy(struct cq_mem *mem);

/* Adds a segment; call cq_mem_finish before reading. */
/* As cq_mem_add, for bytes that lie at file_off in the file they come from. */
struct cq_error *cq_mem_add_at(struct cq_mem *mem, enum cq_mem_layer layer, uint64_t start,
                               uint64_t end, const uint8_t *data, uint64_t data_len, unsigned flags,
                               uint64_t file_off);
struct cq_error *cq_mem_add(struct cq_mem *mem, enum cq_mem_layer layer, uint64_t start,
                            uint64_t end, const uint8_t *data, uint64_t data_len, unsigned flags);

/* Sorts the segments and trims overlaps. */
void cq_mem_finish(struct cq_mem *mem);

/*
 * Copies up to len bytes at addr into buf and returns how many were readable
 * contiguously from addr (stops at the first absent byte).
 */
size_t cq_mem_read_partial(struct cq_mem *mem, uint64_t addr, void *buf, size_t len);

/* Copies exactly len bytes, or returns false. */
bool cq_mem_read(struct cq_mem *mem, uint64_t addr, void *buf, size_t len);

/* Reads a little-endian u64 / u32. */
bool cq_mem_read_u64(struct cq_mem *mem, uint64_t addr, uint64_t *out);
bool cq_mem_read_u32(struct cq_mem *mem, uint64_t addr, uint32_t *out);

/* Reads a NUL-terminated string of at most cap-1 bytes; false if none. */
bool cq_mem_read_string(struct cq_mem *mem, uint64_t addr, char *buf, size_t cap);

/*
 * The mapping (either layer) that covers addr, or NULL.  The core layer wins,
 * so its flags are the process's view of the page.
 */
const struct cq_mem_segment *cq_mem_find(struct cq_mem *mem, uint64_t addr);

/*
 * The segments whose bytes the core itself holds, sorted by start: the
 * process's own memory, for scans of its writable data (*n is set).
 */
const struct cq_mem_segment *cq_mem_core_segments(const struct cq_mem *mem, size_t *n);

#endif
