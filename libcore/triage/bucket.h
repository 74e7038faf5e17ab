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
 * The layer order is in the README (Layout) and tests/check-layers.
 */
#ifndef CQ_BUCKET_H
#define CQ_BUCKET_H

#include <stddef.h>

#include "libcore/base/error.h"

struct cq_thread_stack;

#define CQ_BUCKET_DEFAULT_FRAMES 5
#define CQ_BUCKET_HASH_LEN       16

struct cq_bucket_signature {
	char *text;                        /* malloc'd */
	char hash[CQ_BUCKET_HASH_LEN + 1]; /* lower-case hex */
};

/* The signature of a crash: the crashed thread's stack and the signal. */
struct cq_error *cq_bucket_signature(const struct cq_thread_stack *crashed, int signo,
                                     unsigned nframes, struct cq_bucket_signature *out);

void cq_bucket_signature_free(struct cq_bucket_signature *sig);

/*
 * A function name without parameters, return type, template arguments
 * (collapsed to <T>), compiler clone suffixes, Rust hash or glibc alias
 * prefix, into out (always NUL-terminated).
 */
void cq_bucket_normalize_name(const char *name, char *out, size_t cap);

#endif
