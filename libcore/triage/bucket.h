/*
 * bucket.h - crash signatures that survive rebuilds.
 *
 * A signature names where a crash happened in words that do not change when
 * the binary is rebuilt: function names, normalised, of the crashed thread's
 * stack with the crash machinery (abort, raise, assert, the C++ throw path,
 * Rust panics) dropped from the top and process start-up dropped from the
 * bottom, then the signal name.  Addresses appear only for frames with no
 * symbol, as module-basename+offset.  The bucket is a stable hash of the text.
 *
 *   validate_length | parse_header | handle_request | main | SIGABRT
 *
 * Layer: triage (libcore/triage/): crash signatures; above analysis.
 * The layer order is in docs/internals.md (Layout) and tests/check-layers.
 */
#ifndef CQ_BUCKET_H
#define CQ_BUCKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

struct cq_bucket_namer;
struct cq_bucket_rules;
struct cq_core;
struct cq_stacks;
struct cq_stack_frame;
struct cq_thread_stack;

#define CQ_BUCKET_DEFAULT_FRAMES 5
#define CQ_BUCKET_HASH_LEN       16

struct cq_bucket_signature {
	char *text;                        /* malloc'd */
	char hash[CQ_BUCKET_HASH_LEN + 1]; /* lower-case hex */
	char rules_version[64];            /* of the rules that made it */
};

/*
 * One frame as a signature sees it: from a stack being analysed
 * (cq_bucket_signature) or from the frames stored in a database
 * (coreq rebucket).
 */
struct cq_bucket_frame {
	const char *function; /* demangled, NULL when unknown */
	/*
	 * The name the signature uses instead, NULL for function: the public
	 * name of a CPU-specific variant, the symbol table's name where the
	 * function is named by DWARF (so a signature is the same with
	 * debuginfo or without), the exported symbol covering a frame with no
	 * name, or "[soname]", a placeholder that counts as weak.
	 */
	const char *alt_name;
	const char *module; /* path (no " (deleted)"), NULL when in no module */
	uint64_t offset;    /* module-relative */
	bool main;          /* in the main executable */
	bool scanned;       /* found by stack scanning: never in a signature */
};

/*
 * The bucket's hash (buckets.hash) of a signature's text: FNV-1a, as 16
 * lower-case hex digits.  Merge recomputes it to refuse a bucket whose
 * stored hash is not its signature's.
 */
void cq_bucket_hash_of(const char *text, char out[CQ_BUCKET_HASH_LEN + 1]);

/* The signature of frames (innermost first) under rules r. */
struct cq_error *cq_bucket_signature_of(const struct cq_bucket_rules *r,
                                        const struct cq_bucket_frame *frames, size_t n, int signo,
                                        unsigned nframes, struct cq_bucket_signature *out);

/*
 * The signature of a crash being analysed: the crashed thread's stack and
 * the signal.  nm names frames from the core's module files (may be NULL:
 * then frames without a name in libraries get placeholders).
 */
struct cq_error *cq_bucket_signature(const struct cq_bucket_rules *r, struct cq_bucket_namer *nm,
                                     const struct cq_thread_stack *crashed, int signo,
                                     unsigned nframes, struct cq_bucket_signature *out);

void cq_bucket_signature_free(struct cq_bucket_signature *sig);

/*
 * A function name without parameters, return type, template arguments
 * (collapsed to <T>), compiler clone suffixes, Rust hash or glibc alias
 * prefix, into out (always NUL-terminated).
 */
void cq_bucket_normalize_name(const char *name, char *out, size_t cap);

struct cq_waits;

/*
 * The signature of a hang (bucket.c): for a core whose process was killed
 * from outside (signo sent by another process, or no signal), with a
 * wait-for graph w.  A deadlock signs as its cycles' lock-taking frames:
 * on each thread of a cycle, the kind of lock and the first named frame
 * outside the lock machinery (libc, std:: and __gthread wrappers) above the
 * frame that takes the lock (one frame: a caller inlined in one build and
 * not in another does not split the bucket), in the rotation that sorts
 * first (so neither thread ids, addresses nor which thread the core lists
 * first matter):
 *
 *   deadlock: mutex lock_ab | mutex lock_ba
 *
 * A cycle that rests on an inferred owner (waits.h) says so in its prefix:
 * "deadlock (inferred, confirmed): " when what the core records confirms
 * each such owner, else "possible deadlock: "; a core with several cycles
 * takes the strongest one's prefix.
 *
 * A hang with no cycle signs as what the thread most others wait for is
 * blocked in, and its first two frames outside the C library:
 *
 *   hang: in read() from block_in_read < chain_worker
 *
 * Neither includes the signal: which one a watchdog sends is not the bug.
 *
 * *made is false (and out untouched) when w shows neither.
 */
struct cq_error *cq_bucket_wait_signature(const struct cq_bucket_rules *r,
                                          struct cq_bucket_namer *nm,
                                          const struct cq_stacks *stacks, const struct cq_waits *w,
                                          struct cq_bucket_signature *out, bool *made);

/*
 * "deadlock" (either deadlock prefix), "possible-deadlock" or "hang" when
 * signature is one of cq_bucket_wait_signature's, else NULL.
 */
const char *cq_bucket_wait_kind(const char *signature);

#endif
