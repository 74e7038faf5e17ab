/*
 * error.h - errors as values.
 *
 * Every fallible function in coreq returns a struct cq_error *: NULL means
 * success, anything else is an error that the caller owns and either handles
 * (cq_error_free) or returns to its own caller, optionally with context added
 * (cq_error_prefix).  Nothing below cmd/ prints; the message travels up.
 *
 * Allocation failure while building an error yields the static cq_error_nomem,
 * which cq_error_free knows not to free, so error paths never fail themselves.
 *
 * Layer: base (libcore/base/): the bottom layer, included by every other; it includes nothing of
 * coreq. The layer order is in docs/internals.md (Layout) and tests/check-layers.
 */
#ifndef CQ_ERROR_H
#define CQ_ERROR_H

#include <stdarg.h>

enum cq_error_code {
	CQ_ERR_NOMEM = 1,   /* allocation failed */
	CQ_ERR_IO,          /* the operating system refused (errno in message) */
	CQ_ERR_FORMAT,      /* input is malformed, truncated or hostile */
	CQ_ERR_UNSUPPORTED, /* input is valid but coreq cannot handle it yet */
	CQ_ERR_NOT_FOUND,   /* a looked-up thing does not exist */
	CQ_ERR_UNREADABLE,  /* memory the core does not hold */
	CQ_ERR_DB,          /* SQLite reported an error */
	CQ_ERR_USAGE,       /* a caller passed arguments that make no sense */
	CQ_ERR_LIMIT,       /* a configured bound was reached */
};

struct cq_error {
	enum cq_error_code code;
	const char *message; /* points into storage, or at a literal */
	char storage[];
};

extern struct cq_error cq_error_nomem;

/* Builds an error with a printf-style message. */
struct cq_error *cq_error_create(enum cq_error_code code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Like cq_error_create, with ": strerror(errnum)" appended. */
struct cq_error *cq_error_errno(int errnum, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Returns a new error "prefix: old message" with the old code; frees err. */
struct cq_error *cq_error_prefix(struct cq_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

void cq_error_free(struct cq_error *err);

#endif
