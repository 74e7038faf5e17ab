/*
 * json.c - the streaming JSON writer (see json.h).
 */
#include "libcore/base/json.h"

#include "libcore/base/bytes.h"

#include "libcore/base/text.h"

#include <string.h>

void cq_json_init(struct cq_json *j, FILE *out)
{
	j->out = out;
	j->depth = 0;
	memset(j->need_comma, 0, sizeof(j->need_comma));
	j->after_key = false;
	j->len = 0;
}

void cq_json_flush(struct cq_json *j)
{
	if (j->len)
		fwrite(j->buf, 1, j->len, j->out);
	j->len = 0;
}

static void put_bytes(struct cq_json *j, const void *p, size_t n)
{
	if (n > sizeof(j->buf) - j->len) {
		cq_json_flush(j);
		if (n > sizeof(j->buf)) {
			fwrite(p, 1, n, j->out);
			return;
		}
	}
	memcpy(j->buf + j->len, p, n);
	j->len += n;
}

static void put_char(struct cq_json *j, char c)
{
	if (j->len == sizeof(j->buf))
		cq_json_flush(j);
	j->buf[j->len++] = c;
}

/* v in decimal (negative with a '-'). */
static void put_u64(struct cq_json *j, uint64_t v, bool negative)
{
	char tmp[24], *p = tmp + sizeof(tmp);
	do
		*--p = (char)('0' + v % 10);
	while ((v /= 10));
	if (negative)
		*--p = '-';
	put_bytes(j, p, (size_t)(tmp + sizeof(tmp) - p));
}

/* Emits the separator a new value needs at the current position. */
static void value_prefix(struct cq_json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (j->need_comma[j->depth])
		put_char(j, ',');
	j->need_comma[j->depth] = true;
}

static void open_container(struct cq_json *j, char c)
{
	value_prefix(j);
	put_char(j, c);
	if (j->depth + 1 < CQ_JSON_MAX_DEPTH)
		j->depth++;
	j->need_comma[j->depth] = false;
}

static void close_container(struct cq_json *j, char c)
{
	if (j->depth > 0)
		j->depth--;
	put_char(j, c);
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

/*
 * Bytes that need a look: 1 for those always escaped (control bytes, DEL,
 * quote, backslash), 2 for the first byte of a multi-byte sequence, which
 * passes through when the sequence is valid UTF-8.  Printable ASCII is 0.
 */
static const uint8_t byte_class[256] = {
    [0 ... 0x1f] = 1, ['"'] = 1, ['\\'] = 1, [0x7f] = 1, [0x80 ... 0xff] = 2,
};

#define ONES  0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* True when the 8 bytes of w are all printable ASCII other than '"' and '\\'. */
static bool word_plain(uint64_t w)
{
	uint64_t q = w ^ (ONES * '"'), b = w ^ (ONES * '\\'), d = w ^ (ONES * 0x7f);
	uint64_t bad =
	    (w - ONES * 0x20) | ((q - ONES) & ~q) | ((b - ONES) & ~b) | ((d - ONES) & ~d);
	/* with no byte >= 0x80 (w & HIGHS == 0), a high bit in bad marks a byte to look at */
	return ((w | bad) & HIGHS) == 0;
}

/* Length of the run at s that needs no escaping (printable ASCII, valid UTF-8). */
static size_t plain_run(const unsigned char *s, size_t n)
{
	size_t i = 0;
	for (;;) {
		while (n - i >= 8 && word_plain(cq_load_u64(s + i)))
			i += 8; /* most text: eight plain bytes at a time */
		while (i < n && byte_class[s[i]] == 0)
			i++;
		if (i == n || byte_class[s[i]] == 1)
			return i;
		size_t seq = cq_utf8_sequence(s + i, n - i);
		if (seq == 0)
			return i;
		i += seq;
	}
}

static void write_string(struct cq_json *j, const unsigned char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	put_char(j, '"');
	for (size_t i = 0; i < n;) {
		size_t run = plain_run(s + i, n - i);
		if (run) {
			put_bytes(j, s + i, run);
			i += run;
			continue;
		}
		unsigned char c = s[i++];
		if (c == '"' || c == '\\') {
			char esc[2] = {'\\', (char)c};
			put_bytes(j, esc, 2);
		} else if (c == '\n') {
			put_bytes(j, "\\n", 2);
		} else if (c == '\t') {
			put_bytes(j, "\\t", 2);
		} else { /* control byte, DEL, or invalid UTF-8 */
			char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
			put_bytes(j, esc, 6);
		}
	}
	put_char(j, '"');
}

void cq_json_key(struct cq_json *j, const char *key)
{
	value_prefix(j);
	size_t len = strlen(key);
	if (len + 3 <= sizeof(j->buf) - j->len &&
	    plain_run((const unsigned char *)key, len) == len) {
		char *p = j->buf + j->len; /* the common case: a plain key, in one copy */
		p[0] = '"';
		memcpy(p + 1, key, len);
		p[len + 1] = '"';
		p[len + 2] = ':';
		j->len += len + 3;
	} else {
		write_string(j, (const unsigned char *)key, len);
		put_char(j, ':');
	}
	j->after_key = true;
}

void cq_json_string_len(struct cq_json *j, const char *s, size_t len)
{
	value_prefix(j);
	write_string(j, (const unsigned char *)s, len);
}

void cq_json_string(struct cq_json *j, const char *s)
{
	if (!s)
		cq_json_null(j);
	else
		cq_json_string_len(j, s, strlen(s));
}

void cq_json_raw_value(struct cq_json *j, const char *bytes, size_t n)
{
	value_prefix(j);
	put_bytes(j, bytes, n);
}

void cq_json_raw(struct cq_json *j, const char *bytes, size_t n)
{
	put_bytes(j, bytes, n);
}

void cq_json_int(struct cq_json *j, int64_t v)
{
	value_prefix(j);
	put_u64(j, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, v < 0);
}

void cq_json_uint(struct cq_json *j, uint64_t v)
{
	value_prefix(j);
	put_u64(j, v, false);
}

void cq_json_hex(struct cq_json *j, uint64_t v)
{
	static const char hex[] = "0123456789abcdef";
	char tmp[20], *p = tmp + sizeof(tmp);
	*--p = '"';
	do
		*--p = hex[v & 15];
	while ((v >>= 4));
	*--p = 'x';
	*--p = '0';
	*--p = '"';
	value_prefix(j);
	put_bytes(j, p, (size_t)(tmp + sizeof(tmp) - p));
}

void cq_json_bool(struct cq_json *j, bool v)
{
	value_prefix(j);
	put_bytes(j, v ? "true" : "false", v ? 4 : 5);
}

void cq_json_null(struct cq_json *j)
{
	value_prefix(j);
	put_bytes(j, "null", 4);
}

void cq_json_finish(struct cq_json *j)
{
	put_char(j, '\n');
	cq_json_flush(j);
}
