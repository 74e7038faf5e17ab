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

/* Boost.Asio 1.74's async_result<…>::initiate coroutine actor (gcc 12, boost_coro.O2g):
 * 1,109 bytes, more components than libiberty's recursion limit allows. */
static const char boost_actor[] =
    "_ZN5boost4asio12async_resultINS0_15use_awaitable_tINS0_9execution12any_executorI"
    "JNS3_12context_as_tIRNS0_17execution_contextEEENS3_6detail8blocking7never_tILi0E"
    "EENS3_11prefer_onlyINSA_10possibly_tILi0EEEEENSD_INS9_16outstanding_work9tracked"
    "_tILi0EEEEENSD_INSH_11untracked_tILi0EEEEENSD_INS9_12relationship6fork_tILi0EEEE"
    "ENSD_INSO_14continuation_tILi0EEEEEEEEEEFvNS_6system10error_codeEEE8initiateEPZN"
    "S10_8initiateINS0_20basic_waitable_timerINSt6chrono3_V212steady_clockENS0_11wait"
    "_traitsIS15_EESV_E19initiate_async_waitEJEEENS0_9awaitableIvSV_EET_SW_DpT0_E544_"
    "ZN5boost4asio12async_resultINS0_15use_awaitable_tINS0_9execution12any_executorIJ"
    "NS3_12context_as_tIRNS0_17execution_contextEEENS3_6detail8blocking7never_tILi0EE"
    "ENS3_11prefer_onlyINSA_10possibly_tILi0EEEEENSD_INS9_16outstanding_work9tracked_"
    "tILi0EEEEENSD_INSH_11untracked_tILi0EEEEENSD_INS9_12relationship6fork_tILi0EEEEE"
    "NSD_INSO_14continuation_tILi0EEEEEEEEEEFvNS_6system10error_codeEEE8initiateINS0_"
    "20basic_waitable_timerINSt6chrono3_V212steady_clockENS0_11wait_traitsIS15_EESV_E"
    "19initiate_async_waitEJEEENS0_9awaitableIvSV_EET_SW_DpT0_.Frame.actor";

static void test_past_recursion_limit(void **state)
{
	(void)state;
	char *d = cq_demangle(boost_actor);
	assert_non_null(d);
	assert_true(strncmp(d, "boost::asio::async_result<boost::asio::use_awaitable_t<", 55) == 0);
	const char *tail = "::_ZN5boost4asio12async_result";
	assert_non_null(strstr(d, tail));
	assert_true(strlen(d) > 14 && strcmp(d + strlen(d) - 14, "[clone .actor]") == 0);
	free(d);
	/* Nesting to the length bound (4,096 bytes) is demangled or refused, without
	 * running out of stack; one byte more is not retried. */
	size_t n = (4096 - 8) / 4;
	char *deep = malloc(4 * n + 16);
	assert_non_null(deep);
	size_t k = 0;
	memcpy(deep, "_Z1fI", 5), k = 5;
	for (size_t i = 0; i < n; i++)
		memcpy(deep + k, "1aI", 3), k += 3;
	deep[k++] = 'i';
	for (size_t i = 0; i < n; i++)
		deep[k++] = 'E';
	memcpy(deep + k, "Ev", 3);
	assert_true(strlen(deep) <= 4096);
	free(cq_demangle(deep));
	free(deep);
}

static void check_unclone(const char *name, const char *want)
{
	assert_int_equal(cq_name_unclone(name), strlen(want));
	assert_memory_equal(name, want, strlen(want));
}

/* Compiler clone suffixes, plain and demangled, chained or not. */
static void test_unclone(void **state)
{
	(void)state;
	check_unclone("foo.constprop.0", "foo");
	check_unclone("foo.isra.0", "foo");
	check_unclone("foo.part.0", "foo");
	check_unclone("foo.lto_priv.0", "foo");
	check_unclone("foo.cold", "foo");
	check_unclone("foo.cold.1", "foo");
	check_unclone("_PyObject_VectorcallTstate.lto_priv.4.lto_priv.0",
	              "_PyObject_VectorcallTstate");
	check_unclone("__new_sem_wait_slow64.constprop.0", "__new_sem_wait_slow64");
	check_unclone("f(int) [clone .constprop.0]", "f(int)");
	check_unclone("f(int) [clone .isra.0] [clone .cold]", "f(int)");
	/* Not clone suffixes: left alone. */
	check_unclone("foo", "foo");
	check_unclone("foo.bar.0", "foo.bar.0");
	check_unclone("foo2", "foo2");
	check_unclone("v1.2", "v1.2");
	check_unclone(".cold", ".cold");
	check_unclone("0", "0");
	check_unclone("", "");
	/* Any demangled clone, a coroutine part too (the symbolizer keeps those whole itself). */
	check_unclone("f(int) [clone .actor]", "f(int)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cxx),
	    cmocka_unit_test(test_unclone),
	    cmocka_unit_test(test_rust_legacy),
	    cmocka_unit_test(test_rust_v0),
	    cmocka_unit_test(test_not_mangled),
	    cmocka_unit_test(test_huge_name_refused),
	    cmocka_unit_test(test_past_recursion_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
