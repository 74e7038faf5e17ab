/*
 * text.c - escaping strings from a core for text output (see text.h).
 */
#include "libcore/base/text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t cq_utf8_sequence(const unsigned char *s, size_t n)
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

/* Bytes of s[i..] that print as themselves. */
static size_t plain(const unsigned char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		if (s[i] >= 0x20 && s[i] < 0x7f) {
			i++;
			continue;
		}
		size_t seq = s[i] >= 0x80 ? cq_utf8_sequence(s + i, n - i) : 0;
		if (!seq)
			break;
		i += seq;
	}
	return i;
}

bool cq_text_is_safe(const char *s)
{
	size_t n = strlen(s);
	return plain((const unsigned char *)s, n) == n;
}

const char *cq_text_escape(const char *s, char **buf, size_t *cap)
{
	if (!s)
		return NULL;
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s);
	size_t first = plain(u, n);
	if (first == n)
		return s;
	if (n > (SIZE_MAX - 1) / 4)
		return "?";
	size_t need = 4 * n + 1; /* every byte at most \xNN */
	if (*cap < need) {
		char *grown = realloc(*buf, need);
		if (!grown)
			return "?";
		*buf = grown;
		*cap = need;
	}
	static const char hex[] = "0123456789abcdef";
	char *o = *buf;
	memcpy(o, s, first);
	o += first;
	for (size_t i = first; i < n;) {
		size_t run = plain(u + i, n - i);
		memcpy(o, u + i, run);
		o += run;
		i += run;
		if (i == n)
			break;
		unsigned char c = u[i++];
		*o++ = '\\';
		if (c == '\n')
			*o++ = 'n';
		else if (c == '\t')
			*o++ = 't';
		else if (c == '\r')
			*o++ = 'r';
		else {
			*o++ = 'x';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	*o = '\0';
	return *buf;
}
