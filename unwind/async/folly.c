/*
 * async_folly.c - find folly's async-stack state in a core (see
 * async_folly.h): the TLS key and each thread's root through glibc's
 * pthread_getspecific layout (tls.h), and the suspended leaf frames through
 * the cookie scan of writable memory (unwind/async/word_scan.h) and the debug
 * leaf frame store.
 *
 * The scan reads the core's own bytes (the mmapped image) segment by
 * segment, in chunks whose pages are dropped from the resident set after
 * each chunk, so scanning a large heap neither copies it nor keeps it.
 */
#include "unwind/async/folly.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "libcore/model/core.h"
#include "libcore/model/elf_symbols.h"
#include "libcore/model/module.h"
#include "unwind/async/word_scan.h"
#include "unwind/async/folly_walk.h"

/* folly: a key >= this is not a pthread key (PTHREAD_KEYS_MAX is 1024). */
#define MAX_KEY 1024u
/* Bytes scanned between two drops of the scanned pages. */
#define SCAN_CHUNK (32u << 20)
/* Cookie hits kept per chunk before validation. */
#define CHUNK_HITS 4096u
/* Elements read from the leaf frame store. */
#define MAX_STORE_ELEMENTS 65536u

enum { Q_KEY, Q_COOKIE, Q_STORE, Q_COUNT };

void cq_folly_locate(struct cq_core *core, struct cq_folly *out)
{
	memset(out, 0, sizeof(*out));
	struct cq_symbol_query q[Q_COUNT] = {
	    [Q_KEY] = {.name = "folly_async_stack_root_tls_key"},
	    [Q_COOKIE] = {.name = "__folly_suspended_frame_cookie"},
	    [Q_STORE] = {.name = "__folly_leaf_frame_store"},
	};
	for (size_t m = 0; m < core->nmodules; m++)
		if (cq_module_find_symbols(&core->modules[m], q, Q_COUNT) == Q_COUNT)
			break;
	out->present = q[Q_KEY].found || q[Q_COOKIE].found || q[Q_STORE].found;
	if (q[Q_KEY].found && cq_mem_read_u32(&core->mem, q[Q_KEY].addr, &out->key)) {
		out->key_symbol = true;
		out->has_key = out->key < MAX_KEY;
	}
	if (q[Q_COOKIE].found) {
		out->cookie_addr = q[Q_COOKIE].addr;
		if (!cq_mem_read_u64(&core->mem, q[Q_COOKIE].addr, &out->cookie))
			out->cookie = 0;
	}
	if (q[Q_STORE].found && !cq_mem_read_u64(&core->mem, q[Q_STORE].addr, &out->leaf_store))
		out->leaf_store = 0;
	if (out->has_key)
		cq_tls_layout_load(core, &out->tls);
}

uint64_t cq_folly_thread_root(struct cq_core *core, const struct cq_folly *f,
                              const struct cq_core_thread *thread)
{
	uint64_t holder, root;
	if (!f->has_key ||
	    cq_tls_get_specific(core, &f->tls, thread, f->key, &holder) != CQ_TLS_VALUE ||
	    holder == 0 || !cq_mem_read_u64(&core->mem, holder, &root))
		return 0;
	return root;
}

/* A growing set of leaf frame addresses, bounded by max. */
struct leaves {
	uint64_t *addr;
	size_t n, cap, max;
};

/* Scan hits come in address order, each once; only store entries need dedup. */
static struct cq_error *leaves_add(struct leaves *l, uint64_t frame, bool dedup)
{
	for (size_t i = 0; dedup && i < l->n; i++)
		if (l->addr[i] == frame)
			return NULL;
	if (l->n == l->max)
		return NULL;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		uint64_t *a = realloc(l->addr, cap * sizeof(*a));
		if (!a)
			return &cq_error_nomem;
		l->addr = a;
		l->cap = cap;
	}
	l->addr[l->n++] = frame;
	return NULL;
}

