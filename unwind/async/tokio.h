/*
 * tokio.h - every task of every tokio runtime in the process, from the core
 * alone: the "tokio" async runtime (runtime.h).
 *
 * tokio keeps each spawned task in one heap cell (FACTS.md section 9): a
 * Header {state, queue_next, vtable, owner_id}, a Core {scheduler, task_id,
 * stage holding the future}, a Trailer {the links of its runtime's
 * OwnedTasks list}.  The Rust index (rust_index.h) reads, for each
 * `raw::poll<T, S>`, where everything is, from DWARF.  Then:
 *   1. vtables: each task type's static raw::Vtable is found in its
 *      module's data as the word holding raw::poll<T, S>'s address;
 *   2. candidates: the driver's one scan of writable memory finds every word
 *      equal to a vtable address: a header candidate, or a stale copy;
 *   3. lists: each candidate's scheduler pointer leads to its runtime's
 *      OwnedTasks.  A list is believed when its id is non-zero; it is walked
 *      from its head, and each element must have a known vtable and the
 *      list's id as owner_id.  Only the tasks of a list are reported, each
 *      once: a freed task, a blocking-pool task (owner_id 0) and a stale
 *      copy are not in any list;
 *   4. per task: its id, its state from the header bits, the thread running
 *      it (the one whose live stack holds its header, for a running task)
 *      and its future's await chain (rust_decode.h), not decoded when the
 *      task is running or complete (its state is stale or gone);
 *   5. the future that `#[tokio::main]` / Runtime::block_on drives is no
 *      task: it is the argument `f` of CachedParkThread::block_on<F>, found
 *      in that frame through its DWARF location, evaluated with the
 *      registers the unwinder recovered for the frame (kind "block_on").
 */
#ifndef CQ_TOKIO_H
#define CQ_TOKIO_H

#include <stdbool.h>
#include <stddef.h>

/* What the search cost and found (the JSON "async" member of coreq stack). */
struct cq_tokio_stats {
	size_t kinds;      /* task types (raw::poll<T, S>) indexed */
	size_t unresolved; /* raw::poll<T, S> whose layout DWARF did not give */
	size_t vtables;    /* task vtables found in the modules' data */
	size_t candidates; /* header candidates from the scan */
	bool truncated;    /* the candidates stopped at their bound */
	size_t lists;      /* OwnedTasks lists with at least one task that checks out */
	size_t tasks;      /* tasks in those lists */
	size_t stale;      /* candidates in no list: freed tasks, blocking tasks, copies */
	size_t broken;     /* lists whose walk stopped at a bad element */
	size_t reported;
	size_t over_limit; /* not added: the suspended stacks were at their bound */
	size_t block_on;   /* futures driven by block_on, reported */
};

/* The runtime itself: cq_async_tokio, listed in runtimes.c. */

#endif
