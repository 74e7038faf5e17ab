/*
 * test_dwarf_type.c - the bounded DWARF type questions of
 * unwind/async/dwarf_type.h, on a small shared object compiled with `cc -g`
 * at test time.  The same struct definitions are compiled into this test,
 * so offsetof and sizeof here are the oracle for what the DWARF must say.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
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

#include "unwind/async/dwarf_type.h"

#define SOURCE                                                                                     \
	"typedef struct inner { char c; long l; } inner_t;\n"                                      \
	"typedef const inner_t cinner_t;\n"                                                        \
	"struct outer { int a; cinner_t in; struct inner *p; volatile int v; "                     \
	"double d[3]; };\n"                                                                        \
	"struct deep { char pad[24]; struct outer o; };\n"                                         \
	"struct by_pointer { struct inner *only; };\n"                                             \
	"typedef void nothing_t;\n"                                                                \
	"typedef nothing_t *nothing_p;\n"                                                          \
	"struct deep g_deep; struct by_pointer g_by_pointer; nothing_p g_nothing;\n"               \
	"cinner_t g_cinner;\n"

typedef struct inner {
	char c;
	long l;
} inner_t;
typedef const inner_t cinner_t;
struct outer {
	int a;
	cinner_t in;
	struct inner *p;
	volatile int v;
	double d[3];
};
struct deep {
	char pad[24];
	struct outer o;
};

static char dir[64];
static int fd = -1;
static Dwarf *dw;

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/coreq-dwt-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	char path[128], cmd[512];
	snprintf(path, sizeof(path), "%s/t.c", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(SOURCE, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -g -O0 -shared -fPIC -nostdlib -o %s/t.so %s", dir, path);
	if (system(cmd) != 0)
		return -1;
	snprintf(path, sizeof(path), "%s/t.so", dir);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	dw = dwarf_begin(fd, DWARF_C_READ);
	return dw ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	if (dw)
		dwarf_end(dw);
	if (fd >= 0)
		close(fd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* The top-level DIE of tag named name in the object's (one) compile unit. */
static Dwarf_Die top(int tag, const char *name)
{
	Dwarf_Off off = 0, next;
	size_t hsize;
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, child;
		if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_child(&cu, &child) == 0) {
			do {
				const char *n = dwarf_diename(&child);
				if (dwarf_tag(&child) == tag && n && strcmp(n, name) == 0)
					return child;
			} while (dwarf_siblingof(&child, &child) == 0);
		}
		off = next;
	}
	fail_msg("no DIE %s", name);
	Dwarf_Die none = {0};
	return none;
}

static void test_type_and_peel(void **state)
{
	(void)state;
	Dwarf_Die var = top(DW_TAG_variable, "g_cinner"), t;
	assert_true(cq_dwt_type(&var, &t));
	assert_int_equal(dwarf_tag(&t), DW_TAG_typedef); /* cinner_t, as declared */
	assert_string_equal(dwarf_diename(&t), "cinner_t");
	/* typedef cinner_t -> const -> typedef inner_t -> struct inner */
	assert_true(cq_dwt_peel(&t));
	assert_int_equal(dwarf_tag(&t), DW_TAG_structure_type);
	assert_string_equal(dwarf_diename(&t), "inner");
	/* a struct is its own peeled type */
	assert_true(cq_dwt_peel(&t));
	assert_string_equal(dwarf_diename(&t), "inner");
	/* a typedef of void has no type to peel to: a broken chain */
	Dwarf_Die v = top(DW_TAG_typedef, "nothing_t");
	assert_false(cq_dwt_peel(&v));
	/* a DIE without DW_AT_type */
	Dwarf_Die s = top(DW_TAG_structure_type, "outer");
	assert_false(cq_dwt_type(&s, &t));
}

