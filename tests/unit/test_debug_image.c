/*
 * test_debug_image.c - inflating compressed DWARF (libcore/symbols/
 * debug_image.h), against libelf's own inflation as the oracle.
 *
 * A corpus-like ELF with DWARF is built here (cc -g), its debug sections
 * compressed by objcopy (--compress-debug-sections=zlib); the inflated copy
 * must hold every section libelf inflates from the compressed file, byte for
 * byte, at the same section numbers and names, with SHF_COMPRESSED cleared,
 * location lists left out (SHT_NOBITS), and the build-id note unchanged.
 * A file with nothing compressed, and one that is not ELF, give -1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#include <cmocka.h>

#include "libcore/symbols/debug_image.h"

static char dir[] = "/tmp/coreq-test-debug-image-XXXXXX";
static char plain[256], packed[256];

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	char src[300], cmd[1200];
	snprintf(src, sizeof(src), "%s/p.c", dir);
	snprintf(plain, sizeof(plain), "%s/p", dir);
	snprintf(packed, sizeof(packed), "%s/p.z", dir);
	FILE *f = fopen(src, "w");
	if (!f)
		return -1;
	/* Enough DWARF that objcopy finds every debug section worth compressing. */
	for (int i = 0; i < 400; i++)
		fprintf(
		    f,
		    "struct record_with_a_long_name_%d { int field_a; long field_b; char tag[%d]; "
		    "};\n"
		    "int function_with_a_long_name_%d(struct record_with_a_long_name_%d *r, int "
		    "x)\n"
		    "{ for (int k = 0; k < x; k++) r->field_a += k * %d; return r->field_a; }\n",
		    i, i % 13 + 1, i, i, i);
	fputs("int main(void) { return 0; }\n", f);
	fclose(f);
	snprintf(
	    cmd, sizeof(cmd),
	    "cc -g -O2 -Wl,--build-id -o %s %s && objcopy --compress-debug-sections=zlib %s %s",
	    plain, src, plain, packed);
	elf_version(EV_CURRENT);
	return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_inflated_like_libelf(void **state)
{
	(void)state;
	int fd = open(packed, O_RDONLY);
	assert_true(fd >= 0);
	int img = cq_debug_image_inflate(fd, 2);
	assert_true(img >= 0);
	Elf *a = elf_begin(fd, ELF_C_READ, NULL), *b = elf_begin(img, ELF_C_READ, NULL);
	assert_non_null(a);
	assert_non_null(b);
	size_t na, nb, stra, strb;
	assert_int_equal(elf_getshdrnum(a, &na), 0);
	assert_int_equal(elf_getshdrnum(b, &nb), 0);
	assert_int_equal(na, nb);
	assert_int_equal(elf_getshdrstrndx(a, &stra), 0);
	assert_int_equal(elf_getshdrstrndx(b, &strb), 0);
	size_t inflated = 0, dropped = 0;
	for (size_t i = 1; i < na; i++) {
		Elf_Scn *sa = elf_getscn(a, i), *sb = elf_getscn(b, i);
		GElf_Shdr ha, hb;
		assert_non_null(gelf_getshdr(sa, &ha));
		assert_non_null(gelf_getshdr(sb, &hb));
		const char *name = elf_strptr(a, stra, ha.sh_name);
		assert_string_equal(name, elf_strptr(b, strb, hb.sh_name));
		assert_int_equal(hb.sh_flags & SHF_COMPRESSED, 0);
		if (strcmp(name, ".debug_loclists") == 0 || strcmp(name, ".debug_loc") == 0) {
			assert_int_equal(hb.sh_type, SHT_NOBITS);
			dropped++;
			continue;
		}
		bool was = (ha.sh_flags & SHF_COMPRESSED) != 0;
		if (was)
			assert_int_equal(elf_compress(sa, 0, 0),
			                 1); /* libelf's inflate: the oracle */
		Elf_Data *da = elf_getdata(sa, NULL), *db = elf_getdata(sb, NULL);
		if (ha.sh_type == SHT_NOBITS)
			continue;
		assert_non_null(da);
		assert_non_null(db);
		assert_int_equal(da->d_size, db->d_size);
		assert_memory_equal(da->d_buf, db->d_buf, da->d_size);
		inflated += was;
	}
	assert_true(inflated >= 3); /* info, abbrev, line at least */
	assert_true(dropped >= 1);  /* the location lists */
	elf_end(a);
	elf_end(b);
	close(img);
	close(fd);
}

static void test_nothing_to_do(void **state)
{
	(void)state;
	int fd = open(plain, O_RDONLY); /* its DWARF is not compressed */
	assert_true(fd >= 0);
	assert_int_equal(cq_debug_image_inflate(fd, 2), -1);
	close(fd);
	char junk[300];
	snprintf(junk, sizeof(junk), "%s/p.c", dir);
	fd = open(junk, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(cq_debug_image_inflate(fd, 1), -1);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_inflated_like_libelf),
	    cmocka_unit_test(test_nothing_to_do),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
