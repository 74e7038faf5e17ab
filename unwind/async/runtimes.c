/*
 * runtimes.c - the table of async runtimes and the driver that runs them
 * (see runtime.h).
 *
 * Adding a runtime: one file in unwind/async/ defining its
 * `const struct cq_async_runtime`, and one line in runtime_list.h.
 *
 * The scan: every writable segment the core holds is read once, in chunks
 * of SCAN_CHUNK bytes that are mapped in before and dropped from our
 * resident set after they are handed to every scanning runtime, so a large
 * heap costs neither its size in memory nor a page fault per page; for a
 * large heap a helper thread does that mapping on another CPU.  A target
 * whose memory is a compressed core offers a feed instead (the target's
 * feed_start): its chunks decompressed ahead into buffers of its own, so
 * the scan reads each byte where the decompressor left it.
 */
#include "unwind/async/runtime.h"

#include <gelf.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "libcore/base/clock.h"
#include "libcore/base/memory.h"
#include "unwind/async/rust_index.h"

/*
 * Every runtime, in the order they decode and their suspended stacks are
 * listed.  Ownership does not hang on the order: every runtime claims its
 * futures before any decodes (a boxed task's future is tokio's, not a lone
 * `dyn Future`'s).  A runtime is one file and one line in runtime_list.h.
 */
#ifdef CQ_TEST_RUNTIMES
#define TEST_RUNTIME(name) RUNTIME(name)
#else
#define TEST_RUNTIME(name)
#endif
#define RUNTIME(name) extern const struct cq_async_runtime name;
#include "unwind/async/runtime_list.h"
#undef RUNTIME
static const struct cq_async_runtime *const runtimes[] = {
#define RUNTIME(name) &name,
#include "unwind/async/runtime_list.h"
#undef RUNTIME
};
#define NRUNTIMES (sizeof(runtimes) / sizeof(runtimes[0]))

const struct cq_async_runtime *const *cq_async_runtimes(size_t *n)
{
	*n = NRUNTIMES;
	return runtimes;
}

size_t cq_rust_index_parts(const struct cq_rust_index_part **out)
{
	size_t n = 0, nr;
	const struct cq_async_runtime *const *rt = cq_async_runtimes(&nr);
	for (size_t i = 0; i < nr && n < CQ_RUST_MAX_PARTS; i++)
		if (rt[i]->rust_index_part)
			out[n++] = rt[i]->rust_index_part;
	return n;
}

/*
 * The scan's chunks: small enough that a feed's ring stays in the CPU's
 * caches, and ending where the core file's offset is a multiple of it, so
 * that each is one frame of coreq's store (CQ_ZSEEK_WRITE_FRAME, 2 MiB):
 * a feed decompresses every frame once, straight into its buffer.
 */
#define SCAN_CHUNK      (2u << 20)
#define MAX_STACK_WORDS (1u << 20)

struct cq_async_shared {
	struct cq_rust_index *rust_index;
	bool rust_index_built;
	uint64_t *claims; /* cq_async_claim; sorted on first lookup */
	size_t nclaims, cap_claims;
	bool claims_sorted;
};

struct cq_async_states {
	void *state[NRUNTIMES];
	struct cq_async_needs needs[NRUNTIMES];
	struct cq_async_shared shared;
};

struct cq_error *cq_async_rust_index(const struct cq_async_ctx *ctx, struct cq_rust_index **out)
{
	struct cq_async_shared *sh = ctx->shared;
	if (!sh->rust_index_built) {
		struct cq_error *err = cq_rust_index_core(ctx->target, &sh->rust_index);
		if (err)
			return err;
		sh->rust_index_built = true;
	}
	*out = sh->rust_index;
	return NULL;
}

const struct cq_rust_index *cq_async_rust_index_built(const struct cq_async_ctx *ctx)
{
	return ctx->shared && ctx->shared->rust_index_built ? ctx->shared->rust_index : NULL;
}

/*
 * Every runtime's report, by runtime name: the statistics' order is then
 * the runtimes' names', whatever order they decode in.
 */
static void report_all(struct cq_async_ctx *ctx, void *const *state)
{
	bool done[NRUNTIMES] = {false};
	for (size_t k = 0; k < NRUNTIMES; k++) {
		size_t next = NRUNTIMES;
		for (size_t i = 0; i < NRUNTIMES; i++)
			if (!done[i] && (next == NRUNTIMES ||
			                 strcmp(runtimes[i]->name, runtimes[next]->name) < 0))
				next = i;
		done[next] = true;
		runtimes[next]->report(state ? state[next] : NULL, ctx, &ctx->stacks->async,
		                       &ctx->stacks->warnings);
	}
}

