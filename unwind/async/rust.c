/*
 * rust.c - the "rust" async runtime: the suspended Rust futures behind
 * `dyn Future` pointers, as await chains (runtime.h).
 *
 * Without knowing the executor: index the Rust async types of the process
 * (rust_index.h); if there is any `dyn Future` vtable, scan the writable
 * memory the core holds for {data, vtable} fat pointers, decode the future
 * behind each (unwind/async/rust_decode.h), and keep the chains that are tasks:
 *   - the outermost future is a state machine that is Unresumed or
 *     suspended (not Returned or Panicked, not an undecodable state);
 *   - it is no other chain's awaitee, by (address, type) (so a task is
 *     reported once, from its outermost future), and each future is
 *     reported once however many fat pointers lead to it;
 *   - a chain being polled right now (a thread is running the poll
 *     function of one of its state machines and that state machine's
 *     address is on the thread's live stack or in its registers) is
 *     reported as running on that thread, its chain named from its types
 *     alone (its __state is stale while it runs): the task an executor
 *     without a task list of coreq's (futures' LocalPool, ThreadPool)
 *     is polling at the crash.
 * The dead part of each thread's stack (below sp and its red zone) is not
 * scanned: it holds stale copies of pointers.
 *
 * Cost: nothing beyond section headers for a process without Rust modules,
 * and no scan when the Rust modules have no Future vtables.  The scan hook
 * sees each chunk of the driver's one pass over writable memory and
 * compares each word with the [lowest, highest] vtable address before any
 * lookup.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/memory.h"
#include "unwind/async/heap_chunks.h"
#include "unwind/async/runtime.h"
#include "unwind/async/rust_chain.h"
#include "unwind/async/rust_decode.h"
#include "unwind/async/rust_index.h"
#include "unwind/async/rust_index_blob.h"

#define MAX_CANDIDATES (1u << 18)

/* Why a fat pointer's future was not believed (the JSON "rust_rejected" counts). */
enum cq_rust_reject_reason {
	CQ_RUST_REJECT_UNMAPPED,        /* the data pointer leads nowhere in the core */
	CQ_RUST_REJECT_READ_ONLY,       /* into read-only memory: a future is written to */
	CQ_RUST_REJECT_MISALIGNED,      /* not a multiple of the type's DW_AT_alignment */
	CQ_RUST_REJECT_INSIDE_CHUNK,    /* the middle of a glibc malloc chunk */
	CQ_RUST_REJECT_FREE_CHUNK,      /* a free chunk */
	CQ_RUST_REJECT_CHUNK_TOO_SMALL, /* a chunk smaller than the type */
	CQ_RUST_REJECT_REASONS
};

/* The first few rejected futures, for the JSON "rust_rejects" list. */
#define CQ_RUST_REJECT_SAMPLES 16
struct cq_rust_reject {
	uint64_t addr;
	const char *type; /* the type index's name, valid while the stacks are */
	enum cq_rust_reject_reason reason;
};

/* What the search cost and found (its "rust_" keys of the async statistics). */
struct cq_rust_stats {
	size_t modules_indexed; /* Rust modules looked at */
	size_t modules_cached;  /* of those, whose type index came from the cache */
	size_t types, vtables;  /* model size */
	double index_ms;
	uint64_t scan_bytes; /* memory scanned for fat pointers */
	double scan_ms;
	size_t fat_pointers; /* hits of the scan, before any filtering */
	bool scan_truncated; /* the scan stopped at its bound on hits (1 << 18) */
	size_t futures;      /* distinct futures decoded */
	size_t awaited;      /* dropped: another chain's awaitee */
	size_t claimed;      /* dropped: another runtime's (a boxed tokio task's future) */
	size_t polled;       /* being polled on a thread: reported running */
	size_t not_waiting;  /* dropped: Returned, Panicked or undecodable */
	size_t rejected[CQ_RUST_REJECT_REASONS]; /* dropped before decoding, by reason */
	struct cq_rust_reject rejects[CQ_RUST_REJECT_SAMPLES];
	size_t nrejects;   /* samples kept, at most CQ_RUST_REJECT_SAMPLES */
	size_t reported;   /* added to the suspended stacks */
	size_t over_limit; /* not added: the suspended stacks were at their bound */
};

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
	int64_t running;    /* the tid of the thread polling it; 0: none */
	const char *polled; /* then: the poll function it was seen in */
};

