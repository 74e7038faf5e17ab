/*
 * runtime.h - one interface for every async runtime (folly coroutines,
 * Rust futures, ...): how the analysis finds async frames that a plain
 * native unwind cannot see.
 *
 * Each runtime is one file in unwind/async/ that defines one
 * `const struct cq_async_runtime`, listed in runtime_list.h: the
 * descriptor carries everything about it (its name, the kinds of chain it
 * reports and how a person's listing shows them, its statistics as named
 * values, the blobs it caches per module and how `coreq cache warm` makes
 * them), so nothing above unwind/async/ names a runtime.  A runtime sees
 * the process only through struct cq_unwind_target (unwind/target.h).  The
 * driver, cq_async_stacks(), runs after every thread has been unwound:
 *
 *   1. detect   every runtime looks at the core (symbols, types); a runtime
 *               the program does not use says so and costs nothing more;
 *   2. threads  runtimes that splice frames into threads' stacks do so
 *               (folly's merged stacks), from every thread's native frames;
 *   3. scan     ONE pass over the writable memory of the core, through the
 *               memory reader, feeds every runtime that asked for it;
 *   4. claim    every runtime that owns futures (an executor's tasks, the
 *               future a block_on drives) claims their addresses
 *               (cq_async_claim), before any runtime decodes;
 *   5. decode   each runtime appends its suspended stacks; a runtime that
 *               finds futures without an owner (the `dyn Future` scan)
 *               leaves the claimed ones, whatever the table's order.
 *
 * Files: runtime_table.c holds the table (runtime_list.h), driver.c runs
 * the steps and `cache warm`'s hooks, services.c holds what runtimes call
 * (claims, shared values, live words, data words, suspended stacks): a
 * runtime calls services, never the driver or the table.
 *
 * A runtime's state lives until the stacks are freed, so the strings its
 * frames point to stay valid.  Errors are values: a runtime returns a
 * struct cq_error only for what stops the whole analysis (out of memory);
 * a damaged structure in the core is a partial result, not an error.
 *
 * Layer: unwind (unwind/async/): directly on base, like unwind/; the layer
 * order is in docs/internals.md (Layout) and tests/check-layers.
 */
#ifndef CQ_ASYNC_RUNTIME_H
#define CQ_ASYNC_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind/frames.h"
#include "libcore/base/error.h"
#include "libcore/base/feed.h"
#include "unwind/unwind.h"

struct cq_core;
struct cq_mem_segment;
struct cq_stacks;
struct cq_stack_options;
struct cq_symbolizer;

/* One thread's native frames, as the unwinder returned them. */
struct cq_async_native {
	const struct cq_unwind_frame *frames;
	size_t nframes;
	enum cq_unwind_end end;
};

struct cq_async_shared;
struct cq_async_runtime;
struct cq_rust_index_part;

/* What the driver gives every runtime; valid during cq_async_stacks(). */
struct cq_async_ctx {
	const struct cq_unwind_target *target; /* the process, as unwind/ sees it */
	const struct cq_unwind_options *unwind;
	size_t max_suspended;     /* bound on the suspended stacks of all runtimes */
	bool named;               /* frames are named (the target's function_at answers) */
	struct cq_stacks *stacks; /* threads unwound; suspended stacks go here */
	/* Every thread's native frames, in core order; NULL unless a runtime asked. */
	const struct cq_async_native *native;
	double scan_seconds;            /* set by the driver: how long the one scan took */
	struct cq_async_shared *shared; /* set by the driver: what runtimes share */
	/* Set by the driver: every runtime (the table), for walks runtimes add parts to. */
	const struct cq_async_runtime *const *runtimes;
	size_t nruntimes;
};

/*
 * What a runtime's warm hook gets: one module of a target that offers its
 * ELF (modules[module].elf), its DWARF (ops->dwarf), find_symbols and the
 * cache (ops->cache_get/put/reject) but no memory: `coreq cache warm`
 * derives a runtime's blobs from a file before any core of it arrives.
 */
struct cq_async_warm {
	const struct cq_unwind_target *target;
	size_t module;
	const struct cq_async_runtime *const *runtimes; /* every runtime (the table) */
	size_t nruntimes;
	/*
	 * The hook adds what it did under keys of its own (the same set whether
	 * or not the module uses it), as report does: `coreq cache warm`'s JSON.
	 */
	struct cq_stats *figures;
	/* And for a person, when the module uses it: "Rust index 12 types"; else left "". */
	char text[160];
};

