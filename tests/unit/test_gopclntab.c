/*
 * test_gopclntab.c - Go function names from .gopclntab (libcore/symbols/
 * gopclntab.h): tables laid out by hand in the 1.18/1.20 and 1.2 formats,
 * one with its line and frame-size tables, and damaged ones.  The real tables of Go programs are
 * checked against `go tool addr2line` in tests/e2e/test_go_goroutines.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/symbols/gopclntab.h"
#include "byte_buf.h"

/*
 * A Go 1.18 table: three functions at text+0x0, +0x40, +0x100, the end at
 * +0x180; names "main.main", "runtime.raise", "main.(*T).m".
 */
static void table_118(struct buf *b, uint32_t magic, uint64_t text)
{
	b->n = 0;
	static const char *const names[] = {"main.main", "runtime.raise", "main.(*T).m"};
	static const uint32_t entries[] = {0x0, 0x40, 0x100, 0x180};
	size_t header = 8 + 8 * 8;
	size_t names_off = header;
	size_t names_len = 0;
	for (int i = 0; i < 3; i++)
		names_len += strlen(names[i]) + 1;
	size_t pcln = names_off + names_len;
	put(b, magic, 4);
	put(b, 0, 1);
	put(b, 0, 1);
	put(b, 1, 1); /* minLC */
	put(b, 8, 1); /* ptrSize */
	put(b, 3, 8); /* nfunc */
	put(b, 0, 8); /* nfiles */
	put(b, text, 8);
	put(b, names_off, 8);
	put(b, 0, 8); /* cuOffset */
	put(b, 0, 8); /* filetabOffset */
	put(b, 0, 8); /* pctabOffset */
	put(b, pcln, 8);
	uint32_t nameoff[3], off = 0;
	for (int i = 0; i < 3; i++) {
		nameoff[i] = off;
		memcpy(b->b + b->n, names[i], strlen(names[i]) + 1);
		b->n += strlen(names[i]) + 1;
		off += (uint32_t)strlen(names[i]) + 1;
	}
	/* ftab: 4 entries {entryoff, funcoff}; the _funcs after it */
	size_t funcs = 4 * 8;
	for (int i = 0; i < 4; i++) {
		put(b, entries[i], 4);
		put(b, i < 3 ? funcs + 8 * (size_t)i : 0, 4);
	}
	for (int i = 0; i < 3; i++) {
		put(b, entries[i], 4);
		put(b, nameoff[i], 4);
	}
}

static void test_118(void **state)
{
	(void)state;
	struct buf b;
	table_118(&b, 0xfffffff0u, 0x401000);
	struct cq_gopclntab t;
	assert_true(cq_gopclntab_init(&t, b.b, b.n));
	uint64_t entry = 0;
	assert_string_equal(cq_gopclntab_find(&t, 0x401000, &entry), "main.main");
	assert_int_equal(entry, 0x401000);
	assert_string_equal(cq_gopclntab_find(&t, 0x40103f, &entry), "main.main");
	assert_string_equal(cq_gopclntab_find(&t, 0x401040, &entry), "runtime.raise");
	assert_int_equal(entry, 0x401040);
	assert_string_equal(cq_gopclntab_find(&t, 0x40117f, &entry), "main.(*T).m");
	assert_null(cq_gopclntab_find(&t, 0x401180, &entry)); /* past the last */
	assert_null(cq_gopclntab_find(&t, 0x400fff, &entry)); /* before the first */
	/* 1.20's magic, same layout */
	table_118(&b, 0xfffffff1u, 0x401000);
	assert_true(cq_gopclntab_init(&t, b.b, b.n));
	assert_string_equal(cq_gopclntab_find(&t, 0x401050, &entry), "runtime.raise");
}

/*
 * A Go 1.18 table with line tables: one function main.f at text+0..0x40 in
 * main.go, its frame 0 bytes over its first 4 bytes, 0x18 up to 0x3c, 0
 * again; its line 10 up to +0x10, then 12.  pc-value tables as Go writes
 * them: from -1, pairs of a zig-zag value delta and a pc delta, then 0.
 */