struct scan_state {
	struct candidate *items;
	size_t n, cap;
	bool full;  /* at the bound on candidates: the rest is not looked at */
	bool nomem; /* out of memory: the search fails */
};

/* The runtime's state: the type index, the scan's finds, the names made. */
struct rust_dyn {
	struct cq_rust_stats stats;
	const struct cq_rust_index *index; /* the driver's (cq_async_rust_index) */
	struct scan_state scan;
	struct cq_rust_names names; /* function names made here */
};

static void on_found(void *ctx, uint64_t where, uint64_t data, int32_t type)
{
	(void)where;
	struct scan_state *s = ctx;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		if (cap > MAX_CANDIDATES) {
			s->full = true;
			return;
		}
		struct candidate *p = realloc(s->items, cap * sizeof(*p));
		if (!p) {
			s->full = s->nomem = true;
			return;
		}
		s->items = p;
		s->cap = cap;
	}
	s->items[s->n++] = (struct candidate){.data = data, .type = type};
}

/* The scan hook: fat pointers in the live part of each writable chunk. */
static void rust_scan(void *state, const struct cq_async_ctx *ctx, const struct cq_async_chunk *c)
{
	struct rust_dyn *r = state;
	struct cq_rust_stats *st = &r->stats;
	if (r->scan.full)
		return;
	uint64_t from = cq_async_live_start(ctx->target, c->segment);
	uint64_t begin = c->addr, end = c->addr + c->len;
	if (from >= end)
		return;
	if (from > begin)
		begin = from;
	if (c->data)
		cq_rust_scan(&r->index->model, c->data + (begin - c->addr), begin, end - begin,
		             on_found, &r->scan);
	st->scan_bytes += end - (begin > c->addr + c->overlap ? begin : c->addr + c->overlap);
}

static int cmp_candidate(const void *a, const void *b)
{
	const struct candidate *x = a, *y = b;
	if (x->data != y->data)
		return x->data < y->data ? -1 : 1;
	return (x->type > y->type) - (x->type < y->type);
}

/* The reason's name in the "rust_rejected" counts: "unmapped", "read_only", ... */
static const char *reject_name(enum cq_rust_reject_reason r)
{
	static const char *const names[CQ_RUST_REJECT_REASONS] = {
	    "unmapped", "read_only", "misaligned", "inside_chunk", "free_chunk", "chunk_too_small"};
	return (unsigned)r < CQ_RUST_REJECT_REASONS ? names[r] : "?";
}

static void reject(struct cq_rust_stats *st, const struct cq_rust_model *m,
                   const struct candidate *c, enum cq_rust_reject_reason why)
{
	st->rejected[why]++;
	if (st->nrejects < CQ_RUST_REJECT_SAMPLES)
		st->rejects[st->nrejects++] = (struct cq_rust_reject){
		    .addr = c->data, .type = m->types[c->type].name, .reason = why};
}

/*
 * Keeps the candidates whose future can be one (sorted, one per address and
 * type): in writable memory, at its type's alignment, and, where glibc
 * malloc's chunks can be walked, at the start of an in-use chunk that holds
 * it.  The others are counted and sampled by reason.  Returns how many stay.
 */
