/*
 * tokio.c - every task of every tokio runtime in the process, from the core
 * alone: the "tokio" async runtime (runtime.h).
 *
 * tokio keeps each spawned task in one heap cell (FACTS.md section 9): a
 * Header {state, queue_next, vtable, owner_id}, a Core {scheduler, task_id,
 * stage holding the future}, a Trailer {the links of its runtime's
 * OwnedTasks list}.  The Rust index (rust_index.h) reads, for each
 * `raw::poll<T, S>`, where everything is, from DWARF.  Then:
 *   1. vtables: each task type's static raw::Vtable is found in its
 *      module's data as the word holding raw::poll<T, S>'s address;
 *   2. candidates: the driver's one scan of writable memory finds every word
 *      equal to a vtable address: a header candidate, or a stale copy;
 *   3. lists: each candidate's scheduler pointer leads to its runtime's
 *      OwnedTasks (multi_thread, current_thread), or its LocalSet's
 *      LocalOwnedTasks (spawn_local: the scheduler is the set's Shared).  A list is believed when
 * its id is non-zero; it is walked from its head, and each element must have a known vtable and the
 *      list's id as owner_id.  Only the tasks of a list are reported, each
 *      once: a freed task, a blocking-pool task (owner_id 0) and a stale
 *      copy are not in any list;
 *   4. per task: its id, its state from the header bits, the thread running
 *      it (the one whose live stack holds its header, for a running task)
 *      and its future's await chain (rust_decode.h), not decoded when the
 *      task is running or complete (its state is stale or gone);
 *   5. the future that `#[tokio::main]` / Runtime::block_on drives is no
 *      task: it is the argument `f` of CachedParkThread::block_on<F>, found
 *      in that frame through its DWARF location, evaluated with the
 *      registers the unwinder recovered for the frame (kind "block_on");
 *      where no location gives it, a caller's block_on<F> parameter that
 *      points at it, or, held by value, the one value of F that decodes
 *      suspended in the stack of the driving frame and its caller.
 * Steps 3 and 5 run in the driver's claim step: every future of a listed
 * task's chain and of a block_on future's is claimed (cq_async_claim), so
 * the `dyn Future` scan does not report a boxed one again; step 4 in decode.
 *
 * Cost: nothing for a process whose Rust modules have no raw::poll<T, S>;
 * otherwise a look at those modules' read-only data for the vtables, a
 * range compare per word in the driver's one scan, and reads along the lists.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/memory.h"
#include "unwind/async/runtime.h"
#include "unwind/async/rust_chain.h"
#include "unwind/async/rust_index.h"
#include "unwind/async/rust_index_blob.h"
#include "unwind/async/task_vtables.h"
#include "unwind/async/tokio_index.h"
#include "libcore/base/wire.h"
#include "unwind/async/dwarf_type.h"

#define MAX_CANDIDATES    (1u << 18)
#define MAX_LISTS         1024
#define MAX_LIST_TASKS    (1u << 18)
#define MAX_VTABLE_OFFSET (1u << 20)
#define MAX_RUNNING       32 /* coroutine polls above a block_on frame, remembered */

/* tokio's state bits (FACTS.md section 9). */
#define ST_RUNNING   1u
#define ST_COMPLETE  2u
#define ST_NOTIFIED  4u
#define ST_CANCELLED 32u

/* One task type's static raw::Vtable, found in the core. */
struct vtable {
	uint64_t addr;
	size_t kind; /* in index->tokio */
	uint64_t trailer, scheduler, id;
};

struct candidate {
	uint64_t header;
	size_t vtable;
};

struct list {
	uint64_t addr;
	size_t kind; /* the kind whose scheduler type led here: its OwnedTasks layout */
};

struct task {
	uint64_t header;
	size_t vtable;
	uint64_t state, id;
};

/* A future a thread drives in block_on, found in the claim step. */
struct block_on {
	size_t thread;
	uint64_t future;
	int32_t type;  /* as the frame's DWARF says: F, or Pin<&mut F> */
	int32_t named; /* what to name it when its chain is not decoded */
	bool polling;  /* a coroutine's poll runs above the block_on frame */
	/* the coroutines whose poll runs above it (their resume functions) */
	const char *running[MAX_RUNNING];
	size_t nrunning;
	/* the futures functions monomorphized over them run above it for */
	int32_t generic[MAX_RUNNING];
	size_t ngeneric;
};

/* What the search cost and found (its keys of the async statistics). */
struct cq_tokio_stats {
	size_t kinds;      /* task types (raw::poll<T, S>) indexed */
	size_t unresolved; /* raw::poll<T, S> whose layout DWARF did not give */
	size_t vtables;    /* task vtables found in the modules' data */
	size_t candidates; /* header candidates from the scan */
	bool truncated;    /* the candidates stopped at their bound */
	size_t lists;      /* OwnedTasks lists with at least one task that checks out */
	size_t tasks;      /* tasks in those lists */
	size_t stale;      /* candidates in no list: freed tasks, blocking tasks, copies */
	size_t broken;     /* lists whose walk stopped at a bad element */
	size_t reported;
	size_t over_limit;        /* not added: the suspended stacks were at their bound */
	size_t block_on;          /* futures driven by block_on, reported */
	size_t block_on_scanned;  /* of them, found by value in the driving frames (stack_future) */
	size_t block_on_rejected; /* driving frames where no one value of F decoded */
};

struct tokio {
	struct cq_tokio_stats stats;
	const struct cq_rust_index *index;  /* the driver's (cq_async_rust_index) */
	const struct cq_tokio_index *ti;    /* its tokio part (never NULL: empty) */
	struct cq_task_vtables vts;         /* of struct vtable */
	struct cq_task_candidates cands_of; /* of struct candidate */
	struct task *tasks;                 /* the listed tasks, by id: found in the claim step */
	size_t ntasks;
	struct block_on *block_ons;
	size_t nblock_ons;
	struct cq_rust_names names;
};

static const struct vtable *vtable_at(const struct tokio *t, uint64_t addr)
{
	return cq_task_vtables_at(&t->vts, addr);
}

static const struct vtable *vtables(const struct tokio *t)
{
	return t->vts.items;
}

static const struct candidate *cands(const struct tokio *t)
{
	return t->cands_of.items;
}

static bool read_u64(const struct cq_async_ctx *ctx, uint64_t addr, uint64_t *out)
{
	return cq_mem_read_u64(ctx->target->mem, addr, out);
}

/* ix's tokio part: its task kinds (an empty one when no module has any). */
static const struct cq_tokio_index *tokio_part(const struct cq_rust_index *ix)
{
	static const struct cq_tokio_index empty;
	const struct cq_tokio_index *ti = cq_tokio_index_of(ix);
	return ti ? ti : &empty;
}

/* The kind whose raw::poll is at addr, among the kinds of module origin; -1 if none. */
static ptrdiff_t kind_of_poll(const struct cq_tokio_index *ti, uint64_t addr)
{
	size_t lo = 0, hi = ti->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ti->kinds[mid].poll < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ti->n && ti->kinds[lo].poll == addr ? (ptrdiff_t)lo : -1;
}

/* A vtable of kind k at addr, if its offsets are those of a task cell. */
static bool add_vtable(struct tokio *t, const struct cq_async_ctx *ctx, size_t k, uint64_t addr)
{
	const struct cq_tokio_kind *kind = &t->ti->kinds[k];
	struct vtable v = {.addr = addr, .kind = k};
	if (!read_u64(ctx, addr + kind->vt_trailer, &v.trailer) ||
	    !read_u64(ctx, addr + kind->vt_scheduler, &v.scheduler) ||
	    !read_u64(ctx, addr + kind->vt_id, &v.id))
		return true;
	if (v.scheduler == 0 || v.scheduler >= v.id || v.id >= v.trailer ||
	    v.trailer >= MAX_VTABLE_OFFSET)
		return true;
	return cq_task_vtables_add(&t->vts, &v);
}

