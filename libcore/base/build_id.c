/*
 * build_id.c - the one rule for a build-id given as text (see build_id.h).
 */
#include "libcore/base/build_id.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

bool cq_build_id_hex_valid(const char *s)
{
	if (!s)
		return false;
	size_t n = 0;
	for (; s[n]; n++) {
		if (n >= CQ_BUILD_ID_HEX_MAX || !isxdigit((unsigned char)s[n]))
			return false;
	}
	return n >= CQ_BUILD_ID_HEX_MIN && n % 2 == 0;
}

struct cq_error *cq_build_id_check(const char *s)
{
	if (cq_build_id_hex_valid(s))
		return NULL;
	if (!s)
		return cq_error_create(CQ_ERR_FORMAT, "missing build-id");
	/* Quote a bounded, printable prefix: the id may be hostile text. */
	char shown[4 * 40 + 1];
	size_t o = 0;
	for (size_t i = 0; s[i] && i < 40; i++) {
		unsigned char c = (unsigned char)s[i];
		if (isprint(c) && c != '"' && c != '\\')
			shown[o++] = (char)c;
		else
			o += (size_t)snprintf(shown + o, sizeof(shown) - o, "\\x%02x", c);
	}
	shown[o] = '\0';
	return cq_error_create(CQ_ERR_FORMAT, "bad build-id \"%s%s\" (want 2 to 128 hex digits)",
	                       shown, strlen(s) > 40 ? "..." : "");
}

static unsigned hex_digit(char c)
{
	return isdigit((unsigned char)c) ? (unsigned)(c - '0')
	                                 : (unsigned)(tolower((unsigned char)c) - 'a' + 10);
}

bool cq_build_id_from_hex(const char *s, uint8_t *out, size_t cap, size_t *len)
{
	if (!cq_build_id_hex_valid(s) || strlen(s) / 2 > cap)
		return false;
	size_t n = strlen(s) / 2;
	for (size_t i = 0; i < n; i++)
		out[i] = (uint8_t)(hex_digit(s[2 * i]) << 4 | hex_digit(s[2 * i + 1]));
	*len = n;
	return true;
}
