/*
 * task_vtables.c - task vtables and the candidates the scan finds, for the
 * runtimes that find an executor's tasks by their vtable (see
 * task_vtables.h).
 */
#include "unwind/async/task_vtables.h"

#include <stdlib.h>
#include <string.h>

bool cq_task_vtables_add(struct cq_task_vtables *v, const void *item)
{
	char *p = realloc(v->items, (v->n + 1) * v->size);
	if (!p)
		return false;
	v->items = p;
	memcpy(p + v->n++ * v->size, item, v->size);
	return true;
}

bool cq_task_vtables_find(struct cq_task_vtables *v, const struct cq_async_ctx *ctx,
                          bool (*has)(const void *arg, size_t m), uint64_t lo, uint64_t hi,
                          size_t after,
                          bool (*hit)(void *arg, uint64_t addr, const uint64_t *words), void *arg)
{
	for (size_t m = 0; m < ctx->target->nmodules; m++)
		if (has(arg, m) && !cq_async_data_words(ctx, m, lo, hi, after, hit, arg))
			return false;
	v->n = cq_async_sort_unique(v->items, v->n, v->size);
	if (v->n) {
		memcpy(&v->lo, v->items, sizeof(v->lo));
		memcpy(&v->hi, (const char *)v->items + (v->n - 1) * v->size, sizeof(v->hi));
	}
	return true;
}

const void *cq_task_vtables_at(const struct cq_task_vtables *v, uint64_t addr)
{
	if (addr < v->lo || addr > v->hi || v->n == 0)
		return NULL;
	size_t lo = 0, hi = v->n;
	const char *items = v->items;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t at;
		memcpy(&at, items + mid * v->size, sizeof(at));
		if (at == addr)
			return items + mid * v->size;
		if (at < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

size_t cq_task_vtables_index(const struct cq_task_vtables *v, const void *item)
{
	return (size_t)((const char *)item - (const char *)v->items) / v->size;
}

void cq_task_vtables_free(struct cq_task_vtables *v)
{
	free(v->items);
	v->items = NULL;
	v->n = 0;
}

void cq_task_vtables_scan(const struct cq_task_vtables *v, struct cq_task_candidates *cands,
                          const struct cq_async_chunk *c,
                          void (*found)(void *arg, const void *vtable, uint64_t where), void *arg)
{
	if (cands->full || !c->data)
		return;
	const uint8_t *d = c->data;
	uint64_t lo = v->lo, hi = v->hi;
	size_t n = c->len / 8;
	for (size_t i = c->overlap / 8; i < n && !cands->full; i++) {
		uint64_t w;
		memcpy(&w, d + 8 * i, sizeof(w));
		if (w < lo || w > hi)
			continue;
		const void *vt = cq_task_vtables_at(v, w);
		if (vt)
			found(arg, vt, c->addr + 8 * i);
	}
}

void *cq_task_candidates_push(struct cq_task_candidates *c)
{
	if (c->full)
		return NULL;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		void *p = cap > c->max ? NULL : realloc(c->items, cap * c->size);
		if (!p) {
			c->full = true;
			c->nomem = cap <= c->max;
			return NULL;
		}
		c->items = p;
		c->cap = cap;
	}
	return (char *)c->items + c->n++ * c->size;
}

void cq_task_candidates_free(struct cq_task_candidates *c)
{
	free(c->items);
	c->items = NULL;
	c->n = c->cap = 0;
}