static size_t believable(struct cq_mem *mem, const struct cq_rust_model *m, struct candidate *c,
                         size_t n, struct cq_rust_stats *st, bool *nomem)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (k > 0 && c[i].data == c[k - 1].data && c[i].type == c[k - 1].type)
			continue;
		const struct cq_rust_type *ty = &m->types[c[i].type];
		const struct cq_mem_segment *seg = cq_mem_find(mem, c[i].data);
		if (!seg)
			reject(st, m, &c[i], CQ_RUST_REJECT_UNMAPPED);
		else if (!(seg->flags & CQ_MEM_WRITE))
			reject(st, m, &c[i], CQ_RUST_REJECT_READ_ONLY);
		else if (ty->align > 1 && c[i].data % ty->align != 0)
			reject(st, m, &c[i], CQ_RUST_REJECT_MISALIGNED);
		else
			c[k++] = c[i];
	}
	struct cq_heap_query *q = malloc((k ? k : 1) * sizeof(*q));
	if (!q) {
		*nomem = true;
		return 0;
	}
	for (size_t i = 0; i < k; i++)
		q[i] = (struct cq_heap_query){.addr = c[i].data, .size = m->types[c[i].type].size};
	cq_heap_classify(mem, q, k);
	size_t kept = 0;
	for (size_t i = 0; i < k; i++) {
		switch (q[i].verdict) {
		case CQ_HEAP_INSIDE:
			reject(st, m, &c[i], CQ_RUST_REJECT_INSIDE_CHUNK);
			break;
		case CQ_HEAP_FREE:
			reject(st, m, &c[i], CQ_RUST_REJECT_FREE_CHUNK);
			break;
		case CQ_HEAP_TOO_SMALL:
			reject(st, m, &c[i], CQ_RUST_REJECT_CHUNK_TOO_SMALL);
			break;
		case CQ_HEAP_OBJECT:
		case CQ_HEAP_UNKNOWN:
			c[kept++] = c[i];
			break;
		}
	}
	free(q);
	return kept;
}

/* A chain that is a task waiting for something: its root is Unresumed or SuspendK. */
static bool is_waiting(const struct chain *c)
{
	if (c->nframes == 0 || !c->frames[0].variant)
		return false;
	uint64_t s = c->frames[0].state;
	return s == 0 || s >= 3;
}

/* A future's identity: a future and its first awaitee can share an address. */
struct future_id {
	uint64_t addr;
	int32_t type;
};

static int cmp_future_id(const void *a, const void *b)
{
	const struct future_id *x = a, *y = b;
	if (x->addr != y->addr)
		return (x->addr > y->addr) - (x->addr < y->addr);
	return (x->type > y->type) - (x->type < y->type);
}

/*
 * Drops chains whose outermost future is another chain's awaitee: the same
 * (address, type), not the address alone (a 128-aligned Sleep sits at
 * offset 0 of every future that awaits it).
 */
static struct cq_error *drop_awaited(struct chain *chains, size_t n, struct cq_rust_stats *st)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		if (!chains[i].dropped)
			total += chains[i].nframes;
	struct future_id *inner = malloc((total ? total : 1) * sizeof(*inner));
	if (!inner)
		return &cq_error_nomem;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t f = 1; !chains[i].dropped && f < chains[i].nframes; f++)
			inner[k++] =
			    (struct future_id){chains[i].frames[f].addr, chains[i].frames[f].type};
	if (k > 1)
		qsort(inner, k, sizeof(*inner), cmp_future_id);
	for (size_t i = 0; i < n; i++) {
		struct future_id key = {chains[i].frames[0].addr, chains[i].frames[0].type};
		if (!chains[i].dropped && k > 0 &&
		    bsearch(&key, inner, k, sizeof(key), cmp_future_id)) {
			chains[i].dropped = true;
			st->awaited++;
		}
	}
	free(inner);
	return NULL;
}

static int cmp_polled(const void *a, const void *b)
{
	const struct chain *x = *(const struct chain *const *)a,
	                   *y = *(const struct chain *const *)b;
	if (x->running != y->running)
		return (x->running > y->running) - (x->running < y->running);
	return strcmp(x->polled, y->polled);
}

