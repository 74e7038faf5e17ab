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
 *
 * Real tables rarely hold the corner cases of libdwfl's rules, so a small
 * ELF file written here holds them: symbols nested in others of every
 * binding in both table orders, aliases of one address with different
 * sizes and bindings, sizeless labels (global and local, in and out of
 * the text), section, file and absolute symbols.  Every byte address across
 * it must get libdwfl's answer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#include <cmocka.h>

#include "libcore/symbols/addr_symbols.h"
#include "tests/common/symtab_elf.h"

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

/* Fails unless the index names addr in m as libdwfl does; whether it names it at all. */
static bool same_answer(const char *what, Dwfl_Module *m, const struct cq_addr_symbols *t,
                        uint64_t addr)
{
	GElf_Off want_off = 0, got_off = 0;
	GElf_Sym s;
	const char *want = dwfl_module_addrinfo(m, addr, &want_off, &s, NULL, NULL, NULL);
	const char *got = cq_addr_symbols_find(t, m, addr, &got_off);
	if ((want == NULL) != (got == NULL) || (want && strcmp(want, got) != 0) ||
	    (want && want_off != got_off))
		fail_msg("%s: at 0x%llx libdwfl says %s+%llu, the index %s+%llu", what,
		         (unsigned long long)addr, want ? want : "(none)",
		         (unsigned long long)want_off, got ? got : "(none)",
		         (unsigned long long)got_off);
	return want != NULL;
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
		for (size_t p = 0; p < sizeof(probes) / sizeof(probes[0]); p++, checked++)
			same_answer(path, m, t, probes[p]);
	}
	print_message("%s: %zu addresses, %d symbols: libdwfl and the index agree\n", path, checked,
	              nsyms);
	cq_addr_symbols_free(t);
	dwfl_end(dwfl);
	return checked;
}

static void hand_made_corner_cases(void **state)
{
	(void)state;
	const uint64_t T = SYMTAB_ELF_TEXT;
	/* Locals first (table order matters to libdwfl), then globals and weaks. */
	const struct symtab_elf_sym locals[] = {
	    {"file.c", 0, 0, STB_LOCAL, STT_FILE, SHN_ABS},
	    {"", T, 0, STB_LOCAL, STT_SECTION, 1},
	    {"local_outer", T + 0x800, 0x100, STB_LOCAL, STT_FUNC, 1},
	    {"local_inner", T + 0x810, 0x10, STB_LOCAL, STT_FUNC, 1},
	    {"local_label", T + 0x900, 0, STB_LOCAL, STT_NOTYPE, 1},
	    {"local_alias_big", T + 0xa00, 0x40, STB_LOCAL, STT_FUNC, 1},
	    {"local_alias_small", T + 0xa00, 0x20, STB_LOCAL, STT_FUNC, 1},
	    {"local_in_global", T + 0x30, 0x8, STB_LOCAL, STT_FUNC, 1},
	};
	const struct symtab_elf_sym globals[] = {
	    /* a weak inside a later, earlier-starting global: the global wins */
	    {"weak_inner", T + 0x40, 0x10, STB_WEAK, STT_FUNC, 1},
	    {"global_outer", T, 0x200, STB_GLOBAL, STT_FUNC, 1},
	    {"weak_same_as_outer", T, 0x200, STB_WEAK, STT_FUNC, 1},
	    {"global_inner", T + 0x20, 0x20, STB_GLOBAL, STT_FUNC, 1},
	    /* a global inside a later weak that starts earlier: the global stays */
	    {"global_in_weak", T + 0x240, 0x10, STB_GLOBAL, STT_FUNC, 1},
	    {"weak_outer", T + 0x200, 0x100, STB_WEAK, STT_FUNC, 1},
	    /* aliases: same start, sizes and bindings differ */
	    {"alias_a", T + 0x400, 0x40, STB_GLOBAL, STT_FUNC, 1},
	    {"alias_b", T + 0x400, 0x20, STB_GLOBAL, STT_FUNC, 1},
	    {"alias_c", T + 0x400, 0x10, STB_WEAK, STT_FUNC, 1},
	    {"alias_d", T + 0x400, 0x40, STB_GLOBAL, STT_OBJECT, 1},
	    /* sizeless labels, alone and after sized symbols */
	    {"global_label", T + 0x500, 0, STB_GLOBAL, STT_NOTYPE, 1},
	    {"sized_after_label", T + 0x580, 0x10, STB_GLOBAL, STT_FUNC, 1},
	    {"label_at_sized_end", T + 0x590, 0, STB_GLOBAL, STT_NOTYPE, 1},
	    {"weak_label", T + 0x600, 0, STB_WEAK, STT_FUNC, 1},
	    {"absolute", T + 0x700, 0x10, STB_GLOBAL, STT_OBJECT, SHN_ABS},
	    {"tls_thing", T + 0x710, 0x10, STB_GLOBAL, STT_TLS, 1},
	    {"undefined", 0, 0, STB_GLOBAL, STT_FUNC, SHN_UNDEF},
	    {"unique", T + 0xb00, 0x20, STB_GNU_UNIQUE, STT_OBJECT, 1},
	    {"global_over_unique", T + 0xb00, 0x20, STB_GLOBAL, STT_OBJECT, 1},
	    {"last", T + 0xf00, 0x100, STB_GLOBAL, STT_FUNC, 1},
	};
	const size_t nl = sizeof(locals) / sizeof(locals[0]),
	             ng = sizeof(globals) / sizeof(globals[0]);
	struct symtab_elf_sym
	    all[sizeof(locals) / sizeof(locals[0]) + sizeof(globals) / sizeof(globals[0])];
	memcpy(all, locals, sizeof(locals));
	memcpy(all + nl, globals, sizeof(globals));
	char path[] = "/tmp/coreq-test-symbols-XXXXXX";
	int tmp = mkstemp(path);
	assert_true(tmp >= 0);
	assert_true(symtab_elf_write(tmp, all, nl + ng, nl));
	close(tmp);
	Dwfl *dwfl;
	Dwfl_Module *m = report(&dwfl, path);
	assert_non_null(m);
	assert_int_equal(dwfl_module_getsymtab(m), (int)(nl + ng + 1));
	Dwarf_Addr start; /* the module's bias: a symbol's address is start + its value */
	assert_non_null(dwfl_module_getelf(m, &start));
	struct cq_addr_symbols *t;
	assert_null(cq_addr_symbols_build(m, &t));
	assert_non_null(t);
	size_t named = 0;
	for (uint64_t a = start + SYMTAB_ELF_TEXT - 0x10;
	     a < start + SYMTAB_ELF_TEXT + SYMTAB_ELF_TEXT_SIZE + 0x10; a++)
		named += same_answer("hand-made table", m, t, a);
	print_message("hand-made table: %zu of %u addresses named\n", named,
	              SYMTAB_ELF_TEXT_SIZE + 0x20);
	/* The table names most of the text and leaves gaps: both kinds were checked. */
	assert_true(named > SYMTAB_ELF_TEXT_SIZE / 4 && named < SYMTAB_ELF_TEXT_SIZE);
	cq_addr_symbols_free(t);
	dwfl_end(dwfl);
	unlink(path);
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
	    cmocka_unit_test(hand_made_corner_cases),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
