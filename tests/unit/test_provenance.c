/*
 * test_provenance.c - a module's file identity, the key of its cache
 * entries (libcore/symbols/provenance.h): the build-id is the file's (as
 * readelf reads it); the identity stays while the file stays, changes when
 * its mtime changes or another file (a new inode) replaces it, and tells
 * apart "no debuginfo", "the file itself" and "another debuginfo file"; a
 * vdso's identity is its bytes, wherever it was mapped.  The module is a
 * copy of this test program (cq_module_open_elf).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "libcore/model/module.h"
#include "libcore/symbols/provenance.h"
#include "tests/unit/corpus_db.h"

struct fixture {
	char dir[64];
	char elf[128], other[128];
};

static void copy(const char *from, const char *to)
{
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
	assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	if (!scratch_make(f->dir, sizeof(f->dir), "prov"))
		return -1;
	snprintf(f->elf, sizeof(f->elf), "%s/prog", f->dir);
	snprintf(f->other, sizeof(f->other), "%s/prog.debug", f->dir);
	char self[512];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -1;
	self[n] = 0;
	copy(self, f->elf);
	copy(self, f->other);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	scratch_remove(f->dir);
	free(f);
	return 0;
}

/* The identity of the file at path with debuginfo dbg, as a malloc'd copy. */
static uint8_t *identity(const char *path, const char *dbg, size_t *len, char *build_id)
{
	struct cq_module mod;
	assert_null(cq_module_open_elf(path, &mod));
	struct cq_provenance p;
	cq_provenance_init(&p, &mod, dbg);
	assert_non_null(p.key.identity);
	assert_true(p.key.identity_len > 0);
	assert_ptr_equal(p.key.build_id, p.build_id);
	if (build_id)
		strcpy(build_id, p.build_id);
	*len = p.identity_len;
	uint8_t *copy = malloc(*len);
	memcpy(copy, p.identity, *len);
	cq_provenance_free(&p);
	cq_module_destroy(&mod);
	return copy;
}

static bool same(const uint8_t *a, size_t la, const uint8_t *b, size_t lb)
{
	return la == lb && memcmp(a, b, la) == 0;
}

static void test_file_identity(void **state)
{
	struct fixture *f = *state;
	char id[130], want[130];
	size_t l0, l1, l2, l3;
	uint8_t *i0 = identity(f->elf, NULL, &l0, id);
	readelf_build_id(f->elf, want, sizeof(want));
	assert_true(want[0]);
	assert_string_equal(id, want);
	/* The same file, opened again. */
	uint8_t *i1 = identity(f->elf, NULL, &l1, NULL);
	assert_true(same(i0, l0, i1, l1));
	/* Its mtime changes. */
	struct stat st;
	assert_int_equal(stat(f->elf, &st), 0);
	struct timespec ts[2] = {st.st_atim, {.tv_sec = st.st_mtim.tv_sec - 100}};
	assert_int_equal(utimensat(AT_FDCWD, f->elf, ts, 0), 0);
	uint8_t *i2 = identity(f->elf, NULL, &l2, NULL);
	assert_false(same(i0, l0, i2, l2));
	/* Back to the old mtime: the same file again. */
	ts[1] = st.st_mtim;
	assert_int_equal(utimensat(AT_FDCWD, f->elf, ts, 0), 0);
	free(i1);
	i1 = identity(f->elf, NULL, &l1, NULL);
	assert_true(same(i0, l0, i1, l1));
	/* Replaced by another file with the same bytes and mtime: a new inode. */
	char tmp[160];
	snprintf(tmp, sizeof(tmp), "%s.new", f->elf);
	copy(f->elf, tmp);
	assert_int_equal(utimensat(AT_FDCWD, tmp, ts, 0), 0);
	assert_int_equal(rename(tmp, f->elf), 0);
	uint8_t *i3 = identity(f->elf, NULL, &l3, NULL);
	assert_false(same(i0, l0, i3, l3));
	free(i0);
	free(i1);
	free(i2);
	free(i3);
}

static void test_debuginfo_none_self_other(void **state)
{
	struct fixture *f = *state;
	size_t ln, ls, lo, lo2;
	uint8_t *none = identity(f->elf, NULL, &ln, NULL);
	uint8_t *self = identity(f->elf, f->elf, &ls, NULL);
	uint8_t *other = identity(f->elf, f->other, &lo, NULL);
	assert_false(same(none, ln, self, ls));
	assert_false(same(none, ln, other, lo));
	assert_false(same(self, ls, other, lo));
	/* The debuginfo file's own mtime is part of it too. */
	struct stat st;
	assert_int_equal(stat(f->other, &st), 0);
	struct timespec ts[2] = {st.st_atim, {.tv_sec = st.st_mtim.tv_sec - 100}};
	assert_int_equal(utimensat(AT_FDCWD, f->other, ts, 0), 0);
	uint8_t *other2 = identity(f->elf, f->other, &lo2, NULL);
	assert_false(same(other, lo, other2, lo2));
	free(none);
	free(self);
	free(other);
	free(other2);
}

static void vdso_identity(uint8_t *bytes, uint64_t start, struct cq_provenance *p)
{
	struct cq_module mod = {.name = "[vdso]",
	                        .is_vdso = true,
	                        .start = start,
	                        .end = start + 64,
	                        .image_copy = bytes,
	                        .build_id = {0xab, 0xcd, 0xef, 0x01},
	                        .build_id_len = 4,
	                        .fd = -1};
	cq_provenance_init(p, &mod, NULL);
}

static void test_vdso_by_bytes(void **state)
{
	(void)state;
	uint8_t a[64], b[64];
	for (size_t i = 0; i < 64; i++)
		a[i] = b[i] = (uint8_t)(i * 7);
	struct cq_provenance pa, pb, pc;
	vdso_identity(a, 0x7fff0000, &pa);
	vdso_identity(b, 0x7ffe1000, &pb); /* same bytes elsewhere */
	assert_string_equal(pa.build_id, "abcdef01");
	assert_non_null(pa.key.identity);
	assert_int_equal(pa.identity_len, pb.identity_len);
	assert_memory_equal(pa.identity, pb.identity, pa.identity_len);
	b[63] ^= 1;
	vdso_identity(b, 0x7fff0000, &pc);
	assert_false(pa.identity_len == pc.identity_len &&
	             memcmp(pa.identity, pc.identity, pa.identity_len) == 0);
	cq_provenance_free(&pa);
	cq_provenance_free(&pb);
	cq_provenance_free(&pc);
	/* No bytes: no identity, and the cache is not used for it. */
	struct cq_module none = {.is_vdso = true, .build_id = {1}, .build_id_len = 1, .fd = -1};
	cq_provenance_init(&pa, &none, NULL);
	assert_null(pa.key.identity);
	assert_int_equal(pa.key.identity_len, 0);
	cq_provenance_free(&pa);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_file_identity, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_debuginfo_none_self_other, setup, teardown),
	    cmocka_unit_test(test_vdso_by_bytes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
