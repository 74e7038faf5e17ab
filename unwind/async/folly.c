/*
 * folly.c - the folly async-stack runtime (FACTS.md sections 3 and 4):
 * coroutine chains spliced into threads' stacks, and suspended coroutines
 * found by folly's cookie.  The same ABI serves libunifex.
 *
 * Found through the program's own symbols:
 *
 *   folly_async_stack_root_tls_key   extern "C" pthread_key_t; 0xFFFFFFFF or
 *                                    >= 1024 means no thread has a root
 *   __folly_suspended_frame_cookie   the stackRoot value of suspended leaf frames
 *   __folly_leaf_frame_store         (debug builds) unordered_set<AsyncStackFrame*>*
 *
 * A process without these symbols costs three symbol-table lookups per
 * module and nothing else: no TLS reads, no memory scan.  With them, each
 * thread's root comes from glibc's pthread_getspecific (the target's tls_get) and
 * its merged stack from the walker (folly_walk.h); the cookie scan of
 * writable memory (word_scan.h) and the debug leaf store give the
 * suspended leaves, each walked out to its outermost frame.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/memory.h"
#include "unwind/async/folly_walk.h"
#include "unwind/async/runtime.h"
#include "unwind/async/word_scan.h"

/* folly: a key >= this is not a pthread key (PTHREAD_KEYS_MAX is 1024). */
#define MAX_KEY 1024u
/* Cookie hits kept per chunk before validation. */
#define CHUNK_HITS 4096u
/* Elements read from the leaf frame store. */
#define MAX_STORE_ELEMENTS 65536u

enum { Q_KEY, Q_COOKIE, Q_STORE, Q_COUNT };

/* A growing set of leaf frame addresses, bounded by max. */
struct leaves {
	uint64_t *addr;
	size_t n, cap, max;
};

struct folly {
	bool has_key;    /* the TLS key symbol was found and holds a live key */
	uint32_t key;    /* its value (also set when not live) */
	uint64_t cookie; /* 0: no cookie symbol, or it was never set */
	uint64_t cookie_addr;
	uint64_t leaf_store;             /* value of __folly_leaf_frame_store, 0 if none */
	bool tls_from_libc;              /* when has_key: glibc's layout read from libc */
	struct cq_folly_thread *threads; /* native frames (not owned) and roots */
	struct cq_folly_step *steps;     /* one walk's output */
	size_t max_steps;
	struct leaves leaves;
	uint64_t *hits; /* CHUNK_HITS scan hits */
	struct cq_error *scan_error;
	/* What it found and did (report). */
	size_t threads_with_roots;
	uint64_t scanned_bytes;
	double scan_seconds;
};

static void folly_destroy(void *p)
{
	struct folly *f = p;
	free(f->threads);
	free(f->steps);
	free(f->leaves.addr);
	free(f->hits);
	free(f);
}

static struct cq_error *folly_detect(const struct cq_async_ctx *ctx, void **state,
                                     struct cq_async_needs *needs)
{
	const struct cq_unwind_target *t = ctx->target;
	struct cq_mem *mem = t->mem;
	*state = NULL;
	struct cq_target_symbol q[Q_COUNT] = {
	    [Q_KEY] = {.name = "folly_async_stack_root_tls_key"},
	    [Q_COOKIE] = {.name = "__folly_suspended_frame_cookie"},
	    [Q_STORE] = {.name = "__folly_leaf_frame_store"},
	};
	for (size_t m = 0; t->ops->find_symbols && m < t->nmodules; m++)
		if (t->ops->find_symbols(t->ctx, m, q, Q_COUNT) == Q_COUNT)
			break;
	if (!q[Q_KEY].found && !q[Q_COOKIE].found && !q[Q_STORE].found)
		return NULL;
	struct folly *f = calloc(1, sizeof(*f));
	if (!f)
		return &cq_error_nomem;
	if (q[Q_KEY].found && cq_mem_read_u32(mem, q[Q_KEY].addr, &f->key))
		f->has_key = f->key < MAX_KEY;
	if (q[Q_COOKIE].found) {
		f->cookie_addr = q[Q_COOKIE].addr;
		if (!cq_mem_read_u64(mem, q[Q_COOKIE].addr, &f->cookie))
			f->cookie = 0;
	}
	if (q[Q_STORE].found && !cq_mem_read_u64(mem, q[Q_STORE].addr, &f->leaf_store))
		f->leaf_store = 0;
	if (f->has_key)
		f->tls_from_libc = t->ops->tls_prepare(t->ctx);
	f->leaves.max = ctx->max_suspended;
	f->max_steps = ctx->unwind->max_frames ? ctx->unwind->max_frames : 1;
	f->steps = calloc(f->max_steps, sizeof(*f->steps));
	if (!f->steps || (f->cookie && !(f->hits = malloc(CHUNK_HITS * sizeof(*f->hits))))) {
		folly_destroy(f);
		return &cq_error_nomem;
	}
	*needs = (struct cq_async_needs){.native_frames = true,
	                                 .scan = f->cookie != 0,
	                                 .scan_lo = f->cookie,
	                                 .scan_hi = f->cookie};
	*state = f;
	return NULL;
}

