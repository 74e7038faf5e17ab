/*
 * test_python.c - what the python runtime knows about CPython
 * (unwind/async/python.h): the location table decoded as the interpreter
 * decodes it, and the version-keyed layout table checked against libpython's
 * DWARF on this host.
 *
 * Oracles: the location table and its lines are CPython 3.11's own
 * (/usr/bin/python3.11 compiled the function below; co_lines(), the
 * interpreter's C iterator over the same table, gave each instruction's
 * line); the layouts are python3.11-dbg's DWARF for /usr/bin/python3.11 and
 * /usr/bin/python3.11d, read by cq_python_layout_dwarf and compared field
 * by field with python_layouts.def's row.
 */
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
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

#include "unwind/async/python.h"

/*
 * def f(a, b):                             # line 2
 *     x = a + b
 *     if x > 10:
 *         for i in range(x):
 *             b += i * (
 *                 a
 *                 - 1)
 *     try:
 *         y = {k: v for k, v in zip(a, b)}
 *     except Exception:
 *         y = None
 *
 *
 *     return [x,
 *             y]
 */
static const uint8_t linetable[] = {
    0x80, 0x00, 0xd8, 0x08, 0x09, 0x88, 0x41, 0x89, 0x05, 0x80, 0x41, 0xd8, 0x07, 0x08, 0x88, 0x32,
    0x82, 0x76, 0x80, 0x76, 0xdd, 0x11, 0x16, 0x90, 0x71, 0x91, 0x18, 0x94, 0x18, 0xf0, 0x00, 0x03,
    0x09, 0x15, 0xf0, 0x00, 0x03, 0x09, 0x15, 0x88, 0x41, 0xd8, 0x0c, 0x0d, 0x90, 0x11, 0xd8, 0x10,
    0x11, 0xd8, 0x12, 0x13, 0xf1, 0x03, 0x01, 0x11, 0x14, 0xf1, 0x03, 0x02, 0x12, 0x15, 0xf1, 0x00,
    0x02, 0x0d, 0x15, 0x88, 0x41, 0x88, 0x41, 0xf0, 0x06, 0x03, 0x05, 0x11, 0xd8, 0x0c, 0x28, 0xd0,
    0x0c, 0x28, 0x9d, 0x63, 0xa0, 0x21, 0xa0, 0x51, 0x99, 0x69, 0x9c, 0x69, 0xd0, 0x0c, 0x28, 0xd1,
    0x0c, 0x28, 0xd4, 0x0c, 0x28, 0x88, 0x01, 0x88, 0x01, 0xf8, 0xdd, 0x0b, 0x14, 0xf0, 0x00, 0x01,
    0x05, 0x11, 0xf0, 0x00, 0x01, 0x05, 0x11, 0xf0, 0x00, 0x01, 0x05, 0x11, 0xd8, 0x0c, 0x10, 0x88,
    0x01, 0x88, 0x01, 0x88, 0x01, 0xf0, 0x03, 0x01, 0x05, 0x11, 0xf8, 0xf8, 0xf8, 0xf0, 0x08, 0x00,
    0x0d, 0x0e, 0xd8, 0x0c, 0x0d, 0xf0, 0x03, 0x01, 0x0c, 0x0f, 0xf0, 0x00, 0x01, 0x05, 0x0f,
};

/* co_lines() per code unit (2 bytes); -1: None, no line. */
static const int lines[] = {
    2,  3,  3,  3,  3,  3,  4,  4,  4,  4,  4,  4,  5,  5,  5,  5,  5,  5,  5,  5,  5,  5,  5,
    5,  5,  5,  5,  5,  5,  6,  6,  7,  8,  7,  7,  6,  6,  6,  6,  6,  6,  9,  10, 10, 10, 10,
    10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10,
    -1, 11, 11, 11, 11, 11, 11, 11, 11, 11, 12, 12, 12, 12, 11, -1, -1, -1, 15, 16, 15, 15,
};

