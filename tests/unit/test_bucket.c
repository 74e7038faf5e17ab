/*
 * test_bucket.c - crash signatures (libcore/triage/bucket.h): name normalisation
 * on real demangler output, and which frames a signature keeps.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/triage/bucket.h"
#include "libcore/model/module.h"
#include "libcore/analysis/stacktrace.h"

static void check_name(const char *in, const char *want)
{
	char out[512];
	cq_bucket_normalize_name(in, out, sizeof(out));
	assert_string_equal(out, want);
}

static void test_normalize_c_and_glibc(void **state)
{
	(void)state;
	check_name("level3", "level3");
	check_name("__GI_raise", "raise");
	check_name("pthread_kill@@GLIBC_2.34", "pthread_kill");
	check_name("__assert_fail_base.cold", "__assert_fail_base");
	check_name("compute.isra.0", "compute");
	check_name("compute.constprop.3.cold", "compute");
	check_name("helper.part.0", "helper");
}

static void test_normalize_cxx(void **state)
{
	(void)state;
	check_name("thrower(int)", "thrower");
	check_name("f(int) [clone .cold]", "f");
	check_name("std::vector<int, std::allocator<int> >::push_back(int const&)",
	           "std::vector<T>::push_back");
	check_name("void std::condition_variable::wait<worker_park(int)::{lambda()#1}>"
	           "(std::unique_lock<std::mutex>&, worker_park(int)::{lambda()#1})",
	           "std::condition_variable::wait<T>");
	check_name("std::__invoke_result<void (*)(int), int>::type std::__invoke<void (*)(int), "
	           "int>(void (*&&)(int), int&&)",
	           "std::__invoke<T>");
	check_name("(anonymous namespace)::helper(int)", "{anon}::helper");
	check_name("Widget::operator()(int) const", "Widget::operator()");
	check_name("operator new(unsigned long)", "operator new");
	check_name("<signal handler called>", "<signal handler called>");
}

static void test_normalize_rust(void **state)
{
	(void)state;
	check_name("core::panicking::panic::h0123456789abcdef", "core::panicking::panic");
	check_name("app::server::handle::h00000000000000ff", "app::server::handle");
	check_name("app::handle::hello", "app::handle::hello"); /* not a hash */
}

static struct cq_stack_frame named(const char *fn)
{
	return (struct cq_stack_frame){.function = fn, .trust = CQ_TRUST_CFI};
}

static void check_signature(struct cq_stack_frame *frames, size_t n, int sig, unsigned keep,
                            const char *want)
{
	struct cq_thread_stack ts = {.frames = frames, .nframes = n};
	struct cq_bucket_signature s;
	assert_null(cq_bucket_signature(&ts, sig, keep, &s));
	assert_string_equal(s.text, want);
	assert_int_equal(strlen(s.hash), 16);
	cq_bucket_signature_free(&s);
}

static void test_abort_machinery_and_startup_dropped(void **state)
{
	(void)state;
	struct cq_stack_frame f[] = {
	    named("__pthread_kill_implementation"),
	    named("__pthread_kill_internal"),
	    named("raise"),
	    named("abort"),
	    named("level3"),
	    named("level2"),
	    named("level1"),
	    named("main"),
	    named("__libc_start_call_main"),
	    named("__libc_start_main"),
	    named("_start"),
	};
	check_signature(f, 11, SIGABRT, 5, "level3 | level2 | level1 | main | SIGABRT");
	check_signature(f, 11, SIGABRT, 2, "level3 | level2 | SIGABRT");
}

static void test_assert_and_throw_start_at_the_caller(void **state)
{
	(void)state;
	struct cq_stack_frame a[] = {
	    named("__pthread_kill_implementation"),
	    named("raise"),
	    named("abort"),
	    named("__assert_fail_base.cold"),
	    named("__assert_fail"),
	    named("check_value"),
	    named("checker"),
	    named("main"),
	};
	check_signature(a, 8, SIGABRT, 5, "check_value | checker | main | SIGABRT");
	/* libstdc++'s unnamed frames inside the terminate path are machinery too. */
	static struct cq_module libstdcxx = {.name = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"};
	struct cq_stack_frame t[] = {
	    named("__pthread_kill_implementation"),
	    named("raise"),
	    named("abort"),
	    {.trust = CQ_TRUST_CFI, .module = &libstdcxx, .offset = 0xa9919},
	    named("std::terminate()"),
	    named("__cxa_throw"),
	    named("thrower(int)"),
	    named("main"),
	};
	check_signature(t, 8, SIGABRT, 5, "thrower | main | SIGABRT");
	/* An unnamed frame with no machinery after it is kept, by module+offset. */
	struct cq_stack_frame u[] = {{.trust = CQ_TRUST_CFI, .module = &libstdcxx, .offset = 0x10},
	                             named("main")};
	check_signature(u, 2, SIGSEGV, 5, "libstdc++.so.6+0x10 | main | SIGSEGV");
}

static void test_segv_keeps_top_and_scan_frames_are_dropped(void **state)
{
	(void)state;
	struct cq_stack_frame f[] = {named("store_null"), named("writer"), named("main")};
	f[1].trust = CQ_TRUST_SCAN;
	check_signature(f, 3, SIGSEGV, 5, "store_null | main | SIGSEGV");
	/* Start-up frames end the signature even below unnamed frames. */
	struct cq_stack_frame g[] = {named("level3"),
	                             {.trust = CQ_TRUST_CFI, .pc = 0x401000},
	                             named("__libc_start_call_main"),
	                             {.trust = CQ_TRUST_CFI}};
	check_signature(g, 4, SIGABRT, 5, "level3 | 0x401000 | SIGABRT");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_normalize_c_and_glibc),
	    cmocka_unit_test(test_normalize_cxx),
	    cmocka_unit_test(test_normalize_rust),
	    cmocka_unit_test(test_abort_machinery_and_startup_dropped),
	    cmocka_unit_test(test_assert_and_throw_start_at_the_caller),
	    cmocka_unit_test(test_segv_keeps_top_and_scan_frames_are_dropped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