static void test_size(void **state)
{
	(void)state;
	Dwarf_Die outer = top(DW_TAG_structure_type, "outer");
	assert_int_equal(cq_dwt_size(&outer), sizeof(struct outer));
	Dwarf_Die td = top(DW_TAG_typedef, "cinner_t");
	assert_int_equal(cq_dwt_size(&td), sizeof(cinner_t));
	Dwarf_Die deep = top(DW_TAG_structure_type, "deep");
	assert_int_equal(cq_dwt_size(&deep), sizeof(struct deep));
	Dwarf_Die v = top(DW_TAG_typedef, "nothing_t");
	assert_int_equal(cq_dwt_size(&v), 0); /* unknown */
}

static void test_member_offsets(void **state)
{
	(void)state;
	Dwarf_Die outer = top(DW_TAG_structure_type, "outer"), t;
	uint64_t off;
	assert_true(cq_dwt_find_member(&outer, cq_dwt_named, "d", 0, &off, &t));
	assert_int_equal(off, offsetof(struct outer, d));
	assert_int_equal(dwarf_tag(&t), DW_TAG_array_type);
	assert_true(cq_dwt_find_member(&outer, cq_dwt_named, "v", 0, &off, &t));
	assert_int_equal(off, offsetof(struct outer, v));
	assert_int_equal(dwarf_tag(&t), DW_TAG_base_type); /* volatile peeled */
	assert_false(cq_dwt_find_member(&outer, cq_dwt_named, "missing", 4, &off, &t));
	/* cq_dwt_member_offset on the member DIE itself */
	Dwarf_Die m;
	assert_int_equal(dwarf_child(&outer, &m), 0);
	assert_string_equal(dwarf_diename(&m), "a");
	assert_true(cq_dwt_member_offset(&m, &off));
	assert_int_equal(off, offsetof(struct outer, a));
	assert_false(cq_dwt_member_offset(&outer, &off)); /* a struct has no member location */
}

/* Nested structs are searched down to max_depth; offsets add up. */
static void test_nested_search(void **state)
{
	(void)state;
	Dwarf_Die deep = top(DW_TAG_structure_type, "deep"), t;
	uint64_t off;
	/* deep.o.in.l: two structs down */
	assert_false(cq_dwt_find_member(&deep, cq_dwt_named, "l", 0, &off, &t));
	assert_false(cq_dwt_find_member(&deep, cq_dwt_named, "l", 1, &off, &t));
	assert_true(cq_dwt_find_member(&deep, cq_dwt_named, "l", 2, &off, &t));
	assert_int_equal(off, offsetof(struct deep, o) + offsetof(struct outer, in) +
	                          offsetof(struct inner, l));
	assert_string_equal(dwarf_diename(&t), "long int");
	/* a member whose (peeled) type is named: in, of struct inner behind typedefs */
	assert_true(cq_dwt_find_member(&deep, cq_dwt_type_named, "inner", 1, &off, &t));
	assert_int_equal(off, offsetof(struct deep, o) + offsetof(struct outer, in));
	assert_true(cq_dwt_find_member(&deep, cq_dwt_type_prefixed, "inn", 1, &off, &t));
	assert_int_equal(off, offsetof(struct deep, o) + offsetof(struct outer, in));
	assert_false(cq_dwt_find_member(&deep, cq_dwt_type_named, "inn", 1, &off, &t));
	/* the first pointer member, depth first: o.p */
	assert_true(cq_dwt_find_member(&deep, cq_dwt_pointer, NULL, 1, &off, &t));
	assert_int_equal(off, offsetof(struct deep, o) + offsetof(struct outer, p));
	assert_int_equal(dwarf_tag(&t), DW_TAG_pointer_type);
}

/* The search does not go through pointers. */
static void test_not_through_pointers(void **state)
{
	(void)state;
	Dwarf_Die bp = top(DW_TAG_structure_type, "by_pointer"), t;
	uint64_t off;
	assert_false(cq_dwt_find_member(&bp, cq_dwt_named, "l", 8, &off, &t));
	assert_true(cq_dwt_find_member(&bp, cq_dwt_named, "only", 0, &off, &t));
	assert_int_equal(off, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_type_and_peel),        cmocka_unit_test(test_size),
	    cmocka_unit_test(test_member_offsets),       cmocka_unit_test(test_nested_search),
	    cmocka_unit_test(test_not_through_pointers),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
