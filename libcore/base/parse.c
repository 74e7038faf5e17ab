/*
 * parse.c - strict whole-number parsing (see parse.h).
 */
#include "libcore/base/parse.h"

#include <errno.h>
#include <stdlib.h>

enum cq_parse_result cq_parse_u64(const char *s, bool allow_hex, uint64_t *out)
{
	bool hex = allow_hex && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
	const char *digits = hex ? s + 2 : s;
	if (!*digits || *digits == '-' || *digits == '+' || *digits == ' ' || *digits == '\t')
		return CQ_PARSE_SYNTAX;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(digits, &end, hex ? 16 : 10);
	if (*end)
		return CQ_PARSE_SYNTAX;
	if (errno == ERANGE)
		return CQ_PARSE_RANGE;
	*out = v;
	return CQ_PARSE_OK;
}
