/*
 * test_dynlib.c - libraries loaded when first needed (libcore/base/dynlib.h)
 * and the libarchive table built on it (libcore/base/archive_api.h).
 *
 * The oracle is the dynamic linker itself: this test is linked against
 * zlib and libarchive, so a function resolved by name must be the very
 * function the test calls directly.
 *
 * Files tested: libcore/base/dynlib.c, libcore/base/archive_api.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "libcore/base/archive_api.h"
#include "libcore/base/dynlib.h"

static void test_load_resolves_the_linked_functions(void **state)
{
	(void)state;
	void *crc = NULL, *version = NULL;
	const struct cq_dynlib_sym syms[] = {{"crc32", &crc}, {"zlibVersion", &version}};
	assert_null(cq_dynlib_load("libz.so.1", syms, 2));
	assert_ptr_equal(crc, (void *)crc32);
	assert_ptr_equal(version, (void *)zlibVersion);
	/* Loaded before: returns at once, whatever the name now says. */
	assert_null(cq_dynlib_load("libnot-there.so.9", syms, 2));
	assert_ptr_equal(crc, (void *)crc32);
}

static void test_missing_function_clears_every_slot(void **state)
{
	(void)state;
	void *crc = NULL, *nope = NULL, *version = NULL;
	const struct cq_dynlib_sym syms[] = {
	    {"crc32", &crc}, {"cq_no_such_function", &nope}, {"zlibVersion", &version}};
	struct cq_error *err = cq_dynlib_load("libz.so.1", syms, 3);
	assert_non_null(err);
	assert_int_equal(err->code, CQ_ERR_IO);
	assert_non_null(strstr(err->message, "libz.so.1"));
	assert_non_null(strstr(err->message, "cq_no_such_function"));
	cq_error_free(err);
	assert_null(crc);
	assert_null(nope);
	assert_null(version);
	/* Nothing was remembered: the same call fails again rather than
	 * passing on half-filled slots. */
	err = cq_dynlib_load("libz.so.1", syms, 3);
	assert_non_null(err);
	cq_error_free(err);
}

static void test_missing_library_is_named(void **state)
{
	(void)state;
	void *f = NULL;
	const struct cq_dynlib_sym syms[] = {{"f", &f}};
	struct cq_error *err = cq_dynlib_load("libcoreq-test-absent.so.1", syms, 1);
	assert_non_null(err);
	assert_int_equal(err->code, CQ_ERR_IO);
	assert_non_null(strstr(err->message, "libcoreq-test-absent.so.1"));
	assert_null(f);
	cq_error_free(err);
}

static void test_archive_table_is_complete_and_genuine(void **state)
{
	(void)state;
	const struct cq_archive_api *api = NULL;
	assert_null(cq_archive_api(&api));
	assert_non_null(api);
	/* Every field is set: the struct is nothing but function pointers. */
	void (*const *fields)(void) = (void (*const *)(void))(const void *)api;
	for (size_t i = 0; i < sizeof(*api) / sizeof(fields[0]); i++)
		assert_non_null((void *)fields[i]);
	/* And each is the function of its name. */
	assert_ptr_equal((void *)api->read_new, (void *)archive_read_new);
	assert_ptr_equal((void *)api->read_data, (void *)archive_read_data);
	assert_ptr_equal((void *)api->read_support_filter_all,
	                 (void *)archive_read_support_filter_all);
	assert_ptr_equal((void *)api->filter_code, (void *)archive_filter_code);
	assert_ptr_equal((void *)api->error_string, (void *)archive_error_string);
	/* Later calls hand out the same table. */
	const struct cq_archive_api *again = NULL;
	assert_null(cq_archive_api(&again));
	assert_ptr_equal(again, api);
	/* The table works: a reader is made, set up and freed through it. */
	struct archive *a = api->read_new();
	assert_non_null(a);
	assert_int_equal(api->read_support_format_raw(a), ARCHIVE_OK);
	assert_int_equal(api->read_free(a), ARCHIVE_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_load_resolves_the_linked_functions),
	    cmocka_unit_test(test_missing_function_clears_every_slot),
	    cmocka_unit_test(test_missing_library_is_named),
	    cmocka_unit_test(test_archive_table_is_complete_and_genuine),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