/* A word of module data that is a task kind's poll function: its vtable, once confirmed. */
struct vtable_scan {
	struct tokio *t;
	const struct cq_async_ctx *ctx;
};

static bool poll_word(void *arg, uint64_t addr, const uint64_t *words)
{
	struct vtable_scan *s = arg;
	ptrdiff_t k = kind_of_poll(s->t->ti, words[0]);
	return k < 0 || add_vtable(s->t, s->ctx, (size_t)k, addr - s->t->ti->kinds[k].vt_poll);
}

/* Whether module m has task kinds: its data may hold their vtables. */
static bool module_has_kinds(const void *arg, size_t m)
{
	const struct cq_tokio_index *ti = ((const struct vtable_scan *)arg)->t->ti;
	for (size_t k = 0; k < ti->n; k++)
		if (ti->kinds[k].origin == m)
			return true;
	return false;
}

/* Every task vtable: in the non-executable loaded data of each module with task types. */
static bool find_vtables(struct tokio *t, const struct cq_async_ctx *ctx)
{
	const struct cq_tokio_index *ti = t->ti;
	struct vtable_scan scan = {t, ctx};
	return cq_task_vtables_find(&t->vts, ctx, module_has_kinds, ti->kinds[0].poll,
	                            ti->kinds[ti->n - 1].poll, 0, poll_word, &scan);
}

static void tokio_destroy(void *state)
{
	struct tokio *t = state;
	cq_task_vtables_free(&t->vts);
	cq_task_candidates_free(&t->cands_of);
	free(t->tasks);
	free(t->block_ons);
	cq_rust_names_free(&t->names);
	free(t);
}

static struct cq_error *tokio_detect(const struct cq_async_ctx *ctx, void **state,
                                     struct cq_async_needs *needs)
{
	*state = NULL;
	struct cq_rust_index *ix;
	struct cq_error *err = cq_async_rust_index(ctx, &ix);
	if (err)
		return err;
	const struct cq_tokio_index *ti = tokio_part(ix);
	if (ti->n == 0 && ix->nblock_ons == 0)
		return NULL;
	struct tokio *t = calloc(1, sizeof(*t));
	if (!t)
		return &cq_error_nomem;
	struct cq_tokio_stats *st = &t->stats;
	st->kinds = ti->n;
	st->unresolved = ti->unresolved;
	t->index = ix;
	t->ti = ti;
	t->vts.size = sizeof(struct vtable);
	t->cands_of =
	    (struct cq_task_candidates){.size = sizeof(struct candidate), .max = MAX_CANDIDATES};
	if (ti->n > 0 && !find_vtables(t, ctx)) {
		tokio_destroy(t);
		return &cq_error_nomem;
	}
	st->vtables = t->vts.n;
	if (t->vts.n == 0 && ix->nblock_ons == 0) {
		tokio_destroy(t);
		return NULL;
	}
	*needs = (struct cq_async_needs){.scan = t->vts.n > 0,
	                                 .native_frames = ix->nblock_ons > 0,
	                                 .scan_lo = t->vts.lo,
	                                 .scan_hi = t->vts.hi};
	*state = t;
	return NULL;
}

/* A word equal to a task vtable's address: its header's, a candidate (past the kind's offset). */
static void found_header(void *arg, const void *vtable, uint64_t where)
{
	struct tokio *t = arg;
	const struct vtable *vt = vtable;
	const struct cq_tokio_kind *k = &t->ti->kinds[vt->kind];
	if (where < k->hdr_vtable)
		return;
	struct candidate *c = cq_task_candidates_push(&t->cands_of);
	if (c)
		*c = (struct candidate){.header = where - k->hdr_vtable,
		                        .vtable = cq_task_vtables_index(&t->vts, vt)};
}

/* The scan hook: every word equal to a task vtable's address is a header candidate. */
static void tokio_scan(void *state, const struct cq_async_ctx *ctx, const struct cq_async_chunk *c)
{
	(void)ctx;
	struct tokio *t = state;
	cq_task_vtables_scan(&t->vts, &t->cands_of, c, found_header, t);
}

static int cmp_task_header(const void *a, const void *b)
{
	const struct task *x = a, *y = b;
	return (x->header > y->header) - (x->header < y->header);
}

static int cmp_task_id(const void *a, const void *b)
{
	const struct task *x = a, *y = b;
	if (x->id != y->id)
		return (x->id > y->id) - (x->id < y->id);
	return cmp_task_header(a, b);
}

static int cmp_list(const void *a, const void *b)
{
	const struct list *x = a, *y = b;
	return (x->addr > y->addr) - (x->addr < y->addr);
}

/* The OwnedTasks lists the candidates' scheduler pointers lead to, each once. */
static size_t find_lists(const struct tokio *t, const struct cq_async_ctx *ctx, struct list *lists)
{
	size_t n = 0;
	for (size_t i = 0; i < t->cands_of.n && n < MAX_LISTS; i++) {
		const struct vtable *vt = &vtables(t)[cands(t)[i].vtable];
		const struct cq_tokio_kind *k = &t->ti->kinds[vt->kind];
		uint64_t shared;
		if (!read_u64(ctx, cands(t)[i].header + vt->scheduler + k->sched_ptr, &shared) ||
		    shared == 0)
			continue;
		struct list l = {.addr = shared + k->owned, .kind = vt->kind};
		bool seen = false;
		for (size_t j = 0; j < n && !seen; j++)
			seen = lists[j].addr == l.addr;
		if (!seen)
			lists[n++] = l;
	}
	qsort(lists, n, sizeof(*lists), cmp_list);
	return n;
}

/* Appends the tasks of list l to *tasks; false when out of memory. */
static bool walk_list(struct tokio *t, const struct cq_async_ctx *ctx, const struct list *l,
                      struct task **tasks, size_t *ntasks, size_t *cap)
{
	struct cq_tokio_stats *st = &t->stats;
	const struct cq_tokio_kind *lk = &t->ti->kinds[l->kind];
	uint64_t id, e;
	if (!read_u64(ctx, l->addr + lk->owned_id, &id) || id == 0 ||
	    !read_u64(ctx, l->addr + lk->owned_head, &e))
		return true;
	for (size_t n = 0; e != 0; n++) {
		uint64_t vaddr, owner;
		const struct vtable *vt;
		if (n == MAX_LIST_TASKS || !read_u64(ctx, e + lk->hdr_vtable, &vaddr) ||
		    !(vt = vtable_at(t, vaddr)) || !read_u64(ctx, e + lk->hdr_owner, &owner) ||
		    owner != id) {
			st->broken++;
			return true;
		}
		const struct cq_tokio_kind *k = &t->ti->kinds[vt->kind];
		struct task task = {.header = e, .vtable = (size_t)(vt - vtables(t))};
		if (!read_u64(ctx, e + k->hdr_state, &task.state) ||
		    !read_u64(ctx, e + vt->id, &task.id)) {
			st->broken++;
			return true;
		}
		if (*ntasks == *cap) {
			size_t c = *cap ? *cap * 2 : 64;
			struct task *p = realloc(*tasks, c * sizeof(*p));
			if (!p)
				return false;
			*tasks = p;
			*cap = c;
		}
		(*tasks)[(*ntasks)++] = task;
		st->lists += n == 0; /* a list is believed once one element checks out */
		if (!read_u64(ctx, e + vt->trailer + k->trailer_next, &e)) {
			st->broken++;
			return true;
		}
	}
	return true;
}

