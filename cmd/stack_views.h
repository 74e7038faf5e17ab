/*
 * stack_views.h - the views of `coreq stack` beyond every thread in full:
 * a selection of threads (--thread TID..., --crashed), each distinct stack
 * once with the threads that have it (--group), and folded stacks for
 * flame-graph tools (--format folded).
 */
#ifndef CQ_CMD_STACK_VIEWS_H
#define CQ_CMD_STACK_VIEWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "libcore/analysis/stacktrace.h"

#define STACK_VIEW_MAX_TIDS 256

struct stack_view {
	int64_t tids[STACK_VIEW_MAX_TIDS]; /* --thread; none: every thread */
	size_t ntids;
	bool crashed_only; /* --crashed */
	bool group;        /* --group */
};

/* Whether the view shows thread stack ts. */
bool stack_view_selected(const struct stack_view *v, const struct cq_thread_stack *ts);

/* Whether any thread the view asks for by tid is missing from stacks (its tid in *missing). */
bool stack_view_missing(const struct stack_view *v, const struct cq_stacks *s, int64_t *missing);

/* The shown threads with one stack: the first of them, and every tid, sorted. */
struct stack_group {
	const struct cq_thread_stack *first;
	int64_t *tids;
	size_t n;
	bool crashed;
};

/*
 * The distinct stacks of the shown threads (same frames: pc, kind, function,
 * and the same end), the crashed thread's first, then by thread count,
 * largest first.  NULL only when out of memory.
 */
struct stack_group *stack_view_groups(const struct stack_view *v, const struct cq_stacks *s,
                                      size_t *n);
void stack_view_groups_free(struct stack_group *g, size_t n);

/* tids as "1, 4-9, 12" into buf. */
void stack_view_tid_ranges(const int64_t *tids, size_t n, char *buf, size_t size);

/*
 * Folded stacks (flame-graph input): one line per distinct stack of the
 * shown threads, outermost frame first, frames joined by ';', then a space
 * and how many threads have it; suspended async chains (when every thread
 * is shown) as lines under a "[suspended KIND]" root, one line per group
 * of the same frames and state (task_groups.h) with its size.
 */
void stack_view_print_folded(FILE *out, const struct stack_view *v, const struct cq_stacks *s);

#endif
