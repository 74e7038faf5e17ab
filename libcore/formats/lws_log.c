/*
 * lws_log.c - read logs line by line and find "~m#" records in them
 * (see lws_log.h).
 *
 * Invariants (asserted): a line never holds more than CQ_LWS_LOG_MAX_LINE
 * bytes and its NUL; a record found lies inside the line, after from.
 */
#include "libcore/formats/lws_log.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/hash.h"

struct cq_error *cq_lws_log_reader_init(struct cq_lws_log_reader *r, FILE *in)
{
	memset(r, 0, sizeof(*r));
	r->in = in;
	r->hash = CQ_FNV_OFFSET;
	r->line = malloc(CQ_LWS_LOG_MAX_LINE + 1);
	return r->line ? NULL : &cq_error_nomem;
}

void cq_lws_log_reader_free(struct cq_lws_log_reader *r)
{
	free(r->line);
	r->line = NULL;
}

bool cq_lws_log_next_line(struct cq_lws_log_reader *r, struct cq_error **err)
{
	*err = NULL;
	r->len = 0;
	r->truncated = false;
	int c = EOF;
	bool any = false;
	while ((c = getc_unlocked(r->in)) != EOF) {
		any = true;
		r->bytes++;
		r->hash = cq_fnv1a_step(r->hash, (uint8_t)c);
		if (c == '\n')
			break;
		if (r->len < CQ_LWS_LOG_MAX_LINE)
			r->line[r->len++] = (char)c;
		else
			r->truncated = true;
	}
	if (c == EOF && ferror(r->in)) {
		*err = cq_error_errno(errno, "read failed after line %llu",
		                      (unsigned long long)r->lineno);
		return false;
	}
	if (!any)
		return false;
	assert(r->len <= CQ_LWS_LOG_MAX_LINE);
	if (r->len && r->line[r->len - 1] == '\r')
		r->len--;
	r->line[r->len] = '\0';
	r->lineno++;
	return true;
}

static bool is_base64_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '+' || c == '/' || c == '-' || c == '_' || c == '=';
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r';
}

bool cq_lws_log_find_record(const char *line, size_t len, size_t from, size_t *start, size_t *end)
{
	for (size_t i = from; i + 3 <= len; i++) {
		if (line[i] != '~' || line[i + 1] != 'm' || line[i + 2] != '#')
			continue;
		size_t j = i + 3;
		while (j < len && is_base64_char(line[j]))
			j++;
		/* Blanks inside a record (wrapped, pasted) only when nothing else follows it. */
		size_t k = j;
		while (k < len && (is_base64_char(line[k]) || is_space(line[k])))
			k++;
		if (k == len) {
			while (k > j && is_space(line[k - 1]))
				k--;
			j = k;
		}
		assert(from <= i && i + 3 <= j && j <= len);
		*start = i;
		*end = j;
		return true;
	}
	return false;
}
