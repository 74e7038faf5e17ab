/*
 * test_line_files.c - the file table of a .debug_line header and the file
 * names gdb prints (libcore/symbols/line_files.h).
 *
 * libdw is the oracle on real files: for every unit of libc's debuginfo
 * (DWARF 5, from libc6-dbg) the table has libdw's number of files, and each
 * file's joined path as libdw gives it is its directory entry, '/', and a
 * name.  Hand-laid DWARF 4 and 5 headers check the parts libdw does not
 * show (directory index 0, names as written, 64-bit DWARF), and every
 * truncation of them is refused.  The display rules are checked on the
 * spellings gdb 13 prints for glibc, C and Rust units (issue 32).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <dwarf.h>
#include <elfutils/libdw.h>

#include <cmocka.h>

#include "libcore/base/elf_section.h"
#include "libcore/symbols/line_files.h"
#include "byte_buf.h"
#include "libc_debuginfo.h"

static void put_str(struct buf *b, const char *s)
{
	size_t n = strlen(s) + 1;
	memcpy(b->b + b->n, s, n);
	b->n += n;
}

/* minimum_instruction_length up to the standard opcode lengths (DWARF 4 and 5 alike). */
static void put_program_params(struct buf *b)
{
	put(b, 1, 1); /* minimum_instruction_length */
	put(b, 1, 1); /* maximum_operations_per_instruction */
	put(b, 1, 1); /* default_is_stmt */
	put(b, 0xfb, 1);
	put(b, 14, 1);
	put(b, 13, 1); /* opcode_base */
	for (int i = 1; i < 13; i++)
		put(b, 0, 1);
}

/* Patches the 4-byte unit and header lengths once the header is laid out. */
static void close32(struct buf *b, size_t header_length_at)
{
	uint32_t unit = (uint32_t)(b->n - 4), header = (uint32_t)(b->n - header_length_at - 4);
	memcpy(b->b, &unit, 4);
	memcpy(b->b + header_length_at, &header, 4);
}

/* A DWARF 4 header: dirs "src" and "/usr/include"; files a.c (dir 0), b.h (dir 2), c.rs (dir 1). */
static size_t v4_header(struct buf *b)
{
	b->n = 0;
	put(b, 0, 4); /* unit_length, patched */
	put(b, 4, 2);
	size_t at = b->n;
	put(b, 0, 4); /* header_length, patched */
	put_program_params(b);
	put_str(b, "src");
	put_str(b, "/usr/include");
	put_str(b, "");
	put_str(b, "a.c");
	put(b, 0, 3); /* dir 0, mtime 0, length 0 */
	put_str(b, "b.h");
	put(b, 2, 1);
	put(b, 0, 2);
	put_str(b, "c.rs");
	put(b, 1, 1);
	put(b, 0x80, 1); /* mtime 128 as two ULEB128 bytes */
	put(b, 0x01, 1);
	put(b, 0, 1);
	put_str(b, "");
	close32(b, at);
	return b->n;
}

static void test_dwarf4(void **state)
{
	(void)state;
	struct buf b;
	size_t len = v4_header(&b);
	struct cq_line_files f;
	assert_null(cq_line_files_parse(b.b, len, 0, &f));
	assert_int_equal(f.version, 4);
	assert_int_equal(f.n, 4); /* numbered from 1 */
	assert_null(f.name[0]);
	assert_string_equal(f.name[1], "a.c");
	assert_int_equal(f.dir[1], 0);
	assert_string_equal(f.name[2], "b.h");
	assert_int_equal(f.dir[2], 2);
	assert_string_equal(f.name[3], "c.rs");
	assert_int_equal(f.dir[3], 1);
	/* Directory 0 is the unit's: gdb prints the bare name; others joined. */
	assert_string_equal(cq_line_files_display(&f, 1, "/w/a.c", "x.c", "/w"), "a.c");
	assert_string_equal(cq_line_files_display(&f, 2, "/usr/include/b.h", "x.c", "/w"),
	                    "/usr/include/b.h");
	assert_string_equal(cq_line_files_display(&f, 3, "src/c.rs", "x.c", "/w"), "src/c.rs");
	/* Out of the table, or no table: libdw's path. */
	assert_string_equal(cq_line_files_display(&f, 9, "/w/z.c", "x.c", "/w"), "/w/z.c");
	assert_string_equal(cq_line_files_display(NULL, 1, "/w/a.c", "x.c", "/w"), "/w/a.c");
	cq_line_files_free(&f);
	for (size_t cut = 0; cut < len; cut++) { /* every truncation is refused */
		struct cq_error *err = cq_line_files_parse(b.b, cut, 0, &f);
		assert_non_null(err);
		assert_int_equal(f.n, 0);
		cq_error_free(err);
	}
}