/*
 * A Go 1.18 table of one function at 0x401000..0x401040 with line tables:
 * the header, names (NUL-padded), cutab[0] = 0, filetab "main.go", pctab,
 * then the function table and the _func's u32 fields.
 */
static void table_one(struct buf *b, const char *names, size_t names_len, const uint8_t *pctab,
                      size_t pctab_len, const uint32_t *func, size_t nfunc_words)
{
	b->n = 0;
	size_t header = 8 + 8 * 8, cutab = header + names_len, filetab = cutab + 4;
	size_t pcs = filetab + 8, pcln = pcs + pctab_len;
	put(b, 0xfffffff0u, 4);
	put(b, 0, 2);
	put(b, 1, 1); /* minLC */
	put(b, 8, 1); /* ptrSize */
	put(b, 1, 8); /* nfunc */
	put(b, 1, 8); /* nfiles */
	put(b, 0x401000, 8);
	put(b, header, 8);
	put(b, cutab, 8);
	put(b, filetab, 8);
	put(b, pcs, 8);
	put(b, pcln, 8);
	memcpy(b->b + b->n, names, names_len);
	b->n += names_len;
	put(b, 0, 4); /* cutab[0]: the file at filetab + 0 */
	memcpy(b->b + b->n, "main.go\0", 8);
	b->n += 8;
	memcpy(b->b + b->n, pctab, pctab_len);
	b->n += pctab_len;
	/* ftab {entryoff, funcoff} x 2, then the _func at funcoff 16 */
	put(b, 0, 4);
	put(b, 16, 4);
	put(b, 0x40, 4);
	put(b, 0, 4);
	for (size_t i = 0; i < nfunc_words; i++)
		put(b, func[i], 4);
}

static void table_lines(struct buf *b)
{
	static const uint8_t pctab[] = {
	    0,                                  /* offset 0: no table */
	    2,    4,    0x30, 0x38, 0x2f, 4, 0, /* pcsp at 1 */
	    2,    0x40, 0,                      /* pcfile at 8: file 0 */
	    0x16, 0x10, 4,    0x30, 0,          /* pcln at 11: 10, then 12 */
	};
	static const uint32_t func[] = {
	    0, 0, 0, 0, 1 /* pcsp */, 8 /* pcfile */, 11 /* pcln */, 0, 0 /* cuOffset */, 0};
	table_one(b, "main.f\0", 8, pctab, sizeof(pctab), func, sizeof(func) / sizeof(func[0]));
}

static void test_lines_and_frame_sizes(void **state)
{
	(void)state;
	struct buf b;
	table_lines(&b);
	struct cq_gopclntab t;
	assert_true(cq_gopclntab_init(&t, b.b, b.n));
	uint64_t entry;
	assert_string_equal(cq_gopclntab_find(&t, 0x401020, &entry), "main.f");
	const char *file = NULL;
	int line = 0;
	assert_true(cq_gopclntab_line(&t, 0x401008, &file, &line));
	assert_string_equal(file, "main.go");
	assert_int_equal(line, 10);
	assert_true(cq_gopclntab_line(&t, 0x40103f, &file, &line));
	assert_int_equal(line, 12);
	assert_false(cq_gopclntab_line(&t, 0x401040, &file, &line)); /* past the function */
	uint64_t size = 99;
	assert_true(cq_gopclntab_frame_size(&t, 0x401000, &size));
	assert_int_equal(size, 0);
	assert_true(cq_gopclntab_frame_size(&t, 0x401004, &size));
	assert_int_equal(size, 0x18);
	assert_true(cq_gopclntab_frame_size(&t, 0x40103b, &size));
	assert_int_equal(size, 0x18);
	assert_true(cq_gopclntab_frame_size(&t, 0x40103c, &size));
	assert_int_equal(size, 0);
	/* a pcln table at the section's last byte (its pairs run off it); a file past cutab */
	uint8_t copy[512];
	assert_int_equal(b.n, 164); /* the _func at 124: its pcln field at 148 */
	memcpy(copy, b.b, b.n);
	copy[148] = (uint8_t)(b.n - 1 - 92);
	assert_true(cq_gopclntab_init(&t, copy, b.n));
	assert_false(cq_gopclntab_line(&t, 0x401008, &file, &line));
	memcpy(copy, b.b, b.n);
	copy[92 + 8] = 0x7e; /* pcfile: file 62 */
	assert_true(cq_gopclntab_init(&t, copy, b.n));
	assert_false(cq_gopclntab_line(&t, 0x401008, &file, &line));
	/* the 1.18 table without line tables has none */
	table_118(&b, 0xfffffff0u, 0x401000);
	assert_true(cq_gopclntab_init(&t, b.b, b.n));
	assert_false(cq_gopclntab_line(&t, 0x401000, &file, &line));
	assert_false(cq_gopclntab_frame_size(&t, 0x401000, &size));
}