void cq_async_report_unsearched(struct cq_async_ctx *ctx)
{
	ctx->shared = NULL;
	report_all(ctx, NULL);
}

struct cq_error *cq_async_detect(const struct cq_async_ctx *ctx, struct cq_async_states **out,
                                 bool *wants_native)
{
	*wants_native = false;
	struct cq_async_states *s = calloc(1, sizeof(*s));
	if (!s)
		return &cq_error_nomem;
	struct cq_async_ctx with_shared = *ctx;
	with_shared.shared = &s->shared;
	for (size_t i = 0; i < NRUNTIMES; i++) {
		struct cq_error *err =
		    runtimes[i]->detect(&with_shared, &s->state[i], &s->needs[i]);
		if (err) {
			cq_async_states_free(s);
			return err;
		}
		*wants_native |= s->state[i] && s->needs[i].native_frames;
	}
	*out = s;
	return NULL;
}

size_t cq_async_scan_words(const struct cq_async_states *s, struct cq_feed_words *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < NRUNTIMES; i++) {
		if (!s->state[i] || !s->needs[i].scan)
			continue;
		const struct cq_async_needs *nd = &s->needs[i];
		if (nd->scan_lo == 0 || nd->scan_hi < nd->scan_lo || n == max)
			return 0;
		out[n++] = (struct cq_feed_words){nd->scan_lo, nd->scan_hi};
	}
	return n;
}

void cq_async_states_free(struct cq_async_states *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < NRUNTIMES; i++)
		if (s->state[i])
			runtimes[i]->destroy(s->state[i]);
	cq_rust_index_free(s->shared.rust_index);
	free(s->shared.claims);
	free(s);
}

/*
 * A helper thread that maps each chunk in before the scan reaches it and
 * drops it after: a big heap's page-table work (a fault per page, then the
 * unmapping) runs on another CPU while the scan reads.  Small scans do
 * without it.
 */
#define PAGER_MIN_BYTES (64u << 20)
#define PAGER_AHEAD     8 /* chunks: 16 MiB ahead */

struct pager {
	pthread_mutex_t lock;
	pthread_cond_t moved;
	pthread_t thread;
	const struct cq_unwind_target *target;
	const struct cq_async_chunk *chunks;
	size_t n;
	size_t mapped;  /* chunks [0, mapped) are mapped in (or were tried) */
	size_t scanned; /* chunks [0, scanned) the scan is done with */
	bool stop;
};

static void advise(const struct cq_unwind_target *t, const struct cq_async_chunk *c, int advice)
{
	if (t->ops->advise)
		t->ops->advise(t->ctx, c->data, c->len, advice);
}

static void pager_map(const struct cq_unwind_target *t, const struct cq_async_chunk *c)
{
	/* Maps the chunk (a kernel before 5.14 reads it ahead instead: the target's advise). */
	advise(t, c, MADV_POPULATE_READ);
}

static void *pager_run(void *arg)
{
	struct pager *p = arg;
	size_t dropped = 0;
	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		size_t scanned = p->scanned, next = p->mapped;
		bool map = next < p->n && next < scanned + PAGER_AHEAD;
		if (!map && dropped == scanned) {
			pthread_cond_wait(&p->moved, &p->lock);
			continue;
		}
		pthread_mutex_unlock(&p->lock);
		for (; dropped < scanned; dropped++)
			advise(p->target, &p->chunks[dropped], MADV_DONTNEED);
		if (map)
			pager_map(p->target, &p->chunks[next]);
		pthread_mutex_lock(&p->lock);
		if (map) {
			p->mapped = next + 1;
			pthread_cond_broadcast(&p->moved);
		}
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static bool pager_start(struct pager *p, const struct cq_unwind_target *target,
                        const struct cq_async_chunk *chunks, size_t n)
{
	*p = (struct pager){.target = target, .chunks = chunks, .n = n};
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->moved, NULL);
	if (pthread_create(&p->thread, NULL, pager_run, p) == 0)
		return true;
	pthread_cond_destroy(&p->moved);
	pthread_mutex_destroy(&p->lock);
	return false;
}

