/*
 * rust_chain.h - a decoded Rust await chain (rust_decode.h) as the frames of
 * a suspended stack: what the `dyn Future` search and tokio's tasks report.
 */
#ifndef CQ_RUST_CHAIN_H
#define CQ_RUST_CHAIN_H

#include <stddef.h>

#include "unwind/frames.h"
#include "libcore/base/error.h"
#include "unwind/async/rust_decode.h"
#include "unwind/unwind.h"

/* Function names made for frames; they live as long as the pool. */
struct cq_rust_names {
	char **v;
	size_t n;
};
void cq_rust_names_free(struct cq_rust_names *names);

/*
 * Frames for chain[0..n) (outermost future first), innermost frame first:
 * async frames with the future's address as object, the await point's
 * state, file and line.  *out is the caller's to free.
 */
struct cq_error *cq_rust_chain_frames(const struct cq_unwind_target *t,
                                      const struct cq_rust_model *m,
                                      const struct cq_rust_frame *chain, size_t n,
                                      struct cq_rust_names *names, struct cq_stack_frame **out);

/* How a chain's walk ended, as the end of a stack. */
enum cq_unwind_end cq_rust_chain_end(enum cq_rust_chain_end end);

#endif