/* What a detected runtime needs from the driver. */
struct cq_async_needs {
	bool native_frames; /* keep every thread's native frames for threads/decode */
	bool scan;          /* feed the scan hook */
	/*
	 * With scan: the word values the hook acts on, [scan_lo, scan_hi]
	 * (scan_lo > 0; both 0: not said).  The hook then finds something only
	 * at a word in that range, and reads at most CQ_FEED_WORD_REACH bytes
	 * either side of it (in the chunk or through the target), so a chunk
	 * that holds no such word may be given without its bytes.
	 */
	uint64_t scan_lo, scan_hi;
};

/*
 * A piece of a writable segment of the core.  [addr, addr + len) is mapped
 * at data; its first `overlap` bytes (0 or 8) repeat the last word of the
 * previous chunk of the same segment, so that a two-word pattern across the
 * chunk boundary is seen whole.  Words start 8-byte aligned.  data is NULL
 * when the chunk is known to hold no word in any scanning runtime's
 * [scan_lo, scan_hi]: the hook counts its bytes and finds nothing in it.
 */
struct cq_async_chunk {
	const struct cq_mem_segment *segment;
	uint64_t addr;
	const uint8_t *data;
	uint64_t len;
	uint64_t overlap;
};

/* How `coreq stack` lists a runtime's suspended chains in text. */
enum cq_async_listing {
	CQ_ASYNC_LIST_CHAINS, /* "Suspended <kind> <noun> N (<leaf> 0x...)", then its frames */
	CQ_ASYNC_LIST_TASKS, /* a table of tasks (id, state, thread, what it waits on), then each */
};

struct cq_async_runtime {
	const char *name;
	/* The kinds of suspended chain it reports (cq_suspended_stack.kind), NULL-terminated. */
	const char *const *kinds;
	/* Its chains in text: the listing, its heading, and for chains the nouns. */
	enum cq_async_listing listing;
	const char *heading; /* "Suspended async stacks" */
	const char *noun;    /* "stack": "Suspended folly stack 1 (...)" */
	const char *leaf;    /* "leaf frame": "(leaf frame 0x...)" */
	/*
	 * Looks at the core; sets *state (NULL: the program does not use this
	 * runtime, and no other hook but report is called) and *needs.
	 */
	struct cq_error *(*detect)(const struct cq_async_ctx *ctx, void **state,
	                           struct cq_async_needs *needs);
	/* Optional: rewrites threads' stacks (ctx->stacks->threads). */
	struct cq_error *(*threads)(void *state, const struct cq_async_ctx *ctx);
	/* Optional: sees every chunk of writable memory once. */
	void (*scan)(void *state, const struct cq_async_ctx *ctx, const struct cq_async_chunk *c);
	/*
	 * Optional: finds what this runtime owns and claims those futures'
	 * addresses (cq_async_claim); runs for every runtime before any decode.
	 */
	struct cq_error *(*claim)(void *state, const struct cq_async_ctx *ctx);
	/* Optional: appends suspended stacks (cq_async_add_suspended). */
	struct cq_error *(*decode)(void *state, const struct cq_async_ctx *ctx);
	/*
	 * Adds its statistics to stats (under keys of its own, the same set
	 * whether or not it was detected: state is then NULL) and what a person
	 * should be warned of to warnings (one string each).
	 */
	void (*report)(const void *state, const struct cq_async_ctx *ctx, struct cq_stats *stats,
	               struct cq_stats *warnings);
	void (*destroy)(void *state);
	/* Optional: its own part of the Rust type index (rust_index.h), read in the index's walk.
	 */
	const struct cq_rust_index_part *rust_index_part;
	/*
	 * The blobs it caches per module (through the target's cache_get and
	 * cache_put; each blob's runtime is this name), NULL-terminated; NULL
	 * for none.
	 */
	const struct cq_target_blob *const *blobs;
	/*
	 * Optional: derives its blobs for w->module and stores them, unless the
	 * cache holds them already (`coreq cache warm`), and says so in
	 * w->figures and w->text.  The error is only for out of memory.
	 */
	struct cq_error *(*warm)(struct cq_async_warm *w);
};

/* Every runtime, in the order their suspended stacks are listed (runtime_table.c). */
const struct cq_async_runtime *const *cq_async_runtimes(size_t *n);

/*
 * Runs every runtime's warm hook, in the table's order, over module m of
 * t (see struct cq_async_warm): their figures appended to figures, their
 * texts joined by ", " into *text (malloc'd, "" for none; NULL when out
 * of memory, with the error).
 */
struct cq_error *cq_async_warm(const struct cq_unwind_target *t, size_t m, struct cq_stats *figures,
                               char **text);

