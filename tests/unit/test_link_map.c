/*
 * test_link_map.c - the loaded objects of a core without NT_FILE, found
 * through the dynamic loader's list (libcore/model/link_map.h).
 *
 * Each core is written by hand (core_writer.h) with the memory a real
 * process has: the executable's program headers at AT_PHDR, its PT_DYNAMIC
 * with DT_DEBUG, r_debug, and the struct link_map chain with each object's
 * name and ELF header.  One library's header is left out of the core and
 * found in its file under --sysroot (elf_writer.h).  The expected mappings
 * follow from the addresses the test chose: each object's PT_LOAD extent,
 * moved by its load address and rounded out to pages, sorted by start.
 * Then the walk's defences: a cycle, a static executable, unreadable
 * r_debug, no auxv; and a core whose executable has no program headers
 * anywhere, whose list is found through the loader (AT_BASE, _r_debug).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "libcore/model/core.h"
#include "tests/unit/core_writer.h"
#include "tests/unit/elf_writer.h"

#define EXE_BASE   0x555500000000ull /* PIE load bias */
#define LIBA       0x7f0000000000ull
#define LIBB       0x7f0000100000ull
#define LDSO       0x7f0000200000ull             /* the dynamic loader (AT_BASE) */
#define LD_R_DEBUG 0x2000                        /* _r_debug in the loader's file and memory */
#define LDSO_PATH  "/lib64/ld-linux-x86-64.so.2" /* x86_64's standard PT_INTERP */

/* Addresses inside the executable's memory (offsets from EXE_BASE). */
#define PHDR_AT   0x40
#define DYNAMIC   0x1000
#define R_DEBUG   0x2000
#define LM_EXE    0x2100
#define LM_A      0x2140
#define LM_B      0x2180
#define LM_LD     0x21c0
#define NAME_A    0x2300
#define NAME_B    0x2340
#define EXECFN_AT 0x2400

static char dir[64], core_path[96];
static uint8_t exe_mem[0x3000], liba_mem[0x1000], ldso_mem[0x1000];

static void put_phdr(uint8_t *p, uint32_t type, uint64_t vaddr, uint64_t memsz)
{
	Elf64_Phdr ph = {.p_type = type, .p_vaddr = vaddr, .p_memsz = memsz, .p_filesz = memsz};
	memcpy(p, &ph, sizeof(ph));
}

static void put_link_map(uint64_t at, uint64_t l_addr, uint64_t l_name, uint64_t next)
{
	cw_put(exe_mem + at, l_addr, 8);
	cw_put(exe_mem + at + 8, l_name, 8);
	cw_put(exe_mem + at + 16, 0, 8); /* l_ld */
	cw_put(exe_mem + at + 24, next, 8);
}

struct layout {
	bool no_dt_debug;  /* a static executable */
	uint64_t r_debug;  /* DT_DEBUG's value; 0: where r_debug is */
	bool cycle;        /* libB's l_next points back at libA's entry */
	bool no_auxv_phdr; /* AT_PHDR missing */
	bool with_nt_file; /* an NT_FILE note is present */
	/* No AT_PHDR and no executable file: r_debug found through the loader at
	 * AT_BASE, its r_ldbase this value (LDSO is right). */
	uint64_t loader_ldbase;
};

