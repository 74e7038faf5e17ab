/*
 * test_elf_symbols.c - a module's symbols by name, its exports and its
 * soname, and the function holding an address (libcore/model/elf_symbols.h).
 *
 * Two oracles: a shared object written by hand (elf_writer.h), whose every
 * symbol the test chose, for the rules (defined symbols only, .symtab
 * before .dynsym, runtime address = value + bias, exports are the global
 * and weak functions and ifuncs sorted by value); and this host's libc
 * read by binutils' readelf, whose exports and DT_SONAME coreq must find
 * exactly as readelf lists them.
 */
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "libcore/model/elf_symbols.h"
#include "libcore/model/module.h"
#include "tests/unit/elf_writer.h"

static char path[64];

static const struct ew_sym dynsyms[] = {
    {"memset", 0x1100, 0x40, STT_GNU_IFUNC, STB_GLOBAL, false},
    {"zeta", 0x1200, 0x80, STT_FUNC, STB_GLOBAL, false},
    {"alpha_alias", 0x2000, 0x10, STT_FUNC, STB_GLOBAL, false},
    {"alpha", 0x2000, 0x10, STT_FUNC, STB_GLOBAL, false},
    {"weak_fn", 0x3000, 0x20, STT_FUNC, STB_WEAK, false},
    {"local_fn", 0x3100, 0x20, STT_FUNC, STB_LOCAL, false},
    {"puts", 0, 0, STT_FUNC, STB_GLOBAL, true},
    {"imported_at", 0x3200, 0, STT_FUNC, STB_GLOBAL, true},
    {"a_variable", 0x4000, 8, STT_OBJECT, STB_GLOBAL, false},
    {"notype", 0x4100, 0, STT_NOTYPE, STB_GLOBAL, false},
    {"at_zero", 0, 0x10, STT_FUNC, STB_GLOBAL, false},
    {"", 0x4200, 0x10, STT_FUNC, STB_GLOBAL, false},
    {"dup_name", 0x7000, 4, STT_OBJECT, STB_GLOBAL, false},
    {"undef_in_symtab", 0x7100, 4, STT_OBJECT, STB_GLOBAL, false},
};

static const struct ew_sym syms[] = {
    {"folly_cookie", 0x5000, 8, STT_OBJECT, STB_GLOBAL, false},
    {"dup_name", 0x6000, 2, STT_OBJECT, STB_LOCAL, false},
    {"undef_in_symtab", 0, 0, STT_OBJECT, STB_GLOBAL, true},
    {"zero_value", 0, 0, STT_OBJECT, STB_GLOBAL, false},
};

