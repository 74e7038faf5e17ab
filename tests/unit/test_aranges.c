/*
 * test_aranges.c - address to unit from .debug_aranges (libcore/symbols/
 * aranges.h).
 *
 * Hand-laid sections check the format's corners (padding, 64-bit DWARF, a
 * (0, 0) end inside a set, sets skipped for their version or address size,
 * a damaged length, truncation at every byte).  On the real libc debuginfo
 * from libc6-dbg the table must name, for every range start and end - 1,
 * the unit libdw's own dwarf_getarange_addr names: libdw is the oracle.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <unistd.h>

#include <cmocka.h>

#include "libcore/symbols/aranges.h"
#include "byte_buf.h"
#include "libc_debuginfo.h"

/* A 32-bit DWARF set at the end of b with address size 8; returns its start. */
static size_t set32(struct buf *b, uint16_t version, uint64_t unit, uint8_t address_size,
                    const uint64_t *pairs, size_t npairs, bool end_marker)
{
	size_t start = b->n;
	put(b, 0, 4); /* length, patched below */
	put(b, version, 2);
	put(b, unit, 4);
	put(b, address_size, 1);
	put(b, 0, 1);
	while ((b->n - start) % (2u * address_size))
		put(b, 0, 1);
	for (size_t i = 0; i < 2 * npairs; i++)
		put(b, pairs[i], address_size);
	if (end_marker)
		put(b, 0, 2 * address_size);
	uint32_t len = (uint32_t)(b->n - start - 4);
	memcpy(b->b + start, &len, 4);
	return start;
}

static uint64_t unit_at(const struct cq_aranges *a, uint64_t addr)
{
	uint64_t unit = 0;
	return cq_aranges_find(a, addr, &unit) ? unit : UINT64_MAX;
}

static void test_sets(void **state)
{
	(void)state;
	struct buf b = {.n = 0};
	const uint64_t one[] = {0x2000, 0x100, 0x1000, 0x10};
	set32(&b, 2, 0x40, 8, one, 2, true);
	const uint64_t v3[] = {0x5000, 0x100};
	set32(&b, 3, 0x80, 8, v3, 1, true); /* unknown version: skipped */
	const uint64_t four[] = {0x3000, 0x20};
	set32(&b, 2, 0xc0, 4, four, 1, true); /* 4-byte addresses */
	/* 64-bit DWARF: 0xffffffff, 8-byte length, 8-byte unit offset */
	size_t start = b.n;
	put(&b, 0xffffffff, 4);
	put(&b, 0, 8);
	put(&b, 2, 2);
	put(&b, 0x1234567890ull, 8);
	put(&b, 8, 1);
	put(&b, 0, 1);
	while ((b.n - start) % 16)
		put(&b, 0, 1);
	put(&b, 0x4000, 8);
	put(&b, 0x8, 8);
	put(&b, 0, 16);
	uint64_t len64 = b.n - start - 12;
	memcpy(b.b + start + 4, &len64, 8);

	struct cq_aranges a;
	assert_null(cq_aranges_parse(b.b, b.n, &a));
	assert_int_equal(a.n, 4);
	assert_int_equal(unit_at(&a, 0x1000), 0x40);
	assert_int_equal(unit_at(&a, 0x100f), 0x40);
	assert_int_equal(unit_at(&a, 0x1010), UINT64_MAX); /* end is exclusive */
	assert_int_equal(unit_at(&a, 0x20ff), 0x40);
	assert_int_equal(unit_at(&a, 0x3010), 0xc0);
	assert_int_equal(unit_at(&a, 0x4007), 0x1234567890ull);
	assert_int_equal(unit_at(&a, 0x5000), UINT64_MAX); /* the skipped version */
	assert_int_equal(unit_at(&a, 0xfff), UINT64_MAX);
	assert_int_equal(unit_at(&a, UINT64_MAX), UINT64_MAX);
	cq_aranges_free(&a);

	/* every truncation parses without reading past the end */
	for (size_t cut = 0; cut <= b.n; cut++) {
		uint8_t *copy = malloc(cut ? cut : 1);
		memcpy(copy, b.b, cut);
		assert_null(cq_aranges_parse(copy, cut, &a));
		assert_true(a.n <= 4);
		cq_aranges_free(&a);
		free(copy);
	}
}

