/*
 * heap_chunks.c - glibc malloc chunk chains of the core's writable
 * segments, and what lies at a set of addresses (see heap_chunks.h).
 */
#include "unwind/async/heap_chunks.h"

#include <stdbool.h>
#include <stdlib.h>

#include <string.h>

#include "libcore/base/bytes.h"
#include "libcore/base/memory.h"

#define CHUNK_ALIGN    16u
#define FENCEPOST      16u
#define MIN_USABLE     24u /* of the smallest chunk (32 bytes) */
#define PREV_INUSE     1u
#define IS_MMAPPED     2u
#define SIZE_BITS      7u
#define ARENA_HEAP     (64u << 20) /* HEAP_MAX_SIZE: thread arena heaps are aligned to it */
#define HEAP_INFO_SIZE 16u         /* heap_info's size member is at +16 */
#define MAX_FIRST      8192u       /* heap_info + the arena: the first chunk is within */
/* tcache_perthread_struct: u16 counts[64], then 64 list heads; its chunk's size. */
#define TCACHE_BINS      64u
#define TCACHE_CHUNK     0x290u
#define TCACHE_MAX_COUNT 65535u
#define TCACHE_MAX_FREED (1u << 16)

/* One segment as a byte array at target addresses [start, end). */
struct span {
	const uint8_t *data;
	uint64_t start, end;
};

static bool word_at(const struct span *s, uint64_t addr, uint64_t *out)
{
	if (addr < s->start || addr > s->end - 8 || s->end - s->start < 8)
		return false;
	*out = cq_load_u64(s->data + (addr - s->start));
	return true;
}

/* The size of the chunk at p, 0 when its size word is not a chunk's. */
static uint64_t chunk_size(const struct span *s, uint64_t p)
{
	uint64_t w;
	if (!word_at(s, p + 8, &w))
		return 0;
	uint64_t size = w & ~(uint64_t)SIZE_BITS;
	if (size % CHUNK_ALIGN != 0 || size < FENCEPOST || size > s->end - p)
		return 0;
	return size;
}

/*
 * True when the chain from first is a heap's: valid sizes up to the end of
 * the segment (or of the heap_info's heap), or for CQ_HEAP_CONFIRM chunks.
 */
static bool chain_holds(const struct span *s, uint64_t first, uint64_t heap_end)
{
	uint64_t p = first;
	for (unsigned n = 0; n < CQ_HEAP_CONFIRM; n++) {
		if (p == s->end || p == heap_end)
			return n > 0;
		uint64_t size = chunk_size(s, p);
		if (size == 0)
			return false;
		p += size;
	}
	return true;
}

/* The first chunk of the segment's chain, or 0 when the segment is not a heap. */
static uint64_t first_chunk(const struct span *s, uint64_t *heap_end)
{
	*heap_end = s->end;
	if (s->start % CHUNK_ALIGN == 0 && chain_holds(s, s->start, s->end))
		return s->start;
	uint64_t hsize;
	if (s->start % ARENA_HEAP != 0 || !word_at(s, s->start + HEAP_INFO_SIZE, &hsize) ||
	    hsize > s->end - s->start || hsize < MAX_FIRST / 4)
		return 0;
	*heap_end = s->start + hsize;
	for (uint64_t off = CHUNK_ALIGN * 2; off < MAX_FIRST && off < hsize; off += CHUNK_ALIGN)
		if (chain_holds(s, s->start + off, *heap_end))
			return s->start + off;
	return 0;
}

/* Chunks freed into a thread's tcache: they still look in use to the chain. */
struct freed {
	uint64_t *user; /* user pointers, sorted once filled */
	size_t n, cap;
};

static void add_freed(struct freed *f, uint64_t user)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 64;
		uint64_t *p = cap <= TCACHE_MAX_FREED ? realloc(f->user, cap * sizeof(*p)) : NULL;
		if (!p)
			return; /* fewer verdicts, never a wrong one */
		f->user = p;
		f->cap = cap;
	}
	f->user[f->n++] = user;
}

