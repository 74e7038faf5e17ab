/*
 * test_demangle.c - symbol demangling (libcore/symbols/demangle.c).
 *
 * Real manglings from g++ and rustc (legacy and v0) demangle to what c++filt
 * and rustfilt print; plain C names, truncated manglings and NULL give NULL,
 * so callers keep the original name.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "libcore/symbols/demangle.h"

static void check_demangles(const char *mangled, const char *want)
{
	char *got = cq_demangle(mangled);
	if (!got)
		fail_msg("%s: not demangled", mangled);
	assert_string_equal(got, want);
	free(got);
}

static void test_cxx(void **state)
{
	(void)state;
	check_demangles("_ZN3foo3barEv", "foo::bar()");
	check_demangles("_ZNSt6vectorIiSaIiEE9push_backERKi",
	                "std::vector<int, std::allocator<int> >::push_back(int const&)");
	check_demangles("_ZN9__gnu_cxx27__verbose_terminate_handlerEv",
	                "__gnu_cxx::__verbose_terminate_handler()");
	check_demangles("_ZN1a1bEv.cold", "a::b() [clone .cold]");
}

static void test_rust_legacy(void **state)
{
	(void)state;
	/* The trailing 17h<hash>E is dropped, as rustfilt does by default. */
	check_demangles("_ZN3std2rt10lang_start17h0f8a7b3c5d2e1964E", "std::rt::lang_start");
	check_demangles("_ZN4core9panicking5panic17h7f1e2d3c4b5a6978E", "core::panicking::panic");
}

static void test_rust_v0(void **state)
{
	(void)state;
	check_demangles("_RNvCs15kBYyAo9fc_7mycrate7example", "mycrate::example");
	check_demangles(
	    "_RINvNtCs2t3xOu8kGTV_4core3ptr13drop_in_placeNtNtCs7Zbgn8nwbgL_5alloc6string"
	    "6StringEB6_",
	    "core::ptr::drop_in_place::<alloc::string::String>");
}

static void test_not_mangled(void **state)
{
	(void)state;
	assert_null(cq_demangle(NULL));
	assert_null(cq_demangle(""));
	assert_null(cq_demangle("main"));
	assert_null(cq_demangle("__libc_start_call_main"));
	assert_null(cq_demangle("foo__bar"));
	assert_null(cq_demangle("_Z"));
	assert_null(cq_demangle("_ZN3foo"));
	assert_null(cq_demangle("_R"));
}

static void test_huge_name_refused(void **state)
{
	(void)state;
	size_t len = 200 * 1024;
	char *name = malloc(len + 1);
	assert_non_null(name);
	memcpy(name, "_ZN", 3);
	memset(name + 3, '1', len - 3);
	name[len] = '\0';
	assert_null(cq_demangle(name));
	free(name);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cxx),
	    cmocka_unit_test(test_rust_legacy),
	    cmocka_unit_test(test_rust_v0),
	    cmocka_unit_test(test_not_mangled),
	    cmocka_unit_test(test_huge_name_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
