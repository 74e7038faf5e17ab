/*
 * tokio_index.h - tokio's part of the Rust type index (rust_index.h,
 * struct cq_rust_index_part): its task types, read by tokio.c from each
 * module's DWARF, cached and merged with the generic index.  Here for
 * tokio.c and the tests that build an index by hand.
 */
#ifndef CQ_TOKIO_INDEX_H
#define CQ_TOKIO_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "unwind/async/rust_index.h"

/*
 * One tokio task type: future T on scheduler S, from the DWARF of
 * `tokio::runtime::task::raw::poll<T, S>` and the types around it (FACTS.md
 * section 9).  Every offset comes from DWARF; the vtable's own
 * trailer/scheduler/id offsets are read from the core.
 */
#define CQ_TOKIO_MAX_CODE 8
struct cq_tokio_kind {
	uint64_t poll; /* runtime address of raw::poll::<T, S> */
	/* The code that polls this task type: raw::poll, Harness::poll, ... (runtime) */
	struct {
		uint64_t lo, hi;
	} code[CQ_TOKIO_MAX_CODE];
	unsigned ncode;
	unsigned origin;        /* the module */
	int32_t future;         /* T in the model */
	int64_t future_from_id; /* T's offset minus task_id's offset, within Core<T, S> */
	/* S: where its pointer to the scheduler's shared state is, and the OwnedTasks there */
	uint64_t sched_ptr, owned, owned_id, owned_head;
	/* this module's Header, raw::Vtable and Trailer */
	uint64_t hdr_state, hdr_vtable, hdr_owner;
	uint64_t vt_poll, vt_trailer, vt_scheduler, vt_id;
	uint64_t trailer_next;
	char *scheduler; /* S's type name, e.g. "Arc<tokio::...::multi_thread::handle::Handle, ...>"
	                  */
};

/* tokio's part: every task kind of the process, sorted by poll. */
struct cq_tokio_index {
	struct cq_tokio_kind *kinds;
	size_t n;
	size_t unresolved; /* raw::poll<T, S> whose layout DWARF did not give */
};

extern const struct cq_rust_index_part cq_tokio_index_part;

/* ix's tokio part, or NULL when no module has task kinds. */
const struct cq_tokio_index *cq_tokio_index_of(const struct cq_rust_index *ix);

/* A part for ix holding kinds[0, n) (taken) and unresolved (for tests); false when out of memory.
 */
bool cq_tokio_index_set(struct cq_rust_index *ix, struct cq_tokio_kind *kinds, size_t n,
                        size_t unresolved);

#endif
