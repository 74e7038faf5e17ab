/*
 * scope_index.c - the chain of DWARF scopes at an address (see
 * scope_index.h), without libdw's dwarf_getscopes.
 *
 * A unit's index is the address ranges of the subprograms among its
 * children, sorted by start; the units indexed so far are kept sorted by
 * their offset.  The DWARF is untrusted: every walk checks that DIE
 * offsets only grow (a sibling pointing back would loop) and stops after
 * a bounded number of DIEs, and the chain is at most MAX_DEPTH deep.
 */
#include "libcore/symbols/scope_index.h"

#include <dwarf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH        256        /* scopes in one chain */
#define MAX_UNIT_DIES    (1u << 22) /* children looked at while indexing one unit */
#define MAX_SCOPE_DIES   (1u << 20) /* DIEs looked at while walking down to one address */
#define OVERLAP_LOOKBACK 16         /* ranges before the nearest one tried when they overlap */

/* Code of the subprogram DIE at die: [lo, hi). */
struct code_range {
	Dwarf_Addr lo, hi;
	Dwarf_Off die;
};

struct unit_index {
	Dwarf_Off unit; /* the unit DIE's offset */
	struct code_range *ranges;
	size_t n;
};

struct cq_scope_index {
	Dwarf *dw;
	struct unit_index *units; /* sorted by unit */
	size_t n, cap;
};

struct cq_error *cq_scope_index_create(Dwarf *dw, struct cq_scope_index **out)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return &cq_error_nomem;
	(*out)->dw = dw;
	return NULL;
}

void cq_scope_index_free(struct cq_scope_index *ix)
{
	if (!ix)
		return;
	for (size_t i = 0; i < ix->n; i++)
		free(ix->units[i].ranges);
	free(ix->units);
	free(ix);
}

/* Ranges being gathered for one unit. */
struct range_list {
	struct code_range *ranges;
	size_t n, cap;
	bool nomem;
};

static void add_range(struct range_list *l, Dwarf_Addr lo, Dwarf_Addr hi, Dwarf_Off die)
{
	if (l->nomem || hi <= lo)
		return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct code_range *r =
		    cap <= SIZE_MAX / sizeof(*r) ? realloc(l->ranges, cap * sizeof(*r)) : NULL;
		if (!r) {
			l->nomem = true;
			return;
		}
		l->ranges = r;
		l->cap = cap;
	}
	l->ranges[l->n++] = (struct code_range){.lo = lo, .hi = hi, .die = die};
}

/* Every address range of die (DW_AT_low_pc/high_pc or DW_AT_ranges). */
static void add_die_ranges(struct range_list *l, Dwarf_Die *die)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	Dwarf_Off at = dwarf_dieoffset(die);
	for (unsigned k = 0;
	     k < MAX_UNIT_DIES && (off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0; k++)
		add_range(l, lo, hi, at);
}

static int by_start(const void *a, const void *b)
{
	const struct code_range *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->die < y->die ? -1 : x->die > y->die;
}

/* The ranges of the subprograms among cudie's children, sorted. */
static struct cq_error *index_unit(Dwarf_Die *cudie, struct unit_index *out)
{
	struct range_list l = {0};
	Dwarf_Die child;
	Dwarf_Off last = dwarf_dieoffset(cudie);
	if (dwarf_child(cudie, &child) == 0) {
		unsigned k = 0;
		do {
			Dwarf_Off off = dwarf_dieoffset(&child);
			if (off <= last || ++k > MAX_UNIT_DIES)
				break;
			last = off;
			if (dwarf_tag(&child) == DW_TAG_subprogram)
				add_die_ranges(&l, &child);
		} while (dwarf_siblingof(&child, &child) == 0 && !l.nomem);
	}
	if (l.nomem) {
		free(l.ranges);
		return &cq_error_nomem;
	}
	if (l.n)
		qsort(l.ranges, l.n, sizeof(*l.ranges), by_start);
	out->unit = dwarf_dieoffset(cudie);
	out->ranges = l.ranges;
	out->n = l.n;
	return NULL;
}

