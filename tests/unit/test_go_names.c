/*
 * test_go_names.c - Go function names as Go's traceback prints them
 * (libcore/symbols/go_names.c).
 *
 * The symbol names are the ones go 1.19's linker wrote into corpus/go_crash's
 * binaries (readelf -s); the printed names are the runtime's own, from the
 * program's GOTRACEBACK=crash dump and runtime.FuncForPC(pc).Name().  C++
 * names with brackets, and names already as Go prints them, are left alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/symbols/go_names.h"

static void check_printed(const char *symbol, const char *want)
{
	char out[256];
	assert_true(cq_name_go_printed(symbol, out, sizeof(out)));
	assert_string_equal(out, want);
}

static void check_kept(const char *name)
{
	char out[256] = "untouched";
	assert_false(cq_name_go_printed(name, out, sizeof(out)));
	assert_string_equal(out, "untouched");
}

static void test_abi_suffixes(void **state)
{
	(void)state;
	check_printed("runtime.raise.abi0", "runtime.raise");
	check_printed("runtime.sigtramp.abi0", "runtime.sigtramp");
	check_printed("runtime.sigreturn.abi0", "runtime.sigreturn");
	check_printed("syscall.rawVforkSyscall.abiinternal", "syscall.rawVforkSyscall");
}

static void test_generics(void **state)
{
	(void)state;
	check_printed("main.pick[go.shape.int_0]", "main.pick[...]");
	check_printed("main.pick[go.shape.int_0].func1", "main.pick[...].func1");
	check_printed("main.(*List[go.shape.string_0]).Push", "main.(*List[...]).Push");
	check_printed("main.Map[go.shape.int_0,go.shape.string_1]", "main.Map[...]");
	check_printed("main.pick[go.shape.int_0].abi0", "main.pick[...]");
}

static void test_names_kept(void **state)
{
	(void)state;
	check_kept("main.main");
	check_kept("main.derefNil.func1");
	check_kept("main.(*server).handle");
	check_kept("main.pick[...]");
	check_kept("runtime/cgo(.text)");
	check_kept("std::vector<int>::operator[](unsigned long)");
	check_kept("f[abi:cxx11]()");
	check_kept("compute.isra.0");
	check_kept(".abi0");
	check_kept("");
	assert_false(cq_name_go_printed(NULL, NULL, 0));
}

static void test_cut_to_fit(void **state)
{
	(void)state;
	char out[8];
	assert_true(cq_name_go_printed("runtime.raise.abi0", out, sizeof(out)));
	assert_string_equal(out, "runtime");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_abi_suffixes),
	    cmocka_unit_test(test_generics),
	    cmocka_unit_test(test_names_kept),
	    cmocka_unit_test(test_cut_to_fit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
