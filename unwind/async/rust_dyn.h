/*
 * rust_dyn.h - the suspended Rust futures behind `dyn Future` pointers, as
 * await chains: the "rust" async runtime (runtime.h).
 *
 * Without knowing the executor: index the Rust async types of the process
 * (rust_index.h); if there is any `dyn Future` vtable, scan the writable
 * memory the core holds for {data, vtable} fat pointers, decode the future
 * behind each (unwind/async/rust_decode.h), and keep the chains that are tasks:
 *   - the outermost future is a state machine that is Unresumed or
 *     suspended (not Returned or Panicked, not an undecodable state);
 *   - it is no other chain's awaitee, by (address, type) (so a task is
 *     reported once, from its outermost future), and each future is
 *     reported once however many fat pointers lead to it;
 *   - it is not being polled right now: a chain is dropped when a thread
 *     is running the poll function of one of its state machines and that
 *     state machine's address is on the thread's live stack or in its
 *     registers (its __state is stale while it runs).
 * The dead part of each thread's stack (below sp and its red zone) is not
 * scanned: it holds stale copies of pointers.
 */
#ifndef CQ_RUST_DYN_H
#define CQ_RUST_DYN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

/* Why a fat pointer's future was not believed (the JSON "rust_rejected" counts). */
enum cq_rust_reject_reason {
	CQ_RUST_REJECT_UNMAPPED,        /* the data pointer leads nowhere in the core */
	CQ_RUST_REJECT_READ_ONLY,       /* into read-only memory: a future is written to */
	CQ_RUST_REJECT_MISALIGNED,      /* not a multiple of the type's DW_AT_alignment */
	CQ_RUST_REJECT_INSIDE_CHUNK,    /* the middle of a glibc malloc chunk */
	CQ_RUST_REJECT_FREE_CHUNK,      /* a free chunk */
	CQ_RUST_REJECT_CHUNK_TOO_SMALL, /* a chunk smaller than the type */
	CQ_RUST_REJECT_REASONS
};

/* The first few rejected futures, for the JSON "rust_rejects" list. */
#define CQ_RUST_REJECT_SAMPLES 16
struct cq_rust_reject {
	uint64_t addr;
	const char *type; /* the type index's name, valid while the stacks are */
	enum cq_rust_reject_reason reason;
};

/* The reason's JSON name: "unmapped", "read_only", "misaligned", ... */
const char *cq_rust_reject_name(enum cq_rust_reject_reason r);

/* What the search cost and found (the JSON "async" member of coreq stack). */
struct cq_rust_stats {
	size_t modules_indexed; /* Rust modules looked at */
	size_t modules_cached;  /* of those, whose type index came from the cache */
	size_t types, vtables;  /* model size */
	double index_ms;
	uint64_t scan_bytes; /* memory scanned for fat pointers */
	double scan_ms;
	size_t fat_pointers; /* hits of the scan, before any filtering */
	bool scan_truncated; /* the scan stopped at its bound on hits (1 << 18) */
	size_t futures;      /* distinct futures decoded */
	size_t awaited;      /* dropped: another chain's awaitee */
	size_t claimed;      /* dropped: another runtime's (a boxed tokio task's future) */
	size_t polled;       /* dropped: being polled on a thread */
	size_t not_waiting;  /* dropped: Returned, Panicked or undecodable */
	size_t rejected[CQ_RUST_REJECT_REASONS]; /* dropped before decoding, by reason */
	struct cq_rust_reject rejects[CQ_RUST_REJECT_SAMPLES];
	size_t nrejects;   /* samples kept, at most CQ_RUST_REJECT_SAMPLES */
	size_t reported;   /* added to the suspended stacks */
	size_t over_limit; /* not added: the suspended stacks were at their bound */
};

/* The runtime itself: cq_async_rust_dyn, listed in runtimes.c. */

#endif
