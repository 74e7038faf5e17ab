/*
 * test_elf_section.c - one section of an ELF file by its name
 * (libcore/base/elf_section.h).
 *
 * Oracles: binutils' readelf -S (a section's offset, size and type, on a
 * corpus executable and on objects written by hand with elf_writer.h), and
 * section header tables the test writes itself: a SHT_NOBITS section is
 * skipped in favour of a later one with bytes and the same name, a missing
 * name gives NULL, a damaged table (cut short, or its string table index
 * out of range) gives NULL, and the walk stops after CQ_ELF_MAX_SECTIONS
 * sections (a file with more, written with extended numbering).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <gelf.h>

#include "libcore/base/elf_section.h"
#include "tests/unit/corpus.h"
#include "tests/unit/elf_writer.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	elf_version(EV_CURRENT);
	return scratch_make(dir, sizeof(dir), "elf-section") ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	scratch_remove(dir);
	return 0;
}

/* One section as readelf -S -W lists it. */
struct shdr_row {
	bool found;
	char type[32];
	uint64_t offset, size;
};

static struct shdr_row readelf_section(const char *file, const char *name)
{
	struct shdr_row r = {0};
	char cmd[700], line[512];
	snprintf(cmd, sizeof(cmd), "readelf -S -W '%s' 2>/dev/null", file);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		/* "  [NN] NAME TYPE ADDR OFF SIZE ..." */
		char *b = strchr(line, ']');
		char sname[128], type[32];
		unsigned long long addr, off, size;
		if (!b || sscanf(b + 1, "%127s %31s %llx %llx %llx", sname, type, &addr, &off,
		                 &size) != 5)
			continue;
		if (strcmp(sname, name) == 0 && !r.found) {
			r.found = true;
			snprintf(r.type, sizeof(r.type), "%s", type);
			r.offset = off;
			r.size = size;
		}
	}
	pclose(p);
	return r;
}

struct opened {
	int fd;
	Elf *elf;
};

static struct opened open_elf(const char *file)
{
	struct opened o = {.fd = open(file, O_RDONLY)};
	assert_true(o.fd >= 0);
	o.elf = elf_begin(o.fd, ELF_C_READ_MMAP, NULL);
	assert_non_null(o.elf);
	return o;
}

static void close_elf(struct opened *o)
{
	elf_end(o->elf);
	close(o->fd);
}

/* Every section readelf names in a corpus executable is found at its offset and size. */
static void test_corpus_executable(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("segv_null.O0", &c);
	struct opened o = open_elf(c.exe);
	const char *names[] = {".text",       ".eh_frame", ".dynsym", ".note.gnu.build-id",
	                       ".debug_info", ".shstrtab"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct shdr_row want = readelf_section(c.exe, names[i]);
		assert_true(want.found);
		GElf_Shdr sh;
		memset(&sh, 0xa5, sizeof(sh));
		Elf_Scn *scn = cq_elf_section(o.elf, names[i], &sh);
		assert_non_null(scn);
		assert_int_equal(sh.sh_offset, want.offset);
		assert_int_equal(sh.sh_size, want.size);
		/* The header handed back is the section's own. */
		GElf_Shdr again;
		assert_non_null(gelf_getshdr(scn, &again));
		assert_memory_equal(&again, &sh, sizeof(sh));
	}
	/* .bss has no bytes in the file: not found, though readelf lists it. */
	struct shdr_row bss = readelf_section(c.exe, ".bss");
	assert_true(bss.found);
	assert_string_equal(bss.type, "NOBITS");
	GElf_Shdr sh;
	assert_null(cq_elf_section(o.elf, ".bss", &sh));
	/* A name no section has; a prefix of one is not it. */
	assert_false(readelf_section(c.exe, ".no_such_section").found);
	assert_null(cq_elf_section(o.elf, ".no_such_section", &sh));
	assert_null(cq_elf_section(o.elf, ".debug", &sh));
	assert_null(cq_elf_section(o.elf, "", &sh));
	close_elf(&o);
	/* No ELF at all. */
	assert_null(cq_elf_section(NULL, ".text", &sh));
}

/*
 * A word of a section, by value: the one readelf's offsets put 8 bytes into
 * the corpus executable's .eh_frame is found there (or at an earlier
 * aligned word that holds the same value), pointing into the file's bytes;
 * a value no word holds, and more room than the section has, find nothing.
 */
