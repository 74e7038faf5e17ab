/*
 * stack_views.c - thread selection, grouping of identical stacks and folded
 * stacks for `coreq stack` (see stack_views.h).
 */
#include "cmd/stack_views.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/task_groups.h"
#include "libcore/base/hash.h"
#include "libcore/model/core.h"
#include "libcore/model/module.h"

bool stack_view_selected(const struct stack_view *v, const struct cq_thread_stack *ts)
{
	if (v->crashed_only && !ts->thread->crashed)
		return false;
	if (!v->ntids)
		return true;
	for (size_t i = 0; i < v->ntids; i++)
		if (v->tids[i] == ts->thread->tid)
			return true;
	return false;
}

bool stack_view_missing(const struct stack_view *v, const struct cq_stacks *s, int64_t *missing)
{
	for (size_t i = 0; i < v->ntids; i++) {
		bool found = false;
		for (size_t t = 0; t < s->nthreads && !found; t++)
			found = s->threads[t].thread->tid == v->tids[i];
		if (!found) {
			*missing = v->tids[i];
			return true;
		}
	}
	return false;
}

static bool same_name(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static bool same_stack(const struct cq_thread_stack *a, const struct cq_thread_stack *b)
{
	if (a->nframes != b->nframes || a->end != b->end)
		return false;
	if (a->frames == b->frames)
		return true;
	for (size_t i = 0; i < a->nframes; i++) {
		const struct cq_stack_frame *x = &a->frames[i], *y = &b->frames[i];
		if (x->pc != y->pc || x->kind != y->kind || x->object != y->object ||
		    !same_name(x->function, y->function))
			return false;
	}
	return true;
}

static uint64_t stack_key(const struct cq_thread_stack *ts)
{
	uint64_t h = cq_fnv1a_step(CQ_FNV_OFFSET, ts->nframes);
	for (size_t i = 0; i < ts->nframes; i++)
		h = cq_fnv1a_step(cq_fnv1a_step(h, ts->frames[i].pc), ts->frames[i].kind);
	return h;
}

static int tid_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int group_cmp(const void *a, const void *b)
{
	const struct stack_group *x = a, *y = b;
	if (x->crashed != y->crashed)
		return x->crashed ? -1 : 1;
	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return tid_cmp(&x->tids[0], &y->tids[0]);
}

struct stack_group *stack_view_groups(const struct stack_view *v, const struct cq_stacks *s,
                                      size_t *n)
{
	*n = 0;
	size_t cap = s->nthreads ? s->nthreads : 1, nslots = 16;
	while (nslots < 2 * cap)
		nslots *= 2;
	struct stack_group *g = calloc(cap, sizeof(*g));
	size_t *slots = calloc(nslots, sizeof(*slots)); /* group index + 1 */
	int64_t *tids = calloc(cap, sizeof(*tids));     /* all groups' tids, in one block */
	size_t *fill = calloc(cap, sizeof(*fill));
	if (!g || !slots || !tids || !fill)
		goto fail;
	/* First pass: which group each shown thread joins, and the groups' sizes. */
	size_t *of = calloc(cap, sizeof(*of));
	if (!of)
		goto fail;
	for (size_t t = 0; t < s->nthreads; t++) {
		const struct cq_thread_stack *ts = &s->threads[t];
		of[t] = SIZE_MAX;
		if (!stack_view_selected(v, ts))
			continue;
		size_t i = (size_t)stack_key(ts) & (nslots - 1);
		while (slots[i] && !same_stack(g[slots[i] - 1].first, ts))
			i = (i + 1) & (nslots - 1);
		if (!slots[i]) {
			g[*n].first = ts;
			slots[i] = ++*n;
		}
		size_t k = slots[i] - 1;
		g[k].n++;
		g[k].crashed |= ts->thread->crashed;
		of[t] = k;
	}
	size_t at = 0;
	for (size_t k = 0; k < *n; k++) {
		g[k].tids = tids + at;
		at += g[k].n;
	}
	for (size_t t = 0; t < s->nthreads; t++)
		if (of[t] != SIZE_MAX)
			g[of[t]].tids[fill[of[t]]++] = s->threads[t].thread->tid;
	for (size_t k = 0; k < *n; k++)
		qsort(g[k].tids, g[k].n, sizeof(int64_t), tid_cmp);
	free(of);
	free(fill);
	free(slots);
	/* The groups point into one tid block, which stack_view_groups_free finds again. */
	qsort(g, *n, sizeof(*g), group_cmp);
	if (*n == 0)
		free(tids);
	return g;
fail:
	free(g);
	free(slots);
	free(tids);
	free(fill);
	*n = 0;
	return NULL;
}

void stack_view_groups_free(struct stack_group *g, size_t n)
{
	if (!g)
		return;
	/* Every group's tids lie in one block: the lowest pointer is its start. */
	int64_t *block = NULL;
	for (size_t k = 0; k < n; k++)
		if (!block || g[k].tids < block)
			block = g[k].tids;
	free(block);
	free(g);
}

void stack_view_tid_ranges(const int64_t *tids, size_t n, char *buf, size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && used + 1 < size;) {
		size_t j = i;
		while (j + 1 < n && tids[j + 1] == tids[j] + 1)
			j++;
		int w =
		    j > i ? snprintf(buf + used, size - used, "%s%" PRId64 "-%" PRId64,
		                     i ? ", " : "", tids[i], tids[j])
		          : snprintf(buf + used, size - used, "%s%" PRId64, i ? ", " : "", tids[i]);
		if (w < 0 || (size_t)w >= size - used) {
			if (size > 4)
				strcpy(buf + size - 4, "...");
			return;
		}
		used += (size_t)w;
		i = j + 1;
	}
}