static const char *state_name(uint64_t s)
{
	if (s & ST_COMPLETE)
		return "complete";
	if (s & ST_RUNNING)
		return "running";
	if (s & ST_CANCELLED)
		return "cancelled";
	if (s & ST_NOTIFIED)
		return "scheduled";
	return "idle";
}

/* True when thread th has a live native frame in the code that polls tasks of kind k. */
static bool thread_runs(const struct cq_async_ctx *ctx, size_t th, const struct cq_tokio_kind *k)
{
	const struct cq_thread_stack *ts = &ctx->stacks->threads[th];
	for (size_t i = 0; i < ts->nframes; i++) {
		const struct cq_stack_frame *f = &ts->frames[i];
		uint64_t pc = i == 0 ? f->pc : f->pc - 1;
		for (unsigned c = 0; f->kind == CQ_FRAME_NATIVE && c < k->ncode; c++)
			if (pc >= k->code[c].lo && pc < k->code[c].hi)
				return true;
	}
	return false;
}

/*
 * The thread running a task: the one with a live frame of its type's
 * raw::poll<T, S> or Harness<T, S>::poll; if several run that type, the one whose live stack or
 * registers hold the task's header.  0: none.
 */
static int64_t running_thread(const struct cq_async_ctx *ctx, const struct cq_tokio_kind *k,
                              uint64_t **words, size_t *nwords, uint64_t header)
{
	int64_t only = 0;
	size_t n = 0;
	for (size_t i = 0; i < ctx->stacks->nthreads; i++) {
		if (!thread_runs(ctx, i, k))
			continue;
		n++;
		only = ctx->target->threads[i].tid;
		if (words[i] && cq_async_sorted_has(words[i], nwords[i], header))
			return only;
	}
	return n == 1 ? only : 0;
}

/*
 * A task's future (its address returned) and its chain in *chain: decoded
 * when the task waits; named only when it is running or complete.
 */
static uint64_t task_chain(const struct tokio *t, const struct cq_async_ctx *ctx,
                           const struct task *task, struct cq_rust_chain *chain)
{
	const struct vtable *vt = &vtables(t)[task->vtable];
	const struct cq_tokio_kind *k = &t->ti->kinds[vt->kind];
	const struct cq_rust_model *m = &t->index->model;
	uint64_t future = task->header + vt->id + (uint64_t)k->future_from_id;
	chain->nframes = 0;
	chain->end = CQ_RUST_END_LEAF;
	if (!(task->state & ST_COMPLETE))
		cq_rust_decode(ctx->target, m, future, k->future, chain);
	if (task->state & (ST_RUNNING | ST_COMPLETE)) {
		/*
		 * Its state machine's state is stale (running) or gone: name it
		 * only, after the future a Box<dyn Future> leads to when it does.
		 */
		chain->frames[0] =
		    chain->nframes > 0 && chain->frames[0].variant
		        ? (struct cq_rust_frame){.addr = chain->frames[0].addr,
		                                 .type = chain->frames[0].type}
		        : (struct cq_rust_frame){.addr = future,
		                                 .type = cq_rust_unwrapped(m, k->future)};
		chain->nframes = 1;
		chain->end = CQ_RUST_END_LEAF;
	} else if (chain->nframes == 0) {
		chain->frames[0] =
		    (struct cq_rust_frame){.addr = future, .type = cq_rust_unwrapped(m, k->future)};
		chain->nframes = 1;
	}
	return future;
}

/* Claims a future and every future of its chain: the dyn Future scan leaves them. */
static bool claim_chain(const struct cq_async_ctx *ctx, uint64_t future,
                        const struct cq_rust_chain *chain)
{
	if (!cq_async_claim(ctx, future))
		return false;
	for (size_t i = 0; i < chain->nframes; i++)
		if (!cq_async_claim(ctx, chain->frames[i].addr))
			return false;
	return true;
}

/* Adds one task as a suspended stack of kind "tokio". */
static struct cq_error *add_task(struct tokio *t, const struct cq_async_ctx *ctx,
                                 const struct task *task, int64_t thread)
{
	const struct cq_rust_model *m = &t->index->model;
	struct cq_rust_chain chain;
	task_chain(t, ctx, task, &chain);
	struct cq_stack_frame *frames;
	struct cq_error *err =
	    cq_rust_chain_frames(ctx->target, m, chain.frames, chain.nframes, &t->names, &frames);
	if (err)
		return err;
	struct cq_suspended_stack s = {.kind = "tokio",
	                               .leaf = frames[0].object,
	                               .frames = frames,
	                               .nframes = chain.nframes,
	                               .end = cq_rust_chain_end(chain.end),
	                               .has_task = true,
	                               .task_id = task->id,
	                               .task_state = state_name(task->state),
	                               .thread = thread};
	bool added;
	err = cq_async_add_suspended(ctx, &s, &added);
	if (added)
		t->stats.reported++;
	else if (!err)
		t->stats.over_limit++;
	return err;
}

/* Reports tasks[0..n) (sorted by id), with the thread of each running one. */
static struct cq_error *report_tasks(struct tokio *t, const struct cq_async_ctx *ctx,
                                     const struct task *tasks, size_t n)
{
	size_t nthreads = ctx->stacks->nthreads;
	uint64_t **words = calloc(nthreads ? nthreads : 1, sizeof(*words));
	size_t *nwords = calloc(nthreads ? nthreads : 1, sizeof(*nwords));
	struct cq_error *err = words && nwords ? NULL : &cq_error_nomem;
	bool have_words = false;
	for (size_t i = 0; i < n && !err; i++) {
		int64_t thread = 0;
		if ((tasks[i].state & (ST_RUNNING | ST_COMPLETE)) == ST_RUNNING) {
			for (size_t th = 0; th < ctx->stacks->nthreads && !have_words && !err; th++)
				if (!cq_async_live_words(ctx->target, th, &words[th], &nwords[th]))
					err = &cq_error_nomem;
			have_words = true;
			const struct vtable *vt = &vtables(t)[tasks[i].vtable];
			if (!err)
				thread = running_thread(ctx, &t->ti->kinds[vt->kind], words, nwords,
				                        tasks[i].header);
		}
		if (!err)
			err = add_task(t, ctx, &tasks[i], thread);
	}
	for (size_t th = 0; words && th < nthreads; th++)
		free(words[th]);
	free(words);
	free(nwords);
	return err;
}

/*
 * A future held in registers of frame i of thread th (the unwinder
 * recovers a caller's callee-saved ones): a Pin<Box<dyn Future>> as its
 * data and vtable pointers (the future is the data, of the vtable's type),
 * or a pointer to the future (Pin<&mut F>, Box<F>).
 */