static void test_damaged(void **state)
{
	(void)state;
	struct buf b = {.n = 0};
	const uint64_t one[] = {0x1000, 0x10};
	set32(&b, 2, 0x40, 8, one, 1, true);
	size_t second = set32(&b, 2, 0x80, 8, one, 1, true);
	uint32_t huge = 0x7fffffff; /* runs past the section: ends the table */
	memcpy(b.b + second, &huge, 4);
	struct cq_aranges a;
	assert_null(cq_aranges_parse(b.b, b.n, &a));
	assert_int_equal(a.n, 1);
	assert_int_equal(unit_at(&a, 0x1008), 0x40);
	cq_aranges_free(&a);

	/* a set without its (0, 0) end stops at the set's length; a zero-length range is no range
	 */
	b.n = 0;
	const uint64_t open_ended[] = {0x1000, 0x10, 0x2000, 0};
	set32(&b, 2, 0x40, 8, open_ended, 2, false);
	assert_null(cq_aranges_parse(b.b, b.n, &a));
	assert_int_equal(a.n, 1);
	cq_aranges_free(&a);

	/* a range whose end wraps is clamped, not wrapped */
	b.n = 0;
	const uint64_t wraps[] = {0xfffffffffffff000ull, 0x10000};
	set32(&b, 2, 0x40, 8, wraps, 1, true);
	assert_null(cq_aranges_parse(b.b, b.n, &a));
	assert_int_equal(unit_at(&a, UINT64_MAX - 1), 0x40);
	cq_aranges_free(&a);

	assert_null(cq_aranges_parse(NULL, 0, &a));
	assert_int_equal(a.n, 0);
}

static void test_against_libdw(void **state)
{
	(void)state;
	elf_version(EV_CURRENT);
	int fd = open_libc_debuginfo();
	if (fd < 0)
		skip(); /* libc6-dbg is in make deps; a machine without it cannot run this */
	Dwarf *dw = dwarf_begin(fd, DWARF_C_READ);
	assert_non_null(dw);
	Elf *elf = dwarf_getelf(dw);
	size_t shstrndx;
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	Elf_Data *data = NULL;
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) &&
		    strcmp(elf_strptr(elf, shstrndx, sh.sh_name), ".debug_aranges") == 0) {
			if (sh.sh_flags & SHF_COMPRESSED)
				assert_int_equal(elf_compress(scn, 0, 0), 1);
			data = elf_getdata(scn, NULL);
		}
	}
	assert_non_null(data);
	struct cq_aranges a;
	assert_null(cq_aranges_parse(data->d_buf, data->d_size, &a));
	Dwarf_Aranges *oracle;
	size_t n;
	assert_int_equal(dwarf_getaranges(dw, &oracle, &n), 0);
	assert_int_equal(a.n, n);
	size_t checked = 0;
	for (size_t i = 0; i < a.n; i++) {
		uint64_t ends[2] = {a.ranges[i].start, a.ranges[i].end - 1};
		for (int k = 0; k < 2; k++) {
			Dwarf_Arange *r = dwarf_getarange_addr(oracle, ends[k]);
			Dwarf_Off die_offset;
			assert_non_null(r);
			assert_int_equal(dwarf_getarangeinfo(r, NULL, NULL, &die_offset), 0);
			/* libdw gives the unit DIE's offset; the table gives its header's */
			uint64_t unit;
			assert_true(cq_aranges_find(&a, ends[k], &unit));
			Dwarf_Off next;
			size_t header;
			assert_int_equal(dwarf_next_unit(dw, unit, &next, &header, NULL, NULL, NULL,
			                                 NULL, NULL, NULL),
			                 0);
			assert_int_equal(unit + header, die_offset);
			checked++;
		}
	}
	assert_true(checked > 2000);
	cq_aranges_free(&a);
	dwarf_end(dw);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sets),
	    cmocka_unit_test(test_damaged),
	    cmocka_unit_test(test_against_libdw),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
