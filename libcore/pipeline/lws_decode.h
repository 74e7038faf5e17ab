/*
 * lws_decode.h - `coreq lws decode`'s flow: every line of a text read,
 * its "~m#" record found (lws_log.h's rule, the one `lws ingest` follows),
 * decoded, rendered as lws's decoder prints it, and its addresses named
 * with an ELF (lws_ingest.h), each outcome reported through a callback as
 * it happens.
 *
 * A line is blank (passed by), or holds a record: its "~m#" record where it
 * has one (text after the record is no part of it), else the whole line,
 * read as bare base64.  A line that does not decode, or is longer than
 * CQ_LWS_LOG_MAX_LINE bytes, is reported with its error and skipped.
 *
 * Layer: pipeline (libcore/pipeline/): the top library layer, what commands call; above store.
 * The layer order is in docs/internals.md (Layout) and tests/check-layers.
 */
#ifndef CQ_LWS_DECODE_H
#define CQ_LWS_DECODE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "libcore/base/error.h"
#include "libcore/formats/lws_codec.h"
#include "libcore/pipeline/lws_ingest.h"

/* One non-blank line: a record, or why it is none.  Valid during the call only. */
struct cq_lws_decoded {
	uint64_t line;                    /* 1-based line number */
	const struct cq_error *error;     /* NULL for a record; else the rest is unset */
	const struct cq_lws_stack *stack; /* the record */
	const char *text;                 /* as lws's decoder prints it (cq_lws_format_decoded) */
	const struct cq_stack_frame *frames; /* its addresses named (cq_lws_elf_frames) */
	size_t nframes;
};

typedef void (*cq_lws_decoded_fn)(void *ctx, const struct cq_lws_decoded *d);

/*
 * Decodes every line of in, naming addresses with elf (NULL: one unnamed
 * frame per address), and calls fn for each non-blank line in order.  An
 * error is returned only when in could not be read; the lines before it
 * have been reported.
 */
struct cq_error *cq_lws_decode_lines(FILE *in, struct cq_lws_elf *elf, cq_lws_decoded_fn fn,
                                     void *ctx);

#endif