/* Writes the core for l to core_path. */
static void write_core(const struct layout *l)
{
	memset(exe_mem, 0, sizeof(exe_mem));
	memset(liba_mem, 0, sizeof(liba_mem));
	/* Executable: PT_PHDR, PT_LOAD [0, 0x3000), PT_DYNAMIC at 0x1000. */
	put_phdr(exe_mem + PHDR_AT, PT_PHDR, PHDR_AT, 3 * sizeof(Elf64_Phdr));
	put_phdr(exe_mem + PHDR_AT + 56, PT_LOAD, 0, 0x2800);
	put_phdr(exe_mem + PHDR_AT + 112, PT_DYNAMIC, DYNAMIC, 0x30);
	if (!l->no_dt_debug) {
		cw_put(exe_mem + DYNAMIC, DT_DEBUG, 8);
		cw_put(exe_mem + DYNAMIC + 8, l->r_debug ? l->r_debug : EXE_BASE + R_DEBUG, 8);
	} else {
		cw_put(exe_mem + DYNAMIC, DT_FLAGS, 8);
	}
	/* DT_NULL follows (zeros). r_debug: r_version 1, r_map. */
	cw_put(exe_mem + R_DEBUG, 1, 4);
	cw_put(exe_mem + R_DEBUG + 8, EXE_BASE + LM_EXE, 8);
	put_link_map(LM_EXE, EXE_BASE, 0, EXE_BASE + LM_A);
	put_link_map(LM_A, LIBA, EXE_BASE + NAME_A, EXE_BASE + LM_B);
	put_link_map(LM_B, LIBB, EXE_BASE + NAME_B,
	             l->cycle           ? EXE_BASE + LM_A
	             : l->loader_ldbase ? EXE_BASE + LM_LD
	                                : 0);
	/* The loader's entry names it with the executable's PT_INTERP, in a page
	 * the core lacks. */
	put_link_map(LM_LD, LDSO, 0x1000, 0);
	memset(ldso_mem, 0, sizeof(ldso_mem));
	cw_put(ldso_mem, 1, 4);
	cw_put(ldso_mem + 8, EXE_BASE + LM_EXE, 8);
	cw_put(ldso_mem + 32, l->loader_ldbase, 8);
	strcpy((char *)exe_mem + NAME_A, "/lib/libA.so.1");
	strcpy((char *)exe_mem + NAME_B, "/lib/libB.so.2");
	strcpy((char *)exe_mem + EXECFN_AT, "/usr/bin/app");
	/* libA's ELF header and one PT_LOAD [0, 0x4800) in memory. */
	Elf64_Ehdr eh = {.e_phoff = 64, .e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 1};
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	memcpy(liba_mem, &eh, sizeof(eh));
	put_phdr(liba_mem + 64, PT_LOAD, 0, 0x4800);

	static struct core_writer w;
	memset(&w, 0, sizeof(w));
	cw_prstatus(&w, 100, 11, EXE_BASE + 0x100, EXE_BASE + 0x2f00, 0);
	uint8_t av[6 * 16] = {0};
	unsigned k = 0;
	bool no_phdr = l->no_auxv_phdr || l->loader_ldbase;
	uint64_t pairs[][2] = {{AT_PAGESZ, 4096},
	                       {AT_PHNUM, 3},
	                       {AT_EXECFN, EXE_BASE + EXECFN_AT},
	                       {no_phdr ? AT_IGNORE : AT_PHDR, EXE_BASE + PHDR_AT},
	                       {l->loader_ldbase ? AT_BASE : AT_IGNORE, LDSO},
	                       {AT_NULL, 0}};
	for (; k < 6; k++) {
		cw_put(av + 16 * k, pairs[k][0], 8);
		cw_put(av + 16 * k + 8, pairs[k][1], 8);
	}
	cw_note(&w, "CORE", NT_AUXV, av, 16 * k);
	if (l->with_nt_file) {
		/* One entry: count 1, page size 4096, {start, end, pgoff}, "/usr/bin/app". */
		uint8_t d[16 + 24 + 16] = {0};
		cw_put(d, 1, 8);
		cw_put(d + 8, 4096, 8);
		cw_put(d + 16, EXE_BASE, 8);
		cw_put(d + 24, EXE_BASE + 0x3000, 8);
		memcpy(d + 40, "/usr/bin/app", 13);
		cw_note(&w, "CORE", NT_FILE, d, 16 + 24 + 13);
	}
	cw_load(&w, EXE_BASE, exe_mem, sizeof(exe_mem), PF_R | PF_W);
	cw_load(&w, LIBA, liba_mem, sizeof(liba_mem), PF_R);
	if (l->loader_ldbase)
		cw_load(&w, LDSO + LD_R_DEBUG, ldso_mem, sizeof(ldso_mem), PF_R | PF_W);
	assert_int_equal(cw_write(&w, core_path, 0), 0);
}

static struct cq_core *open_core(const struct layout *l)
{
	write_core(l);
	struct cq_core_options opts = {.sysroot = dir};
	struct cq_core *core = NULL;
	struct cq_error *err = cq_core_open(core_path, &opts, &core);
	if (err)
		fail_msg("open: %s", err->message);
	return core;
}

struct want {
	uint64_t start, end;
	const char *path;
};

static void has_mappings(const struct cq_core *core, const struct want *w, size_t n)
{
	if (core->nmappings != n) {
		for (size_t i = 0; i < core->nmappings; i++)
			print_message(
			    "  %#llx-%#llx %s\n", (unsigned long long)core->mappings[i].start,
			    (unsigned long long)core->mappings[i].end, core->mappings[i].path);
		fail_msg("%zu mappings, want %zu", core->nmappings, n);
	}
	for (size_t i = 0; i < n; i++) {
		assert_true(core->mappings[i].start == w[i].start);
		assert_true(core->mappings[i].end == w[i].end);
		assert_string_equal(core->mappings[i].path, w[i].path);
		assert_int_equal(core->mappings[i].file_offset, 0);
	}
}

