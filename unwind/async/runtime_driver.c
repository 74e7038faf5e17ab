/*
 * runtime_driver.c - runs the async runtimes of the table over one core
 * (runtime.h: detect, threads, scan, claim, decode, report), and their
 * warm hooks over one file (`coreq cache warm`).
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

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "libcore/base/clock.h"
#include "libcore/base/memory.h"

/*
 * The scan's chunks: small enough that a feed's ring stays in the CPU's
 * caches, and ending where the core file's offset is a multiple of it, so
 * that each is one frame of coreq's store (CQ_ZSEEK_WRITE_FRAME, 2 MiB):
 * a feed decompresses every frame once, straight into its buffer.
 */
#define SCAN_CHUNK (2u << 20)

#define MAX_RUNTIMES CQ_ASYNC_MAX_RUNTIMES

struct cq_async_states {
	const struct cq_async_runtime *const *runtimes; /* the table */
	size_t n;
	void *state[MAX_RUNTIMES];
	struct cq_async_needs needs[MAX_RUNTIMES];
	struct cq_async_shared *shared;
};

/* ctx with the driver's fields set: the table and what runtimes share (NULL: none). */
static void set_driver_fields(struct cq_async_ctx *ctx, const struct cq_async_states *s)
{
	ctx->shared = s ? s->shared : NULL;
	ctx->runtimes = cq_async_runtimes(&ctx->nruntimes);
}

/*
 * Every runtime's report, by runtime name: the statistics' order is then
 * the runtimes' names', whatever order they decode in.
 */
static void report_all(struct cq_async_ctx *ctx, void *const *state)
{
	const struct cq_async_runtime *const *rt = ctx->runtimes;
	size_t n = ctx->nruntimes < MAX_RUNTIMES ? ctx->nruntimes : MAX_RUNTIMES;
	bool done[MAX_RUNTIMES] = {false};
	for (size_t k = 0; k < n; k++) {
		size_t next = n;
		for (size_t i = 0; i < n; i++)
			if (!done[i] && (next == n || strcmp(rt[i]->name, rt[next]->name) < 0))
				next = i;
		done[next] = true;
		rt[next]->report(state ? state[next] : NULL, ctx, &ctx->stacks->async,
		                 &ctx->stacks->warnings);
	}
}

void cq_async_report_unsearched(struct cq_async_ctx *ctx)
{
	set_driver_fields(ctx, NULL);
	report_all(ctx, NULL);
}

struct cq_error *cq_async_detect(const struct cq_async_ctx *ctx, struct cq_async_states **out,
                                 bool *wants_native)
{
	*wants_native = false;
	struct cq_async_states *s = calloc(1, sizeof(*s));
	if (!s || !(s->shared = cq_async_shared_new())) {
		free(s);
		return &cq_error_nomem;
	}
	s->runtimes = cq_async_runtimes(&s->n);
	if (s->n > MAX_RUNTIMES)
		s->n = MAX_RUNTIMES;
	struct cq_async_ctx c = *ctx;
	set_driver_fields(&c, s);
	for (size_t i = 0; i < s->n; i++) {
		struct cq_error *err = s->runtimes[i]->detect(&c, &s->state[i], &s->needs[i]);
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
	for (size_t i = 0; i < s->n; i++) {
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
	for (size_t i = 0; i < s->n; i++)
		if (s->state[i])
			s->runtimes[i]->destroy(s->state[i]);
	cq_async_shared_free(s->shared);
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
	struct cq_feed_words words[MAX_RUNTIMES];
	size_t nwords = cq_async_scan_words(s, words, MAX_RUNTIMES);
	void *feed = t->ops->feed_start(t->ctx, spans, n, words, nwords);
	free(spans);
	return feed;
}

/* One pass over the core's writable memory, every scanning runtime fed. */
static struct cq_error *scan_memory(struct cq_async_ctx *ctx, struct cq_async_states *s)
{
	size_t nscan = 0;
	for (size_t i = 0; i < s->n; i++)
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
		for (size_t i = 0; i < s->n; i++)
			if (s->state[i] && s->needs[i].scan)
				s->runtimes[i]->scan(s->state[i], ctx, &c);
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
	const struct cq_async_runtime *const *rt = s->runtimes;
	set_driver_fields(ctx, s);
	for (size_t i = 0; i < s->n && !err; i++)
		if (s->state[i] && rt[i]->threads)
			err = rt[i]->threads(s->state[i], ctx);
	if (!err)
		err = scan_memory(ctx, s);
	for (size_t i = 0; i < s->n && !err; i++)
		if (s->state[i] && rt[i]->claim)
			err = rt[i]->claim(s->state[i], ctx);
	for (size_t i = 0; i < s->n && !err; i++)
		if (s->state[i] && rt[i]->decode)
			err = rt[i]->decode(s->state[i], ctx);
	if (!err)
		report_all(ctx, s->state);
	if (!err && ctx->stacks->suspended_dropped) {
		char text[160];
		snprintf(text, sizeof(text),
		         "%zu suspended stacks over the bound of %zu were counted, not listed "
		         "(stack --max-tasks N lists more)",
		         ctx->stacks->suspended_dropped, ctx->max_suspended);
		cq_stats_string(&ctx->stacks->warnings, NULL, text);
	}
	if (!err && (ctx->stacks->async.nomem || ctx->stacks->warnings.nomem))
		err = &cq_error_nomem;
	return err;
}

struct cq_error *cq_async_warm(const struct cq_unwind_target *t, size_t m, struct cq_stats *figures,
                               char **text)
{
	*text = NULL;
	size_t n, len = 0;
	const struct cq_async_runtime *const *rt = cq_async_runtimes(&n);
	char *joined = calloc(1, 1);
	if (!joined)
		return &cq_error_nomem;
	for (size_t i = 0; i < n; i++) {
		if (!rt[i]->warm)
			continue;
		struct cq_async_warm w = {
		    .target = t, .module = m, .runtimes = rt, .nruntimes = n, .figures = figures};
		struct cq_error *err = rt[i]->warm(&w);
		size_t add = strlen(w.text);
		char *p = add ? realloc(joined, len + add + 3) : joined;
		if (!p) {
			free(joined);
			return &cq_error_nomem;
		}
		joined = p;
		if (add) {
			len += (size_t)sprintf(joined + len, "%s%s", len ? ", " : "", w.text);
		}
		if (err) {
			free(joined);
			return err;
		}
	}
	if (figures->nomem) {
		free(joined);
		return &cq_error_nomem;
	}
	*text = joined;
	return NULL;
}
