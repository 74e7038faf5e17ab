/*
 * stack_pool.c - identical thread stacks stored once (see stack_pool.h).
 */
#include "libcore/analysis/stack_pool.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/hash.h"

/* An in-memory key (never stored): pcs, kinds and names' addresses. */
static uint64_t stack_hash(const struct cq_stack_frame *f, size_t n)
{
	uint64_t h = cq_fnv1a_step(CQ_FNV_OFFSET, n);
	for (size_t i = 0; i < n; i++) {
		h = cq_fnv1a_step(h, f[i].pc);
		h = cq_fnv1a_step(h, (uint64_t)f[i].kind << 8 | f[i].trust);
		h = cq_fnv1a_step(h, (uint64_t)(uintptr_t)f[i].function);
	}
	return h ^ (h >> 29);
}

static bool frame_equal(const struct cq_stack_frame *a, const struct cq_stack_frame *b)
{
	return a->pc == b->pc && a->kind == b->kind && a->trust == b->trust &&
	       a->module == b->module && a->offset == b->offset && a->function == b->function &&
	       a->symbol == b->symbol && a->file == b->file && a->line == b->line &&
	       a->state == b->state && a->object == b->object && a->repeat == b->repeat &&
	       a->joined == b->joined && a->thread_switch == b->thread_switch;
}

static bool stack_equal(const struct cq_stack_frame *a, const struct cq_stack_frame *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!frame_equal(&a[i], &b[i]))
			return false;
	return true;
}

/* The slot holding a stack equal to frames[0..n), or the empty slot for it. */
static uint32_t *probe(struct cq_stack_pool *p, uint64_t hash, const struct cq_stack_frame *frames,
                       size_t n)
{
	size_t mask = p->nslots - 1;
	for (size_t i = (size_t)hash & mask;; i = (i + 1) & mask) {
		uint32_t *slot = &p->slots[i];
		if (!*slot)
			return slot;
		size_t k = *slot - 1;
		if (p->hashes[k] == hash && p->lengths[k] == n &&
		    stack_equal(p->arrays[k], frames, n))
			return slot;
	}
}

static bool grow(struct cq_stack_pool *p)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		if (cap > UINT32_MAX - 1)
			return false;
		struct cq_stack_frame **arrays = realloc(p->arrays, cap * sizeof(*arrays));
		if (!arrays)
			return false;
		p->arrays = arrays;
		size_t *lengths = realloc(p->lengths, cap * sizeof(*lengths));
		if (!lengths)
			return false;
		p->lengths = lengths;
		uint64_t *hashes = realloc(p->hashes, cap * sizeof(*hashes));
		if (!hashes)
			return false;
		p->hashes = hashes;
		p->cap = cap;
	}
	if ((p->n + 1) * 2 <= p->nslots)
		return true;
	size_t nslots = p->nslots ? p->nslots * 2 : 128;
	uint32_t *slots = calloc(nslots, sizeof(*slots));
	if (!slots)
		return false;
	free(p->slots);
	p->slots = slots;
	p->nslots = nslots;
	for (size_t k = 0; k < p->n; k++)
		*probe(p, p->hashes[k], p->arrays[k], p->lengths[k]) = (uint32_t)(k + 1);
	return true;
}

struct cq_error *cq_stack_pool_intern(struct cq_stack_pool *p, struct cq_stack_frame *frames,
                                      size_t n, const struct cq_stack_frame **out)
{
	*out = NULL;
	if (!grow(p)) {
		free(frames);
		return &cq_error_nomem;
	}
	uint64_t hash = stack_hash(frames, n);
	uint32_t *slot = probe(p, hash, frames, n);
	if (*slot) {
		free(frames);
		*out = p->arrays[*slot - 1];
		return NULL;
	}
	/* A new stack: trimmed to its length, since most stacks stay short. */
	struct cq_stack_frame *fit = n ? realloc(frames, n * sizeof(*frames)) : NULL;
	if (n && !fit)
		fit = frames;
	else if (!n)
		free(frames);
	p->arrays[p->n] = fit;
	p->lengths[p->n] = n;
	p->hashes[p->n] = hash;
	*slot = (uint32_t)++p->n;
	*out = fit;
	return NULL;
}

void cq_stack_pool_free(struct cq_stack_pool *p)
{
	for (size_t k = 0; k < p->n; k++)
		free(p->arrays[k]);
	free(p->arrays);
	free(p->lengths);
	free(p->hashes);
	free(p->slots);
	memset(p, 0, sizeof(*p));
}