/* Moves the scan to chunk k: waits for it to be mapped, lets k - 1 go. */
static void pager_at(struct pager *p, size_t k)
{
	pthread_mutex_lock(&p->lock);
	p->scanned = k;
	pthread_cond_broadcast(&p->moved);
	while (p->mapped <= k && k < p->n)
		pthread_cond_wait(&p->moved, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

static void pager_finish(struct pager *p)
{
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->moved);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->moved);
	pthread_mutex_destroy(&p->lock);
}

/*
 * The scan's chunks in address order, stored in out unless it is NULL; how
 * many there are.  Each starts 8 bytes early (its overlap) but the first of
 * a segment, so a word pair may straddle two chunks.
 */
static size_t list_chunks(const struct cq_mem *mem, struct cq_async_chunk *out, uint64_t *bytes)
{
	size_t nseg, n = 0;
	const struct cq_mem_segment *seg = cq_mem_core_segments(mem, &nseg);
	*bytes = 0;
	for (size_t g = 0; g < nseg; g++) {
		const struct cq_mem_segment *sg = &seg[g];
		if (!(sg->flags & CQ_MEM_WRITE) || !sg->data || sg->data_len < 8)
			continue;
		uint64_t end = sg->start + (sg->data_len & ~(uint64_t)7);
		for (uint64_t at = sg->start; at < end; n++) {
			uint64_t begin = at > sg->start ? at - 8 : at;
			/* Chunks end where the file's offset is a multiple of SCAN_CHUNK. */
			uint64_t room = SCAN_CHUNK - (sg->file_off + (at - sg->start)) % SCAN_CHUNK;
			room = room & 7 ? room & ~(uint64_t)7 : room;
			room = room ? room : SCAN_CHUNK;
			uint64_t stop = end - at > room ? at + room : end;
			if (out)
				out[n] =
				    (struct cq_async_chunk){.segment = sg,
				                            .addr = begin,
				                            .data = sg->data + (begin - sg->start),
				                            .len = stop - begin,
				                            .overlap = at - begin};
			*bytes += stop - at;
			at = stop;
		}
	}
	return n;
}

/*
 * The target's reader of the chunks ahead (a compressed core's frames
 * decompressed on other CPUs into buffers of its own), or NULL: the chunks
 * are then read where the target maps them.
 */
static void *start_feed(const struct cq_unwind_target *t, const struct cq_async_chunk *chunks,
                        size_t n, const struct cq_async_states *s)
{
	if (!t->ops->feed_start || n == 0)
		return NULL;
	struct cq_unwind_span *spans = malloc(n * sizeof(*spans));
	if (!spans)
		return NULL;
	for (size_t k = 0; k < n; k++)
		spans[k] =
		    (struct cq_unwind_span){chunks[k].data, chunks[k].len, chunks[k].overlap};
	struct cq_feed_words words[NRUNTIMES];
	size_t nwords = cq_async_scan_words(s, words, NRUNTIMES);
	void *feed = t->ops->feed_start(t->ctx, spans, n, words, nwords);
	free(spans);
	return feed;
}

/* One pass over the core's writable memory, every scanning runtime fed. */
static struct cq_error *scan_memory(struct cq_async_ctx *ctx, struct cq_async_states *s)
{
	size_t nscan = 0;
	for (size_t i = 0; i < NRUNTIMES; i++)
		nscan += s->state[i] && s->needs[i].scan;
	if (nscan == 0)
		return NULL;
	uint64_t bytes;
	const struct cq_unwind_target *t = ctx->target;
	size_t n = list_chunks(t->mem, NULL, &bytes);
	struct cq_async_chunk *chunks = n ? calloc(n, sizeof(*chunks)) : NULL;
	if (n && !chunks)
		return &cq_error_nomem;
	list_chunks(t->mem, chunks, &bytes);
	double start = cq_clock_seconds();
	void *feed = start_feed(t, chunks, n, s);
	struct pager pager;
	bool paging = !feed && bytes >= PAGER_MIN_BYTES && pager_start(&pager, t, chunks, n);
	for (size_t k = 0; k < n; k++) {
		struct cq_async_chunk c = chunks[k];
		bool none = false;
		const uint8_t *fed = feed ? t->ops->feed_next(feed, &none) : NULL;
		if (fed || none)
			c.data = fed; /* none: it holds no word a runtime acts on */
		else if (paging)
			pager_at(&pager, k);
		else
			advise(t, &c, MADV_WILLNEED);
		for (size_t i = 0; i < NRUNTIMES; i++)
			if (s->state[i] && s->needs[i].scan)
				runtimes[i]->scan(s->state[i], ctx, &c);
		if (!paging && !fed && !none)
			advise(t, &c, MADV_DONTNEED);
	}
	if (paging)
		pager_finish(&pager);
	if (feed)
		t->ops->feed_stop(feed);
	ctx->scan_seconds = cq_clock_seconds() - start;
	free(chunks);
	if (t->ops->trim)
		t->ops->trim(t->ctx);
	return NULL;
}

