/*
 * test_scope_index.c - the chain of DWARF scopes at an address
 * (libcore/symbols/scope_index.h) on this very test binary's DWARF (gcc,
 * -g -O1, no LTO: every origin in its own unit, where libdw is right), with
 * libdw as the oracle: dwarf_getscopes finds the innermost scope at a pc
 * and dwarf_getscopes_die its parents; the index's chain must be those
 * parents up to the first subprogram, DIE for DIE.
 * - every byte of scope_subject, a function with two levels of inlined
 *   calls (always_inline) and a loop's lexical block;
 * - every 16th byte of every subprogram of the binary's units (this
 *   file's and the library's it links), through one index, the units met
 *   last first: units are indexed as they are met, in any order;
 * - a pc in no subprogram of the unit gives no chain and no error.
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

#include "libcore/symbols/scope_index.h"

static volatile int sink;

static inline __attribute__((always_inline)) int leaf(int x)
{
	int y = x * 3;
	sink = y;
	return y + 1;
}

static inline __attribute__((always_inline)) int middle(int x)
{
	int r = 0;
	for (int i = 0; i < x; i++) {
		int t = leaf(i);
		r += t ^ sink;
	}
	return r;
}

int scope_subject(int x);
__attribute__((noinline)) int scope_subject(int x)
{
	return middle(x) + leaf(x);
}

struct self {
	int fd;
	Dwarf *dw;
};

static void self_open(struct self *s)
{
	s->fd = open("/proc/self/exe", O_RDONLY);
	assert_true(s->fd >= 0);
	s->dw = dwarf_begin(s->fd, DWARF_C_READ);
	assert_non_null(s->dw);
}

static void self_close(struct self *s)
{
	dwarf_end(s->dw);
	close(s->fd);
}

/* libdw's chain at pc: the parents of the innermost scope, up to the first subprogram. */
static int libdw_chain(Dwarf_Die *cudie, Dwarf_Addr pc, Dwarf_Off *out, int cap)
{
	Dwarf_Die *scopes = NULL, *parents = NULL;
	int n = dwarf_getscopes(cudie, pc, &scopes);
	if (n <= 0)
		return 0;
	int m = dwarf_getscopes_die(&scopes[0], &parents);
	free(scopes);
	int k = 0;
	for (int i = 0; i < m && k < cap; i++) {
		out[k++] = dwarf_dieoffset(&parents[i]);
		if (dwarf_tag(&parents[i]) == DW_TAG_subprogram)
			break;
	}
	bool ends_at_subprogram = k > 0 && dwarf_tag(&parents[k - 1]) == DW_TAG_subprogram;
	free(parents);
	return ends_at_subprogram ? k : 0;
}

struct sweep {
	size_t pcs, chains, inlined, deepest;
};

/* The index's chain at pc equals libdw's, DIE for DIE. */
static void check_pc(struct cq_scope_index *ix, Dwarf *dw, Dwarf_Addr pc, struct sweep *sw)
{
	Dwarf_Die cudie;
	if (!dwarf_addrdie(dw, pc, &cudie))
		return;
	Dwarf_Off want[256];
	int nwant = libdw_chain(&cudie, pc, want, 256);
	Dwarf_Die *chain = NULL;
	struct cq_error *err = NULL;
	int n = cq_scope_index_chain(ix, &cudie, pc, &chain, &err);
	assert_null(err);
	sw->pcs++;
	bool inlined = false;
	if (n != nwant)
		fail_msg("pc 0x%llx: %d scopes, libdw %d", (unsigned long long)pc, n, nwant);
	for (int i = 0; i < n; i++) {
		if (dwarf_dieoffset(&chain[i]) != want[i])
			fail_msg("pc 0x%llx: scope %d is DIE 0x%llx, libdw's 0x%llx",
			         (unsigned long long)pc, i,
			         (unsigned long long)dwarf_dieoffset(&chain[i]),
			         (unsigned long long)want[i]);
		inlined |= dwarf_tag(&chain[i]) == DW_TAG_inlined_subroutine;
	}
	sw->inlined += inlined;
	sw->chains += n > 0;
	if ((size_t)n > sw->deepest)
		sw->deepest = (size_t)n;
	free(chain);
}

/* The subprogram DIE named name among cudie's children. */
static bool find_function(Dwarf_Die *cudie, const char *name, Dwarf_Die *out)
{
	if (dwarf_child(cudie, out) != 0)
		return false;
	do {
		const char *n = dwarf_diename(out);
		if (dwarf_tag(out) == DW_TAG_subprogram && n && strcmp(n, name) == 0 &&
		    dwarf_hasattr(out, DW_AT_low_pc))
			return true;
	} while (dwarf_siblingof(out, out) == 0);
	return false;
}