/* Thread th's current AsyncStackRoot *, or 0. */
static uint64_t thread_root(const struct cq_unwind_target *t, const struct folly *f, size_t th)
{
	uint64_t holder, root;
	if (!f->has_key || t->ops->tls_get(t->ctx, th, f->key, &holder) != CQ_TARGET_TLS_VALUE ||
	    holder == 0 || !cq_mem_read_u64(t->mem, holder, &root))
		return 0;
	return root;
}

/* folly_walk.h's same_function hook, by the target's function names. */
static enum cq_folly_same same_function(void *ctx, uint64_t native_pc, bool is_ra,
                                        uint64_t async_ip)
{
	const struct cq_unwind_target *t = ctx;
	const char *a = t->ops->function_at(t->ctx, native_pc, is_ra);
	const char *b = t->ops->function_at(t->ctx, async_ip, true);
	if (!a || !b)
		return CQ_FOLLY_SAME_UNKNOWN;
	return strcmp(a, b) == 0 ? CQ_FOLLY_SAME_YES : CQ_FOLLY_SAME_NO;
}

/* Are a and b in the same named function of the same module? */
static bool same_function_frame(const struct cq_stack_frame *a, const struct cq_stack_frame *b)
{
	return a->function && b->function && a->module == b->module &&
	       strcmp(a->function, b->function) == 0;
}

/*
 * Turns a walk's steps into symbolized frames.  Consecutive async frames
 * whose return addresses are in the same function become one (the first,
 * with its inline frames), with a repeat count, and so do async frames and
 * the native frame right after them when it is in their function; a native
 * step keeps its join rule and thread switch.
 */
static struct cq_error *add_steps(const struct folly *f, const struct cq_async_ctx *ctx,
                                  struct cq_frame_list *fl, const struct cq_folly_out *out)
{
	const struct cq_unwind_target *tg = ctx->target;
	struct cq_error *err = NULL;
	size_t prev = SIZE_MAX; /* start of the previous async step's frames */
	for (size_t i = 0; i < out->nsteps && !err; i++) {
		const struct cq_folly_step *s = &out->steps[i];
		size_t start = fl->n;
		if (s->kind == CQ_FOLLY_STEP_NATIVE) {
			err = tg->ops->add_frames(
			    tg->ctx, fl, &f->threads[s->thread].frames[s->frame], CQ_FRAME_NATIVE);
			if (err || fl->n == start)
				continue;
			fl->frames[fl->n - 1].joined = cq_folly_join_name(s->join);
			if (s->thread_switch)
				fl->frames[start].thread_switch = tg->threads[s->thread].tid;
			if (prev != SIZE_MAX &&
			    same_function_frame(&fl->frames[start - 1], &fl->frames[fl->n - 1])) {
				/*
				 * Async frames returning into the native frame that
				 * follows them (adapters of a sync_wait that is not
				 * inlined): the same activation, counted in it.
				 */
				uint32_t repeat = fl->frames[start - 1].repeat;
				memmove(&fl->frames[prev], &fl->frames[start],
				        (fl->n - start) * sizeof(*fl->frames));
				fl->n -= start - prev;
				fl->frames[fl->n - 1].repeat = repeat + 1;
			}
			prev = SIZE_MAX;
			continue;
		}
		struct cq_unwind_frame uf = {
		    .pc = s->pc, .is_return_address = true, .trust = CQ_TRUST_ASYNC};
		err = tg->ops->add_frames(tg->ctx, fl, &uf, CQ_FRAME_ASYNC);
		if (err || fl->n == start)
			continue;
		fl->frames[fl->n - 1].repeat = 1;
		if (prev != SIZE_MAX &&
		    same_function_frame(&fl->frames[start - 1], &fl->frames[fl->n - 1])) {
			fl->frames[start - 1].repeat++;
			fl->n = start;
			continue;
		}
		prev = start;
	}
	return err;
}