/* The executable's PT_LOAD [0, 0x2800) at its bias, rounded out to pages. */
static const struct want exe = {EXE_BASE, EXE_BASE + 0x3000, "/usr/bin/app"};
static const struct want liba = {LIBA, LIBA + 0x5000, "/lib/libA.so.1"};
/* libB's header comes from its file under the sysroot: .text ends at 0x11000. */
static const struct want libb = {LIBB, LIBB + EW_TEXT_VA + EW_TEXT_LEN, "/lib/libB.so.2"};

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/cq_test_link_map.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(core_path, sizeof(core_path), "%s/core", dir);
	char lib[128];
	snprintf(lib, sizeof(lib), "%s/lib", dir);
	if (mkdir(lib, 0755) != 0)
		return -1;
	snprintf(lib, sizeof(lib), "%s/lib/libB.so.2", dir);
	static const struct ew_sym f[] = {{"f", 0x1000, 0x10, STT_FUNC, STB_GLOBAL, false}};
	struct ew_spec spec = {.dynsyms = f, .ndyn = 1, .soname = "libB.so.2"};
	if (ew_write(&spec, lib) != 0)
		return -1;
	/* The loader: its file under the sysroot at the standard path, _r_debug exported. */
	snprintf(lib, sizeof(lib), "%s/lib64", dir);
	if (mkdir(lib, 0755) != 0)
		return -1;
	snprintf(lib, sizeof(lib), "%s%s", dir, LDSO_PATH);
	static const struct ew_sym r[] = {
	    {"_r_debug", LD_R_DEBUG, 40, STT_OBJECT, STB_GLOBAL, false}};
	struct ew_spec ld = {.dynsyms = r, .ndyn = 1, .soname = "ld-linux-x86-64.so.2"};
	return ew_write(&ld, lib);
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_objects_from_the_loader_list(void **state)
{
	(void)state;
	struct layout l = {0};
	struct cq_core *core = open_core(&l);
	assert_true(core->mappings_from_link_map);
	const struct want w[] = {exe, liba, libb};
	has_mappings(core, w, 3);
	cq_core_close(core);
}

static void test_a_cycle_ends_the_walk(void **state)
{
	(void)state;
	struct layout l = {.cycle = true};
	struct cq_core *core = open_core(&l);
	const struct want w[] = {exe, liba, libb};
	has_mappings(core, w, 3);
	cq_core_close(core);
}

static void test_static_or_unreadable_list_gives_the_executable(void **state)
{
	(void)state;
	const struct want w[] = {exe};
	struct layout l = {.no_dt_debug = true};
	struct cq_core *core = open_core(&l);
	assert_true(core->mappings_from_link_map);
	has_mappings(core, w, 1);
	cq_core_close(core);
	/* DT_DEBUG pointing at memory the core does not hold. */
	l = (struct layout){.r_debug = 0x10000};
	core = open_core(&l);
	has_mappings(core, w, 1);
	cq_core_close(core);
}

static void test_nothing_without_program_headers(void **state)
{
	(void)state;
	/* No AT_PHDR, and no file for /usr/bin/app under the sysroot. */
	struct layout l = {.no_auxv_phdr = true};
	struct cq_core *core = open_core(&l);
	assert_int_equal(core->nmappings, 0);
	assert_false(core->mappings_from_link_map);
	cq_core_close(core);
}

/*
 * No program headers anywhere (qemu-user's cores hold no page of the
 * executable's file, and no file stands for it here): r_debug comes from
 * the loader at AT_BASE, whose file gives _r_debug's offset.  The libraries
 * and the loader are found; the executable, without headers, is not.
 */
static void test_without_the_executable_the_loader_gives_r_debug(void **state)
{
	(void)state;
	struct layout l = {.loader_ldbase = LDSO};
	struct cq_core *core = open_core(&l);
	assert_true(core->mappings_from_link_map);
	const struct want ld = {LDSO, LDSO + EW_TEXT_VA + EW_TEXT_LEN, LDSO_PATH};
	const struct want w[] = {liba, libb, ld};
	has_mappings(core, w, 3);
	cq_core_close(core);
	/* An r_debug whose r_ldbase is not AT_BASE is not the loader's. */
	l = (struct layout){.loader_ldbase = LDSO + 0x1000};
	core = open_core(&l);
	assert_int_equal(core->nmappings, 0);
	cq_core_close(core);
}

static void test_nt_file_wins(void **state)
{
	(void)state;
	struct layout l = {.with_nt_file = true};
	struct cq_core *core = open_core(&l);
	assert_false(core->mappings_from_link_map);
	const struct want w[] = {exe};
	has_mappings(core, w, 1);
	cq_core_close(core);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_objects_from_the_loader_list),
	    cmocka_unit_test(test_a_cycle_ends_the_walk),
	    cmocka_unit_test(test_static_or_unreadable_list_gives_the_executable),
	    cmocka_unit_test(test_nothing_without_program_headers),
	    cmocka_unit_test(test_without_the_executable_the_loader_gives_r_debug),
	    cmocka_unit_test(test_nt_file_wins),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