/*
 * One thread polls one future of a poll function at a time (an async fn
 * cannot await itself unboxed): of several chains seen polled in the same
 * function on the same thread, the one whose outermost state machine was
 * resumed before (not Unresumed: a never-run copy left on the stack is)
 * is kept running, when it is the only such one; the others are dropped
 * (counted as "polled"), all of them when that does not decide.
 */
static struct cq_error *one_polled(struct chain *chains, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += chains[i].running != 0;
	if (k < 2)
		return NULL;
	struct chain **p = malloc(k * sizeof(*p));
	if (!p)
		return &cq_error_nomem;
	k = 0;
	for (size_t i = 0; i < n; i++)
		if (chains[i].running)
			p[k++] = &chains[i];
	qsort(p, k, sizeof(*p), cmp_polled);
	for (size_t i = 0; i < k;) {
		size_t j = i + 1;
		while (j < k && cmp_polled(&p[i], &p[j]) == 0)
			j++;
		if (j - i > 1) {
			size_t resumed = 0, keep = 0;
			for (size_t m = i; m < j; m++)
				if (p[m]->frames[0].state != 0) {
					resumed++;
					keep = m;
				}
			for (size_t m = i; m < j; m++)
				if (resumed != 1 || m != keep)
					p[m]->dropped = true;
		}
		i = j;
	}
	free(p);
	return NULL;
}

/* Marks the chains one of whose state machines a thread is polling right now. */
static struct cq_error *mark_polled(const struct cq_unwind_target *tg,
                                    const struct cq_stacks *stacks, const struct cq_rust_index *ix,
                                    struct chain *chains, size_t n, struct cq_rust_stats *st)
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
		uint64_t *words = NULL;
		if (!cq_async_live_words(tg, t, &words, &nwords))
			return &cq_error_nomem;
		for (size_t c = 0; c < n; c++) {
			for (size_t f = 0;
			     !chains[c].dropped && !chains[c].running && f < chains[c].nframes;
			     f++) {
				const struct cq_rust_frame *fr = &chains[c].frames[f];
				const char *resume = ix->model.types[fr->type].resume_name;
				if (!resume || !cq_async_sorted_has(words, nwords, fr->addr))
					continue;
				for (size_t r = 0; r < nrunning; r++) {
					if (strcmp(running[r], resume) == 0) {
						chains[c].running =
						    tg->threads[t].tid ? tg->threads[t].tid : -1;
						chains[c].polled = resume;
						st->polled++;
						break;
					}
				}
			}
		}
		free(words);
	}
	return one_polled(chains, n);
}

/* Appends one chain to stacks->suspended, innermost frame first. */
static struct cq_error *add_chain(const struct cq_async_ctx *ctx, struct rust_dyn *t,
                                  const struct chain *c, bool *added)
{
	*added = false;
	const struct cq_rust_model *m = &t->index->model;
	const struct cq_rust_frame *fr = c->frames;
	size_t nframes = c->nframes;
	enum cq_rust_chain_end end = c->end;
	struct cq_rust_chain typed;
	if (c->running) {
		typed.nframes = 0;
		typed.end = CQ_RUST_END_LEAF;
		cq_rust_decode_types(m, c->frames[0].addr, c->frames[0].type, &typed);
		if (typed.nframes > 0) {
			fr = typed.frames;
			nframes = typed.nframes;
			end = typed.end;
		}
	}
	struct cq_stack_frame *frames;
	struct cq_error *err =
	    cq_rust_chain_frames(ctx->target, m, fr, nframes, &t->names, &frames);
	if (err)
		return err;
	struct cq_suspended_stack s = {.kind = "rust",
	                               .leaf = frames[0].object,
	                               .frames = frames,
	                               .nframes = nframes,
	                               .end = cq_rust_chain_end(end),
	                               .has_task = c->running != 0,
	                               .task_state = c->running ? "running" : NULL,
	                               .thread = c->running > 0 ? c->running : 0};
	return cq_async_add_suspended(ctx, &s, added);
}

static void rust_destroy(void *state)
{
	struct rust_dyn *r = state;
	cq_rust_names_free(&r->names);
	free(r->scan.items);
	free(r);
}

