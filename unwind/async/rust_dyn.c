/*
 * rust_tasks.c - find the suspended Rust futures of a core and turn them
 * into await chains (see rust_tasks.h for the rules).
 *
 * Cost: nothing beyond section headers for a process without Rust modules,
 * and no scan when the Rust modules have no Future vtables.  The scan reads
 * each writable segment of the core once, a word at a time, comparing with
 * the [lowest, highest] vtable address before any lookup; the pages it
 * touched are dropped from our resident set afterwards (cq_core_trim).
 */
#include "unwind/async/rust_dyn.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "libcore/model/core.h"
#include "libcore/model/module.h"
#include "unwind/async/rust_index.h"
#include "libcore/analysis/stacktrace.h"
#include "unwind/async/rust_decode.h"

/* Bytes below sp that the ABI lets a leaf function use (x86_64 red zone). */
#define RED_ZONE         128
#define MAX_CANDIDATES   (1u << 18)
#define MAX_STACK_WORDS  (1u << 20)
#define MAX_FUNCTION_LEN 1024
#define SCAN_CHUNK       (8u << 20)

struct candidate {
	uint64_t data;
	int32_t type;
};

/* A decoded chain, outermost future first, its frames copied out at their size. */
struct chain {
	struct cq_rust_frame *frames;
	size_t nframes;
	enum cq_rust_chain_end end;
	bool dropped;
};

struct cq_rust_tasks {
	struct cq_rust_index *index;
	char **strings; /* function names made here */
	size_t nstrings;
};

struct scan_state {
	struct candidate *items;
	size_t n, cap;
	bool full;
};

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void on_found(void *ctx, uint64_t where, uint64_t data, int32_t type)
{
	(void)where;
	struct scan_state *s = ctx;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		struct candidate *p =
		    cap <= MAX_CANDIDATES ? realloc(s->items, cap * sizeof(*p)) : NULL;
		if (!p) {
			s->full = true;
			return;
		}
		s->items = p;
		s->cap = cap;
	}
	s->items[s->n++] = (struct candidate){.data = data, .type = type};
}

/* The lowest address of seg that may hold live data: above any thread's dead stack. */
static uint64_t live_start(const struct cq_core *core, const struct cq_mem_segment *seg)
{
	uint64_t start = seg->start;
	unsigned sp_reg = core->arch->sp_reg;
	size_t inside = 0;
	uint64_t sp = 0;
	for (size_t t = 0; t < core->nthreads; t++) {
		const struct cq_regs *r = &core->threads[t].regs;
		if (cq_regs_has(r, sp_reg) && r->value[sp_reg] >= seg->start &&
		    r->value[sp_reg] < seg->end) {
			inside++;
			sp = r->value[sp_reg];
		}
	}
	/* Several stacks in one mapping: their dead parts interleave; scan it all. */
	if (inside == 1 && sp - seg->start > RED_ZONE)
		start = (sp - RED_ZONE) & ~(uint64_t)7;
	return start;
}

/*
 * Asks the kernel to read [p, p + len) of the core ahead (or, done, to drop
 * it from our resident set), for the whole pages inside the range.  Only
 * for bytes of the mmapped core file, where dropping pages loses nothing.
 */
static void advise(const struct cq_core *core, const uint8_t *p, uint64_t len, int advice)
{
	uintptr_t lo = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
	uintptr_t hi = ((uintptr_t)p + len) & ~(uintptr_t)4095;
	if (p < core->image || p + len > core->image + core->image_size || hi <= lo)
		return;
	madvise((void *)lo, hi - lo, advice);
}

/*
 * Scans [from, seg end) in chunks: each chunk is read ahead, scanned, and
 * dropped, so a 1 GiB heap costs neither 1 GiB of resident memory nor a
 * page fault per page.  Chunks overlap by one word, the data word of a fat
 * pointer whose vtable word starts the next chunk.
 */