/*
 * table_lines with an inline tree: main.f's bytes up to +0x10 are main.g,
 * inlined from its call at +0x10 (pcdata 2 the tree index at a pc, funcdata
 * 3 the tree at go:func.* + 0).  The gofunc bytes: one inlinedCall.
 */
static void table_inline(struct buf *b, uint8_t gofunc[20])
{
	static const uint8_t pctab[] = {
	    0,    2,    4, 0x30, 0x38, 0x2f, 4, 0, /* pcsp at 1 */
	    2,    0x40, 0,                         /* pcfile at 8 */
	    0x16, 0x10, 4, 0x30, 0,                /* pcln at 11: 10, then 12 */
	    2,    0x10, 1, 0x30, 0,                /* inline index at 16: 0, then -1 */
	};
	/* the _func (npcdata 3, nfuncdata 4 in its last byte), pcdata[3], funcdata[4] */
	static const uint32_t func[] = {0,  0,           0,           0,           1, 8,
	                                11, 3,           0,           4u << 24,    0, 0,
	                                16, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0};
	table_one(b, "main.f\0\0main.g\0\0", 16, pctab, sizeof(pctab), func,
	          sizeof(func) / sizeof(func[0]));
	/* inlinedCall {parent -1, funcID, pad, file, line, func: "main.g" at 8, parentPc 0x10} */
	static const uint8_t call[20] = {0xff, 0xff, 0, 0, 0, 0, 0,    0, 0, 0,
	                                 0,    0,    8, 0, 0, 0, 0x10, 0, 0, 0};
	memcpy(gofunc, call, sizeof(call));
}

static void test_inlined_frames(void **state)
{
	(void)state;
	struct buf b;
	uint8_t gofunc[20];
	table_inline(&b, gofunc);
	struct cq_gopclntab t;
	assert_true(cq_gopclntab_init(&t, b.b, b.n));
	struct cq_gopclntab_frame f[4];
	/* without the gofunc bytes: the function alone */
	assert_int_equal(cq_gopclntab_frames(&t, 0x401008, f, 4), 1);
	assert_string_equal(f[0].function, "main.f");
	assert_int_equal(f[0].line, 10);
	cq_gopclntab_set_gofunc(&t, gofunc, sizeof(gofunc));
	assert_int_equal(cq_gopclntab_frames(&t, 0x401008, f, 4), 2);
	assert_string_equal(f[0].function, "main.g"); /* inlined: the line at the pc */
	assert_int_equal(f[0].line, 10);
	assert_string_equal(f[0].file, "main.go");
	assert_string_equal(f[1].function, "main.f"); /* its call site, at parentPc */
	assert_int_equal(f[1].line, 12);
	assert_int_equal(cq_gopclntab_frames(&t, 0x401030, f, 4), 1); /* past the inlined code */
	assert_int_equal(f[0].line, 12);
	assert_int_equal(cq_gopclntab_frames(&t, 0x401008, f, 1), 1); /* room for one */
	assert_string_equal(f[0].function, "main.f");
	/* a parent pc inside the same inlined call (a loop): that call once */
	gofunc[16] = 0x08;
	assert_int_equal(cq_gopclntab_frames(&t, 0x401008, f, 4), 2);
	gofunc[16] = 0x10;
	/* a tree index past the gofunc bytes: the function alone */
	cq_gopclntab_set_gofunc(&t, gofunc, 19);
	assert_int_equal(cq_gopclntab_frames(&t, 0x401008, f, 4), 1);
	assert_int_equal(cq_gopclntab_frames(&t, 0x401040, f, 4), 0); /* no function */
}

