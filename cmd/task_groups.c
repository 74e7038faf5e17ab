/*
 * task_groups.c - the suspended stacks of a core folded into groups of the
 * same frames and task state, with their ids (see task_groups.h).
 */
#include "cmd/task_groups.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/hash.h"

static bool same_text(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/*
 * Strings' hashes by address: the frames of many tasks point to the same
 * few names, so each is hashed once, not once per frame (a hash is of the
 * content, so two copies of a name at two addresses still hash alike).
 */
#define TEXT_MEMO 1024
struct text_memo {
	const char *s[TEXT_MEMO];
	uint64_t h[TEXT_MEMO];
};

static uint64_t hash_text(struct text_memo *m, uint64_t h, const char *s)
{
	if (!s)
		return cq_fnv1a_step(h, 0);
	size_t k = ((uintptr_t)s >> 3) & (TEXT_MEMO - 1);
	if (m->s[k] != s) {
		m->s[k] = s;
		m->h[k] = cq_fnv1a(CQ_FNV_OFFSET, s, strlen(s));
	}
	return cq_fnv1a_step(h, m->h[k]);
}

/* What a group shares of a frame: not its object (each member has its own), nor a named pc. */
static bool same_frame(const struct cq_stack_frame *x, const struct cq_stack_frame *y)
{
	if (x->kind != y->kind || x->line != y->line || !same_text(x->function, y->function) ||
	    !same_text(x->file, y->file) || !same_text(x->state, y->state))
		return false;
	return x->function || x->pc == y->pc;
}

static bool same_task(const struct cq_suspended_stack *a, const struct cq_suspended_stack *b)
{
	if (a->nframes != b->nframes || a->end != b->end || a->has_task != b->has_task ||
	    !same_text(a->kind, b->kind) || !same_text(a->task_state, b->task_state))
		return false;
	for (size_t i = 0; i < a->nframes; i++)
		if (!same_frame(&a->frames[i], &b->frames[i]))
			return false;
	return true;
}

static uint64_t task_key(struct text_memo *m, const struct cq_suspended_stack *s)
{
	uint64_t h = hash_text(m, hash_text(m, CQ_FNV_OFFSET, s->kind), s->task_state);
	h = cq_fnv1a_step(cq_fnv1a_step(h, s->nframes), s->end);
	for (size_t i = 0; i < s->nframes; i++) {
		const struct cq_stack_frame *f = &s->frames[i];
		h = cq_fnv1a_step(cq_fnv1a_step(h, f->kind), (uint64_t)(int64_t)f->line);
		h = f->function ? hash_text(m, h, f->function) : cq_fnv1a_step(h, f->pc);
		h = hash_text(m, hash_text(m, h, f->file), f->state);
	}
	return h;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Largest first, then by first member (the order the runtimes listed them). */
static int group_cmp(const void *a, const void *b)
{
	const struct task_group *x = a, *y = b;
	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return (x->first > y->first) - (x->first < y->first);
}

/* Which group each stack joins (of[i]), the groups' first members and sizes. */
static bool assign(const struct cq_stacks *s, bool (*take)(const struct cq_suspended_stack *),
                   struct task_groups *g, size_t *of)
{
	size_t nslots = 16;
	while (nslots < 2 * s->nsuspended)
		nslots *= 2;
	size_t *slots = calloc(nslots, sizeof(*slots)); /* group index + 1 */
	struct text_memo *memo = calloc(1, sizeof(*memo));
	if (!slots || !memo) {
		free(slots);
		free(memo);
		return false;
	}
	for (size_t i = 0; i < s->nsuspended; i++) {
		const struct cq_suspended_stack *ss = &s->suspended[i];
		of[i] = SIZE_MAX;
		if (take && !take(ss))
			continue;
		size_t k = (size_t)task_key(memo, ss) & (nslots - 1);
		while (slots[k] && !same_task(g->v[slots[k] - 1].first, ss))
			k = (k + 1) & (nslots - 1);
		if (!slots[k]) {
			g->v[g->n].first = ss;
			slots[k] = ++g->n;
		}
		of[i] = slots[k] - 1;
		g->v[of[i]].n++;
	}
	free(slots);
	free(memo);
	return true;
}

/* Every group's ids and threads into the blocks, sorted, threads once each. */
static void fill_members(const struct cq_stacks *s, struct task_groups *g, const size_t *of)
{
	size_t at = 0;
	for (size_t k = 0; k < g->n; k++) {
		g->v[k].ids = g->id_block + at;
		g->v[k].threads = g->thread_block + at;
		at += g->v[k].n;
	}
	for (size_t i = 0; i < s->nsuspended; i++) {
		const struct cq_suspended_stack *ss = &s->suspended[i];
		if (of[i] == SIZE_MAX)
			continue;
		struct task_group *t = &g->v[of[i]];
		if (ss->task_id)
			t->ids[t->nids++] = ss->task_id;
		if (ss->thread)
			t->threads[t->nthreads++] = ss->thread;
	}
	for (size_t k = 0; k < g->n; k++) {
		struct task_group *t = &g->v[k];
		qsort(t->ids, t->nids, sizeof(*t->ids), u64_cmp);
		qsort(t->threads, t->nthreads, sizeof(*t->threads), i64_cmp);
		size_t u = 0;
		for (size_t i = 0; i < t->nthreads; i++)
			if (!u || t->threads[u - 1] != t->threads[i])
				t->threads[u++] = t->threads[i];
		t->nthreads = u;
	}
}

bool task_groups_make(const struct cq_stacks *s, bool (*take)(const struct cq_suspended_stack *),
                      struct task_groups *g)
{
	*g = (struct task_groups){0};
	size_t cap = s->nsuspended ? s->nsuspended : 1;
	size_t *of = malloc(cap * sizeof(*of));
	g->v = calloc(cap, sizeof(*g->v));
	g->id_block = malloc(cap * sizeof(*g->id_block));
	g->thread_block = malloc(cap * sizeof(*g->thread_block));
	if (!of || !g->v || !g->id_block || !g->thread_block || !assign(s, take, g, of)) {
		free(of);
		task_groups_free(g);
		return false;
	}
	fill_members(s, g, of);
	free(of);
	qsort(g->v, g->n, sizeof(*g->v), group_cmp);
	return true;
}

void task_groups_free(struct task_groups *g)
{
	free(g->v);
	free(g->id_block);
	free(g->thread_block);
	*g = (struct task_groups){0};
}

void task_group_ids_text(const struct task_group *g, char *buf, size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < g->nids && used + 1 < size;) {
		size_t j = i;
		while (j + 1 < g->nids && g->ids[j + 1] == g->ids[j] + 1)
			j++;
		int w = j > i ? snprintf(buf + used, size - used, "%s%" PRIu64 "-%" PRIu64,
		                         i ? ", " : "", g->ids[i], g->ids[j])
		              : snprintf(buf + used, size - used, "%s%" PRIu64, i ? ", " : "",
		                         g->ids[i]);
		if (w < 0 || (size_t)w >= size - used)
			goto cut;
		used += (size_t)w;
		i = j + 1;
	}
	if (g->nids < g->n) {
		size_t left = g->n - g->nids;
		int w = left == g->n && left == 1
		            ? snprintf(buf + used, size - used, "%s", g->first->kind)
		            : snprintf(buf + used, size - used, "%s%zu without an id",
		                       used ? ", " : "", left);
		if (w < 0 || (size_t)w >= size - used)
			goto cut;
	}
	return;
cut:
	if (size > 4)
		strcpy(buf + size - 4, "...");
}
