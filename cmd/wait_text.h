/*
 * wait_text.h - the wait-for graph (libcore/analysis/waits.h) as `stack`
 * and `info` show it: a summary (deadlocks, then the threads everyone waits
 * for), a line on each blocked thread, the JSON `waits`, `deadlocks` and
 * `waited_for` members, and the graph in graphviz's DOT language.
 */
#ifndef CQ_CMD_WAIT_TEXT_H
#define CQ_CMD_WAIT_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct cq_core;
struct cq_json;
struct cq_waits;

/*
 * The summary lines ("deadlock: ...", "hung: ..."); nothing when w is NULL.
 * It speaks only of what a person can act on: deadlocks, threads waiting for
 * a lock another thread holds, and, in a process stopped from outside (a
 * watchdog's signal, a snapshot), every chain's end.  Threads idle on a
 * condvar or a bare futex in a crash are left to their own blocks and JSON.
 */
void cmd_waits_summary(FILE *out, const struct cq_core *core, const struct cq_waits *w);

/* Whether cmd_waits_summary prints anything. */
bool cmd_waits_summary_says(const struct cq_core *core, const struct cq_waits *w);

/* The line on thread index t (into core->threads): what it waits for, or who waits for it. */
void cmd_waits_thread_line(FILE *out, const struct cq_core *core, const struct cq_waits *w,
                           size_t t);

/* The members "waits", "deadlocks" and "waited_for" (empty arrays when w is NULL). */
void cmd_waits_json(struct cq_json *j, const struct cq_core *core, const struct cq_waits *w);

/* A digraph: threads as boxes, objects as ellipses, deadlock edges in red. */
void cmd_waits_dot(FILE *out, const struct cq_core *core, const struct cq_waits *w);

#endif