static int setup(void **state)
{
	(void)state;
	snprintf(path, sizeof(path), "/tmp/cq_test_elf_symbols.%d.so", (int)getpid());
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

static void open_written(const struct ew_spec *spec, struct cq_module *mod)
{
	assert_int_equal(ew_write(spec, path), 0);
	struct cq_error *err = cq_module_open_elf(path, mod);
	if (err)
		fail_msg("open: %s", err->message);
	mod->is_main = false;
}

static void test_find_symbols_symtab_first_with_bias(void **state)
{
	(void)state;
	struct ew_spec spec = {
	    .dynsyms = dynsyms, .ndyn = 14, .syms = syms, .nsym = 4, .soname = "libt.so.1"};
	struct cq_module mod;
	open_written(&spec, &mod);
	mod.bias = 0x7f0000000000ull;
	struct cq_symbol_query q[] = {
	    {.name = "folly_cookie"},   {.name = "dup_name"}, {.name = "undef_in_symtab"},
	    {.name = "zero_value"},     {.name = "puts"},     {.name = "memset"},
	    {.name = "no_such_symbol"}, {.name = "alpha"},
	};
	assert_int_equal(cq_elf_find_symbols(&mod, q, 8), 5);
	assert_true(q[0].found);
	assert_true(q[0].addr == 0x7f0000005000ull);
	assert_int_equal(q[0].size, 8);
	/* In both tables: .symtab's (a local counts: it is defined). */
	assert_true(q[1].found);
	assert_true(q[1].addr == 0x7f0000006000ull);
	assert_int_equal(q[1].size, 2);
	/* Undefined in .symtab, defined in .dynsym. */
	assert_true(q[2].found);
	assert_true(q[2].addr == 0x7f0000007100ull);
	/* Value 0, undefined, or absent: not found. */
	assert_false(q[3].found);
	assert_false(q[4].found);
	assert_false(q[6].found);
	assert_true(q[5].found);
	assert_true(q[5].addr == 0x7f0000001100ull);
	assert_true(q[7].found);
	/* Queries already answered are left as they are. */
	struct cq_symbol_query pre[] = {{.name = "alpha", .found = true, .addr = 1, .size = 2},
	                                {.name = "zeta"}};
	assert_int_equal(cq_elf_find_symbols(&mod, pre, 2), 2);
	assert_int_equal(pre[0].addr, 1);
	assert_true(pre[1].addr == 0x7f0000001200ull);
	assert_int_equal(pre[1].size, 0x80);
	/* A module whose file did not match, or the vdso, finds nothing new. */
	struct cq_symbol_query again[] = {{.name = "zeta"}};
	mod.status = CQ_MODULE_MISMATCH;
	assert_int_equal(cq_elf_find_symbols(&mod, again, 1), 0);
	assert_false(again[0].found);
	mod.status = CQ_MODULE_FOUND;
	mod.is_vdso = true;
	assert_int_equal(cq_elf_find_symbols(&mod, again, 1), 0);
	mod.is_vdso = false;
	cq_module_destroy(&mod);
}

/* The function whose range holds an address: sized functions only, .symtab first, with the bias. */
static void test_function_at(void **state)
{
	(void)state;
	struct ew_spec spec = {
	    .dynsyms = dynsyms, .ndyn = 14, .syms = syms, .nsym = 4, .soname = "libt.so.1"};
	struct cq_module mod;
	open_written(&spec, &mod);
	mod.bias = 0x7f0000000000ull;
	struct cq_symbol_query q;
	assert_true(cq_elf_function_at(&mod, 0x7f0000001250ull, &q)); /* zeta [0x1200, 0x1280) */
	assert_true(q.found);
	assert_true(q.addr == 0x7f0000001200ull);
	assert_int_equal(q.size, 0x80);
	assert_true(cq_elf_function_at(&mod, 0x7f0000003000ull, &q)); /* weak_fn's first byte */
	assert_true(q.addr == 0x7f0000003000ull);
	assert_false(cq_elf_function_at(&mod, 0x7f0000001280ull, &q)); /* one past zeta */
	assert_false(q.found);
	assert_false(cq_elf_function_at(&mod, 0x7f0000004000ull, &q)); /* a variable */
	assert_false(cq_elf_function_at(&mod, 0x7f0000004100ull, &q)); /* no type, no size */
	assert_false(cq_elf_function_at(&mod, 0x1200ull, &q));         /* below the bias */
	mod.status = CQ_MODULE_MISMATCH;
	assert_false(cq_elf_function_at(&mod, 0x7f0000001250ull, &q));
	mod.status = CQ_MODULE_FOUND;
	cq_module_destroy(&mod);
}

static void test_exports_are_global_functions_by_value(void **state)
{
	(void)state;
	struct ew_spec spec = {.dynsyms = dynsyms, .ndyn = 14, .syms = syms, .nsym = 4};
	struct cq_module mod;
	open_written(&spec, &mod);
	mod.bias = 0x1000000; /* exports are link-time values: no bias */
	struct cq_elf_export *e;
	size_t n;
	assert_null(cq_elf_exports(&mod, &e, &n));
	static const struct {
		const char *name;
		uint64_t value, size;
		bool ifunc;
	} want[] = {
	    {"memset", 0x1100, 0x40, true},   {"zeta", 0x1200, 0x80, false},
	    {"alpha", 0x2000, 0x10, false},   {"alpha_alias", 0x2000, 0x10, false},
	    {"weak_fn", 0x3000, 0x20, false},
	};
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(e[i].name, want[i].name);
		assert_int_equal(e[i].value, want[i].value);
		assert_int_equal(e[i].size, want[i].size);
		assert_int_equal(e[i].ifunc, want[i].ifunc);
	}
	free(e);
	/* A module whose file did not match gives none. */
	mod.status = CQ_MODULE_MISMATCH;
	assert_null(cq_elf_exports(&mod, &e, &n));
	assert_int_equal(n, 0);
	free(e);
	cq_module_destroy(&mod);
}

static void test_soname(void **state)
{
	(void)state;
	struct cq_module mod;
	struct ew_spec spec = {.dynsyms = dynsyms, .ndyn = 2, .soname = "libt.so.1"};
	open_written(&spec, &mod);
	assert_string_equal(cq_elf_soname(&mod), "libt.so.1");
	cq_module_destroy(&mod);
	/* A .dynamic without DT_SONAME, or with no .dynamic at all. */
	spec.soname = NULL;
	open_written(&spec, &mod);
	assert_null(cq_elf_soname(&mod));
	cq_module_destroy(&mod);
	spec.no_dynamic = true;
	open_written(&spec, &mod);
	assert_null(cq_elf_soname(&mod));
	cq_module_destroy(&mod);
	/* Damaged: DT_SONAME past the string table, and a table with no DT_NULL. */
	spec = (struct ew_spec){.dynsyms = dynsyms, .ndyn = 2, .soname_at = 100000};
	open_written(&spec, &mod);
	assert_null(cq_elf_soname(&mod));
	cq_module_destroy(&mod);
	spec = (struct ew_spec){
	    .dynsyms = dynsyms, .ndyn = 2, .soname = "libu.so", .no_dt_null = true};
	open_written(&spec, &mod);
	assert_string_equal(cq_elf_soname(&mod), "libu.so");
	cq_module_destroy(&mod);
}