/*
 * If the chunk at p is a tcache_perthread_struct (its size, and every
 * count nonzero exactly where its list head is), adds every chunk on its
 * lists: heads are plain pointers, each `next` is safe-linked (glibc >=
 * 2.32: stored as next ^ (its own address >> 12)).
 */
static void add_tcache(struct cq_mem *mem, const struct span *s, uint64_t p, uint64_t size,
                       struct freed *f)
{
	uint64_t user = p + 16, w;
	if (size != TCACHE_CHUNK || user + TCACHE_BINS * 10 > s->end)
		return;
	const uint8_t *base = s->data + (user - s->start);
	for (unsigned i = 0; i < TCACHE_BINS; i++) {
		uint16_t count;
		memcpy(&count, base + 2 * i, 2);
		w = cq_load_u64(base + 2 * TCACHE_BINS + 8 * i);
		if ((count == 0) != (w == 0) || (w & (CHUNK_ALIGN - 1)) != 0)
			return;
	}
	for (unsigned i = 0; i < TCACHE_BINS; i++) {
		uint16_t count;
		memcpy(&count, base + 2 * i, 2);
		uint64_t e = cq_load_u64(base + 2 * TCACHE_BINS + 8 * i);
		for (unsigned k = 0; k < count && e && (e & (CHUNK_ALIGN - 1)) == 0; k++) {
			add_freed(f, e);
			if (!cq_mem_read_u64(mem, e, &w))
				break;
			e = w ^ (e >> 12);
		}
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static bool is_freed(const struct freed *f, uint64_t user)
{
	return f->n && bsearch(&user, f->user, f->n, sizeof(user), cmp_u64);
}

static bool in_use(const struct span *s, uint64_t p, uint64_t size, uint64_t heap_end)
{
	uint64_t self, next;
	if (word_at(s, p + 8, &self) && (self & IS_MMAPPED))
		return true;
	if (p + size >= heap_end)
		return false; /* the top chunk */
	return word_at(s, p + size + 8, &next) && (next & PREV_INUSE);
}

/* What query q finds in the in-use-or-free chunk at p of the given size. */
static enum cq_heap_verdict verdict_at(const struct span *s, uint64_t p, uint64_t size,
                                       uint64_t heap_end, const struct freed *f,
                                       const struct cq_heap_query *q)
{
	if (!in_use(s, p, size, heap_end) || is_freed(f, p + 16))
		return CQ_HEAP_FREE;
	uint64_t self = 0, mem = p + 16, usable;
	word_at(s, p + 8, &self);
	usable = size - ((self & IS_MMAPPED) ? 16 : 8);
	if (q->addr == mem)
		return q->size <= usable ? CQ_HEAP_OBJECT : CQ_HEAP_TOO_SMALL;
	/*
	 * Arc<T>: the value follows the strong and weak counts, in the chunk
	 * malloc gives for those 16 bytes and T (its usable size is under 16
	 * bytes more, 24 at least; an mmapped chunk is whole pages).  At
	 * offset 16 of a larger chunk is a part of another Arc'd struct
	 * (futures' Arc<Task<..>>, a stale `dyn Future` pointer to it): inside.
	 */
	uint64_t strong, weak;
	if (q->addr == mem + 16 && word_at(s, mem, &strong) && word_at(s, mem + 8, &weak) &&
	    strong >= 1 && strong < (1ull << 32) && weak >= 1 && weak < (1ull << 32)) {
		if (q->size + 16 > usable)
			return CQ_HEAP_TOO_SMALL;
		uint64_t need = q->size + 16 < MIN_USABLE ? MIN_USABLE : q->size + 16;
		return (self & IS_MMAPPED) || usable - need < CHUNK_ALIGN ? CQ_HEAP_OBJECT
		                                                          : CQ_HEAP_INSIDE;
	}
	return CQ_HEAP_INSIDE;
}

/* Classifies q[0, n) (sorted, all inside s) by walking s's chain once. */
static void walk_segment(const struct span *s, const struct freed *f, struct cq_heap_query *q,
                         size_t n)
{
	uint64_t heap_end, p = first_chunk(s, &heap_end);
	size_t i = 0;
	if (p == 0) {
		for (; i < n; i++)
			q[i].verdict = CQ_HEAP_UNKNOWN;
		return;
	}
	for (unsigned steps = 0; i < n && steps < CQ_HEAP_MAX_STEPS; steps++) {
		uint64_t size = p < heap_end ? chunk_size(s, p) : 0;
		if (size == 0)
			break; /* the chain ends or is broken: no verdict past here */
		while (i < n && q[i].addr < p)
			q[i++].verdict = CQ_HEAP_UNKNOWN; /* before the first chunk */
		while (i < n && q[i].addr < p + size) {
			q[i].verdict = verdict_at(s, p, size, heap_end, f, &q[i]);
			i++;
		}
		p += size;
	}
	for (; i < n; i++)
		q[i].verdict = CQ_HEAP_UNKNOWN;
}

static struct span span_of(const struct cq_mem_segment *g)
{
	return (struct span){g->data, g->start, g->start + (g->data_len & ~7ull)};
}

/* The tcaches among the first chunks of every heap of the core (where threads put them). */
static void find_tcaches(struct cq_mem *mem, struct freed *f)
{
	size_t nseg;
	const struct cq_mem_segment *seg = cq_mem_core_segments(mem, &nseg);
	for (size_t g = 0; g < nseg; g++) {
		if (!(seg[g].flags & CQ_MEM_WRITE) || !seg[g].data || seg[g].data_len < 64)
			continue;
		struct span s = span_of(&seg[g]);
		uint64_t heap_end, p = first_chunk(&s, &heap_end);
		for (unsigned n = 0; p && n < CQ_HEAP_CONFIRM && p < heap_end; n++) {
			uint64_t size = chunk_size(&s, p);
			if (size == 0)
				break;
			add_tcache(mem, &s, p, size, f);
			p += size;
		}
	}
	if (f->n > 1)
		qsort(f->user, f->n, sizeof(*f->user), cmp_u64);
}

void cq_heap_classify(struct cq_mem *mem, struct cq_heap_query *q, size_t n)
{
	if (n == 0)
		return;
	struct freed f = {0};
	find_tcaches(mem, &f);
	size_t nseg, g = 0;
	const struct cq_mem_segment *seg = cq_mem_core_segments(mem, &nseg);
	for (size_t i = 0; i < n;) {
		while (g < nseg && seg[g].start + seg[g].data_len <= q[i].addr)
			g++;
		if (g == nseg || q[i].addr < seg[g].start || !(seg[g].flags & CQ_MEM_WRITE) ||
		    !seg[g].data) {
			q[i++].verdict = CQ_HEAP_UNKNOWN;
			continue;
		}
		struct span s = span_of(&seg[g]);
		if (q[i].addr >= s.end) {
			q[i++].verdict = CQ_HEAP_UNKNOWN;
			continue;
		}
		size_t j = i;
		while (j < n && q[j].addr < s.end)
			j++;
		walk_segment(&s, &f, q + i, j - i);
		i = j;
	}
	free(f.user);
}

const char *cq_heap_verdict_name(enum cq_heap_verdict v)
{
	switch (v) {
	case CQ_HEAP_OBJECT:
		return "object";
	case CQ_HEAP_INSIDE:
		return "inside_chunk";
	case CQ_HEAP_FREE:
		return "free_chunk";
	case CQ_HEAP_TOO_SMALL:
		return "chunk_too_small";
	case CQ_HEAP_UNKNOWN:
		break;
	}
	return "unknown";
}