static void test_addr2line(void **state)
{
	(void)state;
	size_t n = sizeof(lines) / sizeof(lines[0]);
	for (size_t i = 0; i < n; i++) {
		int got = cq_python_addr2line(linetable, sizeof(linetable), 2, (int64_t)i * 2);
		if (got != lines[i])
			fail_msg("code unit %zu: line %d, co_lines() says %d", i, got, lines[i]);
		/* The odd byte of a code unit is the same unit. */
		assert_int_equal(
		    cq_python_addr2line(linetable, sizeof(linetable), 2, (int64_t)i * 2 + 1),
		    lines[i]);
	}
	/* A frame not started yet (prev_instr before the first unit): the first line. */
	assert_int_equal(cq_python_addr2line(linetable, sizeof(linetable), 2, -2), 2);
	/* Beyond the table: no line. */
	assert_int_equal(cq_python_addr2line(linetable, sizeof(linetable), 2, (int64_t)n * 2), -1);
	assert_int_equal(cq_python_addr2line(NULL, 0, 7, 0), -1);
}

/* Every prefix of the table, and damaged bytes, decode within bounds. */
static void test_addr2line_damaged(void **state)
{
	(void)state;
	uint8_t t[sizeof(linetable)];
	for (size_t len = 0; len <= sizeof(linetable); len++)
		for (int64_t a = -4; a < 200; a += 3)
			(void)cq_python_addr2line(linetable, len, 2, a);
	/* Varints that never end, huge deltas. */
	memset(t, 0x7f, sizeof(t));
	t[0] = 0xf0;
	(void)cq_python_addr2line(t, sizeof(t), 2, 0);
	memset(t, 0xff, sizeof(t));
	for (int64_t a = 0; a < 2000; a += 7)
		(void)cq_python_addr2line(t, sizeof(t), INT32_MAX, a);
}

static void test_table_versions(void **state)
{
	(void)state;
	const struct cq_python_layout *l = cq_python_layout_table(3, 11);
	assert_non_null(l);
	assert_int_equal(l->major, 3);
	assert_int_equal(l->minor, 11);
	assert_null(cq_python_layout_table(3, 10));
	assert_null(cq_python_layout_table(2, 7));
}