static void test_section_word(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("segv_null.O0", &c);
	struct shdr_row want = readelf_section(c.exe, ".eh_frame");
	assert_true(want.found && want.size >= 16);
	FILE *f = fopen(c.exe, "rb");
	assert_non_null(f);
	uint8_t word[8];
	assert_int_equal(fseek(f, (long)want.offset + 8, SEEK_SET), 0);
	assert_int_equal(fread(word, 1, 8, f), 8);
	fclose(f);
	uint64_t value = 0;
	for (int i = 7; i >= 0; i--)
		value = value << 8 | word[i];
	struct opened o = open_elf(c.exe);
	GElf_Shdr sh;
	assert_non_null(cq_elf_section(o.elf, ".eh_frame", &sh));
	uint64_t addr = 0;
	const uint8_t *at = cq_elf_section_word(o.elf, ".eh_frame", value, 8, &addr);
	assert_non_null(at);
	assert_memory_equal(at, word, 8);
	assert_true(addr >= sh.sh_addr && addr <= sh.sh_addr + 8 && (addr - sh.sh_addr) % 8 == 0);
	assert_null(
	    cq_elf_section_word(o.elf, ".eh_frame", 0x0123456789abcdefull ^ value, 8, &addr));
	assert_null(cq_elf_section_word(o.elf, ".eh_frame", value, want.size + 8, &addr));
	assert_null(cq_elf_section_word(o.elf, ".no_such_section", value, 8, &addr));
	close_elf(&o);
}

static void write_object(const char *file)
{
	static const struct ew_sym syms[] = {{"f", 0x1100, 0x10, STT_FUNC, STB_GLOBAL, false}};
	struct ew_spec spec = {.dynsyms = syms, .ndyn = 1, .syms = syms, .nsym = 1};
	assert_int_equal(ew_write(&spec, file), 0);
}

static uint8_t *slurp(const char *file, size_t *len)
{
	FILE *f = fopen(file, "rb");
	assert_non_null(f);
	static uint8_t buf[EW_MAX];
	*len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	return buf;
}

