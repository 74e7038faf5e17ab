/*
 * test_error.c - errors as values (libcore/base/error.h): the message is
 * formatted whole however long, cq_error_errno appends strerror and maps
 * ENOMEM to CQ_ERR_NOMEM, cq_error_prefix keeps the code and frees the
 * inner error, and the static out-of-memory error survives every call.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/base/error.h"

static void test_create_formats_the_message(void **state)
{
	(void)state;
	struct cq_error *err = cq_error_create(CQ_ERR_FORMAT, "note %d of %s is %s", 3, "x", "bad");
	assert_non_null(err);
	assert_int_equal(err->code, CQ_ERR_FORMAT);
	assert_string_equal(err->message, "note 3 of x is bad");
	cq_error_free(err);
	/* A message longer than any fixed buffer is kept whole. */
	char *big = malloc(20001);
	assert_non_null(big);
	memset(big, 'q', 20000);
	big[20000] = '\0';
	err = cq_error_create(CQ_ERR_LIMIT, "[%s]", big);
	assert_int_equal(strlen(err->message), 20002);
	assert_int_equal(err->message[0], '[');
	assert_int_equal(err->message[20001], ']');
	cq_error_free(err);
	free(big);
	err = cq_error_create(CQ_ERR_USAGE, "%s", "");
	assert_string_equal(err->message, "");
	cq_error_free(err);
}

static void test_errno_appends_the_reason(void **state)
{
	(void)state;
	char want[256];
	struct cq_error *err = cq_error_errno(ENOENT, "cannot open %s", "/x");
	snprintf(want, sizeof(want), "cannot open /x: %s", strerror(ENOENT));
	assert_int_equal(err->code, CQ_ERR_IO);
	assert_string_equal(err->message, want);
	cq_error_free(err);
	err = cq_error_errno(ENOMEM, "mmap");
	assert_int_equal(err->code, CQ_ERR_NOMEM);
	snprintf(want, sizeof(want), "mmap: %s", strerror(ENOMEM));
	assert_string_equal(err->message, want);
	cq_error_free(err);
}

static void test_prefix_adds_context(void **state)
{
	(void)state;
	struct cq_error *inner = cq_error_create(CQ_ERR_UNREADABLE, "no memory at 0x%x", 0x10);
	struct cq_error *err = cq_error_prefix(inner, "thread %d", 7);
	/* inner is freed (ASan reports it otherwise); the code is kept. */
	assert_int_equal(err->code, CQ_ERR_UNREADABLE);
	assert_string_equal(err->message, "thread 7: no memory at 0x10");
	err = cq_error_prefix(err, "core.1");
	assert_string_equal(err->message, "core.1: thread 7: no memory at 0x10");
	cq_error_free(err);
	/* NULL stays success. */
	assert_null(cq_error_prefix(NULL, "ctx"));
}

static void test_static_nomem_is_never_freed_or_changed(void **state)
{
	(void)state;
	assert_int_equal(cq_error_nomem.code, CQ_ERR_NOMEM);
	assert_string_equal(cq_error_nomem.message, "out of memory");
	struct cq_error *err = cq_error_prefix(&cq_error_nomem, "loading %s", "x");
	assert_ptr_equal(err, &cq_error_nomem);
	assert_string_equal(err->message, "out of memory");
	cq_error_free(&cq_error_nomem); /* a no-op: ASan would report a bad free */
	cq_error_free(NULL);
	assert_string_equal(cq_error_nomem.message, "out of memory");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_create_formats_the_message),
	    cmocka_unit_test(test_errno_appends_the_reason),
	    cmocka_unit_test(test_prefix_adds_context),
	    cmocka_unit_test(test_static_nomem_is_never_freed_or_changed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
