/*
 * async_task.c - the tasks of async-task 4.x, the task cell under
 * async-executor (smol) and async-global-executor (async-std): the
 * "async_task" async runtime (runtime.h).
 *
 * async-task keeps each task in one heap allocation: a Header {vtable,
 * state, awaiter} (rustc puts the vtable pointer first; state.rs has the
 * state bits), the schedule function S, then a union of the future F and
 * its output T.  Its TaskVTable is a static of eight words: seven
 * RawTask<F, T, S> functions (schedule, drop_future, get_output, drop_ref,
 * destroy, run, clone_waker), monomorphized over F, then layout_info, a
 * pointer to the task's TaskLayout {layout, offset_s, offset_f, offset_r},
 * kept "so that debuggers can decode raw task memory".  Then:
 *   1. vtables: the Rust index (rust_index.h) lists every function
 *      monomorphized over a future type; a TaskVTable is seven consecutive
 *      words of a module's data that are such functions, most over one F,
 *      then a pointer: F is the future every task of that vtable holds, and
 *      the TaskLayout gives where (offset_f: the offset that appears twice,
 *      as offset_f and offset_r; the layout's size bounds F);
 *   2. candidates: the driver's one scan of writable memory finds every word
 *      equal to a vtable address;
 *   3. claim: a candidate is a task when it is the start of an in-use malloc
 *      chunk (heap_chunks.h) big enough for the layout; a completed task
 *      (its output stored, its future gone) and a closed one (cancelled) are
 *      no waiting task; each rejection is counted by reason.  Each task's
 *      future and chain are claimed, so the `dyn Future` scan leaves them;
 *   4. decode: each task as kind "async_task": its id (the header's address,
 *      async-task has no ids), its state (running: on the thread whose live
 *      stack holds its header; scheduled; idle) and its future's await chain
 *      (rust_decode.h); a never-polled task's chain goes on from
 *      async-executor's spawn wrapper into the future it captured, and a
 *      running task is named by its types alone (its states are stale).
 *
 * Cost: nothing unless a module has a TaskVTable (a read of the Rust
 * modules' data when the index lists functions monomorphized over a
 * future), then a range compare per word in the driver's one scan.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/memory.h"
#include "unwind/async/heap_chunks.h"
#include "unwind/async/runtime.h"
#include "unwind/async/rust_chain.h"
#include "unwind/async/rust_index.h"
#include "unwind/async/task_vtables.h"

#define MAX_CANDIDATES   (1u << 18)
#define MAX_TASK_SIZE    (64u << 20)
#define VTABLE_FNS       7          /* RawTask<F, T, S> functions before layout_info */
#define MIN_SAME_F       3          /* of them, at least this many over the task's F */
#define MAX_SLOT_FUTURES (1u << 16) /* futures listed for one vtable's seven entries */
#define LAYOUT_WORDS     5 /* TaskLayout: Layout {size, align}, offset_s, offset_f, offset_r */

/* The Header's fields as rustc lays out async-task 4.3's (vtable, state, awaiter). */
#define HDR_VTABLE 0
#define HDR_STATE  8
#define HDR_SIZE   32

/* async-task's state bits (state.rs). */
#define ST_SCHEDULED 1u
#define ST_RUNNING   2u
#define ST_COMPLETED 4u
#define ST_CLOSED    8u

/* Why a candidate header was not taken for a task (the "async_task_rejected" counts). */
enum reject_reason {
	REJECT_NOT_HEAP,     /* not in a heap coreq could walk: a copy on a stack, in data */
	REJECT_INSIDE_CHUNK, /* the middle of an in-use chunk: a copy of the pointer */
	REJECT_FREE_CHUNK,   /* a freed task */
	REJECT_TOO_SMALL,    /* a chunk smaller than the task's layout */
	REJECT_COMPLETED,    /* its future completed: the output is stored */
	REJECT_CLOSED,       /* cancelled, or its output taken */
	REJECT_REASONS
};

struct vtable {
	uint64_t addr;
	int32_t future;  /* F in the model */
	uint64_t offset; /* of the future in the task */
	uint64_t size;   /* of the whole task */
};

struct task {
	uint64_t header;
	size_t vtable;
	uint64_t state;
};

struct stats {
	size_t vtables, candidates;
	bool truncated;
	size_t tasks, rejected[REJECT_REASONS], reported, over_limit;
};

