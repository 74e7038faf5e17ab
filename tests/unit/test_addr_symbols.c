/*
 * test_addr_symbols.c - the symbol index (libcore/symbols/addr_symbols.h)
 * against its oracle, libdwfl's own dwfl_module_addrinfo.
 *
 * Real modules of this machine, reported to libdwfl offline: libc with the
 * full symbol table of libc6-dbg's debuginfo (locals, aliases of every
 * binding at one address, sizeless assembly labels), ld.so, and
 * libstdc++ with its dynamic symbols only.  Around every 3rd symbol (one
 * byte below, its start, its middle, its last byte, one past its end) the
 * index must give the name and offset libdwfl gives.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <unistd.h>

#include <cmocka.h>

#include "libcore/symbols/addr_symbols.h"

static const Dwfl_Callbacks offline = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

/* The module of path, reported alone (its debuginfo found by build-id), or NULL. */
static Dwfl_Module *report(Dwfl **dwfl, const char *path)
{
	unsetenv("DEBUGINFOD_URLS"); /* libdwfl must not go to the network */
	*dwfl = dwfl_begin(&offline);
	assert_non_null(*dwfl);
	Dwfl_Module *m =
	    access(path, R_OK) == 0 ? dwfl_report_offline(*dwfl, path, path, -1) : NULL;
	dwfl_report_end(*dwfl, NULL, NULL);
	return m;
}

/* Checks the index against libdwfl around every step-th symbol; the addresses checked. */
static size_t compare_module(const char *path, int min_symbols)
{
	Dwfl *dwfl;
	Dwfl_Module *m = report(&dwfl, path);
	if (!m) {
		dwfl_end(dwfl);
		return 0;
	}
	int nsyms = dwfl_module_getsymtab(m);
	assert_true(nsyms >= min_symbols);
	struct cq_addr_symbols *t;
	assert_null(cq_addr_symbols_build(m, &t));
	assert_non_null(t);
	size_t checked = 0;
	for (int i = 1; i < nsyms; i += 3) {
		GElf_Sym sym;
		GElf_Addr value;
		if (!dwfl_module_getsym_info(m, i, &sym, &value, NULL, NULL, NULL) || value == 0)
			continue;
		uint64_t size = sym.st_size;
		const uint64_t probes[] = {value - 1, value, value + size / 2,
		                           size ? value + size - 1 : value, value + size};
		for (size_t p = 0; p < sizeof(probes) / sizeof(probes[0]); p++) {
			GElf_Off want_off = 0, got_off = 0;
			GElf_Sym s;
			const char *want =
			    dwfl_module_addrinfo(m, probes[p], &want_off, &s, NULL, NULL, NULL);
			const char *got = cq_addr_symbols_find(t, m, probes[p], &got_off);
			if ((want == NULL) != (got == NULL) || (want && strcmp(want, got) != 0) ||
			    (want && want_off != got_off))
				fail_msg("%s: at 0x%llx libdwfl says %s+%llu, the index %s+%llu",
				         path, (unsigned long long)probes[p],
				         want ? want : "(none)", (unsigned long long)want_off,
				         got ? got : "(none)", (unsigned long long)got_off);
			checked++;
		}
	}
	cq_addr_symbols_free(t);
	dwfl_end(dwfl);
	return checked;
}

static void libc_with_debuginfo(void **state)
{
	(void)state;
	/* libc6-dbg is in make deps: the full symbol table has tens of thousands of entries */
	assert_true(compare_module("/lib/x86_64-linux-gnu/libc.so.6", 10000) > 10000);
}

static void ld_so(void **state)
{
	(void)state;
	assert_true(compare_module("/lib64/ld-linux-x86-64.so.2", 100) > 100);
}

static void libstdcxx_dynamic_symbols_only(void **state)
{
	(void)state;
	size_t n = compare_module("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", 1000);
	if (n == 0)
		skip();
	assert_true(n > 1000);
}

/* An address below every symbol and one far above: libdwfl's answer, whatever it is. */
static void outside_every_symbol(void **state)
{
	(void)state;
	Dwfl *dwfl;
	Dwfl_Module *m = report(&dwfl, "/lib/x86_64-linux-gnu/libc.so.6");
	assert_non_null(m);
	struct cq_addr_symbols *t;
	assert_null(cq_addr_symbols_build(m, &t));
	const uint64_t probes[] = {0, 1, UINT64_MAX - 1, UINT64_MAX};
	for (size_t p = 0; p < sizeof(probes) / sizeof(probes[0]); p++) {
		GElf_Off off, off2;
		GElf_Sym s;
		const char *want = dwfl_module_addrinfo(m, probes[p], &off, &s, NULL, NULL, NULL);
		const char *got = cq_addr_symbols_find(t, m, probes[p], &off2);
		assert_true((want == NULL) == (got == NULL));
		if (want)
			assert_string_equal(want, got);
	}
	/* No index: libdwfl answers. */
	GElf_Off off, off2;
	GElf_Sym s;
	uint64_t inside = 0;
	for (int i = 1; inside == 0 && i < dwfl_module_getsymtab(m); i++) {
		GElf_Addr value;
		const char *name = dwfl_module_getsym_info(m, i, &s, &value, NULL, NULL, NULL);
		if (name && strcmp(name, "abort") == 0)
			inside = value + s.st_size / 2;
	}
	const char *want = dwfl_module_addrinfo(m, inside, &off, &s, NULL, NULL, NULL);
	const char *got = cq_addr_symbols_find(NULL, m, inside, &off2);
	assert_non_null(want);
	assert_ptr_equal(want, got);
	assert_int_equal(off, off2);
	cq_addr_symbols_free(t);
	dwfl_end(dwfl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(libc_with_debuginfo),
	    cmocka_unit_test(ld_so),
	    cmocka_unit_test(libstdcxx_dynamic_symbols_only),
	    cmocka_unit_test(outside_every_symbol),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