/* The debuginfo of an executable: its own DWARF, or its build-id's file under /usr/lib/debug. */
static char *debuginfo_of(const char *exe)
{
	int fd = open(exe, O_RDONLY);
	if (fd < 0)
		return NULL;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	const void *id = NULL;
	ssize_t len = elf ? dwelf_elf_gnu_build_id(elf, &id) : -1;
	char *path = NULL;
	Dwarf *own = elf ? dwarf_begin_elf(elf, DWARF_C_READ, NULL) : NULL;
	if (own) {
		path = strdup(exe);
		dwarf_end(own);
	} else if (len > 1) {
		const uint8_t *b = id;
		size_t size = 64 + 2 * (size_t)len;
		path = malloc(size);
		int at = snprintf(path, size, "/usr/lib/debug/.build-id/%02x/", b[0]);
		for (ssize_t i = 1; i < len; i++)
			at += snprintf(path + at, size - (size_t)at, "%02x", b[i]);
		snprintf(path + at, size - (size_t)at, ".debug");
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return path;
}

static void check_against_dwarf(const char *exe)
{
	char *path = debuginfo_of(exe);
	int fd = path ? open(path, O_RDONLY) : -1;
	if (fd < 0) {
		printf("# %s: no DWARF here (python3.11-dbg): skipped\n", exe);
		free(path);
		skip();
	}
	Dwarf *dw = dwarf_begin(fd, DWARF_C_READ);
	assert_non_null(dw);
	struct cq_python_layout got = {0};
	const char *missing = NULL;
	if (!cq_python_layout_dwarf(dw, &got, &missing))
		fail_msg("%s: %s not found in the DWARF", path, missing ? missing : "?");
	const struct cq_python_layout *row = cq_python_layout_table(3, 11);
	assert_non_null(row);
	int bad = 0;
#define CQ_PY_FIELD(name, type, member)                                                            \
	if (got.name != row->name) {                                                               \
		printf("# %s: %s %s: DWARF %u, table %u\n", exe, type, member ? member : "size",   \
		       got.name, row->name);                                                       \
		bad++;                                                                             \
	}
	CQ_PYTHON_LAYOUT_FIELDS(CQ_PY_FIELD)
#undef CQ_PY_FIELD
	dwarf_end(dw);
	close(fd);
	free(path);
	assert_int_equal(bad, 0);
}

/* _asyncio's TaskObj fields against its DWARF (python3.11-dbg has it by build-id). */
static void test_asyncio_table_matches_dwarf(void **state)
{
	(void)state;
	char *path = debuginfo_of(
	    "/usr/lib/python3.11/lib-dynload/_asyncio.cpython-311-x86_64-linux-gnu.so");
	int fd = path ? open(path, O_RDONLY) : -1;
	if (fd < 0) {
		free(path);
		skip();
	}
	Dwarf *dw = dwarf_begin(fd, DWARF_C_READ);
	assert_non_null(dw);
	struct cq_python_layout got = {0};
	const char *missing = NULL;
	if (!cq_python_asyncio_layout_dwarf(dw, &got, &missing))
		fail_msg("%s: %s not found in the DWARF", path, missing ? missing : "?");
	const struct cq_python_layout *row = cq_python_layout_table(3, 11);
	int bad = 0;
#define CQ_PY_FIELD(name, type, member)                                                            \
	if (got.name != row->name) {                                                               \
		printf("# _asyncio: %s %s: DWARF %u, table %u\n", type, member, got.name,          \
		       row->name);                                                                 \
		bad++;                                                                             \
	}
	CQ_PYTHON_ASYNCIO_FIELDS(CQ_PY_FIELD)
#undef CQ_PY_FIELD
	dwarf_end(dw);
	close(fd);
	free(path);
	assert_int_equal(bad, 0);
}

static void test_table_matches_dwarf(void **state)
{
	(void)state;
	check_against_dwarf("/usr/bin/python3.11");
}

static void test_table_matches_debug_build(void **state)
{
	(void)state;
	check_against_dwarf("/usr/bin/python3.11d");
}

/* A cached layout: read back whole; damaged, short or of another version: refused. */
static void test_layout_blob(void **state)
{
	(void)state;
	const struct cq_python_layout *row = cq_python_layout_table(3, 11);
	size_t nfields = 0;
#define CQ_PY_COUNT(name, type, member) nfields++;
	CQ_PYTHON_LAYOUT_FIELDS(CQ_PY_COUNT)
#undef CQ_PY_COUNT
	uint32_t w[64];
	assert_true(nfields + 3 <= 64);
	w[0] = 3;
	w[1] = 11;
	w[2] = (uint32_t)nfields;
	memcpy(&w[3], &row->runtime_interp_head, nfields * sizeof(uint32_t));
	size_t len = (nfields + 3) * sizeof(uint32_t);
	struct cq_python_layout got;
	assert_true(cq_python_layout_decode((const uint8_t *)w, len, 3, 11, &got));
	assert_memory_equal(&got.runtime_interp_head, &row->runtime_interp_head,
	                    nfields * sizeof(uint32_t));
	assert_false(cq_python_layout_decode((const uint8_t *)w, len - 1, 3, 11, &got));
	assert_false(cq_python_layout_decode((const uint8_t *)w, len, 3, 12, &got));
	w[2]++;
	assert_false(cq_python_layout_decode((const uint8_t *)w, len, 3, 11, &got));
	w[2]--;
	w[5] = 0xffffffffu; /* an offset no structure has */
	assert_false(cq_python_layout_decode((const uint8_t *)w, len, 3, 11, &got));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_addr2line),
	    cmocka_unit_test(test_addr2line_damaged),
	    cmocka_unit_test(test_table_versions),
	    cmocka_unit_test(test_layout_blob),
	    cmocka_unit_test(test_table_matches_dwarf),
	    cmocka_unit_test(test_table_matches_debug_build),
	    cmocka_unit_test(test_asyncio_table_matches_dwarf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
