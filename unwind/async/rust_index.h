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
 * per cq_rust_index_core call, and once per build-id with a cache.
 */
#ifndef CQ_RUST_INDEX_H
#define CQ_RUST_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"
#include "unwind/async/rust_decode.h"

/* A coroutine poll function's code, at runtime addresses [lo, hi). */
struct cq_rust_resume {
	uint64_t lo, hi;
	char *name; /* path as DWARF names it: "app::serve::{async_fn#0}" */
};

/*
 * Where a function's future argument lives over pcs [lo, hi), from its
 * DWARF location: in memory at a base register + offset, or (at -O2) in
 * registers, CQ_RUST_BASE_REGS: its bytes [0, 8) in DWARF register
 * `offset` and its bytes [8, 16) in register `add` (CQ_RUST_NO_REG: none),
 * e.g. the data and vtable pointers of a Pin<Box<dyn Future>>; or in memory
 * at another register + offset, CQ_RUST_BASE_BREG: DWARF register `reg`
 * (a callee-saved one the unwinder recovers in a caller's frame).
 */
enum cq_rust_base {
	CQ_RUST_BASE_SP,
	CQ_RUST_BASE_FP,
	CQ_RUST_BASE_CFA,
	CQ_RUST_BASE_REGS,
	CQ_RUST_BASE_BREG
};
#define CQ_RUST_NO_REG UINT64_MAX
struct cq_rust_local {
	uint64_t lo, hi; /* runtime pcs */
	enum cq_rust_base base;
	unsigned reg;   /* CQ_RUST_BASE_BREG's register */
	int64_t offset; /* base + offset ... */
	bool deref;     /* ... then the pointer stored there ... */
	uint64_t add;   /* ... plus add */
	int32_t type;   /* what is there: F, or Pin<&mut F> after pin!(f) */
};

/*
 * A block_on<F> a runtime's part names as driving a future
 * (cq_rust_index_part.block_on_var; tokio's CachedParkThread::block_on: the
 * future `#[tokio::main]` and Runtime::block_on drive), pinned in this
 * function's frame.  Also each
 * other block_on<F> over the same F (Runtime::block_on, ...), with where
 * its parameter of type F lives: a caller's frame that still holds the
 * future where the driving frame's location list does not cover its pc
 * (at -O2, `f` is optimized out while block_on parks).
 */
struct cq_rust_block_on {
	uint64_t lo, hi;            /* the function's code, runtime addresses */
	int32_t future;             /* F in the model */
	struct cq_rust_local *locs; /* of `f`, the argument and the pinned local */
	size_t nlocs;
};

/*
 * A function monomorphized over a future type: a concrete instance of a
 * generic function with a type parameter that is (or boxes) a coroutine's
 * environment.  An executor's task vtable is made of such functions
 * (async-task's RawTask<F, T, S>::run, ...): a function's address tells
 * the type of the future its task holds.
 */
struct cq_rust_mono {
	uint64_t lo, hi; /* the function's code, runtime addresses (entry: lo) */
	int32_t future;  /* the type parameter, in the model */
};

/*
 * A runtime's own part of the index (struct cq_async_runtime.rust_index_part):
 * what it alone reads from each Rust module's DWARF (tokio: its task types),
 * built in the same walk, cached in the same row and merged over modules
 * like the rest.  The index knows no runtime: adding one is its file and its
 * line in runtime_list.h.  The parts' bytes follow each other in the row in
 * runtime_list.h's order: adding, moving or changing a part changes the
 * rows, so CQ_RUST_INDEX_BLOB_FORMAT goes up with it.
 */
struct cq_rust_walk;   /* the walk of one module, for a part's hooks */
struct cq_wire_writer; /* libcore/base/wire.h */
struct cq_wire_reader;
#define CQ_RUST_MAX_PARTS 4
struct cq_rust_index_part {
	/* A new state for the walk of one module (NULL: out of memory). */
	void *(*begin)(void);
	/*
	 * Each subprogram and struct DIE (a Dwarf_Die *) of a Rust unit (tag,
	 * its DW_AT_name, its namespace node ns for cq_rust_walk_ns); true when
	 * the part takes a subprogram, which the generic index then leaves.
	 */
	bool (*visit)(void *st, const struct cq_rust_walk *w, void *die, int tag, const char *name,
	              int32_t ns);
	/* The variable holding a block_on<F>'s future when the part drives it, else NULL. */
	const char *(*block_on_var)(const char *linkage_name);
	/* After the walk: the module's part (link-time addresses; NULL: none); frees st. */
	void *(*finish)(void *st, struct cq_rust_walk *w);
	/* Its bytes in the cache row, and back (NULL with r->failed set when malformed). */
	void (*encode)(const void *part, struct cq_wire_writer *w);
	void *(*decode)(struct cq_wire_reader *r, size_t ntypes);
	/* Moves one module's part into *all: addresses + bias, type indexes + base, origin. */
	bool (*merge)(void **all, void *one, unsigned origin, uint64_t bias, int32_t base);
	void (*sort)(void *part);
	void (*free)(void *part);
};

/* Grows *items (of size bytes each) to hold need, doubling *cap; false when out of memory. */
bool cq_rust_grow(void **items, size_t *cap, size_t need, size_t size);

