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
	print_message("%s: %zu addresses, %d symbols: libdwfl and the index agree\n", path, checked,
	              nsyms);
	cq_addr_symbols_free(t);
	dwfl_end(dwfl);
	return checked;
}

/* One symbol of the hand-made table. */
struct hand_sym {
	const char *name;
	uint64_t value, size;
	unsigned char bind, type;
	uint16_t shndx;
};

#define TEXT_ADDR 0x1000u
#define TEXT_SIZE 0x1000u

/* Writes an x86-64 ET_DYN at path: one PT_LOAD, .text, and .symtab with syms. */
static void write_hand_elf(const char *path, const struct hand_sym *syms, size_t n, size_t nlocal)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_WRITE, NULL);
	assert_non_null(e);
	GElf_Ehdr eh;
	assert_non_null(gelf_newehdr(e, ELFCLASS64));
	assert_non_null(gelf_newphdr(e, 1));
	assert_non_null(gelf_getehdr(e, &eh));
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;

	static char shstr[] = "\0.text\0.symtab\0.strtab\0.shstrtab\0";
	static uint8_t text[TEXT_SIZE];
	char strtab[2048] = {0};
	size_t strlen_used = 1;
	GElf_Sym *table = calloc(n + 1, sizeof(*table));
	assert_non_null(table);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(syms[i].name) + 1;
		assert_true(strlen_used + len <= sizeof(strtab));
		memcpy(strtab + strlen_used, syms[i].name, len);
		table[i + 1] = (GElf_Sym){.st_name = (Elf64_Word)strlen_used,
		                          .st_info = GELF_ST_INFO(syms[i].bind, syms[i].type),
		                          .st_shndx = syms[i].shndx,
		                          .st_value = syms[i].value,
		                          .st_size = syms[i].size};
		strlen_used += len;
	}
	struct {
		Elf64_Word name_at; /* in shstr */
		Elf64_Word type;
		uint64_t flags, addr;
		void *buf;
		size_t size;
		Elf_Type dtype;
	} secs[] = {
	    {1, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, TEXT_ADDR, text, sizeof(text), ELF_T_BYTE},
	    {7, SHT_SYMTAB, 0, 0, NULL, (n + 1) * sizeof(Elf64_Sym), ELF_T_SYM},
	    {15, SHT_STRTAB, 0, 0, strtab, strlen_used, ELF_T_BYTE},
	    {23, SHT_STRTAB, 0, 0, shstr, sizeof(shstr), ELF_T_BYTE},
	};
	Elf64_Sym *raw = calloc(n + 1, sizeof(*raw));
	assert_non_null(raw);
	for (size_t i = 0; i <= n; i++)
		raw[i] = (Elf64_Sym){table[i].st_name,  table[i].st_info,  0,
		                     table[i].st_shndx, table[i].st_value, table[i].st_size};
	secs[1].buf = raw;
	for (size_t k = 0; k < sizeof(secs) / sizeof(secs[0]); k++) {
		Elf_Scn *scn = elf_newscn(e);
		Elf_Data *d = elf_newdata(scn);
		d->d_buf = secs[k].buf;
		d->d_size = secs[k].size;
		d->d_type = secs[k].dtype;
		d->d_align = k == 1 ? 8 : 1;
		GElf_Shdr sh;
		gelf_getshdr(scn, &sh);
		sh.sh_name = secs[k].name_at;
		sh.sh_type = secs[k].type;
		sh.sh_flags = secs[k].flags;
		sh.sh_addr = secs[k].addr;
		sh.sh_addralign = k == 1 ? 8 : 1;
		if (k == 1) {
			sh.sh_link = 3; /* .strtab */
			sh.sh_info = (Elf64_Word)(nlocal + 1);
			sh.sh_entsize = sizeof(Elf64_Sym);
		}
		gelf_update_shdr(scn, &sh);
	}
	eh.e_shstrndx = 4;
	gelf_update_ehdr(e, &eh);
	assert_true(elf_update(e, ELF_C_NULL) >= 0);
	GElf_Shdr text_sh;
	gelf_getshdr(elf_getscn(e, 1), &text_sh);
	GElf_Phdr ph = {.p_type = PT_LOAD,
	                .p_flags = PF_R | PF_X,
	                .p_offset = text_sh.sh_offset,
	                .p_vaddr = TEXT_ADDR,
	                .p_paddr = TEXT_ADDR,
	                .p_filesz = TEXT_SIZE,
	                .p_memsz = TEXT_SIZE,
	                .p_align = 0x1000};
	gelf_update_phdr(e, 0, &ph);
	assert_true(elf_update(e, ELF_C_WRITE) >= 0);
	elf_end(e);
	close(fd);
	free(table);
	free(raw);
}

static void hand_made_corner_cases(void **state)
{
	(void)state;
	const uint64_t T = TEXT_ADDR;
	/* Locals first (table order matters to libdwfl), then globals and weaks. */
	const struct hand_sym locals[] = {
	    {"file.c", 0, 0, STB_LOCAL, STT_FILE, SHN_ABS},
	    {"", T, 0, STB_LOCAL, STT_SECTION, 1},
	    {"local_outer", T + 0x800, 0x100, STB_LOCAL, STT_FUNC, 1},
	    {"local_inner", T + 0x810, 0x10, STB_LOCAL, STT_FUNC, 1},
	    {"local_label", T + 0x900, 0, STB_LOCAL, STT_NOTYPE, 1},
	    {"local_alias_big", T + 0xa00, 0x40, STB_LOCAL, STT_FUNC, 1},
	    {"local_alias_small", T + 0xa00, 0x20, STB_LOCAL, STT_FUNC, 1},
	    {"local_in_global", T + 0x30, 0x8, STB_LOCAL, STT_FUNC, 1},
	};
	const struct hand_sym globals[] = {
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
	struct hand_sym
	    all[sizeof(locals) / sizeof(locals[0]) + sizeof(globals) / sizeof(globals[0])];
	memcpy(all, locals, sizeof(locals));
	memcpy(all + nl, globals, sizeof(globals));
	char path[] = "/tmp/coreq-test-symbols-XXXXXX";
	int tmp = mkstemp(path);
	assert_true(tmp >= 0);
	close(tmp);
	write_hand_elf(path, all, nl + ng, nl);
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
	for (uint64_t a = start + TEXT_ADDR - 0x10; a < start + TEXT_ADDR + TEXT_SIZE + 0x10; a++) {
		GElf_Off want_off = 0, got_off = 0;
		GElf_Sym s;
		const char *want = dwfl_module_addrinfo(m, a, &want_off, &s, NULL, NULL, NULL);
		const char *got = cq_addr_symbols_find(t, m, a, &got_off);
		if ((want == NULL) != (got == NULL) || (want && strcmp(want, got) != 0) ||
		    (want && want_off != got_off))
			fail_msg(
			    "hand-made table: at +0x%llx libdwfl says %s+%llu, the index %s+%llu",
			    (unsigned long long)(a - start), want ? want : "(none)",
			    (unsigned long long)want_off, got ? got : "(none)",
			    (unsigned long long)got_off);
		named += want != NULL;
	}
	print_message("hand-made table: %zu of %u addresses named\n", named, TEXT_SIZE + 0x20);
	/* The table names most of the text and leaves gaps: both kinds were checked. */
	assert_true(named > TEXT_SIZE / 4 && named < TEXT_SIZE);
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