/* What the shared type index says, in the statistics. */
static void index_stats(const struct cq_rust_index *ix, struct cq_rust_stats *st)
{
	st->modules_indexed = ix->modules_indexed;
	st->modules_cached = ix->modules_cached;
	st->index_ms = ix->index_ms;
	st->types = ix->model.ntypes;
	st->vtables = ix->model.nvtables;
}

/* Indexes the Rust async types; a program without Rust modules has no state. */
static struct cq_error *rust_detect(const struct cq_async_ctx *ctx, void **state,
                                    struct cq_async_needs *needs)
{
	*state = NULL;
	struct rust_dyn *r = calloc(1, sizeof(*r));
	if (!r)
		return &cq_error_nomem;
	struct cq_rust_index *ix;
	struct cq_error *err = cq_async_rust_index(ctx, &ix);
	if (err) {
		free(r);
		return err;
	}
	r->index = ix;
	index_stats(ix, &r->stats);
	if (ix->model.nvtables == 0) {
		rust_destroy(r);
		return NULL;
	}
	const struct cq_rust_model *m = &ix->model;
	*needs = (struct cq_async_needs){.scan = true,
	                                 .scan_lo = m->vtables[0].addr,
	                                 .scan_hi = m->vtables[m->nvtables - 1].addr};
	*state = r;
	return NULL;
}