static void test_damaged_symbol_table(void **state)
{
	(void)state;
	struct cq_module mod;
	struct ew_spec spec = {.dynsyms = dynsyms, .ndyn = 14, .dynsym_entsize_zero = true};
	open_written(&spec, &mod);
	struct cq_elf_export *e = NULL;
	size_t n = 99;
	assert_null(cq_elf_exports(&mod, &e, &n));
	assert_int_equal(n, 0);
	free(e);
	struct cq_symbol_query q[] = {{.name = "zeta"}};
	assert_int_equal(cq_elf_find_symbols(&mod, q, 1), 0);
	cq_module_destroy(&mod);
}

/* ---- this host's libc against readelf ----------------------------------- */

static int find_libc(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	const char *name = info->dlpi_name;
	const char *base = strrchr(name, '/');
	if (base && strcmp(base + 1, "libc.so.6") == 0) {
		snprintf(data, 4096, "%s", name);
		return 1;
	}
	return 0;
}

struct export_row {
	char name[256];
	uint64_t value, size;
	bool ifunc;
};

static int row_cmp(const void *a, const void *b)
{
	const struct export_row *x = a, *y = b;
	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	int c = strcmp(x->name, y->name);
	if (c)
		return c;
	return (x->size > y->size) - (x->size < y->size);
}

/* readelf's defined, non-local FUNC and IFUNC symbols of .dynsym, with a nonzero value. */
static size_t readelf_exports(const char *lib, struct export_row *rows, size_t cap)
{
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "readelf -W --dyn-syms '%s'", lib);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char line[1024];
	size_t n = 0;
	while (fgets(line, sizeof(line), p)) {
		char size[32], type[16], bind[16], vis[16], ndx[16], name[256];
		unsigned long long value;
		if (sscanf(line, " %*u: %llx %31s %15s %15s %15s %15s %255s", &value, size, type,
		           bind, vis, ndx, name) != 7)
			continue;
		if ((strcmp(type, "FUNC") && strcmp(type, "IFUNC")) || !strcmp(bind, "LOCAL") ||
		    !strcmp(ndx, "UND") || value == 0)
			continue;
		assert_true(n < cap);
		char *at = strchr(name, '@');
		if (at)
			*at = '\0';
		snprintf(rows[n].name, sizeof(rows[n].name), "%s", name);
		rows[n].value = value;
		rows[n].size = strtoull(size, NULL, 0);
		rows[n].ifunc = strcmp(type, "IFUNC") == 0;
		n++;
	}
	assert_int_equal(pclose(p), 0);
	return n;
}

/* The soname readelf -d prints ("Library soname: [NAME]"). */
static const char *readelf_soname(const char *lib)
{
	static char soname[256];
	char cmd[4200], line[1024];
	snprintf(cmd, sizeof(cmd), "readelf -W -d '%s'", lib);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	soname[0] = '\0';
	while (fgets(line, sizeof(line), p)) {
		const char *at = strstr(line, "Library soname: [");
		if (at)
			sscanf(at, "Library soname: [%255[^]]", soname);
	}
	assert_int_equal(pclose(p), 0);
	assert_true(soname[0] != '\0');
	return soname;
}

static void test_libc_exports_match_readelf(void **state)
{
	(void)state;
	char lib[4096] = "";
	dl_iterate_phdr(find_libc, lib);
	if (!lib[0])
		skip();
	enum { CAP = 8192 };
	struct export_row *want = calloc(CAP, sizeof(*want)), *got = calloc(CAP, sizeof(*got));
	assert_non_null(want);
	assert_non_null(got);
	size_t nwant = readelf_exports(lib, want, CAP);
	assert_true(nwant > 1000); /* a real libc */

	struct cq_module mod;
	assert_null(cq_module_open_elf(lib, &mod));
	mod.is_main = false;
	struct cq_elf_export *e;
	size_t n;
	assert_null(cq_elf_exports(&mod, &e, &n));
	assert_int_equal(n, nwant);
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			assert_true(e[i - 1].value <= e[i].value);
		snprintf(got[i].name, sizeof(got[i].name), "%s", e[i].name);
		got[i].value = e[i].value;
		got[i].size = e[i].size;
		got[i].ifunc = e[i].ifunc;
	}
	qsort(want, nwant, sizeof(*want), row_cmp);
	qsort(got, n, sizeof(*got), row_cmp);
	size_t ifuncs = 0;
	for (size_t i = 0; i < n; i++) {
		if (row_cmp(&want[i], &got[i]) != 0 || want[i].ifunc != got[i].ifunc)
			fail_msg("export %zu: readelf %s %#llx, coreq %s %#llx", i, want[i].name,
			         (unsigned long long)want[i].value, got[i].name,
			         (unsigned long long)got[i].value);
		ifuncs += got[i].ifunc;
	}
	assert_true(ifuncs > 0); /* memset, memcpy, strlen, ... */
	free(e);
	assert_string_equal(cq_elf_soname(&mod), readelf_soname(lib));
	cq_module_destroy(&mod);
	free(want);
	free(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_find_symbols_symtab_first_with_bias),
	    cmocka_unit_test(test_function_at),
	    cmocka_unit_test(test_exports_are_global_functions_by_value),
	    cmocka_unit_test(test_soname),
	    cmocka_unit_test(test_damaged_symbol_table),
	    cmocka_unit_test(test_libc_exports_match_readelf),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