static bool in_registers(const struct cq_async_ctx *ctx, const struct cq_rust_model *m,
                         const struct cq_rust_local *loc, size_t th, size_t i,
                         const struct cq_unwind_frame *f, uint64_t *out, int32_t *type)
{
	struct cq_regs regs;
	if (loc->type < 0 || (size_t)loc->type >= m->ntypes ||
	    !cq_unwind_regs_at(ctx->target, ctx->target->threads[th].regs, ctx->unwind, i, f->pc,
	                       f->sp, &regs))
		return false;
	uint64_t piece[2];
	unsigned r0 = (unsigned)loc->offset;
	if (!cq_regs_has(&regs, r0))
		return false;
	piece[0] = regs.value[r0];
	bool two = loc->add != CQ_RUST_NO_REG && cq_regs_has(&regs, (unsigned)loc->add);
	piece[1] = two ? regs.value[loc->add] : 0;
	const struct cq_rust_type *t = &m->types[loc->type];
	if (t->kind != CQ_RUST_WRAPPER)
		return false;
	/* Hops that stay inside the value (Pin { Box { .. } }) move the offsets only. */
	uint64_t at = 0;
	unsigned h = 0;
	while (h < t->nhops && h < CQ_RUST_MAX_HOPS && !t->hops[h].deref && at <= 16)
		at += t->hops[h++].offset;
	if (t->is_dyn && h == t->nhops && two) {
		uint64_t d = at + t->dyn_data_offset, v = at + t->dyn_vtable_offset;
		if (d > 8 || v > 8 || d == v || d % 8 || v % 8)
			return false;
		*out = piece[d / 8];
		*type = cq_rust_vtable_type(m, piece[v / 8]);
		return *type >= 0 && *out != 0;
	}
	/* A pointer to the future (Pin<&mut F>, Box<F>) in the first register. */
	if (!t->is_dyn && h + 1 == t->nhops && at == 0 && t->hops[h].offset == 0) {
		*out = piece[0];
		*type = t->target;
		return *out != 0 && *type >= 0 && (size_t)*type < m->ntypes;
	}
	return false;
}

/* Where a block_on frame's future is: its DWARF location at pc with the frame's registers. */
static bool block_on_future(const struct cq_async_ctx *ctx, const struct cq_rust_model *m,
                            const struct cq_rust_block_on *bo, const struct cq_async_native *nat,
                            size_t th, size_t i, uint64_t pc, uint64_t *out, int32_t *type)
{
	const struct cq_unwind_frame *f = &nat->frames[i];
	/* The innermost scope's `f` first: after pin!(f), the pinned one. */
	for (size_t l = bo->nlocs; l-- > 0;) {
		const struct cq_rust_local *loc = &bo->locs[l];
		if (pc < loc->lo || pc >= loc->hi)
			continue;
		if (loc->base == CQ_RUST_BASE_REGS)
			return in_registers(ctx, m, loc, th, i, f, out, type);
		uint64_t base;
		struct cq_regs regs;
		if (loc->base == CQ_RUST_BASE_BREG) {
			if (!cq_unwind_regs_at(ctx->target, ctx->target->threads[th].regs,
			                       ctx->unwind, i, f->pc, f->sp, &regs) ||
			    !cq_regs_has(&regs, loc->reg))
				return false;
			base = regs.value[loc->reg];
		} else if (loc->base == CQ_RUST_BASE_SP)
			base = f->sp;
		else if (loc->base == CQ_RUST_BASE_FP && f->has_fp)
			base = f->fp;
		else if (loc->base == CQ_RUST_BASE_CFA && i + 1 < nat->nframes)
			base = nat->frames[i + 1].sp;
		else
			return false;
		uint64_t addr = base + (uint64_t)loc->offset;
		if (loc->deref && !read_u64(ctx, addr, &addr))
			return false;
		*out = addr + loc->add;
		*type = loc->type;
		return true;
	}
	return false;
}

/* The most of the driving frames' stack a by-value future is looked for in. */
#define MAX_SCAN_BYTES (256u << 10)

/* How a value of F at addr decodes: 2 a Suspend state awaiting a chain, 1 Unresumed, 0 neither. */
static int decodes_as(const struct cq_async_ctx *ctx, const struct cq_rust_model *m, uint64_t addr,
                      int32_t type)
{
	struct cq_rust_chain chain;
	cq_rust_decode(ctx->target, m, addr, type, &chain);
	if (chain.nframes == 0 || chain.frames[0].addr != addr || !chain.frames[0].variant ||
	    !chain.frames[0].variant->name ||
	    (chain.end != CQ_RUST_END_LEAF && chain.end != CQ_RUST_END_NO_AWAITEE))
		return 0;
	const struct cq_rust_variant *v = chain.frames[0].variant;
	if (strncmp(v->name, "Suspend", 7) == 0)
		return v->awaitee >= 0 && chain.nframes >= 2 ? 2 : 0;
	return strcmp(v->name, "Unresumed") == 0 ? 1 : 0;
}

/*
 * A future block_on holds by value (an async block) where no DWARF location
 * gives it (-O2: `f` is optimized out at the parked pc, and the callers'
 * copies are the ones it was moved out of): pinned in the stack of the
 * driving frame i or of its caller, [frame i's sp, the caller's CFA).  Each
 * offset at F's alignment where a value of F fits is decoded: a Suspend
 * state whose awaitee decodes into a chain, or Unresumed.  The one Suspend
 * candidate is the future (a moved-out copy stays Unresumed); else, while
 * a poll of it runs above block_on (its first poll: still Unresumed in
 * memory), the one Unresumed candidate when it is the only one.  A parked
 * future has returned Pending: it is suspended, never Unresumed.  More than
 * one, or none: not believed (tokio_block_on_rejected).  1 found, 0
 * rejected, -1 not applicable.
 */
static int stack_future(const struct cq_async_ctx *ctx, const struct cq_rust_model *m,
                        const struct cq_async_native *nat, size_t i, int32_t ftype, bool polling,
                        uint64_t *out)
{
	if (ftype < 0 || (size_t)ftype >= m->ntypes)
		return -1;
	const struct cq_rust_type *ty = &m->types[ftype];
	if (ty->kind != CQ_RUST_STATE_MACHINE || ty->size == 0)
		return -1;
	if (i + 2 >= nat->nframes)
		return 0; /* the walk ended before the caller's CFA */
	uint64_t lo = nat->frames[i].sp, hi = nat->frames[i + 2].sp;
	if (hi <= lo || hi - lo > MAX_SCAN_BYTES || hi - lo < ty->size)
		return 0;
	uint64_t align = ty->align > 1 ? ty->align : 8;
	size_t nsuspend = 0, nunresumed = 0;
	uint64_t suspend = 0, unresumed = 0;
	for (uint64_t a = (lo + align - 1) / align * align; a >= lo && a + ty->size <= hi;
	     a += align) {
		int d = decodes_as(ctx, m, a, ftype);
		if (d == 2) {
			suspend = a;
			nsuspend++;
		} else if (d == 1) {
			unresumed = a;
			nunresumed++;
		}
	}
	if (nsuspend == 1)
		*out = suspend;
	else if (nsuspend == 0 && nunresumed == 1 && polling)
		*out = unresumed;
	else
		return 0;
	return 1;
}

/* Whether a chain frame's coroutine is being polled above the block_on frame. */
static bool in_poll(const struct cq_rust_model *m, const struct block_on *bo,
                    const struct cq_rust_frame *f)
{
	const char *resume = m->types[f->type].resume_name;
	size_t len = resume ? strlen(resume) : 0;
	/* The poll function of a generic coroutine is named with its arguments. */
	for (size_t i = 0; resume && i < bo->nrunning; i++)
		if (strncmp(bo->running[i], resume, len) == 0 &&
		    (bo->running[i][len] == '\0' || bo->running[i][len] == '<'))
			return true;
	return false;
}

/*
 * A polled block_on future's chain: the states of the coroutines being
 * polled (their poll on the stack) are stale, so those frames keep their
 * names only; the futures they await that are not being polled (LocalSet's
 * run_until polled the program's future, which returned Pending, and now
 * runs a local task) were left by their last poll and are decoded.  A
 * future past its end (Returned, Panicked: the polled one moved on) ends
 * the chain before it.  Without the poll of any of its coroutines on the
 * stack (they were all inlined, or none is) the chain is not believed.
 */