struct async_task {
	struct stats stats;
	const struct cq_rust_index *index;
	struct cq_task_vtables vts;         /* of struct vtable */
	struct cq_task_candidates cands_of; /* header addresses (uint64_t) */
	struct task *tasks;
	size_t ntasks;
	struct cq_rust_names names;
};

static const struct vtable *vtable_at(const struct async_task *t, uint64_t addr)
{
	return cq_task_vtables_at(&t->vts, addr);
}

static const struct vtable *vtables(const struct async_task *t)
{
	return t->vts.items;
}

static uint64_t *cands(const struct async_task *t)
{
	return t->cands_of.items;
}

/*
 * The future's offset and the task's size from a TaskLayout's five words:
 * offset_f equals offset_r (the union of F and T), so it is the largest
 * value that appears twice; the size is the largest value.
 */
static bool read_layout(const struct cq_async_ctx *ctx, uint64_t at, uint64_t *offset,
                        uint64_t *size)
{
	uint64_t w[LAYOUT_WORDS];
	for (size_t i = 0; i < LAYOUT_WORDS; i++)
		if (!cq_mem_read_u64(ctx->target->mem, at + 8 * i, &w[i]))
			return false;
	*offset = 0;
	*size = 0;
	bool twice = false;
	for (size_t i = 0; i < LAYOUT_WORDS; i++) {
		if (w[i] > *size)
			*size = w[i];
		for (size_t j = i + 1; j < LAYOUT_WORDS; j++)
			if (w[i] == w[j] && w[i] >= *offset) {
				*offset = w[i];
				twice = true;
			}
	}
	return twice && *offset >= HDR_SIZE && *offset < *size && *size <= MAX_TASK_SIZE;
}

/* A future type listed for one of a vtable's slots. */
struct slot_future {
	int32_t future;
	uint32_t slot;
};

static int cmp_slot_future(const void *a, const void *b)
{
	const struct slot_future *x = a, *y = b;
	if (x->future != y->future)
		return (x->future > y->future) - (x->future < y->future);
	return (x->slot > y->slot) - (x->slot < y->slot);
}

/*
 * A TaskVTable at addr when words[0..8) look like one: seven functions
 * monomorphized over futures, and a TaskLayout that holds the task's F.
 * At -O2 the linker folds identical functions: get_output, drop_ref,
 * destroy, schedule of several task types share one entry, which the
 * index lists once per future.  F is the future present in the most slots
 * (every slot when the index knows every function), at least MIN_SAME_F of
 * them and strictly more than any other: two futures in as many slots are
 * ambiguous, and the vtable is left rather than its tasks misnamed.
 * False only when out of memory.
 */
static bool try_vtable(struct async_task *t, const struct cq_async_ctx *ctx, uint64_t addr,
                       const uint64_t *words)
{
	const struct cq_rust_mono *at[VTABLE_FNS];
	size_t n[VTABLE_FNS];
	for (size_t i = 0; i < VTABLE_FNS; i++)
		if (!(at[i] = cq_rust_index_monos_at(t->index, words[i], &n[i])))
			return true;
	size_t total = 0;
	for (size_t i = 0; i < VTABLE_FNS; i++)
		total += n[i];
	if (total > MAX_SLOT_FUTURES)
		return true;
	struct slot_future *sf = malloc(total * sizeof(*sf));
	if (!sf)
		return false;
	size_t m = 0;
	for (size_t i = 0; i < VTABLE_FNS; i++)
		for (size_t k = 0; k < n[i]; k++)
			sf[m++] =
			    (struct slot_future){.future = at[i][k].future, .slot = (uint32_t)i};
	qsort(sf, m, sizeof(*sf), cmp_slot_future);
	/* Per future, the number of distinct slots it is listed for. */
	int32_t best = -1;
	size_t best_n = 0, second_n = 0;
	for (size_t i = 0; i < m;) {
		size_t j = i, slots = 0;
		for (; j < m && sf[j].future == sf[i].future; j++)
			slots += j == i || sf[j].slot != sf[j - 1].slot;
		if (slots > best_n) {
			second_n = best_n;
			best_n = slots;
			best = sf[i].future;
		} else if (slots > second_n) {
			second_n = slots;
		}
		i = j;
	}
	free(sf);
	if (best_n < MIN_SAME_F || second_n >= best_n)
		return true;
	struct vtable v = {.addr = addr, .future = best};
	const struct cq_rust_type *ty = &t->index->model.types[best];
	if (!read_layout(ctx, words[VTABLE_FNS], &v.offset, &v.size) ||
	    ty->size > v.size - v.offset)
		return true;
	return cq_task_vtables_add(&t->vts, &v);
}

