/*
 * rust_decode.h - Rust async state machines: the type model, the decoder of
 * one future's await chain, and the scan for `dyn Future` fat pointers.
 *
 * rustc describes every `async fn` / `async` block as a struct (named
 * `{async_fn_env#N}`, `{async_block_env#N}`, ...) with a variant part on the
 * one-byte field `__state`: 0 Unresumed, 1 Returned, 2 Panicked, 3+k
 * SuspendK.  A SuspendK variant holds `__awaitee`, the future it waits on,
 * stored inline (FACTS.md section 6).  The Unresumed variant of a future
 * that captured another one (an upvar whose type is an async environment:
 * an executor's `async move { future.await }` wrapper) gives that captured
 * future as its awaitee, so a never-polled wrapper's chain goes on into
 * the program's own future.  A `dyn Future` is a fat pointer
 * {data, vtable}; each vtable is a named variable whose type says which
 * concrete type it is for.
 *
 * This file knows nothing about DWARF or core files.  unwind/async/rust_index.c
 * turns a module's DWARF into the plain model below (struct cq_rust_model);
 * the decoder reads memory only through struct cq_unwind_target, so tests
 * drive it with synthetic types and memory.
 *
 * Every walk is bounded: at most CQ_RUST_MAX_DEPTH futures per chain, at most
 * CQ_RUST_MAX_HOPS pointer hops inside one wrapper type, a future seen twice
 * in one chain ends it (a cycle), and every read is checked.
 */
#ifndef CQ_RUST_ASYNC_H
#define CQ_RUST_ASYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind/unwind.h"

#define CQ_RUST_MAX_DEPTH 64
#define CQ_RUST_MAX_HOPS  8
/* A state machine larger than this is not believed (a damaged type). */
#define CQ_RUST_MAX_FUTURE_SIZE (64u << 20)

enum cq_rust_type_kind {
	CQ_RUST_LEAF,          /* a future that is not a state machine: the chain ends */
	CQ_RUST_STATE_MACHINE, /* an async fn / block: has __state */
	CQ_RUST_WRAPPER,       /* holds the real future: Pin, Box, GenFuture, dyn Future */
};

/* One variant of a state machine: one value of __state. */
struct cq_rust_variant {
	uint64_t discr;
	const char *name;        /* "Unresumed", "Returned", "Panicked", "Suspend0", ... */
	const char *file;        /* decl file of the variant (the await point), or NULL */
	int line;                /* its decl line, 0 when unknown */
	int32_t awaitee;         /* type of __awaitee, or -1 when the variant has none */
	uint64_t awaitee_offset; /* from the start of the state machine */
};

/*
 * One hop inside a wrapper: addr += offset, then, if deref, addr = the
 * pointer stored there.
 */
struct cq_rust_hop {
	uint64_t offset;
	bool deref;
};

struct cq_rust_type {
	const char *name; /* full path, e.g. "app::serve::{async_fn_env#0}" */
	enum cq_rust_type_kind kind;
	uint64_t size;
	uint64_t align;  /* DW_AT_alignment; 0 when DWARF does not say */
	unsigned origin; /* opaque to the decoder: which module described the type */

	/* CQ_RUST_STATE_MACHINE */
	uint64_t state_offset;
	unsigned state_size; /* 1, 2, 4 or 8 bytes, little-endian */
	const struct cq_rust_variant *variants;
	size_t nvariants;
	const char *resume_name; /* the poll function, e.g. "app::serve::{async_fn#0}" */

	/* CQ_RUST_WRAPPER: follow hops, then either a dyn fat pointer or target */
	struct cq_rust_hop hops[CQ_RUST_MAX_HOPS];
	unsigned nhops;
	bool is_dyn;              /* the hops lead to a {data, vtable} fat pointer */
	uint64_t dyn_data_offset; /* within the fat pointer */
	uint64_t dyn_vtable_offset;
	int32_t target; /* !is_dyn: the type the hops lead to */
};

/* A `<T as core::future::future::Future>::{vtable}` at a runtime address. */
struct cq_rust_vtable {
	uint64_t addr;
	int32_t type; /* T */
};