static void polled_chain(const struct cq_rust_model *m, const struct block_on *bo,
                         struct cq_rust_chain *chain)
{
	size_t last = chain->nframes;
	for (size_t i = 0; i < chain->nframes; i++)
		if (in_poll(m, bo, &chain->frames[i]))
			last = i;
	if (last == chain->nframes) {
		chain->nframes = 0;
		return;
	}
	for (size_t i = 0; i <= last; i++)
		chain->frames[i].variant = NULL;
	for (size_t i = last + 1; i < chain->nframes; i++) {
		const struct cq_rust_variant *v = chain->frames[i].variant;
		if (v && v->name &&
		    (strcmp(v->name, "Returned") == 0 || strcmp(v->name, "Panicked") == 0)) {
			chain->nframes = i;
			chain->end = CQ_RUST_END_NO_AWAITEE;
			break;
		}
	}
}

/*
 * A block_on future's chain: decoded; while a coroutine's poll runs above
 * it, only the part no poll is running in (polled_chain).
 */
static void block_on_chain(const struct tokio *t, const struct cq_async_ctx *ctx,
                           const struct block_on *bo, struct cq_rust_chain *chain)
{
	const struct cq_rust_model *m = &t->index->model;
	chain->nframes = 0;
	chain->end = CQ_RUST_END_LEAF;
	cq_rust_decode(ctx->target, m, bo->future, bo->type, chain);
	if (bo->polling)
		polled_chain(m, bo, chain);
	if (chain->nframes == 0) {
		chain->frames[0] = (struct cq_rust_frame){.addr = bo->future,
		                                          .type = cq_rust_unwrapped(m, bo->named)};
		chain->nframes = 1;
	}
}

/* The futures the functions monomorphized over a future whose code holds pc run for. */
static void generic_at(const struct cq_rust_index *ix, uint64_t pc, struct block_on *found)
{
	size_t n;
	const struct cq_rust_mono *mo = cq_rust_index_monos_containing(ix, pc, &n);
	for (size_t k = 0; mo && k < n && found->ngeneric < MAX_RUNNING; k++)
		found->generic[found->ngeneric++] = cq_rust_unwrapped(&ix->model, mo[k].future);
}

/*
 * block_on polls its future through a function generic over it
 * (<Pin<P> as Future>::poll over &mut F): such a function above the
 * block_on frame, over the future block_on drives, is that future's poll,
 * the coroutine's own poll inlined into it at -O2.  (One over a future
 * inside it, RunUntil<T>'s poll over T, is no poll of T.)
 */
static void polled_generic(const struct cq_rust_model *m, struct block_on *found)
{
	int32_t root = cq_rust_unwrapped(m, found->type);
	if (root < 0 || (size_t)root >= m->ntypes || !m->types[root].resume_name)
		return;
	for (size_t k = 0; k < found->ngeneric && found->nrunning < MAX_RUNNING; k++)
		if (found->generic[k] == root) {
			found->polling = true;
			found->running[found->nrunning++] = m->types[root].resume_name;
			return;
		}
}

/*
 * The futures that threads drive in tokio's block_on (#[tokio::main],
 * Runtime::block_on), one per thread (the outermost block_on frame is the
 * one driving), into t->block_ons; each claimed with its chain, so that the
 * `dyn Future` scan leaves a boxed one (block_on(Box::pin(f))).
 */
static struct cq_error *find_block_ons(struct tokio *t, const struct cq_async_ctx *ctx)
{
	const struct cq_rust_index *ix = t->index;
	size_t nthreads = ctx->target->nthreads;
	if (!ctx->native || nthreads == 0)
		return NULL;
	t->block_ons = calloc(nthreads, sizeof(*t->block_ons));
	if (!t->block_ons)
		return &cq_error_nomem;
	for (size_t th = 0; th < nthreads; th++) {
		const struct cq_async_native *nat = &ctx->native[th];
		struct block_on found = {.thread = th}, driver;
		size_t drv = SIZE_MAX; /* the driving frame whose F no location gave */
		bool have = false;
		for (size_t i = 0; i < nat->nframes; i++) {
			const struct cq_unwind_frame *f = &nat->frames[i];
			uint64_t pc = f->is_return_address ? f->pc - 1 : f->pc;
			const struct cq_rust_block_on *bo = cq_rust_index_block_on_at(ix, pc);
			if (!bo) {
				const char *r = cq_rust_index_resume_at(ix, pc);
				found.polling |= r != NULL;
				if (r && found.nrunning < MAX_RUNNING)
					found.running[found.nrunning++] = r;
				if (!r)
					generic_at(ix, pc, &found);
				continue;
			}
			found.named = bo->future;
			if (block_on_future(ctx, &ix->model, bo, nat, th, i, pc, &found.future,
			                    &found.type)) {
				polled_generic(&ix->model, &found);
				have = true;
				break;
			}
			if (drv == SIZE_MAX) {
				drv = i;
				driver = found;
			}
		}
		if (!have && drv != SIZE_MAX) {
			/* no location, no caller's pointer: by value in the driving frames */
			found = driver;
			found.type = found.named;
			polled_generic(&ix->model, &found);
			int r = stack_future(ctx, &ix->model, nat, drv, found.named, found.polling,
			                     &found.future);
			have = r == 1;
			t->stats.block_on_scanned += r == 1;
			t->stats.block_on_rejected += r == 0;
		}
		if (!have)
			continue;
		struct cq_rust_chain chain;
		block_on_chain(t, ctx, &found, &chain);
		if (!claim_chain(ctx, found.future, &chain))
			return &cq_error_nomem;
		t->block_ons[t->nblock_ons++] = found;
	}
	return NULL;
}

/* Reports the block_on futures found (kind "block_on"): running or idle. */
static struct cq_error *report_block_ons(struct tokio *t, const struct cq_async_ctx *ctx)
{
	const struct cq_rust_model *m = &t->index->model;
	for (size_t i = 0; i < t->nblock_ons; i++) {
		const struct block_on *bo = &t->block_ons[i];
		struct cq_rust_chain chain;
		block_on_chain(t, ctx, bo, &chain);
		struct cq_stack_frame *frames;
		struct cq_error *err = cq_rust_chain_frames(ctx->target, m, chain.frames,
		                                            chain.nframes, &t->names, &frames);
		if (err)
			return err;
		struct cq_suspended_stack s = {.kind = "block_on",
		                               .leaf = frames[0].object,
		                               .frames = frames,
		                               .nframes = chain.nframes,
		                               .end = cq_rust_chain_end(chain.end),
		                               .has_task = true,
		                               .task_state = bo->polling ? "running" : "idle",
		                               .thread = ctx->target->threads[bo->thread].tid};
		bool added;
		if ((err = cq_async_add_suspended(ctx, &s, &added)))
			return err;
		t->stats.block_on += added;
	}
	return NULL;
}

/*
 * The claim step: the tasks of every OwnedTasks list (t->tasks, by id) and
 * the block_on futures, each future of theirs claimed.
 */