/* Could frame be a suspended leaf: readable, a code address, a sane parent? */
static bool plausible_leaf(struct cq_core *core, uint64_t frame, uint64_t cookie)
{
	uint64_t parent, ip, root;
	if (!cq_mem_read_u64(&core->mem, frame, &parent) ||
	    !cq_mem_read_u64(&core->mem, frame + 8, &ip) ||
	    !cq_mem_read_u64(&core->mem, frame + 16, &root) || root != cookie)
		return false;
	const struct cq_mem_segment *code = cq_mem_find(&core->mem, ip);
	if (!code || !(code->flags & CQ_MEM_EXEC))
		return false;
	return parent == 0 || (!(parent & 7) && cq_mem_find(&core->mem, parent) != NULL);
}

static void drop_pages(const uint8_t *p, uint64_t len)
{
	uintptr_t start = (uintptr_t)p & ~(uintptr_t)4095;
	uintptr_t end = ((uintptr_t)p + len) & ~(uintptr_t)4095;
	if (end > start)
		madvise((void *)start, end - start, MADV_DONTNEED);
}

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct cq_error *scan_segment(struct cq_core *core, const struct cq_folly *f,
                                     const struct cq_mem_segment *s, struct leaves *l,
                                     struct cq_folly_scan_stats *stats, uint64_t *hits)
{
	for (uint64_t off = 0; off < s->data_len; off += SCAN_CHUNK) {
		uint64_t len = s->data_len - off < SCAN_CHUNK ? s->data_len - off : SCAN_CHUNK;
		size_t n =
		    cq_async_scan(s->data + off, s->start + off, len, f->cookie, hits, CHUNK_HITS);
		stats->bytes += len;
		stats->hits += n;
		for (size_t i = 0; i < n && i < CHUNK_HITS && l->n < l->max; i++) {
			uint64_t frame = hits[i] - 16;
			if (hits[i] == f->cookie_addr || !plausible_leaf(core, frame, f->cookie))
				continue;
			struct cq_error *err = leaves_add(l, frame, false);
			if (err)
				return err;
		}
		drop_pages(s->data + off, len);
	}
	return NULL;
}

/*
 * libstdc++'s unordered_set<T*>: {buckets, bucket_count, before_begin.next,
 * element_count, ...}; each node is {next, value}.
 */
static struct cq_error *read_leaf_store(struct cq_core *core, uint64_t set, struct leaves *l)
{
	uint64_t node, count;
	if (!cq_mem_read_u64(&core->mem, set + 16, &node) ||
	    !cq_mem_read_u64(&core->mem, set + 24, &count))
		return NULL;
	for (uint64_t i = 0; node && i < count && i < MAX_STORE_ELEMENTS; i++) {
		uint64_t frame;
		if (!cq_mem_read_u64(&core->mem, node + 8, &frame) ||
		    !cq_mem_read_u64(&core->mem, node, &node))
			break;
		struct cq_error *err = frame ? leaves_add(l, frame, true) : NULL;
		if (err)
			return err;
	}
	return NULL;
}

struct cq_error *cq_folly_suspended_leaves(struct cq_core *core, const struct cq_folly *f,
                                           size_t max, uint64_t **leaves, size_t *nleaves,
                                           struct cq_folly_scan_stats *stats)
{
	memset(stats, 0, sizeof(*stats));
	*leaves = NULL;
	*nleaves = 0;
	struct leaves l = {.max = max};
	struct cq_error *err = NULL;
	if (f->cookie) {
		uint64_t *hits = malloc(CHUNK_HITS * sizeof(*hits));
		if (!hits)
			return &cq_error_nomem;
		double start = now_seconds();
		const struct cq_mem_layer_set *set = &core->mem.layer[CQ_MEM_LAYER_CORE];
		for (size_t i = 0; i < set->n && !err; i++) {
			const struct cq_mem_segment *s = &set->seg[i];
			if ((s->flags & CQ_MEM_WRITE) && s->data_len >= 8)
				err = scan_segment(core, f, s, &l, stats, hits);
		}
		stats->seconds = now_seconds() - start;
		free(hits);
	}
	if (!err && f->leaf_store)
		err = read_leaf_store(core, f->leaf_store, &l);
	if (err) {
		free(l.addr);
		return err;
	}
	*leaves = l.addr;
	*nleaves = l.n;
	return NULL;
}
