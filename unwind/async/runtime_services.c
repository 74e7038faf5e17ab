/*
 * runtime_services.c - what the async runtimes call while the driver runs
 * them (runtime.h): the claims on futures, values runtimes share (built by
 * the first that asks), suspended stacks appended to the result, a
 * thread's live words, a module's data words, sorting helpers.  Nothing
 * here calls a runtime or the driver.
 */
#include "unwind/async/runtime.h"

#include <gelf.h>
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/memory.h"

#define MAX_STACK_WORDS (1u << 20)
#define MAX_SHARED      8 /* values shared in one analysis: the Rust type index */

struct cq_async_shared {
	uint64_t *claims; /* cq_async_claim; sorted on first lookup */
	size_t nclaims, cap_claims;
	bool claims_sorted;
	struct {
		const struct cq_async_share *what;
		void *value;
	} values[MAX_SHARED];
	size_t nvalues;
};

struct cq_async_shared *cq_async_shared_new(void)
{
	return calloc(1, sizeof(struct cq_async_shared));
}

void cq_async_shared_free(struct cq_async_shared *sh)
{
	if (!sh)
		return;
	for (size_t i = 0; i < sh->nvalues; i++)
		if (sh->values[i].value)
			sh->values[i].what->free(sh->values[i].value);
	free(sh->claims);
	free(sh);
}

struct cq_error *cq_async_shared_value(const struct cq_async_ctx *ctx,
                                       const struct cq_async_share *what, void **out)
{
	struct cq_async_shared *sh = ctx->shared;
	*out = NULL;
	for (size_t i = 0; i < sh->nvalues; i++)
		if (sh->values[i].what == what) {
			*out = sh->values[i].value;
			return NULL;
		}
	if (sh->nvalues == MAX_SHARED)
		return cq_error_create(CQ_ERR_LIMIT, "more than %d values shared by async runtimes",
		                       MAX_SHARED);
	void *value = NULL;
	struct cq_error *err = what->build(ctx, &value);
	if (err)
		return err;
	sh->values[sh->nvalues].what = what;
	sh->values[sh->nvalues++].value = value;
	*out = value;
	return NULL;
}

void *cq_async_shared_built(const struct cq_async_ctx *ctx, const struct cq_async_share *what)
{
	const struct cq_async_shared *sh = ctx->shared;
	for (size_t i = 0; sh && i < sh->nvalues; i++)
		if (sh->values[i].what == what)
			return sh->values[i].value;
	return NULL;
}

struct cq_error *cq_async_add_suspended(const struct cq_async_ctx *ctx,
                                        struct cq_suspended_stack *s, bool *added)
{
	struct cq_stacks *st = ctx->stacks;
	*added = false;
	assert(st->nsuspended <= st->suspended_cap || !st->suspended);
	if (st->nsuspended >= ctx->max_suspended) {
		st->suspended_dropped++;
		free(s->frames);
		return NULL;
	}
	if (st->nsuspended == st->suspended_cap) {
		/* geometric growth: a runtime of 100,000 goroutines appends in linear time */
		size_t cap = st->suspended_cap ? 2 * st->suspended_cap : 16;
		struct cq_suspended_stack *a = realloc(st->suspended, cap * sizeof(*a));
		if (!a) {
			free(s->frames);
			return &cq_error_nomem;
		}
		st->suspended = a;
		st->suspended_cap = cap;
	}
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