static void scan_segment(struct cq_core *core, const struct cq_rust_model *m,
                         const struct cq_mem_segment *seg, uint64_t from, struct scan_state *s)
{
	uint64_t end = seg->start + seg->data_len;
	for (uint64_t at = from; at < end && !s->full;) {
		uint64_t begin = at > from ? at - 8 : at;
		uint64_t stop = end - at > SCAN_CHUNK ? at + SCAN_CHUNK : end;
		const uint8_t *p = seg->data + (begin - seg->start);
		advise(core, p, stop - begin, MADV_WILLNEED);
		cq_rust_scan(m, p, begin, stop - begin, on_found, s);
		advise(core, p, stop - begin, MADV_DONTNEED);
		at = stop;
	}
}

static void scan_core(struct cq_core *core, const struct cq_rust_model *m, struct scan_state *s,
                      struct cq_rust_stats *st)
{
	const struct cq_mem_layer_set *layer = &core->mem.layer[CQ_MEM_LAYER_CORE];
	for (size_t i = 0; i < layer->n && !s->full; i++) {
		const struct cq_mem_segment *seg = &layer->seg[i];
		if (!(seg->flags & CQ_MEM_WRITE) || !seg->data || seg->data_len == 0)
			continue;
		uint64_t from = live_start(core, seg);
		if (from - seg->start >= seg->data_len)
			continue;
		scan_segment(core, m, seg, from, s);
		st->scan_bytes += seg->data_len - (from - seg->start);
	}
	st->fat_pointers = s->n;
}

static int cmp_candidate(const void *a, const void *b)
{
	const struct candidate *x = a, *y = b;
	if (x->data != y->data)
		return x->data < y->data ? -1 : 1;
	return (x->type > y->type) - (x->type < y->type);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static bool contains(const uint64_t *sorted, size_t n, uint64_t v)
{
	return bsearch(&v, sorted, n, sizeof(v), cmp_u64) != NULL;
}

/* A chain that is a task waiting for something: its root is Unresumed or SuspendK. */
static bool is_waiting(const struct chain *c)
{
	if (c->nframes == 0 || !c->frames[0].variant)
		return false;
	uint64_t s = c->frames[0].state;
	return s == 0 || s >= 3;
}

/* Drops chains whose outermost future is inside another chain. */
static void drop_awaited(struct chain *chains, size_t n, struct cq_rust_stats *st)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		if (!chains[i].dropped)
			total += chains[i].nframes;
	uint64_t *inner = malloc((total ? total : 1) * sizeof(*inner));
	if (!inner)
		return;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t f = 1; !chains[i].dropped && f < chains[i].nframes; f++)
			inner[k++] = chains[i].frames[f].addr;
	qsort(inner, k, sizeof(*inner), cmp_u64);
	for (size_t i = 0; i < n; i++) {
		if (!chains[i].dropped && contains(inner, k, chains[i].frames[0].addr)) {
			chains[i].dropped = true;
			st->awaited++;
		}
	}
	free(inner);
}

/*
 * The words of a thread's live stack (sp up to the end of its mapping) and
 * its registers, sorted.
 */
static uint64_t *live_words(struct cq_core *core, const struct cq_core_thread *th, size_t *n)
{
	*n = 0;
	unsigned sp_reg = core->arch->sp_reg;
	if (!cq_regs_has(&th->regs, sp_reg))
		return NULL;
	uint64_t sp = th->regs.value[sp_reg] & ~(uint64_t)7;
	const struct cq_mem_segment *seg = cq_mem_find(&core->mem, sp);
	uint64_t words = seg && seg->end > sp ? (seg->end - sp) / 8 : 0;
	if (words > MAX_STACK_WORDS)
		words = MAX_STACK_WORDS;
	uint64_t *w = malloc((words + CQ_REGS_MAX) * sizeof(*w));
	if (!w)
		return NULL;
	size_t k = 0;
	for (unsigned r = 0; r < CQ_REGS_MAX; r++)
		if (cq_regs_has(&th->regs, r))
			w[k++] = th->regs.value[r];
	for (uint64_t i = 0; i < words; i++)
		if (cq_mem_read_u64(&core->mem, sp + 8 * i, &w[k]))
			k++;
	qsort(w, k, sizeof(*w), cmp_u64);
	*n = k;
	return w;
}

