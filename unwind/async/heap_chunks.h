/*
 * heap_chunks.h - where glibc malloc's chunks lie, to tell a heap object
 * from an address in the middle of one (or in freed memory).
 *
 * glibc keeps each heap as a chain of chunks: at chunk p the word p + 8 is
 * the chunk's size (a multiple of 16, low bits PREV_INUSE = 1,
 * IS_MMAPPED = 2, NON_MAIN_ARENA = 4), the next chunk starts at p + size,
 * the user's bytes at p + 16, and a chunk is in use when the next chunk's
 * PREV_INUSE bit is set (the last chunk, the top, is free).  The main heap
 * (brk) starts its chain at its first byte; a thread arena's heap is a
 * 64 MiB-aligned mapping that starts with a heap_info (size at +16) and,
 * for an arena's first heap, the arena itself; a mapping of mmapped chunks
 * chains them from its first byte.
 *
 * A writable segment of the core is taken for a heap only when a chain of
 * valid sizes starting at one of those places reaches the segment's end
 * (or the heap_info's size), or runs for CQ_HEAP_CONFIRM chunks.  The walk
 * reads the core's bytes directly, is bounded (CQ_HEAP_MAX_STEPS chunks per
 * segment), and says "unknown" rather than guess: memory that is not a heap
 * gets no verdict.
 *
 * A chunk freed into a thread's tcache still looks in use to the chain.
 * Each thread's tcache_perthread_struct is a heap chunk of 0x290 bytes
 * (64 u16 counts, 64 list heads), among the first chunks of the heap its
 * thread first allocated from; those are found there and their lists walked
 * (the `next` links are safe-linked, glibc >= 2.32), so a chunk on them is
 * free.  A fastbin chunk, or a tcache struct found elsewhere, is not
 * recognised: such a chunk still counts as in use.
 */
#ifndef CQ_HEAP_CHUNKS_H
#define CQ_HEAP_CHUNKS_H

#include <stddef.h>
#include <stdint.h>

struct cq_mem;

#define CQ_HEAP_CONFIRM   64
#define CQ_HEAP_MAX_STEPS (1u << 24)

enum cq_heap_verdict {
	CQ_HEAP_UNKNOWN,   /* not in a heap coreq could walk: no verdict */
	CQ_HEAP_OBJECT,    /* the user start of an in-use chunk that holds size bytes (or
	                      just past an Arc's two counts there) */
	CQ_HEAP_INSIDE,    /* inside an in-use chunk, not at its start */
	CQ_HEAP_FREE,      /* inside a free chunk (the top chunk included) */
	CQ_HEAP_TOO_SMALL, /* at a chunk's user start, but the chunk is smaller than size */
};

struct cq_heap_query {
	uint64_t addr, size;
	enum cq_heap_verdict verdict; /* set by cq_heap_classify */
};

/* Sets the verdict of every query; q sorted by addr. */
void cq_heap_classify(struct cq_mem *mem, struct cq_heap_query *q, size_t n);

/* The verdict's name in JSON: "unknown", "object", "inside_chunk", "free_chunk", "chunk_too_small".
 */
const char *cq_heap_verdict_name(enum cq_heap_verdict v);

#endif
