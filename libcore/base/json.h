/*
 * json.h - a streaming JSON writer.
 *
 * Output is always valid JSON whatever bytes the strings hold: strings from a
 * core (paths, command lines) may be any bytes, so invalid UTF-8 is written
 * as \u00XX escapes, one per byte.  Commas and nesting are tracked here so
 * callers only say what comes next.  The writer is compact, one document per
 * line.  Output is gathered in the writer's own buffer and handed to the
 * stream in large blocks (a 3000-thread stack is tens of thousands of
 * fields; a stdio call per field cost more than the unwinding); nothing
 * reaches the stream before the buffer fills or cq_json_finish.
 */
#ifndef CQ_JSON_H
#define CQ_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define CQ_JSON_MAX_DEPTH 32
#define CQ_JSON_BUFFER    (32 * 1024)

struct cq_json {
	FILE *out;
	unsigned depth;
	bool need_comma[CQ_JSON_MAX_DEPTH];
	bool after_key;
	size_t len; /* bytes in buf not yet written to out */
	char buf[CQ_JSON_BUFFER];
};

void cq_json_init(struct cq_json *j, FILE *out);
void cq_json_object_begin(struct cq_json *j);
void cq_json_object_end(struct cq_json *j);
void cq_json_array_begin(struct cq_json *j);
void cq_json_array_end(struct cq_json *j);
void cq_json_key(struct cq_json *j, const char *key);
void cq_json_string(struct cq_json *j, const char *s); /* NULL writes null */
void cq_json_string_len(struct cq_json *j, const char *s, size_t len);
void cq_json_int(struct cq_json *j, int64_t v);
void cq_json_uint(struct cq_json *j, uint64_t v);
void cq_json_hex(struct cq_json *j, uint64_t v); /* "0x1f" */
void cq_json_bool(struct cq_json *j, bool v);
void cq_json_null(struct cq_json *j);
/* Ends the document with a newline and writes out what is buffered. */
/*
 * A value made elsewhere (another cq_json's bytes): cq_json_raw_value writes
 * its first bytes where a value goes, cq_json_raw the rest of it.  The caller
 * vouches that together they are one well-formed value.
 */
void cq_json_raw_value(struct cq_json *j, const char *bytes, size_t n);
void cq_json_raw(struct cq_json *j, const char *bytes, size_t n);
void cq_json_finish(struct cq_json *j);
/* Writes out what is buffered (for a caller that stops without finishing). */
void cq_json_flush(struct cq_json *j);

#endif
