/*
 * lws_log.h - finding libwebsockets' "~m#" backtrace records in text.
 *
 * Logs are untrusted and may be huge: they are read one line at a time into
 * a fixed buffer (a longer line keeps its first CQ_LWS_LOG_MAX_LINE bytes
 * and says so), while a hash of every byte is kept, so a log can be
 * recognised when it is ingested again.  A record is "~m#" followed by the
 * longest run of base64 characters (either alphabet, and '='), anywhere in a
 * line: a log prefix before it and text after it are not part of it.  A
 * record wrapped or pasted with blanks inside runs over them only when
 * nothing but base64 and blanks follows it to the end of the line.  This is
 * the one rule: `lws ingest` and `lws decode` both find records with it.
 */
#ifndef CQ_LWS_LOG_H
#define CQ_LWS_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "libcore/base/error.h"

/* Bytes of a line that are looked at; any more are read, hashed and dropped. */
#define CQ_LWS_LOG_MAX_LINE 65536

struct cq_lws_log_reader {
	FILE *in;
	char *line;      /* NUL-terminated, without its newline */
	size_t len;      /* bytes in line */
	bool truncated;  /* the line was longer than CQ_LWS_LOG_MAX_LINE */
	uint64_t lineno; /* 1-based number of the line in line */
	uint64_t bytes;  /* bytes read so far */
	uint64_t hash;   /* of every byte read so far */
};

/* Starts reading in; the reader does not close it. */
struct cq_error *cq_lws_log_reader_init(struct cq_lws_log_reader *r, FILE *in);
void cq_lws_log_reader_free(struct cq_lws_log_reader *r);

/*
 * Reads the next line.  Returns true with r->line set, false at the end of
 * the input; *err is set (and false returned) if reading failed.
 */
bool cq_lws_log_next_line(struct cq_lws_log_reader *r, struct cq_error **err);

/*
 * Finds the first record in line[from..len): sets *start to its "~m#" and
 * *end past its last base64 character.  Returns false if there is none.
 */
bool cq_lws_log_find_record(const char *line, size_t len, size_t from, size_t *start, size_t *end);

#endif
