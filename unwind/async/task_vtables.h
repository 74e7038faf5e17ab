/*
 * task_vtables.h - what the runtimes that find an executor's tasks by their
 * vtable share (tokio, async_task): the task vtables found in the modules'
 * data (sorted by address, with their range, for the scan's range
 * compare), and the candidate task headers the driver's one scan finds (a
 * word equal to a vtable's address), bounded.  Each runtime keeps its own
 * record per vtable and per candidate: these hold them as bytes, each
 * record starting with its uint64_t address (vtables).
 *
 * Layer: unwind (unwind/async/).
 */
#ifndef CQ_ASYNC_TASK_VTABLES_H
#define CQ_ASYNC_TASK_VTABLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind/async/runtime.h"

struct cq_task_vtables {
	void *items;    /* size bytes each, starting with the vtable's address; sorted once found */
	size_t n, size; /* size: set by the runtime before the first add */
	uint64_t lo, hi; /* the lowest and highest address (0, 0: none) */
};

/* Appends one vtable record; false when out of memory. */
bool cq_task_vtables_add(struct cq_task_vtables *v, const void *item);

/*
 * Looks in the data of every module m for which has(arg, m) is true for
 * words in [lo, hi] (cq_async_data_words: hit(arg, addr, words) with the
 * `after` words that follow), hit adding the vtables it confirms; then
 * sorts them, keeps one per address and sets the range.  False when out
 * of memory.
 */
bool cq_task_vtables_find(struct cq_task_vtables *v, const struct cq_async_ctx *ctx,
                          bool (*has)(const void *arg, size_t m), uint64_t lo, uint64_t hi,
                          size_t after,
                          bool (*hit)(void *arg, uint64_t addr, const uint64_t *words), void *arg);

/* The vtable record at addr, or NULL. */
const void *cq_task_vtables_at(const struct cq_task_vtables *v, uint64_t addr);

/* Its index among the sorted records. */
size_t cq_task_vtables_index(const struct cq_task_vtables *v, const void *item);

void cq_task_vtables_free(struct cq_task_vtables *v);

/* The candidates a scan found, at most max (a bound, not an error: full then says so). */
struct cq_task_candidates {
	void *items;
	size_t n, cap, size, max; /* size and max: set by the runtime */
	bool full;                /* one was not kept: at max, or out of memory (nomem) */
	bool nomem;
};

/*
 * The scan hook's loop: for every word of chunk c (its bytes; none when
 * c->data is NULL) whose value is a vtable's address, found(arg, record,
 * address of the word) appends its candidate (cq_task_candidates_push);
 * stops when the candidates are full.
 */
void cq_task_vtables_scan(const struct cq_task_vtables *v, struct cq_task_candidates *cands,
                          const struct cq_async_chunk *c,
                          void (*found)(void *arg, const void *vtable, uint64_t where), void *arg);

/* Room for one more candidate, counted in n; NULL when full. */
void *cq_task_candidates_push(struct cq_task_candidates *c);

void cq_task_candidates_free(struct cq_task_candidates *c);

#endif
