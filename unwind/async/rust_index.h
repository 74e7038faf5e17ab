/*
 * rust_index.h - the Rust async types of a process, read from DWARF.
 *
 * For every module of a core that rustc built (its .comment section says
 * "rustc") and that has debuginfo, one pass over the DWARF of its Rust
 * compile units finds:
 *   - every `<T as core::future::future::Future>::{vtable}` variable: its
 *     runtime address -> T;
 *   - every coroutine poll function (`{async_fn#N}`, `{async_block#N}`, ...):
 *     its runtime address range -> its path;
 *   - the namespace path of every named type.
 * The types reachable from the vtables (state machines, what they await,
 * the wrappers in between, leaves) are then turned into the plain model of
 * unwind/async/rust_decode.h.  A module that is not Rust costs a look at its
 * section headers: no DWARF is opened for it.  Each module is indexed once
 * per cq_rust_index_core call.
 */
#ifndef CQ_RUST_INDEX_H
#define CQ_RUST_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"
#include "unwind/async/rust_decode.h"

struct cq_core;

/* A coroutine poll function's code, at runtime addresses [lo, hi). */
struct cq_rust_resume {
	uint64_t lo, hi;
	char *name; /* path as DWARF names it: "app::serve::{async_fn#0}" */
};

struct cq_rust_index {
	struct cq_rust_model model;
	struct cq_rust_resume *resumes; /* sorted by lo */
	size_t nresumes;
	size_t modules_indexed; /* modules whose DWARF was read */
	double index_ms;        /* wall time spent reading DWARF */
};

/* Indexes every Rust module of core.  debug_dirs is NULL-terminated, may be NULL. */
struct cq_error *cq_rust_index_core(struct cq_core *core, const char *const *debug_dirs,
                                    struct cq_rust_index **out);
void cq_rust_index_free(struct cq_rust_index *ix);

/* The name of the coroutine poll function containing runtime pc, or NULL. */
const char *cq_rust_index_resume_at(const struct cq_rust_index *ix, uint64_t pc);

#endif
