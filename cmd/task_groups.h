/*
 * task_groups.h - the suspended stacks of a core (every runtime's tasks:
 * an executor's tasks, goroutines, coroutine chains) folded the way panicparse and Go's
 * GOTRACEBACK=all readers fold goroutines: the stacks of one runtime kind
 * with the same frames (function, file:line, kind, await state; the pc
 * where a frame has no name) and the same task state (a wait reason) are
 * one group, with how many there are and their ids.  `coreq stack --group`
 * prints them (text, JSON) and folds them (--format folded).
 */
#ifndef CQ_CMD_TASK_GROUPS_H
#define CQ_CMD_TASK_GROUPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/analysis/stacktrace.h"

/* One group: its first member (whose frames it shows), and every member's id and thread. */
struct task_group {
	const struct cq_suspended_stack *first;
	size_t n;         /* members */
	uint64_t *ids;    /* the members' task ids, sorted; members without one are not here */
	size_t nids;      /* so n - nids members have no id (a block_on future, a chain) */
	int64_t *threads; /* the distinct threads members run on, sorted (none: none runs) */
	size_t nthreads;
};

struct task_groups {
	struct task_group *v;
	size_t n;
	uint64_t *id_block; /* every group's ids, in one block */
	int64_t *thread_block;
};

/*
 * The groups of s's suspended stacks (those take says yes to; NULL: all),
 * largest first, then in the order of their first member.  False only when
 * out of memory (*g is then empty).
 */
bool task_groups_make(const struct cq_stacks *s, bool (*take)(const struct cq_suspended_stack *),
                      struct task_groups *g);
void task_groups_free(struct task_groups *g);

/*
 * A group's ids as "7-8, 12" into buf, then how many members have none ("7, 2
 * without an id"); a group of one without an id by its kind ("block_on").
 */
void task_group_ids_text(const struct task_group *g, char *buf, size_t size);

#endif