/* Drops chains one of whose state machines a thread is polling right now. */
static void drop_polled(struct cq_core *core, const struct cq_stacks *stacks,
                        const struct cq_rust_index *ix, struct chain *chains, size_t n,
                        struct cq_rust_stats *st)
{
	const char *running[64];
	for (size_t t = 0; t < stacks->nthreads; t++) {
		const struct cq_thread_stack *ts = &stacks->threads[t];
		size_t nrunning = 0;
		for (size_t i = 0; i < ts->nframes && nrunning < 64; i++) {
			const struct cq_stack_frame *f = &ts->frames[i];
			if (f->kind != CQ_FRAME_NATIVE)
				continue;
			const char *r = cq_rust_index_resume_at(ix, i == 0 ? f->pc : f->pc - 1);
			if (r)
				running[nrunning++] = r;
		}
		if (nrunning == 0)
			continue;
		size_t nwords;
		uint64_t *words = live_words(core, ts->thread, &nwords);
		for (size_t c = 0; c < n; c++) {
			for (size_t f = 0; !chains[c].dropped && f < chains[c].nframes; f++) {
				const struct cq_rust_frame *fr = &chains[c].frames[f];
				const char *resume = ix->model.types[fr->type].resume_name;
				if (!resume || !contains(words, nwords, fr->addr))
					continue;
				for (size_t r = 0; r < nrunning; r++) {
					if (strcmp(running[r], resume) == 0) {
						chains[c].dropped = true;
						st->polled++;
						break;
					}
				}
			}
		}
		free(words);
	}
}

static const char *keep_string(struct cq_rust_tasks *t, const char *s)
{
	if (s == NULL)
		return NULL;
	char **p = realloc(t->strings, (t->nstrings + 1) * sizeof(*p));
	if (!p)
		return NULL;
	t->strings = p;
	char *copy = strdup(s);
	if (copy)
		t->strings[t->nstrings++] = copy;
	return copy;
}

/* How a chain's walk ended, as the end of a stack. */
static enum cq_unwind_end chain_end(enum cq_rust_chain_end end)
{
	switch (end) {
	case CQ_RUST_END_LEAF:
	case CQ_RUST_END_NO_AWAITEE:
		return CQ_END_OUTERMOST;
	case CQ_RUST_END_MAX_DEPTH:
		return CQ_END_MAX_FRAMES;
	case CQ_RUST_END_LOOP:
		return CQ_END_LOOP;
	default:
		return CQ_END_BAD_MEMORY;
	}
}

/* Appends one chain to stacks->suspended, innermost frame first. */
static struct cq_error *add_chain(struct cq_core *core, struct cq_rust_tasks *t,
                                  struct cq_stacks *stacks, const struct chain *c)
{
	struct cq_suspended_stack *s =
	    realloc(stacks->suspended, (stacks->nsuspended + 1) * sizeof(*s));
	if (!s)
		return &cq_error_nomem;
	stacks->suspended = s;
	struct cq_stack_frame *frames = calloc(c->nframes, sizeof(*frames));
	if (!frames)
		return &cq_error_nomem;
	const struct cq_rust_model *m = &t->index->model;
	for (size_t i = 0; i < c->nframes; i++) {
		const struct cq_rust_frame *fr = &c->frames[c->nframes - 1 - i];
		const struct cq_rust_type *ty = &m->types[fr->type];
		char buf[MAX_FUNCTION_LEN];
		struct cq_stack_frame *f = &frames[i];
		f->kind = CQ_FRAME_ASYNC;
		f->trust = CQ_TRUST_ASYNC;
		f->object = fr->addr;
		f->module = ty->origin < core->nmodules ? &core->modules[ty->origin] : NULL;
		f->function = keep_string(t, cq_rust_frame_function(ty, buf, sizeof(buf)));
		if (fr->variant) {
			f->state = fr->variant->name;
			f->file = fr->variant->file;
			f->line = fr->variant->line;
		}
	}
	s[stacks->nsuspended++] = (struct cq_suspended_stack){.kind = "rust",
	                                                      .leaf = frames[0].object,
	                                                      .frames = frames,
	                                                      .nframes = c->nframes,
	                                                      .end = chain_end(c->end)};
	return NULL;
}

