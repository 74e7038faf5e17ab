/*
 * json.c - the streaming JSON writer (see json.h).
 */
#include "libcore/base/json.h"

#include <inttypes.h>
#include <string.h>

void cq_json_init(struct cq_json *j, FILE *out)
{
	memset(j, 0, sizeof(*j));
	j->out = out;
}

/* Emits the separator a new value needs at the current position. */
static void value_prefix(struct cq_json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (j->need_comma[j->depth])
		fputc(',', j->out);
	j->need_comma[j->depth] = true;
}

static void open_container(struct cq_json *j, char c)
{
	value_prefix(j);
	fputc(c, j->out);
	if (j->depth + 1 < CQ_JSON_MAX_DEPTH)
		j->depth++;
	j->need_comma[j->depth] = false;
}

static void close_container(struct cq_json *j, char c)
{
	if (j->depth > 0)
		j->depth--;
	fputc(c, j->out);
}

void cq_json_object_begin(struct cq_json *j)
{
	open_container(j, '{');
}

void cq_json_object_end(struct cq_json *j)
{
	close_container(j, '}');
}

void cq_json_array_begin(struct cq_json *j)
{
	open_container(j, '[');
}

void cq_json_array_end(struct cq_json *j)
{
	close_container(j, ']');
}

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0 if invalid. */
static size_t utf8_sequence(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t min, cp;
	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0)
		len = 2, min = 0x80, cp = s[0] & 0x1f;
	else if ((s[0] & 0xf0) == 0xe0)
		len = 3, min = 0x800, cp = s[0] & 0x0f;
	else if ((s[0] & 0xf8) == 0xf0)
		len = 4, min = 0x10000, cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* Length of the run at s that needs no escaping (printable ASCII, valid UTF-8). */
static size_t plain_run(const unsigned char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned char c = s[i];
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			i++;
			continue;
		}
		size_t seq = c >= 0x80 ? utf8_sequence(s + i, n - i) : 0;
		if (seq == 0)
			break;
		i += seq;
	}
	return i;
}

static void write_string(FILE *out, const unsigned char *s, size_t n)
{
	fputc('"', out);
	for (size_t i = 0; i < n;) {
		size_t run = plain_run(s + i, n - i);
		if (run) {
			fwrite(s + i, 1, run, out);
			i += run;
			continue;
		}
		unsigned char c = s[i++];
		if (c == '"' || c == '\\') {
			fputc('\\', out);
			fputc(c, out);
		} else if (c == '\n') {
			fputs("\\n", out);
		} else if (c == '\t') {
			fputs("\\t", out);
		} else {
			fprintf(out, "\\u%04x", c); /* control byte, DEL, or invalid UTF-8 */
		}
	}
	fputc('"', out);
}

void cq_json_key(struct cq_json *j, const char *key)
{
	value_prefix(j);
	write_string(j->out, (const unsigned char *)key, strlen(key));
	fputc(':', j->out);
	j->after_key = true;
}

void cq_json_string_len(struct cq_json *j, const char *s, size_t len)
{
	value_prefix(j);
	write_string(j->out, (const unsigned char *)s, len);
}

void cq_json_string(struct cq_json *j, const char *s)
{
	if (!s)
		cq_json_null(j);
	else
		cq_json_string_len(j, s, strlen(s));
}

void cq_json_int(struct cq_json *j, int64_t v)
{
	value_prefix(j);
	fprintf(j->out, "%" PRId64, v);
}

void cq_json_uint(struct cq_json *j, uint64_t v)
{
	value_prefix(j);
	fprintf(j->out, "%" PRIu64, v);
}

void cq_json_hex(struct cq_json *j, uint64_t v)
{
	value_prefix(j);
	fprintf(j->out, "\"0x%" PRIx64 "\"", v);
}

void cq_json_bool(struct cq_json *j, bool v)
{
	value_prefix(j);
	fputs(v ? "true" : "false", j->out);
}

void cq_json_null(struct cq_json *j)
{
	value_prefix(j);
	fputs("null", j->out);
}

void cq_json_finish(struct cq_json *j)
{
	fputc('\n', j->out);
}
