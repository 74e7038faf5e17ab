/*
 * lws_ingest.h - libwebsockets allocation backtraces against the ELF file
 * they came from: naming their addresses, and storing the "~m#" records of
 * a log as stacks with allocation sizes (`coreq lws decode --elf`,
 * `coreq lws ingest`).
 *
 * The addresses of a record are return addresses at the ELF's link-time
 * addresses (a non-PIE build, or a PIE whose log was written with the load
 * bias subtracted): each is looked up at address - 1, inside its call
 * instruction, and expands into its inlined calls, innermost first, then
 * the real function.  An address outside the ELF's loadable segments is
 * kept, in no module.
 *
 * A log is identified by its content (length and a 64-bit hash of every
 * byte) together with the ELF's build-id: ingesting the same log again, under
 * any name or from standard input, stores nothing.  A log that has changed
 * (for example grown) is a new log, all of whose records count.
 */
#ifndef CQ_LWS_INGEST_H
#define CQ_LWS_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "libcore/base/error.h"
#include "libcore/formats/lws_codec.h"
#include "libcore/model/module.h"
#include "libcore/analysis/stacktrace.h"
#include "libcore/symbols/symbolizer.h"

struct cq_cache;
struct cq_store;

/* Frames one record can expand to: every address with its inlined calls. */
#define CQ_LWS_MAX_FRAMES (CQ_LWS_MAX_DEPTH * (CQ_SYMBOLIZER_MAX_INLINE + 1))

/* Distinct (stack, size) pairs one log may hold; more is CQ_ERR_LIMIT. */
#define CQ_LWS_MAX_SITES (1u << 18)

/* An ELF file opened for naming the addresses of lws records. */
struct cq_lws_elf {
	struct cq_module module;
	struct cq_symbolizer *symbolizer;
};

/* Opens path; debug_dirs (NULL-terminated) and cache may be NULL. */
struct cq_error *cq_lws_elf_open(const char *path, const char *const *debug_dirs,
                                 struct cq_cache *cache, struct cq_lws_elf **out);
void cq_lws_elf_close(struct cq_lws_elf *elf);

/*
 * Names the addresses of s into frames[0..cap) (CQ_LWS_MAX_FRAMES always
 * suffices) and returns how many were written: per address, its inlined
 * calls (kind CQ_FRAME_INLINE) then the real function (CQ_FRAME_NATIVE), all
 * with trust CQ_TRUST_LOG.  elf may be NULL: one unnamed frame per address.
 * Names point into the symbolizer and live as long as elf.
 */
size_t cq_lws_elf_frames(struct cq_lws_elf *elf, const struct cq_lws_stack *s,
                         struct cq_stack_frame *frames, size_t cap);

struct cq_lws_ingest_result {
	int64_t log_id;
	bool duplicate;     /* this log was stored before: nothing written */
	uint64_t lines;     /* lines read */
	uint64_t records;   /* records decoded and stored */
	uint64_t malformed; /* records that did not decode, skipped */
	size_t sites;       /* distinct (stack, size) pairs */
	size_t stacks, new_stacks;
};

/* Called for each malformed record or overlong line: which line, what is wrong. */
typedef void (*cq_lws_warn_fn)(void *ctx, uint64_t line, const char *message);

/*
 * Reads the log in (named path), decodes every record, names its frames with
 * elf and stores the log in one transaction: each distinct stack once (as
 * `coreq ingest` stores a thread's stack, module-relative, in the ELF's
 * module), and per (stack, size) how many records had it.
 */
struct cq_error *cq_lws_ingest_log(struct cq_store *store, struct cq_lws_elf *elf, FILE *in,
                                   const char *path, cq_lws_warn_fn warn, void *ctx,
                                   struct cq_lws_ingest_result *result);

#endif