/* Decodes every candidate once, drops what is no task, reports the rest. */
static struct cq_error *rust_decode(void *state, const struct cq_async_ctx *ctx)
{
	struct rust_dyn *r = state;
	struct cq_rust_stats *st = &r->stats;
	struct scan_state *scan = &r->scan;
	st->scan_ms = ctx->scan_seconds * 1e3;
	st->fat_pointers = scan->n;
	st->scan_truncated = scan->full && !scan->nomem;
	if (scan->nomem)
		return &cq_error_nomem;
	if (scan->n)
		qsort(scan->items, scan->n, sizeof(*scan->items), cmp_candidate);
	const struct cq_rust_model *m = &r->index->model;
	bool nomem = false;
	size_t ncand = believable(ctx->target->mem, m, scan->items, scan->n, st, &nomem);
	if (nomem)
		return &cq_error_nomem;
	struct chain *chains = calloc(scan->n ? scan->n : 1, sizeof(*chains));
	if (!chains)
		return &cq_error_nomem;
	struct cq_error *err = NULL;
	size_t n = 0;
	struct cq_rust_chain decoded;
	for (size_t i = 0; i < ncand && !err; i++) {
		/* The same future (address and type), found through another pointer. */
		if (i > 0 && scan->items[i].data == scan->items[i - 1].data &&
		    scan->items[i].type == scan->items[i - 1].type)
			continue;
		cq_rust_decode(ctx->target, m, scan->items[i].data, scan->items[i].type, &decoded);
		if (decoded.nframes == 0 ||
		    (n > 0 && decoded.frames[0].addr == chains[n - 1].frames[0].addr &&
		     decoded.frames[0].type == chains[n - 1].frames[0].type))
			continue;
		struct chain *ch = &chains[n];
		ch->frames = malloc(decoded.nframes * sizeof(*ch->frames));
		if (!ch->frames) {
			err = &cq_error_nomem;
			break;
		}
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
	for (size_t i = 0; i < n; i++) {
		if (!chains[i].dropped && cq_async_claimed(ctx, chains[i].frames[0].addr)) {
			chains[i].dropped = true;
			st->claimed++;
		}
	}
	if (!err)
		err = drop_awaited(chains, n, st);
	if (!err)
		err = mark_polled(ctx->target, ctx->stacks, r->index, chains, n, st);
	for (size_t i = 0; i < n && !err; i++) {
		if (chains[i].dropped)
			continue;
		bool added;
		err = add_chain(ctx, r, &chains[i], &added);
		if (added)
			st->reported++;
		else
			st->over_limit++;
	}
	for (size_t i = 0; i < n; i++)
		free(chains[i].frames);
	free(chains);
	return err;
}

/* The "rust_" keys of the async statistics. */
static void rust_report(const void *state, const struct cq_async_ctx *ctx, struct cq_stats *out,
                        struct cq_stats *warnings)
{
	(void)warnings;
	const struct rust_dyn *r = state;
	struct cq_rust_stats none = {0};
	const struct cq_rust_stats *st = r ? &r->stats : &none;
	const struct cq_rust_index *ix = r ? NULL : cq_async_rust_index_built(ctx);
	if (ix)
		index_stats(ix, &none); /* not used: only what the type index holds */
	const char *keys[] = {"rust_modules_indexed", "rust_modules_cached", "rust_types",
	                      "rust_vtables",         "rust_index_us",       "rust_scanned_bytes",
	                      "rust_scan_us",         "rust_fat_pointers",   "rust_futures",
	                      "rust_awaited",         "rust_claimed",        "rust_polled",
	                      "rust_not_waiting",     "rust_reported",       "rust_over_limit"};
	uint64_t vals[] = {st->modules_indexed,
	                   st->modules_cached,
	                   st->types,
	                   st->vtables,
	                   (uint64_t)(st->index_ms * 1e3),
	                   st->scan_bytes,
	                   (uint64_t)(st->scan_ms * 1e3),
	                   st->fat_pointers,
	                   st->futures,
	                   st->awaited,
	                   st->claimed,
	                   st->polled,
	                   st->not_waiting,
	                   st->reported,
	                   st->over_limit};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		cq_stats_uint(out, keys[i], vals[i]);
	cq_stats_bool(out, "rust_scan_truncated", st->scan_truncated);
	cq_stats_object(out, "rust_rejected");
	for (unsigned i = 0; i < CQ_RUST_REJECT_REASONS; i++)
		cq_stats_uint(out, reject_name(i), st->rejected[i]);
	cq_stats_end(out);
	cq_stats_array(out, "rust_rejects");
	for (size_t i = 0; i < st->nrejects; i++) {
		cq_stats_object(out, NULL);
		cq_stats_hex(out, "address", st->rejects[i].addr);
		cq_stats_string(out, "type", st->rejects[i].type);
		cq_stats_string(out, "reason", reject_name(st->rejects[i].reason));
		cq_stats_end(out);
	}
	cq_stats_end(out);
}

static const char *const rust_kinds[] = {"rust", NULL};

/*
 * `coreq cache warm`: the module's Rust type index (tokio's part with it),
 * read from the cache or from DWARF (then cached): "rust_types" of it (0
 * for a module rustc did not build, or without debuginfo), "rust_cached"
 * when the cache held it already.
 */
static struct cq_error *rust_warm(struct cq_async_warm *w)
{
	size_t types = 0;
	bool cached = false;
	struct cq_rust_parts parts;
	cq_rust_index_parts(w->runtimes, w->nruntimes, &parts);
	struct cq_error *err = cq_rust_index_warm(w->target, w->module, &parts, &types, &cached);
	cq_stats_uint(w->figures, "rust_types", types);
	cq_stats_bool(w->figures, "rust_cached", cached);
	if (types)
		snprintf(w->text, sizeof(w->text), "Rust index %zu types%s", types,
		         cached ? " (cached already)" : "");
	return err;
}

static const struct cq_target_blob *const rust_blobs[] = {&cq_rust_index_blob, NULL};

const struct cq_async_runtime cq_async_rust = {
    .name = "rust",
    .kinds = rust_kinds,
    .listing = CQ_ASYNC_LIST_CHAINS,
    .heading = "Suspended futures",
    .noun = "task",
    .leaf = "leaf future",
    .detect = rust_detect,
    .scan = rust_scan,
    .decode = rust_decode,
    .report = rust_report,
    .destroy = rust_destroy,
    .blobs = rust_blobs,
    .warm = rust_warm,
};