/*
 * A value the runtimes of one analysis share, built by the first that asks
 * (the Rust type index, which the `dyn Future` search and tokio both read):
 * one static struct per value; the driver frees it with the states.
 */
struct cq_async_share {
	struct cq_error *(*build)(const struct cq_async_ctx *ctx, void **out);
	void (*free)(void *value);
};

/* The shared value of what, built on the first call (*out may be NULL: none). */
struct cq_error *cq_async_shared_value(const struct cq_async_ctx *ctx,
                                       const struct cq_async_share *what, void **out);
/* The shared value if a runtime has built it, else NULL (never builds it). */
void *cq_async_shared_built(const struct cq_async_ctx *ctx, const struct cq_async_share *what);

/*
 * Calls hit(arg, addr, words) for every 8-byte-aligned word of module m's
 * loaded, non-executable segments (its data, where vtables lie; each at
 * most 256 MiB) whose value is in [lo, hi]: addr is the word's address,
 * words the word and the `after` words that follow it (a word without them
 * all is skipped).  false as soon as hit is, or when out of memory.  A
 * module without its file has no data.
 */
bool cq_async_data_words(const struct cq_async_ctx *ctx, size_t m, uint64_t lo, uint64_t hi,
                         size_t after, bool (*hit)(void *arg, uint64_t addr, const uint64_t *words),
                         void *arg);

/*
 * Sorts n elements of `size` bytes that each start with their uint64_t
 * address, keeps one element of each address, and returns how many remain.
 */
size_t cq_async_sort_unique(void *base, size_t n, size_t size);

/*
 * Futures a runtime owns (a tokio task's future and every future of its
 * chain, the future a block_on drives), by address, claimed in the claim
 * step: a runtime that finds the same future another way (the `dyn Future`
 * scan finds a boxed task's future through its Box) leaves it to its owner,
 * whichever decodes first.  False when out of memory.
 */
bool cq_async_claim(const struct cq_async_ctx *ctx, uint64_t addr);
bool cq_async_claimed(const struct cq_async_ctx *ctx, uint64_t addr);

/*
 * The words of a thread's live stack (sp up to the end of its mapping, at
 * most 2^20 of them) and its registers, sorted: what the thread can still
 * use.  False when out of memory.
 */
bool cq_async_live_words(const struct cq_unwind_target *t, size_t thread, uint64_t **out,
                         size_t *n);
void cq_async_sort_words(uint64_t *words, size_t n);
bool cq_async_sorted_has(const uint64_t *sorted, size_t n, uint64_t v);

/*
 * The lowest address of segment seg that may hold live data: above the
 * dead part (below sp and its red zone) of the one thread whose stack it
 * is; its start when no thread's sp, or several threads' sps, are in it.
 */
uint64_t cq_async_live_start(const struct cq_unwind_target *t, const struct cq_mem_segment *seg);

/* For the driver: what the runtimes of one analysis share (claims, shared values). */
struct cq_async_shared *cq_async_shared_new(void);
void cq_async_shared_free(struct cq_async_shared *shared);

/* The states of the runtimes one analysis detected; freed with the stacks. */
struct cq_async_states;

/*
 * Runs every runtime over a core whose threads ctx->stacks holds, native
 * frames in ctx->native when cq_async_detect() said so; then every
 * runtime's report into ctx->stacks->async and ->warnings, by runtime name
 * (folly, rust, tokio, ...), whatever order they decode in.
 */
struct cq_error *cq_async_stacks(struct cq_async_ctx *ctx, struct cq_async_states *states);

/*
 * Step 1 alone, run before the threads are unwound: detects the runtimes
 * and says whether any of them needs every thread's native frames kept.
 */
struct cq_error *cq_async_detect(const struct cq_async_ctx *ctx, struct cq_async_states **out,
                                 bool *wants_native);
void cq_async_states_free(struct cq_async_states *states);

/*
 * The word values the detected runtimes' scan will act on, one range per
 * scanning runtime, into out (room for max); 0 when none scans, or one does
 * not say (cq_async_needs.scan_lo), or there is no room.
 */
size_t cq_async_scan_words(const struct cq_async_states *states, struct cq_feed_words *out,
                           size_t max);

/*
 * With the search off: every runtime's report as not detected, so the
 * statistics carry the same keys either way.
 */
void cq_async_report_unsearched(struct cq_async_ctx *ctx);

/*
 * Appends one suspended stack to ctx->stacks, unless the stacks are at
 * their bound (options->max_suspended: then *added is false and the frames
 * are freed).  Takes the frames array in every case.
 */
struct cq_error *cq_async_add_suspended(const struct cq_async_ctx *ctx,
                                        struct cq_suspended_stack *s, bool *added);

#endif
