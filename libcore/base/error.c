/*
 * error.c - construction and disposal of struct cq_error (see error.h).
 */
#include "libcore/base/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

struct cq_error cq_error_nomem = {.code = CQ_ERR_NOMEM, .message = "out of memory"};

static struct cq_error *error_vcreate(enum cq_error_code code, const char *suffix, const char *fmt,
                                      va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		n = 0;
	size_t len = (size_t)n + (suffix ? strlen(suffix) + 2 : 0);
	struct cq_error *err = malloc(sizeof(*err) + len + 1);
	if (!err)
		return &cq_error_nomem;
	err->code = code;
	vsnprintf(err->storage, (size_t)n + 1, fmt, ap);
	if (suffix) {
		strcat(err->storage, ": ");
		strcat(err->storage, suffix);
	}
	err->message = err->storage;
	return err;
}

struct cq_error *cq_error_create(enum cq_error_code code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	struct cq_error *err = error_vcreate(code, NULL, fmt, ap);
	va_end(ap);
	return err;
}

struct cq_error *cq_error_errno(int errnum, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	enum cq_error_code code = errnum == ENOMEM ? CQ_ERR_NOMEM : CQ_ERR_IO;
	struct cq_error *err = error_vcreate(code, strerror(errnum), fmt, ap);
	va_end(ap);
	return err;
}

struct cq_error *cq_error_prefix(struct cq_error *err, const char *fmt, ...)
{
	if (!err || err == &cq_error_nomem)
		return err;
	va_list ap;
	va_start(ap, fmt);
	struct cq_error *outer = error_vcreate(err->code, err->message, fmt, ap);
	va_end(ap);
	if (outer != &cq_error_nomem)
		cq_error_free(err);
	else
		outer = err;
	return outer;
}

void cq_error_free(struct cq_error *err)
{
	if (err && err != &cq_error_nomem)
		free(err);
}