/* A 64-bit DWARF 5 header: dirs "/w" and "../lib"; files x.c (dir 0), y.h (dir 1, with MD5). */
static size_t v5_header64(struct buf *b)
{
	b->n = 0;
	put(b, 0xffffffff, 4);
	size_t unit_at = b->n;
	put(b, 0, 8);
	put(b, 5, 2);
	put(b, 8, 1); /* address_size */
	put(b, 0, 1);
	size_t header_at = b->n;
	put(b, 0, 8);
	put_program_params(b);
	put(b, 1, 1); /* directory format: path as a string */
	put(b, DW_LNCT_path, 1);
	put(b, DW_FORM_string, 1);
	put(b, 2, 1);
	put_str(b, "/w");
	put_str(b, "../lib");
	put(b, 3, 1); /* file format: path (line_strp), directory (udata), MD5 (data16) */
	put(b, DW_LNCT_path, 1);
	put(b, DW_FORM_line_strp, 1);
	put(b, DW_LNCT_directory_index, 1);
	put(b, DW_FORM_udata, 1);
	put(b, DW_LNCT_MD5, 1);
	put(b, DW_FORM_data16, 1);
	put(b, 2, 1);
	put(b, 0x10, 8);
	put(b, 0, 1);
	put(b, 0, 16);
	put(b, 0x20, 8);
	put(b, 1, 1);
	put(b, 0, 16);
	uint64_t unit = b->n - unit_at - 8, header = b->n - header_at - 8;
	memcpy(b->b + unit_at, &unit, 8);
	memcpy(b->b + header_at, &header, 8);
	return b->n;
}

static void test_dwarf5(void **state)
{
	(void)state;
	struct buf b;
	size_t len = v5_header64(&b);
	struct cq_line_files f;
	assert_null(cq_line_files_parse(b.b, len, 0, &f));
	assert_int_equal(f.version, 5);
	assert_int_equal(f.n, 2);
	assert_int_equal(f.dir[0], 0);
	assert_int_equal(f.dir[1], 1);
	/* DWARF 5 names directory 0 itself: the joined path, as gdb prints it. */
	assert_string_equal(
	    cq_line_files_display(&f, 0, "./nptl/pthread_kill.c", "pthread_kill.c", "./nptl"),
	    "./nptl/pthread_kill.c");
	/* The unit's primary file, absolute: named as the unit names itself. */
	assert_string_equal(cq_line_files_display(&f, 0, "/w/x.c", "x.c", "/w"), "x.c");
	assert_string_equal(cq_line_files_display(&f, 0, "/w/x.c", "x.c", "/w/"), "x.c");
	assert_string_equal(cq_line_files_display(&f, 0, "/w/x.c", "y.c", "/w"), "/w/x.c");
	assert_string_equal(cq_line_files_display(&f, 1, "../lib/y.h", "x.c", "/w"), "../lib/y.h");
	cq_line_files_free(&f);
	for (size_t cut = 0; cut < len; cut++) {
		struct cq_error *err = cq_line_files_parse(b.b, cut, 0, &f);
		assert_non_null(err);
		cq_error_free(err);
	}
	/* A form whose size is unknown ends the header. */
	b.b[len - 2 * 25 - 6] = 0x7f; /* the files' path form */
	struct cq_error *err = cq_line_files_parse(b.b, len, 0, &f);
	assert_non_null(err);
	cq_error_free(err);
	/* An offset past the section. */
	err = cq_line_files_parse(b.b, len, len, &f);
	assert_non_null(err);
	cq_error_free(err);
}

/* Every unit of libc's debuginfo against libdw's own file table. */
static void test_against_libdw(void **state)
{
	(void)state;
	int fd = open_libc_debuginfo();
	if (fd < 0)
		skip(); /* libc6-dbg is in make deps; a machine without it cannot run this */
	Dwarf *dw = dwarf_begin(fd, DWARF_C_READ);
	assert_non_null(dw);
	GElf_Shdr sh;
	Elf_Scn *scn = cq_elf_section(dwarf_getelf(dw), ".debug_line", &sh);
	assert_non_null(scn);
	Elf_Data *data = elf_getdata(scn, NULL);
	assert_non_null(data);
	size_t units = 0, files = 0;
	Dwarf_Off off = 0, next;
	size_t header_size;
	while (dwarf_nextcu(dw, off, &next, &header_size, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		Dwarf_Attribute attr;
		Dwarf_Word stmt;
		Dwarf_Files *df;
		size_t nfiles;
		const char *const *dirs;
		size_t ndirs;
		if (dwarf_offdie(dw, off + header_size, &cu) &&
		    dwarf_formudata(dwarf_attr(&cu, DW_AT_stmt_list, &attr), &stmt) == 0 &&
		    dwarf_getsrcfiles(&cu, &df, &nfiles) == 0 &&
		    dwarf_getsrcdirs(df, &dirs, &ndirs) == 0) {
			struct cq_line_files f;
			assert_null(cq_line_files_parse(data->d_buf, data->d_size, stmt, &f));
			assert_int_equal(f.version, 5);
			assert_int_equal(f.n, nfiles);
			for (size_t i = 0; i < nfiles; i++) {
				const char *path = dwarf_filesrc(df, i, NULL, NULL);
				assert_true(f.dir[i] < ndirs);
				const char *dir = dirs[f.dir[i]];
				if (path[0] != '/' ||
				    (dir && strncmp(path, dir, strlen(dir)) == 0)) {
					assert_non_null(dir);
					assert_memory_equal(path, dir, strlen(dir));
					assert_int_equal(path[strlen(dir)], '/');
				}
				files++;
			}
			cq_line_files_free(&f);
			units++;
		}
		off = next;
	}
	assert_true(units > 1000); /* libc has about 2000 */
	assert_true(files > units);
	dwarf_end(dw);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dwarf4),
	    cmocka_unit_test(test_dwarf5),
	    cmocka_unit_test(test_against_libdw),
	};
	elf_version(EV_CURRENT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
