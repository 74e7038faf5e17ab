/*
 * async_folly.h - where a core keeps folly's async-stack state
 * (FACTS.md sections 3 and 4), found through the program's own symbols.
 *
 *   folly_async_stack_root_tls_key   extern "C" pthread_key_t; 0xFFFFFFFF or
 *                                    >= 1024 means no thread has a root
 *   __folly_suspended_frame_cookie   the stackRoot value of suspended leaf frames
 *   __folly_leaf_frame_store         (debug builds) unordered_set<AsyncStackFrame*>*
 *
 * A process without these symbols costs three symbol-table lookups per
 * module and nothing else: no TLS reads, no memory scan.
 */
#ifndef CQ_ASYNC_FOLLY_H
#define CQ_ASYNC_FOLLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"
#include "libcore/model/tls.h"

struct cq_core;
struct cq_core_thread;

struct cq_folly {
	bool present;    /* any of the symbols was found */
	bool has_key;    /* the TLS key symbol was found and holds a live key */
	uint32_t key;    /* its value (also set when not live) */
	bool key_symbol; /* the TLS key symbol was found */
	uint64_t cookie; /* 0: no cookie symbol, or it was never set */
	uint64_t cookie_addr;
	uint64_t leaf_store;      /* value of __folly_leaf_frame_store, 0 if none */
	struct cq_tls_layout tls; /* valid when has_key */
};

/* Looks for the symbols in every module and reads their values. */
void cq_folly_locate(struct cq_core *core, struct cq_folly *out);

/* The thread's current AsyncStackRoot *, or 0. */
uint64_t cq_folly_thread_root(struct cq_core *core, const struct cq_folly *f,
                              const struct cq_core_thread *thread);

/* Statistics of one search for suspended frames. */
struct cq_folly_scan_stats {
	uint64_t bytes; /* bytes of writable memory scanned */
	double seconds; /* time the scan took */
	size_t hits;    /* words equal to the cookie */
};

/*
 * The addresses of suspended leaf frames: from the cookie scan of writable
 * memory and from the leaf frame store, deduplicated, at most max.  *leaves
 * is malloc'd (NULL when none).  Without a cookie nothing is scanned.
 */
struct cq_error *cq_folly_suspended_leaves(struct cq_core *core, const struct cq_folly *f,
                                           size_t max, uint64_t **leaves, size_t *nleaves,
                                           struct cq_folly_scan_stats *stats);

#endif