static void test_every_byte_of_an_inlining_function(void **state)
{
	(void)state;
	/* (1 ^ 0) + (4 ^ 3) + (7 ^ 6) + leaf(3): the function runs as written. */
	assert_int_equal(scope_subject(3), 1 + 7 + 1 + 10);
	struct self s;
	self_open(&s);
	struct cq_scope_index *ix;
	assert_null(cq_scope_index_create(s.dw, &ix));
	Dwarf_Die cu, fn;
	bool found = false;
	for (Dwarf_Off off = 0, next; !found;) {
		size_t hsize;
		if (dwarf_nextcu(s.dw, off, &next, &hsize, NULL, NULL, NULL) != 0)
			break;
		if (dwarf_offdie(s.dw, off + hsize, &cu))
			found = find_function(&cu, "scope_subject", &fn);
		off = next;
	}
	assert_true(found);
	Dwarf_Addr lo, hi;
	assert_int_equal(dwarf_lowpc(&fn, &lo), 0);
	assert_int_equal(dwarf_highpc(&fn, &hi), 0);
	assert_true(lo < hi);
	struct sweep sw = {0};
	for (Dwarf_Addr pc = lo; pc < hi; pc++)
		check_pc(ix, s.dw, pc, &sw);
	fprintf(stderr,
	        "# scope_subject: %zu pcs, %zu chains, %zu in an inlined call, deepest %zu\n",
	        sw.pcs, sw.chains, sw.inlined, sw.deepest);
	assert_int_equal(sw.chains, hi - lo);
	assert_true(sw.inlined > 0);  /* leaf and middle were inlined */
	assert_true(sw.deepest >= 3); /* leaf in middle's loop in scope_subject */

	/* Just past the function, in the same unit: another function or none, never this one. */
	Dwarf_Die *chain = NULL;
	struct cq_error *err = NULL;
	int n = cq_scope_index_chain(ix, &cu, hi, &chain, &err);
	assert_null(err);
	for (int i = 0; i < n; i++)
		assert_int_not_equal(dwarf_dieoffset(&chain[i]), dwarf_dieoffset(&fn));
	free(chain);
	/* Address 0: no subprogram holds it. */
	chain = NULL;
	assert_int_equal(cq_scope_index_chain(ix, &cu, 0, &chain, &err), 0);
	assert_null(err);
	free(chain);
	cq_scope_index_free(ix);
	self_close(&s);
}

/* Every subprogram with code among cudie's children: its [lo, hi). */
static void sweep_unit(struct cq_scope_index *ix, Dwarf *dw, Dwarf_Die *cudie, struct sweep *sw)
{
	Dwarf_Die fn;
	if (dwarf_child(cudie, &fn) != 0)
		return;
	do {
		Dwarf_Addr lo, hi;
		if (dwarf_tag(&fn) != DW_TAG_subprogram || dwarf_lowpc(&fn, &lo) != 0 ||
		    dwarf_highpc(&fn, &hi) != 0)
			continue;
		for (Dwarf_Addr pc = lo; pc < hi; pc += 16)
			check_pc(ix, dw, pc, sw);
	} while (dwarf_siblingof(&fn, &fn) == 0);
}

static void test_units_of_the_binary(void **state)
{
	(void)state;
	struct self s;
	self_open(&s);
	struct cq_scope_index *ix;
	assert_null(cq_scope_index_create(s.dw, &ix));
	/* The units in reverse order of their offsets: the index keeps any order sorted. */
	Dwarf_Off units[24];
	size_t nunits = 0;
	for (Dwarf_Off off = 0, next; nunits < 24;) {
		size_t hsize;
		if (dwarf_nextcu(s.dw, off, &next, &hsize, NULL, NULL, NULL) != 0)
			break;
		units[nunits++] = off + hsize;
		off = next;
	}
	assert_true(nunits >= 2);
	struct sweep sw = {0};
	for (size_t i = nunits; i-- > 0;) {
		Dwarf_Die cu;
		assert_non_null(dwarf_offdie(s.dw, units[i], &cu));
		sweep_unit(ix, s.dw, &cu, &sw);
	}
	fprintf(stderr, "# %zu units: %zu pcs, %zu chains, %zu in an inlined call, deepest %zu\n",
	        nunits, sw.pcs, sw.chains, sw.inlined, sw.deepest);
	assert_true(sw.chains > 100);
	assert_true(sw.inlined > 0);
	cq_scope_index_free(ix);
	self_close(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_byte_of_an_inlining_function),
	    cmocka_unit_test(test_units_of_the_binary),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