/* A word of module data that is a vtable function: a TaskVTable there, once confirmed. */
struct vtable_scan {
	struct async_task *t;
	const struct cq_async_ctx *ctx;
};

static bool function_word(void *arg, uint64_t addr, const uint64_t *words)
{
	struct vtable_scan *s = arg;
	return try_vtable(s->t, s->ctx, addr, words);
}

/* Whether module m has a function monomorphized over a future: its data may hold TaskVTables. */
static bool module_has_monos(const void *arg, size_t m)
{
	const struct cq_rust_index *ix = ((const struct vtable_scan *)arg)->t->index;
	for (size_t k = 0; k < ix->nmonos; k++)
		if (ix->model.types[ix->monos[k].future].origin == m)
			return true;
	return false;
}

/* Every TaskVTable: in the non-executable loaded data of each Rust module. */
static bool find_vtables(struct async_task *t, const struct cq_async_ctx *ctx)
{
	const struct cq_rust_index *ix = t->index;
	struct vtable_scan scan = {t, ctx};
	return cq_task_vtables_find(&t->vts, ctx, module_has_monos, ix->monos[0].lo,
	                            ix->monos[ix->nmonos - 1].lo, VTABLE_FNS, function_word, &scan);
}

static void at_destroy(void *state)
{
	struct async_task *t = state;
	cq_task_vtables_free(&t->vts);
	cq_task_candidates_free(&t->cands_of);
	free(t->tasks);
	cq_rust_names_free(&t->names);
	free(t);
}

static struct cq_error *at_detect(const struct cq_async_ctx *ctx, void **state,
                                  struct cq_async_needs *needs)
{
	*state = NULL;
	struct cq_rust_index *ix;
	struct cq_error *err = cq_async_rust_index(ctx, &ix);
	if (err)
		return err;
	if (ix->nmonos == 0)
		return NULL;
	struct async_task *t = calloc(1, sizeof(*t));
	if (!t)
		return &cq_error_nomem;
	t->index = ix;
	t->vts.size = sizeof(struct vtable);
	t->cands_of = (struct cq_task_candidates){.size = sizeof(uint64_t), .max = MAX_CANDIDATES};
	if (!find_vtables(t, ctx)) {
		at_destroy(t);
		return &cq_error_nomem;
	}
	t->stats.vtables = t->vts.n;
	if (t->vts.n == 0) {
		at_destroy(t);
		return NULL;
	}
	*needs = (struct cq_async_needs){.scan = true, .scan_lo = t->vts.lo, .scan_hi = t->vts.hi};
	*state = t;
	return NULL;
}

/* A word equal to a TaskVTable's address: its header's, a candidate. */
static void found_header(void *arg, const void *vtable, uint64_t where)
{
	(void)vtable;
	uint64_t *c = cq_task_candidates_push(arg);
	if (c)
		*c = where - HDR_VTABLE;
}