/* A frame's name in a folded stack: no ';' (the separator) and no control bytes. */
static void put_folded_name(FILE *out, const struct cq_stack_frame *f)
{
	char fallback[96];
	const char *name = f->function;
	if (!name) {
		if (f->module)
			snprintf(fallback, sizeof(fallback), "%s+0x%" PRIx64,
			         cq_module_basename(f->module), f->offset);
		else
			snprintf(fallback, sizeof(fallback), "0x%" PRIx64, f->pc);
		name = fallback;
	}
	for (const char *p = cmd_safe(name); *p; p++)
		fputc(*p == ';' ? ':' : *p == ' ' ? '_' : *p, out);
	if (f->kind == CQ_FRAME_INLINE)
		fputs("_[i]", out);
	else if (f->kind == CQ_FRAME_ASYNC)
		fputs("_[a]", out);
	else if (f->kind == CQ_FRAME_PYTHON)
		fputs("_[py]", out);
}

static void put_folded(FILE *out, const char *root, const struct cq_stack_frame *frames, size_t n,
                       size_t count)
{
	if (root)
		fputs(root, out);
	for (size_t i = n; i-- > 0;) {
		if (root || i + 1 < n)
			fputc(';', out);
		put_folded_name(out, &frames[i]);
	}
	fprintf(out, " %zu\n", count);
}

void stack_view_print_folded(FILE *out, const struct stack_view *v, const struct cq_stacks *s)
{
	size_t n;
	struct stack_group *g = stack_view_groups(v, s, &n);
	for (size_t k = 0; g && k < n; k++)
		put_folded(out, NULL, g[k].first->frames, g[k].first->nframes, g[k].n);
	stack_view_groups_free(g, n);
	if (v->ntids || v->crashed_only)
		return;
	struct task_groups tg;
	if (!task_groups_make(s, NULL, &tg))
		return;
	for (size_t k = 0; k < tg.n; k++) {
		char root[64];
		const struct cq_suspended_stack *ss = tg.v[k].first;
		snprintf(root, sizeof(root), "[suspended_%s]", ss->kind);
		put_folded(out, root, ss->frames, ss->nframes, tg.v[k].n);
	}
	task_groups_free(&tg);
}