/* A Go 1.2 table: two functions at 0x1000, 0x1100, end 0x1200. */
static void test_12(void **state)
{
	(void)state;
	struct buf b = {0};
	put(&b, 0xfffffffbu, 4);
	put(&b, 0, 1);
	put(&b, 0, 1);
	put(&b, 1, 1);
	put(&b, 8, 1);
	put(&b, 2, 8); /* nfunc */
	/* ftab at 16: 3 entries {entry, funcoff} of 16 bytes: 48 bytes; _funcs at 64 */
	put(&b, 0x1000, 8);
	put(&b, 64, 8);
	put(&b, 0x1100, 8);
	put(&b, 80, 8);
	put(&b, 0x1200, 8);
	put(&b, 0, 8);
	/* _func {entry uintptr, nameoff i32, pad}: names at 96 */
	put(&b, 0x1000, 8);
	put(&b, 96, 4);
	put(&b, 0, 4);
	put(&b, 0x1100, 8);
	put(&b, 96 + 5, 4);
	put(&b, 0, 4);
	memcpy(b.b + b.n, "main\0init", 10);
	b.n += 10;
	struct cq_gopclntab t;
	assert_true(cq_gopclntab_init(&t, b.b, b.n));
	uint64_t entry;
	assert_string_equal(cq_gopclntab_find(&t, 0x1080, &entry), "main");
	assert_string_equal(cq_gopclntab_find(&t, 0x1100, &entry), "init");
	assert_null(cq_gopclntab_find(&t, 0x1200, &entry));
}

/* Damaged tables answer nothing, never read past the section. */
static void test_damaged(void **state)
{
	(void)state;
	struct buf b;
	struct cq_gopclntab t;
	uint64_t entry;
	table_118(&b, 0xfffffff0u, 0x401000);
	/* an unknown magic, 4-byte pointers, too short */
	uint8_t copy[512];
	memcpy(copy, b.b, b.n);
	copy[0] = 0x12;
	assert_false(cq_gopclntab_init(&t, copy, b.n));
	memcpy(copy, b.b, b.n);
	copy[7] = 4;
	assert_false(cq_gopclntab_init(&t, copy, b.n));
	assert_false(cq_gopclntab_init(&t, b.b, 15));
	/* nfunc past the section */
	memcpy(copy, b.b, b.n);
	copy[8] = 0xff, copy[9] = 0xff, copy[14] = 0x7f;
	assert_false(cq_gopclntab_init(&t, copy, b.n));
	/* the section cut inside the _funcs: the names are not reached */
	size_t cut = b.n - 20;
	if (cq_gopclntab_init(&t, b.b, cut)) {
		const char *n = cq_gopclntab_find(&t, 0x401100, &entry);
		assert_true(n == NULL || (n >= (const char *)b.b && n < (const char *)b.b + cut));
	}
	/* a name offset past the section */
	memcpy(copy, b.b, b.n);
	size_t last_nameoff = b.n - 4;
	copy[last_nameoff + 3] = 0x70;
	assert_true(cq_gopclntab_init(&t, copy, b.n));
	assert_null(cq_gopclntab_find(&t, 0x401100, &entry));
	assert_string_equal(cq_gopclntab_find(&t, 0x401000, &entry), "main.main");
	/* entries out of order answer nothing where they are */
	memcpy(copy, b.b, b.n);
	struct cq_gopclntab ok;
	assert_true(cq_gopclntab_init(&ok, copy, b.n));
	size_t ftab = ok.ftab;
	copy[ftab + 8] = 0x00, copy[ftab + 9] = 0x02; /* entry 1 at +0x200, past entry 2 */
	assert_true(cq_gopclntab_init(&t, copy, b.n));
	const char *n = cq_gopclntab_find(&t, 0x401050, &entry);
	assert_true(n == NULL || strcmp(n, "main.main") == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_118),
	    cmocka_unit_test(test_lines_and_frame_sizes),
	    cmocka_unit_test(test_inlined_frames),
	    cmocka_unit_test(test_12),
	    cmocka_unit_test(test_damaged),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