static struct cq_error *tokio_claim(void *state, const struct cq_async_ctx *ctx)
{
	struct tokio *t = state;
	struct cq_tokio_stats *st = &t->stats;
	st->candidates = t->cands_of.n;
	st->truncated = t->cands_of.full && !t->cands_of.nomem;
	if (t->cands_of.nomem)
		return &cq_error_nomem;
	struct list *lists = malloc(MAX_LISTS * sizeof(*lists));
	if (!lists)
		return &cq_error_nomem;
	size_t nlists = find_lists(t, ctx, lists);
	size_t cap = 0;
	struct cq_error *err = NULL;
	for (size_t i = 0; i < nlists && !err; i++)
		if (!walk_list(t, ctx, &lists[i], &t->tasks, &t->ntasks, &cap))
			err = &cq_error_nomem;
	free(lists);
	if (!err && t->ntasks > 0) {
		/* A task is in one list: a header twice means a loop; keep it once. */
		qsort(t->tasks, t->ntasks, sizeof(*t->tasks), cmp_task_header);
		size_t n = 1;
		for (size_t i = 1; i < t->ntasks; i++)
			if (t->tasks[i].header != t->tasks[n - 1].header)
				t->tasks[n++] = t->tasks[i];
		t->ntasks = n;
		st->tasks = n;
		/* Candidates that are no listed task: freed, blocking-pool or stale copies. */
		for (size_t i = 0; i < t->cands_of.n; i++) {
			struct task key = {.header = cands(t)[i].header};
			st->stale += !bsearch(&key, t->tasks, n, sizeof(key), cmp_task_header);
		}
		qsort(t->tasks, n, sizeof(*t->tasks), cmp_task_id);
		for (size_t i = 0; i < n && !err; i++) {
			struct cq_rust_chain chain;
			uint64_t future = task_chain(t, ctx, &t->tasks[i], &chain);
			if (!claim_chain(ctx, future, &chain))
				err = &cq_error_nomem;
		}
	} else if (!err) {
		st->stale = t->cands_of.n;
	}
	if (!err)
		err = find_block_ons(t, ctx);
	return err;
}

static struct cq_error *tokio_decode(void *state, const struct cq_async_ctx *ctx)
{
	struct tokio *t = state;
	struct cq_error *err = report_tasks(t, ctx, t->tasks, t->ntasks);
	if (!err)
		err = report_block_ons(t, ctx);
	return err;
}

/* The "tokio_" keys of the async statistics. */
static void tokio_report(const void *state, const struct cq_async_ctx *ctx, struct cq_stats *out,
                         struct cq_stats *warnings)
{
	(void)warnings;
	const struct tokio *t = state;
	struct cq_tokio_stats none = {0};
	const struct cq_tokio_stats *st = t ? &t->stats : &none;
	const struct cq_rust_index *ix = t ? NULL : cq_async_rust_index_built(ctx);
	if (ix) {
		/* Not used: only what the type index holds. */
		none.kinds = tokio_part(ix)->n;
		none.unresolved = tokio_part(ix)->unresolved;
	}
	const char *keys[] = {"tokio_task_types",
	                      "tokio_unresolved",
	                      "tokio_vtables",
	                      "tokio_candidates",
	                      "tokio_lists",
	                      "tokio_tasks",
	                      "tokio_stale",
	                      "tokio_broken_lists",
	                      "tokio_reported",
	                      "tokio_over_limit",
	                      "tokio_block_on",
	                      "tokio_block_on_scanned",
	                      "tokio_block_on_rejected"};
	uint64_t vals[] = {st->kinds,
	                   st->unresolved,
	                   st->vtables,
	                   st->candidates,
	                   st->lists,
	                   st->tasks,
	                   st->stale,
	                   st->broken,
	                   st->reported,
	                   st->over_limit,
	                   st->block_on,
	                   st->block_on_scanned,
	                   st->block_on_rejected};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		cq_stats_uint(out, keys[i], vals[i]);
	cq_stats_bool(out, "tokio_truncated", st->truncated);
}

/* ---- tokio's part of the Rust type index (tokio_index.h) ------------------------- */

/* What the walk of one module collects for tokio. */
struct tokio_walk {
	/* the out-of-line poll<T, S> functions: raw::poll (is_raw) and the others */
	struct {
		uint64_t addr, end;
		Dwarf_Off die;
		bool is_raw;
	} * polls;
	size_t npolls, cap_polls;
	Dwarf_Off *task_types; /* the structs of task::{core,raw} */
	size_t ntask_types, cap_task_types;
	Dwarf *dwarf;
};

#define grow cq_rust_grow

static void *ti_begin(void)
{
	return calloc(1, sizeof(struct tokio_walk));
}

/* True when namespace node ns is `...::task::<leaf>` (tokio's runtime::task::core / raw). */
static bool in_task_ns(const struct cq_rust_walk *w, int32_t ns, const char *leaf)
{
	int32_t up;
	const char *name = cq_rust_walk_ns(w, ns, &up);
	if (!name || strcmp(name, leaf) != 0)
		return false;
	const char *upname = cq_rust_walk_ns(w, up, &up);
	return upname && strcmp(upname, "task") == 0;
}

/*
 * An out-of-line poll<T, S>: tokio's raw::poll (the vtable's entry, is_raw)
 * or any other poll with two generic arguments (Harness::poll, Core::poll:
 * add_poll_code keeps those whose arguments are a task kind's), its code
 * and DIE.
 */
static void add_raw_poll(struct tokio_walk *tw, Dwarf_Die *die, bool is_raw)
{
	Dwarf_Addr lo;
	if (dwarf_lowpc(die, &lo) != 0 ||
	    !grow((void **)&tw->polls, &tw->cap_polls, tw->npolls + 1, sizeof(*tw->polls)))
		return;
	Dwarf_Addr hi;
	tw->polls[tw->npolls].addr = lo;
	tw->polls[tw->npolls].end = dwarf_highpc(die, &hi) == 0 && hi > lo ? hi : lo + 1;
	tw->polls[tw->npolls].die = dwarf_dieoffset(die);
	tw->polls[tw->npolls].is_raw = is_raw;
	tw->npolls++;
}

static bool ti_visit(void *st, const struct cq_rust_walk *w, void *d, int tag, const char *name,
                     int32_t ns)
{
	struct tokio_walk *tw = st;
	Dwarf_Die *die = d;
	tw->dwarf = cq_rust_walk_dwarf(w);
	if (tag == DW_TAG_structure_type) {
		if ((in_task_ns(w, ns, "core") || in_task_ns(w, ns, "raw")) &&
		    grow((void **)&tw->task_types, &tw->cap_task_types, tw->ntask_types + 1,
		         sizeof(*tw->task_types)))
			tw->task_types[tw->ntask_types++] = dwarf_dieoffset(die);
		return false;
	}
	if (tag != DW_TAG_subprogram || strncmp(name, "poll<", 5) != 0)
		return false;
	if (in_task_ns(w, ns, "raw")) {
		add_raw_poll(tw, die, true);
		return true;
	}
	if (strchr(name, ',')) {
		add_raw_poll(tw, die, false);
		return true;
	}
	return false;
}

/*
 * The functions that drive the future of tokio's block_on, by the path in
 * their linkage names, and the variable that holds the future there (the
 * argument, then the pinned local after pin!): CachedParkThread::block_on
 * (multi_thread runtime, #[tokio::main]) and CurrentThread::block_on
 * (current_thread runtime; LocalSet::block_on comes through it).
 */
static const struct {
	const char *path;
	const char *var;
} block_on_fns[] = {
    {"5tokio7runtime4park", "f"},
    {"5tokio7runtime9scheduler14current_thread13CurrentThread", "future"},
};

static const char *ti_block_on_var(const char *link)
{
	if (!strstr(link, "8block_on17h"))
		return NULL;
	for (size_t i = 0; i < sizeof(block_on_fns) / sizeof(block_on_fns[0]); i++)
		if (strstr(link, block_on_fns[i].path))
			return block_on_fns[i].var;
	return NULL;
}

