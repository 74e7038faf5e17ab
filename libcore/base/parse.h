/*
 * parse.h - whole numbers from command lines and note strings, strictly:
 * no sign, no spaces, nothing after the digits, no silent wrap-around.
 */
#ifndef CQ_PARSE_H
#define CQ_PARSE_H

#include <stdbool.h>
#include <stdint.h>

enum cq_parse_result {
	CQ_PARSE_OK,
	CQ_PARSE_SYNTAX, /* empty, a sign, a space, or a stray character */
	CQ_PARSE_RANGE,  /* does not fit in 64 bits */
};

/* Decimal, or with allow_hex also 0x/0X-prefixed hex; *out only set on OK. */
enum cq_parse_result cq_parse_u64(const char *s, bool allow_hex, uint64_t *out);

#endif