/* The index of the unit at offset unit, made now if need be; NULL when out of memory. */
static struct unit_index *unit_index(struct cq_scope_index *ix, Dwarf_Die *cudie,
                                     struct cq_error **err)
{
	Dwarf_Off unit = dwarf_dieoffset(cudie);
	size_t lo = 0, hi = ix->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ix->units[mid].unit < unit)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < ix->n && ix->units[lo].unit == unit)
		return &ix->units[lo];
	if (ix->n == ix->cap) {
		size_t cap = ix->cap ? 2 * ix->cap : 16;
		struct unit_index *u =
		    cap <= SIZE_MAX / sizeof(*u) ? realloc(ix->units, cap * sizeof(*u)) : NULL;
		if (!u) {
			*err = &cq_error_nomem;
			return NULL;
		}
		ix->units = u;
		ix->cap = cap;
	}
	struct unit_index made;
	if ((*err = index_unit(cudie, &made)))
		return NULL;
	memmove(&ix->units[lo + 1], &ix->units[lo], (ix->n - lo) * sizeof(*ix->units));
	ix->units[lo] = made;
	ix->n++;
	return &ix->units[lo];
}

/*
 * The subprogram of u holding pc, into *out: of those starting at the same
 * address, the last in DIE order, as gdb's block search picks it (glibc's
 * clone3.S describes one range as __clone3, __GI___clone3 and clone3: gdb
 * says clone3; libdw's dwarf_getscopes took the first).
 */
static bool subprogram_at(struct cq_scope_index *ix, const struct unit_index *u, Dwarf_Addr pc,
                          Dwarf_Die *out)
{
	size_t lo = 0, hi = u->n; /* the first range starting above pc */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (u->ranges[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, k = 0; i > 0 && k < OVERLAP_LOOKBACK; i--, k++) {
		const struct code_range *r = &u->ranges[i - 1];
		if (pc < r->hi)
			return dwarf_offdie(ix->dw, r->die, out) != NULL;
	}
	return false;
}

/* Tags whose DIEs hold code of their own, as libdw's scope walk descends into. */
static bool is_scope(int tag)
{
	switch (tag) {
	case DW_TAG_lexical_block:
	case DW_TAG_inlined_subroutine:
	case DW_TAG_subprogram:
	case DW_TAG_entry_point:
	case DW_TAG_with_stmt:
	case DW_TAG_catch_block:
	case DW_TAG_try_block:
		return true;
	default:
		return false;
	}
}

/*
 * The first child of parent that is a scope holding pc, into *out.  Only
 * parent's children are looked at: dwarf_siblingof skips each one's subtree.
 */
static bool child_at(Dwarf_Die *parent, Dwarf_Addr pc, Dwarf_Die *out, unsigned *budget)
{
	Dwarf_Off last = dwarf_dieoffset(parent);
	if (dwarf_child(parent, out) != 0)
		return false;
	do {
		Dwarf_Off off = dwarf_dieoffset(out);
		if (off <= last || *budget == 0)
			return false;
		--*budget;
		last = off;
		if (is_scope(dwarf_tag(out)) && dwarf_haspc(out, pc) == 1)
			return true;
	} while (dwarf_siblingof(out, out) == 0);
	return false;
}

int cq_scope_index_chain(struct cq_scope_index *ix, Dwarf_Die *cudie, Dwarf_Addr pc,
                         Dwarf_Die **chain, struct cq_error **err)
{
	*chain = NULL;
	*err = NULL;
	if (!ix || !cudie || dwarf_cu_getdwarf(cudie->cu) != ix->dw)
		return 0;
	const struct unit_index *u = unit_index(ix, cudie, err);
	Dwarf_Die path[MAX_DEPTH];
	if (!u || !subprogram_at(ix, u, pc, &path[0]))
		return 0;
	int n = 1;
	unsigned budget = MAX_SCOPE_DIES;
	while (n < MAX_DEPTH && child_at(&path[n - 1], pc, &path[n], &budget))
		n++;
	Dwarf_Die *out = malloc((size_t)n * sizeof(*out));
	if (!out) {
		*err = &cq_error_nomem;
		return 0;
	}
	for (int i = 0; i < n; i++) /* innermost first */
		out[i] = path[n - 1 - i];
	*chain = out;
	return n;
}