/* Every thread's stack becomes its merged stack. */
static struct cq_error *folly_threads(void *state, const struct cq_async_ctx *ctx)
{
	struct folly *f = state;
	struct cq_stacks *st = ctx->stacks;
	if (!(f->threads = calloc(st->nthreads ? st->nthreads : 1, sizeof(*f->threads))))
		return &cq_error_nomem;
	for (size_t t = 0; t < st->nthreads; t++) {
		f->threads[t] = (struct cq_folly_thread){.frames = ctx->native[t].frames,
		                                         .nframes = ctx->native[t].nframes,
		                                         .end = ctx->native[t].end};
		f->threads[t].root = thread_root(ctx->target, f, t);
		f->threads_with_roots += f->threads[t].root != 0;
	}
	struct cq_error *err = NULL;
	for (size_t t = 0; t < st->nthreads && !err; t++) {
		struct cq_thread_stack *ts = &st->threads[t];
		struct cq_folly_out out = {.steps = f->steps,
		                           .max_steps = f->max_steps,
		                           .same_function = ctx->named ? same_function : NULL,
		                           .same_ctx = (void *)ctx->target};
		cq_folly_merge(ctx->target, f->threads, st->nthreads, t, f->cookie, &out);
		struct cq_frame_list fl = {0};
		err = add_steps(f, ctx, &fl, &out);
		if (ts->owns_frames)
			free(ts->frames);
		ts->frames = fl.frames;
		ts->nframes = fl.n;
		ts->owns_frames = true;
		ts->end = out.end;
	}
	return err;
}

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
static bool plausible_leaf(struct cq_mem *mem, uint64_t frame, uint64_t cookie)
{
	uint64_t parent, ip, root;
	if (!cq_mem_read_u64(mem, frame, &parent) || !cq_mem_read_u64(mem, frame + 8, &ip) ||
	    !cq_mem_read_u64(mem, frame + 16, &root) || root != cookie)
		return false;
	const struct cq_mem_segment *code = cq_mem_find(mem, ip);
	if (!code || !(code->flags & CQ_MEM_EXEC))
		return false;
	return parent == 0 || (!(parent & 7) && cq_mem_find(mem, parent) != NULL);
}

static void folly_scan(void *state, const struct cq_async_ctx *ctx, const struct cq_async_chunk *c)
{
	struct folly *f = state;
	uint64_t len = c->len - c->overlap;
	f->scanned_bytes += len;
	if (!c->data)
		return;
	size_t n = cq_word_scan(c->data + c->overlap, c->addr + c->overlap, len, f->cookie, f->hits,
	                        CHUNK_HITS);
	for (size_t i = 0; i < n && i < CHUNK_HITS && !f->scan_error; i++) {
		uint64_t frame = f->hits[i] - 16;
		if (f->hits[i] == f->cookie_addr ||
		    !plausible_leaf(ctx->target->mem, frame, f->cookie))
			continue;
		f->scan_error = leaves_add(&f->leaves, frame, false);
	}
}

/*
 * libstdc++'s unordered_set<T*>: {buckets, bucket_count, before_begin.next,
 * element_count, ...}; each node is {next, value}.
 */