/* The scan hook: every word equal to a TaskVTable's address is a header candidate. */
static void at_scan(void *state, const struct cq_async_ctx *ctx, const struct cq_async_chunk *c)
{
	(void)ctx;
	struct async_task *t = state;
	cq_task_vtables_scan(&t->vts, &t->cands_of, c, found_header, &t->cands_of);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/*
 * A task's future (its address returned) and chain.  A running task's
 * states are stale: its chain is its types' (rust_decode.h), which name
 * the program's future inside async-executor's wrapper, without lines.
 */
static uint64_t task_chain(const struct async_task *t, const struct cq_async_ctx *ctx,
                           const struct task *task, struct cq_rust_chain *chain)
{
	const struct vtable *vt = &vtables(t)[task->vtable];
	const struct cq_rust_model *m = &t->index->model;
	uint64_t future = task->header + vt->offset;
	chain->nframes = 0;
	chain->end = CQ_RUST_END_LEAF;
	if (task->state & ST_RUNNING)
		cq_rust_decode_types(m, future, vt->future, chain);
	else
		cq_rust_decode(ctx->target, m, future, vt->future, chain);
	if (chain->nframes == 0) {
		chain->frames[0] = (struct cq_rust_frame){.addr = future,
		                                          .type = cq_rust_unwrapped(m, vt->future)};
		chain->nframes = 1;
	}
	return future;
}

/* The claim step: the candidates that are live tasks, their futures claimed. */
static struct cq_error *at_claim(void *state, const struct cq_async_ctx *ctx)
{
	struct async_task *t = state;
	struct stats *st = &t->stats;
	st->candidates = t->cands_of.n;
	st->truncated = t->cands_of.full && !t->cands_of.nomem;
	if (t->cands_of.nomem)
		return &cq_error_nomem;
	if (t->cands_of.n == 0)
		return NULL;
	uint64_t *cand = cands(t);
	qsort(cand, t->cands_of.n, sizeof(*cand), cmp_u64);
	size_t n = 1;
	for (size_t i = 1; i < t->cands_of.n; i++)
		if (cand[i] != cand[n - 1])
			cand[n++] = cand[i];
	t->cands_of.n = n;
	struct cq_heap_query *q = malloc(n * sizeof(*q));
	t->tasks = malloc(n * sizeof(*t->tasks));
	if (!q || !t->tasks) {
		free(q);
		return &cq_error_nomem;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t vaddr = 0;
		cq_mem_read_u64(ctx->target->mem, cand[i] + HDR_VTABLE, &vaddr);
		const struct vtable *vt = vtable_at(t, vaddr);
		q[i] = (struct cq_heap_query){.addr = cand[i], .size = vt ? vt->size : HDR_SIZE};
	}
	cq_heap_classify(ctx->target->mem, q, n);
	struct cq_error *err = NULL;
	for (size_t i = 0; i < n && !err; i++) {
		uint64_t vaddr = 0, state_word = 0;
		const struct vtable *vt;
		if (!cq_mem_read_u64(ctx->target->mem, cand[i] + HDR_VTABLE, &vaddr) ||
		    !(vt = vtable_at(t, vaddr)) ||
		    !cq_mem_read_u64(ctx->target->mem, cand[i] + HDR_STATE, &state_word))
			continue;
		enum reject_reason why = REJECT_REASONS;
		switch (q[i].verdict) {
		case CQ_HEAP_UNKNOWN:
			why = REJECT_NOT_HEAP;
			break;
		case CQ_HEAP_INSIDE:
			why = REJECT_INSIDE_CHUNK;
			break;
		case CQ_HEAP_FREE:
			why = REJECT_FREE_CHUNK;
			break;
		case CQ_HEAP_TOO_SMALL:
			why = REJECT_TOO_SMALL;
			break;
		case CQ_HEAP_OBJECT:
			if (state_word & ST_COMPLETED)
				why = REJECT_COMPLETED;
			else if (state_word & ST_CLOSED)
				why = REJECT_CLOSED;
			break;
		}
		if (why != REJECT_REASONS) {
			st->rejected[why]++;
			continue;
		}
		struct task *task = &t->tasks[t->ntasks++];
		*task = (struct task){
		    .header = cand[i], .vtable = (size_t)(vt - vtables(t)), .state = state_word};
		struct cq_rust_chain chain;
		uint64_t future = task_chain(t, ctx, task, &chain);
		if (!cq_async_claim(ctx, future))
			err = &cq_error_nomem;
		for (size_t f = 0; f < chain.nframes && !err; f++)
			if (!cq_async_claim(ctx, chain.frames[f].addr))
				err = &cq_error_nomem;
	}
	free(q);
	st->tasks = t->ntasks;
	return err;
}

static const char *state_name(uint64_t s)
{
	if (s & ST_RUNNING)
		return "running";
	if (s & ST_SCHEDULED)
		return "scheduled";
	return "idle";
}

/* The thread whose live stack or registers hold a running task's header; 0: none. */
static int64_t running_thread(const struct cq_async_ctx *ctx, uint64_t header)
{
	for (size_t th = 0; th < ctx->target->nthreads; th++) {
		uint64_t *words;
		size_t nwords;
		if (!cq_async_live_words(ctx->target, th, &words, &nwords))
			return -1;
		bool has = cq_async_sorted_has(words, nwords, header);
		free(words);
		if (has)
			return ctx->target->threads[th].tid;
	}
	return 0;
}

/*
 * Whether a chain frame is a pass-through wrapper: a state machine whose
 * Unresumed variant captured a future (rust_decode.h) and that, resumed,
 * awaits a future of that same type: it only drives the future it was
 * given (async-executor's spawn block, `async move { let _guard = ..;
 * future.await }`).  A frame without a state (named from types alone, a
 * running task) is one when its type captured a future.
 */
static bool passes_through(const struct cq_rust_model *m, const struct cq_rust_frame *f)
{
	if (f->type < 0 || (size_t)f->type >= m->ntypes)
		return false;
	const struct cq_rust_type *t = &m->types[f->type];
	const struct cq_rust_variant *unresumed = NULL;
	for (size_t i = 0; t->kind == CQ_RUST_STATE_MACHINE && i < t->nvariants; i++)
		if (t->variants[i].discr == 0)
			unresumed = &t->variants[i];
	if (!unresumed || unresumed->awaitee < 0)
		return false;
	if (!f->variant || f->variant == unresumed)
		return true;
	int32_t a = f->variant->awaitee, c = unresumed->awaitee;
	if (a < 0 || (size_t)a >= m->ntypes || (size_t)c >= m->ntypes)
		return false;
	const char *an = m->types[a].name, *cn = m->types[c].name;
	return a == c || (an && cn && strcmp(an, cn) == 0);
}

/* How many of a chain's outermost frames are an executor's wrapper (not the last frame). */
static size_t executor_frames(const struct cq_rust_model *m, const struct cq_rust_chain *chain)
{
	size_t n = 0;
	while (n + 1 < chain->nframes && passes_through(m, &chain->frames[n]))
		n++;
	return n;
}

static struct cq_error *at_decode(void *state, const struct cq_async_ctx *ctx)
{
	struct async_task *t = state;
	const struct cq_rust_model *m = &t->index->model;
	for (size_t i = 0; i < t->ntasks; i++) {
		const struct task *task = &t->tasks[i];
		struct cq_rust_chain chain;
		task_chain(t, ctx, task, &chain);
		int64_t thread = 0;
		if (task->state & ST_RUNNING) {
			thread = running_thread(ctx, task->header);
			if (thread < 0)
				return &cq_error_nomem;
		}
		struct cq_stack_frame *frames;
		struct cq_error *err = cq_rust_chain_frames(ctx->target, m, chain.frames,
		                                            chain.nframes, &t->names, &frames);
		if (err)
			return err;
		struct cq_suspended_stack s = {.kind = "async_task",
		                               .leaf = frames[0].object,
		                               .frames = frames,
		                               .nframes = chain.nframes,
		                               .end = cq_rust_chain_end(chain.end),
		                               .has_task = true,
		                               .task_id = task->header,
		                               .task_state = state_name(task->state),
		                               .thread = thread,
		                               .executor_frames = executor_frames(m, &chain)};
		bool added;
		if ((err = cq_async_add_suspended(ctx, &s, &added)))
			return err;
		if (added)
			t->stats.reported++;
		else
			t->stats.over_limit++;
	}
	return NULL;
}

static const char *reject_name(enum reject_reason r)
{
	static const char *const names[REJECT_REASONS] = {
	    "not_heap", "inside_chunk", "free_chunk", "chunk_too_small", "completed", "closed"};
	return (unsigned)r < REJECT_REASONS ? names[r] : "?";
}

/* The "async_task_" keys of the async statistics. */
static void at_report(const void *state, const struct cq_async_ctx *ctx, struct cq_stats *out,
                      struct cq_stats *warnings)
{
	(void)ctx, (void)warnings;
	const struct async_task *t = state;
	struct stats none = {0};
	const struct stats *st = t ? &t->stats : &none;
	const char *keys[] = {"async_task_vtables", "async_task_candidates", "async_task_tasks",
	                      "async_task_reported", "async_task_over_limit"};
	uint64_t vals[] = {st->vtables, st->candidates, st->tasks, st->reported, st->over_limit};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		cq_stats_uint(out, keys[i], vals[i]);
	cq_stats_bool(out, "async_task_truncated", st->truncated);
	cq_stats_object(out, "async_task_rejected");
	for (unsigned i = 0; i < REJECT_REASONS; i++)
		cq_stats_uint(out, reject_name(i), st->rejected[i]);
	cq_stats_end(out);
}

static const char *const at_kinds[] = {"async_task", NULL};

const struct cq_async_runtime cq_async_async_task = {
    .name = "async_task",
    .kinds = at_kinds,
    .listing = CQ_ASYNC_LIST_TASKS,
    .heading = "async-task tasks (smol, async-std)",
    .detect = at_detect,
    .scan = at_scan,
    .claim = at_claim,
    .decode = at_decode,
    .report = at_report,
    .destroy = at_destroy,
};