struct cq_error *cq_async_stacks(struct cq_async_ctx *ctx, struct cq_async_states *s)
{
	struct cq_error *err = NULL;
	ctx->shared = &s->shared;
	for (size_t i = 0; i < NRUNTIMES && !err; i++)
		if (s->state[i] && runtimes[i]->threads)
			err = runtimes[i]->threads(s->state[i], ctx);
	if (!err)
		err = scan_memory(ctx, s);
	for (size_t i = 0; i < NRUNTIMES && !err; i++)
		if (s->state[i] && runtimes[i]->claim)
			err = runtimes[i]->claim(s->state[i], ctx);
	for (size_t i = 0; i < NRUNTIMES && !err; i++)
		if (s->state[i] && runtimes[i]->decode)
			err = runtimes[i]->decode(s->state[i], ctx);
	if (!err)
		report_all(ctx, s->state);
	if (!err && (ctx->stacks->async.nomem || ctx->stacks->warnings.nomem))
		err = &cq_error_nomem;
	return err;
}

struct cq_error *cq_async_add_suspended(const struct cq_async_ctx *ctx,
                                        struct cq_suspended_stack *s, bool *added)
{
	struct cq_stacks *st = ctx->stacks;
	*added = false;
	if (st->nsuspended >= ctx->max_suspended) {
		free(s->frames);
		return NULL;
	}
	struct cq_suspended_stack *a = realloc(st->suspended, (st->nsuspended + 1) * sizeof(*a));
	if (!a) {
		free(s->frames);
		return &cq_error_nomem;
	}
	st->suspended = a;
	st->suspended[st->nsuspended++] = *s;
	*added = true;
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

bool cq_async_claim(const struct cq_async_ctx *ctx, uint64_t addr)
{
	struct cq_async_shared *sh = ctx->shared;
	if (sh->nclaims == sh->cap_claims) {
		size_t cap = sh->cap_claims ? sh->cap_claims * 2 : 64;
		uint64_t *p = realloc(sh->claims, cap * sizeof(*p));
		if (!p)
			return false;
		sh->claims = p;
		sh->cap_claims = cap;
	}
	sh->claims[sh->nclaims++] = addr;
	sh->claims_sorted = false;
	return true;
}

bool cq_async_claimed(const struct cq_async_ctx *ctx, uint64_t addr)
{
	struct cq_async_shared *sh = ctx->shared;
	if (!sh->claims_sorted) {
		if (sh->nclaims > 1)
			qsort(sh->claims, sh->nclaims, sizeof(*sh->claims), cmp_u64);
		sh->claims_sorted = true;
	}
	return sh->nclaims > 0 &&
	       bsearch(&addr, sh->claims, sh->nclaims, sizeof(addr), cmp_u64) != NULL;
}

void cq_async_sort_words(uint64_t *words, size_t n)
{
	if (n > 1)
		qsort(words, n, sizeof(*words), cmp_u64);
}

bool cq_async_sorted_has(const uint64_t *sorted, size_t n, uint64_t v)
{
	return n > 0 && bsearch(&v, sorted, n, sizeof(v), cmp_u64) != NULL;
}

bool cq_async_live_words(const struct cq_unwind_target *t, size_t thread, uint64_t **out, size_t *n)
{
	*n = 0;
	*out = NULL;
	unsigned sp_reg = t->arch->sp_reg;
	const struct cq_regs *regs = t->threads[thread].regs;
	if (!cq_regs_has(regs, sp_reg))
		return true;
	uint64_t sp = regs->value[sp_reg] & ~(uint64_t)7;
	const struct cq_mem_segment *seg = cq_mem_find(t->mem, sp);
	uint64_t words = seg && seg->end > sp ? (seg->end - sp) / 8 : 0;
	if (words > MAX_STACK_WORDS)
		words = MAX_STACK_WORDS;
	uint64_t *w = malloc((words + CQ_REGS_MAX) * sizeof(*w));
	if (!w)
		return false;
	size_t k = 0;
	for (unsigned r = 0; r < CQ_REGS_MAX; r++)
		if (cq_regs_has(regs, r))
			w[k++] = regs->value[r];
	for (uint64_t i = 0; i < words; i++)
		if (cq_mem_read_u64(t->mem, sp + 8 * i, &w[k]))
			k++;
	cq_async_sort_words(w, k);
	*n = k;
	*out = w;
	return true;
}

uint64_t cq_async_live_start(const struct cq_unwind_target *tg, const struct cq_mem_segment *seg)
{
	uint64_t start = seg->start;
	unsigned sp_reg = tg->arch->sp_reg;
	size_t inside = 0;
	uint64_t sp = 0;
	for (size_t t = 0; t < tg->nthreads; t++) {
		const struct cq_regs *r = tg->threads[t].regs;
		if (cq_regs_has(r, sp_reg) && r->value[sp_reg] >= seg->start &&
		    r->value[sp_reg] < seg->end) {
			inside++;
			sp = r->value[sp_reg];
		}
	}
	/* Several stacks in one mapping: their dead parts interleave; scan it all. */
	uint64_t red_zone = tg->arch->red_zone;
	if (inside == 1 && sp - seg->start > red_zone)
		start = (sp - red_zone) & ~(uint64_t)7;
	return start;
}

#define MAX_DATA_SEGMENT (256u << 20)
#define DATA_READ_CHUNK  65536

/* The words of [start, end) with values in [lo, hi], to hit (cq_async_data_words). */
static bool data_words_in(const struct cq_async_ctx *ctx, uint64_t start, uint64_t end, uint64_t lo,
                          uint64_t hi, size_t after,
                          bool (*hit)(void *arg, uint64_t addr, const uint64_t *words), void *arg)
{
	uint64_t *buf = malloc(DATA_READ_CHUNK + 8 * after);
	if (!buf)
		return false;
	start = (start + 7) & ~(uint64_t)7;
	for (uint64_t at = start; at < end; at += DATA_READ_CHUNK) {
		size_t want = end - at < DATA_READ_CHUNK + 8 * after ? (size_t)(end - at)
		                                                     : DATA_READ_CHUNK + 8 * after;
		size_t got = cq_mem_read_partial(ctx->target->mem, at, buf, want) / 8;
		for (size_t i = 0; i + after < got && i < DATA_READ_CHUNK / 8; i++)
			if (buf[i] >= lo && buf[i] <= hi && !hit(arg, at + 8 * i, &buf[i])) {
				free(buf);
				return false;
			}
	}
	free(buf);
	return true;
}

bool cq_async_data_words(const struct cq_async_ctx *ctx, size_t m, uint64_t lo, uint64_t hi,
                         size_t after, bool (*hit)(void *arg, uint64_t addr, const uint64_t *words),
                         void *arg)
{
	const struct cq_target_module *mod = &ctx->target->modules[m];
	size_t nph;
	if (!mod->elf || elf_getphdrnum(mod->elf, &nph) != 0)
		return true;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(mod->elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    (ph.p_flags & PF_X) || ph.p_memsz > MAX_DATA_SEGMENT)
			continue;
		uint64_t start = ph.p_vaddr + mod->bias;
		if (!data_words_in(ctx, start, start + ph.p_memsz, lo, hi, after, hit, arg))
			return false;
	}
	return true;
}

static int cmp_leading_addr(const void *a, const void *b)
{
	uint64_t x, y;
	memcpy(&x, a, sizeof(x));
	memcpy(&y, b, sizeof(y));
	return (x > y) - (x < y);
}

size_t cq_async_sort_unique(void *base, size_t n, size_t size)
{
	if (n == 0)
		return 0;
	qsort(base, n, size, cmp_leading_addr);
	char *v = base;
	size_t kept = 1;
	for (size_t i = 1; i < n; i++)
		if (cmp_leading_addr(v + i * size, v + (kept - 1) * size) != 0) {
			if (kept != i)
				memcpy(v + kept * size, v + i * size, size);
			kept++;
		}
	return kept;
}