static void spill(const char *file, const uint8_t *b, size_t len)
{
	FILE *f = fopen(file, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/*
 * The hand-written object's .text is SHT_NOBITS; renaming its .dynstr to
 * ".text" too makes the second section of that name the one with bytes.
 */
static void test_nobits_skipped_for_the_next_of_that_name(void **state)
{
	(void)state;
	char file[128];
	snprintf(file, sizeof(file), "%s/obj.so", dir);
	write_object(file);
	struct shdr_row text = readelf_section(file, ".text");
	assert_true(text.found);
	assert_string_equal(text.type, "NOBITS");
	struct shdr_row dynsym = readelf_section(file, ".dynsym");
	assert_true(dynsym.found);

	struct opened o = open_elf(file);
	GElf_Shdr sh;
	assert_null(cq_elf_section(o.elf, ".text", &sh));
	Elf_Scn *scn = cq_elf_section(o.elf, ".dynsym", &sh);
	assert_non_null(scn);
	assert_int_equal(elf_ndxscn(scn), 3); /* elf_writer.h: null, .text, .dynstr, .dynsym */
	assert_int_equal(sh.sh_type, SHT_DYNSYM);
	assert_int_equal(sh.sh_offset, dynsym.offset);
	assert_int_equal(sh.sh_size, dynsym.size);
	close_elf(&o);

	size_t len;
	uint8_t *b = slurp(file, &len);
	Elf64_Ehdr eh;
	memcpy(&eh, b, sizeof(eh));
	Elf64_Shdr text_sh, dynstr_sh;
	memcpy(&text_sh, b + eh.e_shoff + 1 * sizeof(Elf64_Shdr), sizeof(text_sh));
	memcpy(&dynstr_sh, b + eh.e_shoff + 2 * sizeof(Elf64_Shdr), sizeof(dynstr_sh));
	dynstr_sh.sh_name = text_sh.sh_name;
	memcpy(b + eh.e_shoff + 2 * sizeof(Elf64_Shdr), &dynstr_sh, sizeof(dynstr_sh));
	spill(file, b, len);

	o = open_elf(file);
	scn = cq_elf_section(o.elf, ".text", &sh);
	assert_non_null(scn);
	assert_int_equal(elf_ndxscn(scn), 2);
	assert_int_equal(sh.sh_type, SHT_STRTAB);
	assert_int_equal(sh.sh_offset, dynstr_sh.sh_offset);
	assert_int_equal(sh.sh_size, dynstr_sh.sh_size);
	assert_null(cq_elf_section(o.elf, ".dynstr", &sh)); /* its old name is gone */
	close_elf(&o);
}

/* Section header tables that cannot be read give NULL, never a read past the file. */
static void test_damaged_section_headers(void **state)
{
	(void)state;
	char file[128];
	snprintf(file, sizeof(file), "%s/damaged.so", dir);
	write_object(file);
	size_t len;
	uint8_t *b = slurp(file, &len);
	static uint8_t orig[EW_MAX];
	memcpy(orig, b, len);
	Elf64_Ehdr eh;
	memcpy(&eh, orig, sizeof(eh));
	GElf_Shdr sh;

	/* The table runs past the end of the file (elf_writer.h puts it last). */
	Elf64_Ehdr bad = eh;
	bad.e_shnum = (uint16_t)(eh.e_shnum + 200);
	memcpy(b, &bad, sizeof(bad));
	spill(file, b, len);
	struct opened o = open_elf(file);
	assert_null(cq_elf_section(o.elf, ".dynsym", &sh));
	close_elf(&o);

	/* The file is cut inside the table. */
	memcpy(b, orig, len);
	spill(file, b, eh.e_shoff + 3 * sizeof(Elf64_Shdr) + 5);
	o = open_elf(file);
	assert_null(cq_elf_section(o.elf, ".dynsym", &sh));
	close_elf(&o);

	/* The string table index names no section. */
	bad = eh;
	bad.e_shstrndx = (uint16_t)(eh.e_shnum + 3);
	memcpy(b, &bad, sizeof(bad));
	spill(file, b, len);
	o = open_elf(file);
	assert_null(cq_elf_section(o.elf, ".dynsym", &sh));
	close_elf(&o);

	/* A name offset past the end of the string table: that section is passed over. */
	memcpy(b, orig, len);
	Elf64_Shdr dynstr_sh;
	memcpy(&dynstr_sh, b + eh.e_shoff + 2 * sizeof(Elf64_Shdr), sizeof(dynstr_sh));
	dynstr_sh.sh_name = 0x7fffffff;
	memcpy(b + eh.e_shoff + 2 * sizeof(Elf64_Shdr), &dynstr_sh, sizeof(dynstr_sh));
	spill(file, b, len);
	o = open_elf(file);
	assert_null(cq_elf_section(o.elf, ".dynstr", &sh));
	Elf_Scn *scn = cq_elf_section(o.elf, ".dynsym", &sh);
	assert_non_null(scn);
	assert_int_equal(elf_ndxscn(scn), 3);
	close_elf(&o);
}

/*
 * A file of CQ_ELF_MAX_SECTIONS + 8 sections (e_shnum 0, the count in
 * section 0's sh_size): one named ".early" near the start, one ".late"
 * past the bound.  The walk finds the first and stops before the second.
 */
static void test_walk_is_bounded(void **state)
{
	(void)state;
	const size_t n = CQ_ELF_MAX_SECTIONS + 8;
	static const char strtab[] = "\0.shstrtab\0.early\0.late\0.filler";
	const uint32_t n_shstrtab = 1, n_early = 11, n_late = 18, n_filler = 24;
	size_t shoff = 256;
	size_t len = shoff + n * sizeof(Elf64_Shdr);
	uint8_t *b = calloc(1, len);
	assert_non_null(b);
	memcpy(b + sizeof(Elf64_Ehdr), strtab, sizeof(strtab));
	Elf64_Ehdr eh = {0};
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_REL;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_shoff = shoff;
	eh.e_ehsize = sizeof(eh);
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = 0;    /* extended numbering: the count is section 0's sh_size */
	eh.e_shstrndx = 1; /* below SHN_LORESERVE: as is */
	memcpy(b, &eh, sizeof(eh));
	for (size_t i = 0; i < n; i++) {
		Elf64_Shdr s = {.sh_type = SHT_PROGBITS,
		                .sh_name = n_filler,
		                .sh_offset = sizeof(Elf64_Ehdr),
		                .sh_size = 1,
		                .sh_addralign = 1};
		if (i == 0)
			s = (Elf64_Shdr){.sh_size = n};
		else if (i == 1)
			s = (Elf64_Shdr){.sh_name = n_shstrtab,
			                 .sh_type = SHT_STRTAB,
			                 .sh_offset = sizeof(Elf64_Ehdr),
			                 .sh_size = sizeof(strtab),
			                 .sh_addralign = 1};
		else if (i == 5)
			s.sh_name = n_early;
		else if (i == n - 2)
			s.sh_name = n_late;
		memcpy(b + shoff + i * sizeof(s), &s, sizeof(s));
	}
	char file[128];
	snprintf(file, sizeof(file), "%s/many.o", dir);
	spill(file, b, len);
	free(b);

	struct opened o = open_elf(file);
	size_t shnum;
	assert_int_equal(elf_getshdrnum(o.elf, &shnum), 0);
	assert_int_equal(shnum, n); /* libelf reads every header */
	GElf_Shdr sh;
	Elf_Scn *scn = cq_elf_section(o.elf, ".early", &sh);
	assert_non_null(scn);
	assert_int_equal(elf_ndxscn(scn), 5);
	assert_null(cq_elf_section(o.elf, ".late", &sh));
	close_elf(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_corpus_executable),
	    cmocka_unit_test(test_section_word),
	    cmocka_unit_test(test_nobits_skipped_for_the_next_of_that_name),
	    cmocka_unit_test(test_damaged_section_headers),
	    cmocka_unit_test(test_walk_is_bounded),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