struct cq_error *cq_rust_tasks_find(struct cq_core *core, const char *const *debug_dirs,
                                    size_t max_suspended, struct cq_stacks *stacks,
                                    struct cq_rust_stats *stats, struct cq_rust_tasks **keep)
{
	struct cq_rust_stats local;
	struct cq_rust_stats *st = stats ? stats : &local;
	memset(st, 0, sizeof(*st));
	*keep = NULL;
	struct cq_rust_tasks *t = calloc(1, sizeof(*t));
	if (!t)
		return &cq_error_nomem;
	struct cq_error *err = cq_rust_index_core(core, debug_dirs, &t->index);
	if (err) {
		free(t);
		return err;
	}
	*keep = t;
	const struct cq_rust_model *m = &t->index->model;
	st->modules_indexed = t->index->modules_indexed;
	st->index_ms = t->index->index_ms;
	st->types = m->ntypes;
	st->vtables = m->nvtables;
	if (m->nvtables == 0)
		return NULL;

	struct scan_state scan = {0};
	double t0 = now_ms();
	scan_core(core, m, &scan, st);
	st->scan_ms = now_ms() - t0;
	st->scan_truncated = scan.full;
	cq_core_trim(core);
	if (scan.n)
		qsort(scan.items, scan.n, sizeof(*scan.items), cmp_candidate);

	struct chain *chains = calloc(scan.n ? scan.n : 1, sizeof(*chains));
	if (!chains) {
		free(scan.items);
		return &cq_error_nomem;
	}
	struct cq_stack_options so;
	cq_stack_options_default(&so);
	struct cq_core_target ct;
	cq_core_target_init(&ct, core, &so);
	size_t n = 0;
	struct cq_rust_chain decoded;
	for (size_t i = 0; i < scan.n; i++) {
		if (i > 0 && scan.items[i].data == scan.items[i - 1].data)
			continue; /* the same future, found through another pointer */
		cq_rust_decode(&ct.target, m, scan.items[i].data, scan.items[i].type, &decoded);
		if (decoded.nframes == 0 ||
		    (n > 0 && decoded.frames[0].addr == chains[n - 1].frames[0].addr))
			continue;
		struct chain *ch = &chains[n];
		ch->frames = malloc(decoded.nframes * sizeof(*ch->frames));
		if (!ch->frames)
			break;
		memcpy(ch->frames, decoded.frames, decoded.nframes * sizeof(*ch->frames));
		ch->nframes = decoded.nframes;
		ch->end = decoded.end;
		st->futures++;
		if (!is_waiting(ch)) {
			ch->dropped = true;
			st->not_waiting++;
		}
		n++;
	}
	free(scan.items);
	drop_awaited(chains, n, st);
	drop_polled(core, stacks, t->index, chains, n, st);
	for (size_t i = 0; i < n && !err; i++) {
		if (chains[i].dropped)
			continue;
		if (stacks->nsuspended >= max_suspended) {
			st->over_limit++;
			continue;
		}
		err = add_chain(core, t, stacks, &chains[i]);
		st->reported++;
	}
	for (size_t i = 0; i < n; i++)
		free(chains[i].frames);
	free(chains);
	return err;
}

void cq_rust_tasks_free(struct cq_rust_tasks *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nstrings; i++)
		free(t->strings[i]);
	free(t->strings);
	cq_rust_index_free(t->index);
	free(t);
}