/* The parts of an index, in the order of the runtimes that have one. */
struct cq_rust_parts {
	const struct cq_rust_index_part *v[CQ_RUST_MAX_PARTS];
	size_t n;
};

/*
 * The parts of the runtimes rt[0, n) (the table, as the driver hands it to
 * runtimes: cq_async_ctx.runtimes) that have one, in their order (at most
 * CQ_RUST_MAX_PARTS): given, not looked up, so the index calls no runtime.
 */
struct cq_async_runtime;
void cq_rust_index_parts(const struct cq_async_runtime *const *rt, size_t n,
                         struct cq_rust_parts *out);

/* For a part's hooks: the module's DWARF (Dwarf *), a namespace node's name and parent (-1: none).
 */
void *cq_rust_walk_dwarf(const struct cq_rust_walk *w);
const char *cq_rust_walk_ns(const struct cq_rust_walk *w, int32_t ns, int32_t *parent);
/*
 * The model's index of the type DIE (a Dwarf_Die *; its conversion queued),
 * or -1; its full name (malloc'd).
 */
int32_t cq_rust_walk_type(struct cq_rust_walk *w, void *type);
char *cq_rust_walk_type_name(const struct cq_rust_walk *w, void *type);
/* The template type parameter `name` of die (Dwarf_Die *, peeled into out), false when none. */
bool cq_rust_walk_template_param(void *die, const char *name, void *out);

struct cq_rust_index {
	struct cq_rust_model model;
	struct cq_rust_mono *monos; /* sorted by lo */
	size_t nmonos;
	struct cq_rust_block_on *block_ons; /* sorted by lo */
	size_t nblock_ons;
	/* each runtime's own part (kinds' order), NULL when it has none */
	void *parts[CQ_RUST_MAX_PARTS];
	struct cq_rust_parts kinds;     /* what parts[i] is: kinds.v[i]'s */
	struct cq_rust_resume *resumes; /* sorted by lo */
	size_t nresumes;
	size_t modules_indexed; /* Rust modules looked at */
	size_t modules_cached;  /* of those, whose index came from the cache */
	double index_ms;        /* wall time spent reading DWARF or the cache */
};

/*
 * Indexes every Rust module of the target, each from its DWARF (the
 * target's dwarf op).  Where the target offers a cache, a module it
 * holds an index of is not read again, and one read is stored there
 * (rust_index_blob.h).
 */
struct cq_error *cq_rust_index_core(const struct cq_unwind_target *t,
                                    const struct cq_rust_parts *parts, struct cq_rust_index **out);
void cq_rust_index_free(struct cq_rust_index *ix);

/*
 * The Rust type index of the core's modules, built on the first call of
 * one analysis and shared by every runtime that asks (the `dyn Future`
 * search and tokio): a value the runtimes share (runtime.h), freed with
 * the driver's states.
 */
struct cq_async_ctx;
struct cq_error *cq_async_rust_index(const struct cq_async_ctx *ctx, struct cq_rust_index **out);
/* The index if a runtime has built it, else NULL (never builds it). */
const struct cq_rust_index *cq_async_rust_index_built(const struct cq_async_ctx *ctx);

/*
 * Indexes one module into the cache (coreq cache warm), unless the cache
 * holds its index already.  *types is the number of types indexed, 0 for a
 * module not built by rustc or without debuginfo; *cached tells whether the
 * cache had it.
 */
struct cq_error *cq_rust_index_warm(const struct cq_unwind_target *t, size_t m,
                                    const struct cq_rust_parts *parts, size_t *types, bool *cached);

/* Types one index holds at most (one module's, and all merged). */
#define CQ_RUST_INDEX_MAX_TYPES (1u << 20)

/*
 * For rust_index_load.c: one module's DWARF read into its own index, at
 * link-time addresses (*out NULL when its debuginfo is not found; the error
 * is only for running out of memory); whether an ELF (Elf *) was built by
 * rustc; and sorting what the lookups binary-search.
 */
struct cq_error *cq_rust_index_read_module(const struct cq_unwind_target *t, size_t m,
                                           const struct cq_rust_parts *parts,
                                           struct cq_rust_index **out);
bool cq_rust_index_built_by_rustc(void *elf);
void cq_rust_index_sort(struct cq_rust_index *ix);

/* The block_on function containing runtime pc, or NULL. */
const struct cq_rust_block_on *cq_rust_index_block_on_at(const struct cq_rust_index *ix,
                                                         uint64_t pc);

/*
 * The functions monomorphized over a future whose entry is at runtime addr
 * (*n of them, consecutive), or NULL: at -O2 the linker's identical-code
 * folding gives one entry to the instances over several futures.
 */
const struct cq_rust_mono *cq_rust_index_monos_at(const struct cq_rust_index *ix, uint64_t addr,
                                                  size_t *n);

/*
 * The functions monomorphized over a future whose code holds runtime pc
 * (*n of them, folded at one entry), or NULL: e.g. <Pin<P> as Future>::poll
 * over a future whose own poll is inlined into it.
 */
const struct cq_rust_mono *cq_rust_index_monos_containing(const struct cq_rust_index *ix,
                                                          uint64_t pc, size_t *n);

/* The name of the coroutine poll function containing runtime pc, or NULL. */
const char *cq_rust_index_resume_at(const struct cq_rust_index *ix, uint64_t pc);

#endif