/* A struct of tokio's task::{core,raw} namespaces by its DW_AT_name. */
static bool task_type(const struct tokio_walk *tw, const char *name, Dwarf_Die *out)
{
	for (size_t i = 0; i < tw->ntask_types; i++) {
		if (!dwarf_offdie(tw->dwarf, tw->task_types[i], out))
			continue;
		const char *n = dwarf_diename(out);
		if (n && strcmp(n, name) == 0)
			return true;
	}
	return false;
}

/* The offset of member `name` of type `t`, searched down to depth nested structs. */
static bool member_at(Dwarf_Die *t, const char *name, unsigned depth, uint64_t *off,
                      Dwarf_Die *type)
{
	Dwarf_Die ignored;
	return cq_dwt_find_member(t, cq_dwt_named, name, depth, off, type ? type : &ignored);
}

/* Header, Vtable and Trailer: the same for every task type of one tokio. */
static bool task_frame_layout(const struct tokio_walk *w, struct cq_tokio_kind *k)
{
	Dwarf_Die hdr, vt, tr, owned;
	uint64_t owned_off, next_off;
	return task_type(w, "Header", &hdr) && task_type(w, "Vtable", &vt) &&
	       task_type(w, "Trailer", &tr) && member_at(&hdr, "state", 0, &k->hdr_state, NULL) &&
	       member_at(&hdr, "vtable", 0, &k->hdr_vtable, NULL) &&
	       member_at(&hdr, "owner_id", 0, &k->hdr_owner, NULL) &&
	       member_at(&vt, "poll", 0, &k->vt_poll, NULL) &&
	       member_at(&vt, "trailer_offset", 0, &k->vt_trailer, NULL) &&
	       member_at(&vt, "scheduler_offset", 0, &k->vt_scheduler, NULL) &&
	       member_at(&vt, "id_offset", 0, &k->vt_id, NULL) &&
	       member_at(&tr, "owned", 0, &owned_off, &owned) &&
	       member_at(&owned, "next", 4, &next_off, NULL) &&
	       (k->trailer_next = owned_off + next_off, true);
}

/*
 * A task list's type: a runtime's OwnedTasks<S>, or a LocalSet's
 * LocalOwnedTasks<S> (S: Arc<task::local::Shared>), which has the same id
 * and, nested, the same list head.
 */
static bool owned_tasks_type(Dwarf_Die *member, Dwarf_Die *type, const void *arg)
{
	(void)arg;
	return cq_dwt_type_prefixed(member, type, "OwnedTasks<") ||
	       cq_dwt_type_prefixed(member, type, "LocalOwnedTasks<");
}

#define MAX_CORE_NAME 4096

/*
 * One raw::poll<T, S>: where T sits in Core<T, S> relative to task_id, and
 * where S leads to the runtime's (or the LocalSet's) task list.
 */
static bool tokio_kind(struct cq_rust_walk *w, const struct tokio_walk *tw, Dwarf_Die *poll,
                       struct cq_tokio_kind *k)
{
	const char *name = dwarf_diename(poll);
	Dwarf_Die t, sched, core, ptr, shared, owned;
	if (!name || !cq_rust_walk_template_param(poll, "T", &t) ||
	    !cq_rust_walk_template_param(poll, "S", &sched))
		return false;
	const char *tname = dwarf_diename(&t), *sname = dwarf_diename(&sched);
	char core_name[MAX_CORE_NAME];
	if (!tname || !sname ||
	    (size_t)snprintf(core_name, sizeof(core_name), "Core%s", name + 4) >= sizeof(core_name))
		return false;
	uint64_t id_off, fut_off, owned_off;
	if (!task_type(tw, core_name, &core) || !member_at(&core, "task_id", 0, &id_off, NULL) ||
	    !cq_dwt_find_member(&core, cq_dwt_type_named, tname, 8, &fut_off, &t))
		return false;
	if (!cq_dwt_find_member(&sched, cq_dwt_pointer, NULL, 4, &k->sched_ptr, &ptr) ||
	    !cq_dwt_type(&ptr, &shared) || !cq_dwt_peel(&shared) ||
	    !cq_dwt_find_member(&shared, owned_tasks_type, NULL, 6, &owned_off, &owned) ||
	    !member_at(&owned, "id", 0, &k->owned_id, NULL) ||
	    !member_at(&owned, "head", 6, &k->owned_head, NULL))
		return false;
	k->owned = owned_off;
	k->future_from_id = (int64_t)fut_off - (int64_t)id_off;
	k->future = cq_rust_walk_type(w, &t);
	k->scheduler = cq_rust_walk_type_name(w, &sched);
	return k->future >= 0 && k->scheduler;
}

/* The code of every poll<T, S> of the task module with kind k's T and S: where it runs. */
static void add_poll_code(const struct tokio_walk *tw, Dwarf_Die *raw, struct cq_tokio_kind *k)
{
	const char *args = dwarf_diename(raw) + 4;
	size_t n = 0;
	for (size_t i = 0; i < tw->npolls && n < CQ_TOKIO_MAX_CODE; i++) {
		Dwarf_Die d;
		const char *name;
		if (!dwarf_offdie(tw->dwarf, tw->polls[i].die, &d) || !(name = dwarf_diename(&d)) ||
		    strcmp(name + 4, args) != 0)
			continue;
		k->code[n].lo = tw->polls[i].addr;
		k->code[n].hi = tw->polls[i].end;
		n++;
	}
	k->ncode = n;
}

static void ti_free(void *part)
{
	struct cq_tokio_index *ti = part;
	if (!ti)
		return;
	for (size_t i = 0; i < ti->n; i++)
		free(ti->kinds[i].scheduler);
	free(ti->kinds);
	free(ti);
}

/* Every raw::poll<T, S> of the module walked, as tokio task kinds. */
static void *ti_finish(void *st, struct cq_rust_walk *w)
{
	struct tokio_walk *tw = st;
	struct cq_tokio_index *ti = calloc(1, sizeof(*ti));
	size_t cap = 0;
	struct cq_tokio_kind frame = {0};
	if (ti && tw->npolls > 0 && !task_frame_layout(tw, &frame)) {
		for (size_t i = 0; i < tw->npolls; i++)
			ti->unresolved++;
		tw->npolls = 0;
	}
	for (size_t i = 0; ti && i < tw->npolls; i++) {
		Dwarf_Die poll;
		struct cq_tokio_kind k = frame;
		if (!tw->polls[i].is_raw)
			continue;
		k.poll = tw->polls[i].addr;
		if (!dwarf_offdie(tw->dwarf, tw->polls[i].die, &poll) ||
		    !tokio_kind(w, tw, &poll, &k) ||
		    !grow((void **)&ti->kinds, &cap, ti->n + 1, sizeof(*ti->kinds))) {
			free(k.scheduler);
			ti->unresolved++;
			continue;
		}
		add_poll_code(tw, &poll, &k);
		ti->kinds[ti->n++] = k;
	}
	free(tw->polls);
	free(tw->task_types);
	free(tw);
	if (ti && ti->n == 0 && ti->unresolved == 0) {
		ti_free(ti);
		return NULL;
	}
	return ti;
}

static int cmp_kind(const void *a, const void *b)
{
	const struct cq_tokio_kind *x = a, *y = b;
	return x->poll < y->poll ? -1 : x->poll > y->poll;
}