/* Every known type and vtable of a process; vtables sorted by addr. */
struct cq_rust_model {
	const struct cq_rust_type *types;
	size_t ntypes;
	const struct cq_rust_vtable *vtables;
	size_t nvtables;
};

/* The type whose vtable is at addr, or -1. */
int32_t cq_rust_vtable_type(const struct cq_rust_model *m, uint64_t addr);

/*
 * The type a future of type `type` really is, through wrappers (Pin<Box<F>>
 * is F; a dyn wrapper ends the walk), at most 8 steps; type itself when it
 * is no wrapper or out of range.
 */
int32_t cq_rust_unwrapped(const struct cq_rust_model *m, int32_t type);

/* One future of a chain. */
struct cq_rust_frame {
	uint64_t addr; /* where the future lives */
	int32_t type;
	const struct cq_rust_variant *variant; /* state machines only; NULL: leaf */
	uint64_t state;                        /* raw __state (state machines) */
};

enum cq_rust_chain_end {
	CQ_RUST_END_LEAF,           /* reached a future that is not a state machine */
	CQ_RUST_END_NO_AWAITEE,     /* a state machine that awaits nothing (Unresumed, ...) */
	CQ_RUST_END_BAD_MEMORY,     /* a read failed */
	CQ_RUST_END_BAD_STATE,      /* __state matches no variant */
	CQ_RUST_END_UNKNOWN_VTABLE, /* a dyn Future whose vtable is not indexed */
	CQ_RUST_END_BAD_TYPE,       /* a type index out of range */
	CQ_RUST_END_MAX_DEPTH,
	CQ_RUST_END_LOOP, /* the same future twice in one chain */
};

/* A decoded chain, outermost future first. */
struct cq_rust_chain {
	struct cq_rust_frame frames[CQ_RUST_MAX_DEPTH];
	size_t nframes;
	enum cq_rust_chain_end end;
};

/*
 * Decodes the future of type `type` at addr and everything it awaits.  A
 * frame is added for every state machine whose __state was read and matched
 * a variant, and for the leaf; wrappers add no frame.  Never fails: *out
 * says how far it got and why it stopped.
 */
void cq_rust_decode(const struct cq_unwind_target *t, const struct cq_rust_model *m, uint64_t addr,
                    int32_t type, struct cq_rust_chain *out);

/*
 * The chain the types alone imply, reading no memory: the future of type
 * `type` at addr, then each Unresumed variant's captured future (frames
 * without a variant).  For a future being polled, whose states are stale:
 * it names the program's future inside an executor's wrapper.
 */
void cq_rust_decode_types(const struct cq_rust_model *m, uint64_t addr, int32_t type,
                          struct cq_rust_chain *out);

/* Called by the scan for each fat pointer found: data pointer and its type. */
typedef void (*cq_rust_found_fn)(void *ctx, uint64_t where, uint64_t data, int32_t type);

/*
 * Scans bytes (the target's [start, start + len)) for 8-byte-aligned
 * {data, vtable} pairs whose vtable is in the model and whose data pointer
 * is non-zero and aligned.  Returns how many were found.
 */
size_t cq_rust_scan(const struct cq_rust_model *m, const uint8_t *bytes, uint64_t start,
                    uint64_t len, cq_rust_found_fn found, void *ctx);

/*
 * The function name a frame is reported under: the type's path without the
 * `::{async_fn_env#N}` suffix for async fns, with `{async_block#N}` (etc.)
 * for blocks and closures; the type name for leaves.  Writes into buf.
 */
const char *cq_rust_frame_function(const struct cq_rust_type *type, char *buf, size_t cap);

/*
 * The function that polls a state machine named env_name, as DWARF names
 * that subprogram's path: "a::b::{async_fn_env#0}<T>" -> "a::b::{async_fn#0}".
 * NULL when env_name is not a coroutine environment.
 */
const char *cq_rust_resume_function(const char *env_name, char *buf, size_t cap);

/* True when a DWARF struct name starts like a coroutine environment. */
bool cq_rust_is_env_name(const char *component);

#endif