static struct cq_error *read_leaf_store(struct cq_mem *mem, uint64_t set, struct leaves *l)
{
	uint64_t node, count;
	if (!cq_mem_read_u64(mem, set + 16, &node) || !cq_mem_read_u64(mem, set + 24, &count))
		return NULL;
	for (uint64_t i = 0; node && i < count && i < MAX_STORE_ELEMENTS; i++) {
		uint64_t frame;
		if (!cq_mem_read_u64(mem, node + 8, &frame) || !cq_mem_read_u64(mem, node, &node))
			break;
		struct cq_error *err = frame ? leaves_add(l, frame, true) : NULL;
		if (err)
			return err;
	}
	return NULL;
}

/* Each suspended leaf, walked out to its outermost frame. */
static struct cq_error *folly_decode(void *state, const struct cq_async_ctx *ctx)
{
	struct folly *f = state;
	struct cq_error *err = f->scan_error;
	f->scan_error = NULL;
	if (f->cookie)
		f->scan_seconds = ctx->scan_seconds;
	if (!err && f->leaf_store)
		err = read_leaf_store(ctx->target->mem, f->leaf_store, &f->leaves);
	for (size_t i = 0; i < f->leaves.n && !err; i++) {
		struct cq_folly_out out = {.steps = f->steps,
		                           .max_steps = f->max_steps,
		                           .same_function = ctx->named ? same_function : NULL,
		                           .same_ctx = (void *)ctx->target};
		cq_folly_walk_suspended(ctx->target, f->threads, ctx->stacks->nthreads,
		                        f->leaves.addr[i], f->cookie, &out);
		struct cq_frame_list fl = {0};
		err = add_steps(f, ctx, &fl, &out);
		struct cq_suspended_stack s = {.kind = "folly",
		                               .leaf = f->leaves.addr[i],
		                               .frames = fl.frames,
		                               .nframes = fl.n,
		                               .end = out.end};
		bool added;
		if (err)
			free(fl.frames);
		else
			err = cq_async_add_suspended(ctx, &s, &added);
	}
	return err;
}

/*
 * The "folly" keys of the async statistics, and the warnings: threads whose
 * roots are unknown for want of a thread pointer, and a TLS layout guessed.
 */
static void folly_report(const void *state, const struct cq_async_ctx *ctx, struct cq_stats *st,
                         struct cq_stats *warnings)
{
	const struct folly *f = state;
	const struct folly none = {0};
	if (!f)
		f = &none;
	cq_stats_bool(st, "folly", state != NULL);
	if (f->has_key)
		cq_stats_uint(st, "tls_key", f->key);
	else
		cq_stats_null(st, "tls_key");
	cq_stats_string(st, "tls_layout",
	                !f->has_key        ? NULL
	                : f->tls_from_libc ? "libc"
	                                   : "fallback");
	cq_stats_uint(st, "threads_with_roots", f->threads_with_roots);
	cq_stats_bool(st, "scanned", f->cookie != 0);
	cq_stats_uint(st, "scanned_bytes", f->scanned_bytes);
	cq_stats_uint(st, "scan_us", (uint64_t)(f->scan_seconds * 1e6));
	if (!state || !f->has_key)
		return;
	const struct cq_unwind_target *t = ctx->target;
	size_t no_tp = 0;
	for (size_t i = 0; i < t->nthreads; i++)
		no_tp += !t->ops->thread_has_tp(t->ctx, i);
	char line[256];
	if (no_tp) {
		snprintf(line, sizeof(line),
		         "%zu thread%s without a thread pointer (no %s in the core): their async "
		         "roots are unknown, so their stacks are native only",
		         no_tp, no_tp == 1 ? "" : "s", t->arch->tp_name);
		cq_stats_string(warnings, NULL, line);
	}
	if (!f->tls_from_libc)
		cq_stats_string(warnings, NULL,
		                "libc's _thread_db descriptors are unavailable: thread roots read "
		                "with the Debian 12 glibc layout");
}

static const char *const folly_kinds[] = {"folly", NULL};

const struct cq_async_runtime cq_async_folly = {
    .name = "folly",
    .kinds = folly_kinds,
    .listing = CQ_ASYNC_LIST_CHAINS,
    .heading = "Suspended async stacks",
    .noun = "stack",
    .leaf = "leaf frame",
    .detect = folly_detect,
    .threads = folly_threads,
    .scan = folly_scan,
    .decode = folly_decode,
    .report = folly_report,
    .destroy = folly_destroy,
};