static void ti_sort(void *part)
{
	struct cq_tokio_index *ti = part;
	if (ti->n > 1)
		qsort(ti->kinds, ti->n, sizeof(*ti->kinds), cmp_kind);
}

/* u32 n, u64 unresolved, per kind: u64 poll, u8 ncode, per code (u64 lo, u64 hi), u32 future,
 * u64 future_from_id, then sched_ptr, owned, owned_id, owned_head, hdr_state, hdr_vtable,
 * hdr_owner, vt_poll, vt_trailer, vt_scheduler, vt_id, trailer_next (u64 each), scheduler. */
static void ti_encode(const void *part, struct cq_wire_writer *w)
{
	const struct cq_tokio_index *ti = part;
	cq_wire_put_u32(w, (uint32_t)ti->n);
	cq_wire_put_u64(w, ti->unresolved);
	for (size_t i = 0; i < ti->n; i++) {
		const struct cq_tokio_kind *k = &ti->kinds[i];
		cq_wire_put_u64(w, k->poll);
		cq_wire_put_u8(w, (uint8_t)k->ncode);
		for (unsigned c = 0; c < k->ncode && c < CQ_TOKIO_MAX_CODE; c++) {
			cq_wire_put_u64(w, k->code[c].lo);
			cq_wire_put_u64(w, k->code[c].hi);
		}
		cq_rust_blob_put_ref(w, k->future);
		cq_wire_put_u64(w, (uint64_t)k->future_from_id);
		const uint64_t fields[] = {k->sched_ptr,    k->owned,     k->owned_id,
		                           k->owned_head,   k->hdr_state, k->hdr_vtable,
		                           k->hdr_owner,    k->vt_poll,   k->vt_trailer,
		                           k->vt_scheduler, k->vt_id,     k->trailer_next};
		for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++)
			cq_wire_put_u64(w, fields[f]);
		cq_wire_put_str(w, k->scheduler);
	}
}

#define MAX_SCHEDULER_NAME (1u << 20)

static void get_kind(struct cq_wire_reader *r, struct cq_tokio_kind *k, size_t ntypes)
{
	k->poll = cq_wire_get_u64(r);
	k->ncode = cq_wire_get_u8(r);
	if (k->ncode > CQ_TOKIO_MAX_CODE) {
		r->failed = true;
		return;
	}
	for (unsigned c = 0; c < k->ncode; c++) {
		k->code[c].lo = cq_wire_get_u64(r);
		k->code[c].hi = cq_wire_get_u64(r);
		if (k->code[c].lo > k->code[c].hi)
			r->failed = true;
	}
	k->future = cq_rust_blob_get_ref(r, ntypes, false);
	k->future_from_id = (int64_t)cq_wire_get_u64(r);
	uint64_t *fields[] = {&k->sched_ptr,  &k->owned,        &k->owned_id,  &k->owned_head,
	                      &k->hdr_state,  &k->hdr_vtable,   &k->hdr_owner, &k->vt_poll,
	                      &k->vt_trailer, &k->vt_scheduler, &k->vt_id,     &k->trailer_next};
	for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++)
		*fields[f] = cq_wire_get_u64(r);
	k->scheduler = cq_wire_get_str(r, MAX_SCHEDULER_NAME);
	if (!k->scheduler)
		r->failed = true;
}

static void *ti_decode(struct cq_wire_reader *r, size_t ntypes)
{
	/* Each kind takes at least 121 bytes, so the count cannot outrun the blob. */
	uint32_t n = cq_wire_get_count(r, 121);
	uint64_t unresolved = cq_wire_get_u64(r);
	struct cq_tokio_index *ti = r->failed ? NULL : calloc(1, sizeof(*ti));
	if (ti && !(ti->kinds = calloc(n ? n : 1, sizeof(*ti->kinds)))) {
		free(ti);
		ti = NULL;
	}
	if (!ti) {
		r->failed = true;
		return NULL;
	}
	ti->unresolved = unresolved;
	for (uint32_t i = 0; i < n && !r->failed; i++, ti->n++)
		get_kind(r, &ti->kinds[i], ntypes);
	/* The lookups binary-search them: an unsorted part is a damaged one. */
	for (size_t i = 1; i < ti->n && !r->failed; i++)
		if (ti->kinds[i].poll < ti->kinds[i - 1].poll)
			r->failed = true;
	if (r->failed) {
		ti_free(ti);
		return NULL;
	}
	return ti;
}

static bool ti_merge(void **all, void *one, unsigned origin, uint64_t bias, int32_t base)
{
	struct cq_tokio_index *a = *all, *o = one;
	if (!a) {
		a = *all = calloc(1, sizeof(*a));
		if (!a) {
			ti_free(o);
			return false;
		}
	}
	struct cq_tokio_kind *k = realloc(a->kinds, (a->n + o->n + 1) * sizeof(*k));
	if (!k) {
		ti_free(o);
		return false;
	}
	a->kinds = k;
	for (size_t i = 0; i < o->n; i++) {
		struct cq_tokio_kind x = o->kinds[i];
		x.poll += bias;
		for (unsigned c = 0; c < x.ncode; c++) {
			x.code[c].lo += bias;
			x.code[c].hi += bias;
		}
		x.future = x.future < 0 ? x.future : x.future + base;
		x.origin = origin;
		a->kinds[a->n++] = x;
	}
	a->unresolved += o->unresolved;
	free(o->kinds);
	free(o);
	return true;
}

const struct cq_rust_index_part cq_tokio_index_part = {
    .begin = ti_begin,
    .visit = ti_visit,
    .block_on_var = ti_block_on_var,
    .finish = ti_finish,
    .encode = ti_encode,
    .decode = ti_decode,
    .merge = ti_merge,
    .sort = ti_sort,
    .free = ti_free,
};

/* The slot of tokio's part among the index's parts, or -1. */
static int tokio_slot(const struct cq_rust_index *ix)
{
	for (size_t i = 0; i < ix->kinds.n; i++)
		if (ix->kinds.v[i] == &cq_tokio_index_part)
			return (int)i;
	return -1;
}

const struct cq_tokio_index *cq_tokio_index_of(const struct cq_rust_index *ix)
{
	int slot = tokio_slot(ix);
	return slot < 0 ? NULL : ix->parts[slot];
}

bool cq_tokio_index_set(struct cq_rust_index *ix, struct cq_tokio_kind *kinds, size_t n,
                        size_t unresolved)
{
	int slot = tokio_slot(ix);
	if (slot < 0 && ix->kinds.n < CQ_RUST_MAX_PARTS) { /* an index made by hand: tokio's slot */
		slot = (int)ix->kinds.n;
		ix->kinds.v[ix->kinds.n++] = &cq_tokio_index_part;
	}
	struct cq_tokio_index *ti = slot < 0 ? NULL : calloc(1, sizeof(*ti));
	if (!ti)
		return false;
	ti_free(ix->parts[slot]);
	*ti = (struct cq_tokio_index){.kinds = kinds, .n = n, .unresolved = unresolved};
	ix->parts[slot] = ti;
	return true;
}

static const char *const tokio_kinds[] = {"tokio", "block_on", NULL};

const struct cq_async_runtime cq_async_tokio = {
    .name = "tokio",
    .kinds = tokio_kinds,
    .listing = CQ_ASYNC_LIST_TASKS,
    .heading = "Tokio tasks",
    .detect = tokio_detect,
    .scan = tokio_scan,
    .claim = tokio_claim,
    .decode = tokio_decode,
    .report = tokio_report,
    .destroy = tokio_destroy,
    .rust_index_part = &cq_tokio_index_part,
};
