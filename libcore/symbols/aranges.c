/*
 * aranges.c - address to compilation unit from .debug_aranges (see
 * aranges.h).
 *
 * A set (DWARF 2-5, section 6.1.2): unit_length (4 bytes, or 0xffffffff and
 * 8 for 64-bit DWARF), version (2), debug_info_offset (4 or 8),
 * address_size (1), segment_selector_size (1), padding up to a multiple of
 * twice the address size from the set's start, then (address, length)
 * pairs up to a (0, 0) pair or the set's end.
 */
#include "libcore/symbols/aranges.h"

#include <stdlib.h>
#include <string.h>

#include "libcore/base/wire.h"

struct growing {
	struct cq_arange *v;
	size_t n, cap, max;
	bool nomem;
};

static void append(struct growing *g, uint64_t start, uint64_t length, uint64_t unit)
{
	uint64_t end = start + length < start ? UINT64_MAX : start + length;
	if (g->nomem || end <= start || g->n == g->max)
		return; /* empty (or clamped empty at the top of the address space) */
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 256;
		if (cap > g->max)
			cap = g->max;
		struct cq_arange *v = realloc(g->v, cap * sizeof(*v));
		if (!v) {
			g->nomem = true;
			return;
		}
		g->v = v;
		g->cap = cap;
	}
	g->v[g->n++] = (struct cq_arange){.start = start, .end = end, .unit = unit};
}

static uint64_t get_address(struct cq_wire_reader *r, uint8_t size)
{
	return size == 8 ? cq_wire_get_u64(r) : cq_wire_get_u32(r);
}

/* Reads the pairs of one set (the reader bounded to it); false when its header is damaged. */
static bool read_set(struct cq_wire_reader *set, const uint8_t *set_start, bool wide,
                     struct growing *g)
{
	uint16_t version = cq_wire_get_u8(set);
	version |= (uint16_t)(cq_wire_get_u8(set) << 8);
	uint64_t unit = wide ? cq_wire_get_u64(set) : cq_wire_get_u32(set);
	uint8_t address_size = cq_wire_get_u8(set), segment_size = cq_wire_get_u8(set);
	if (set->failed)
		return false;
	if (version != 2 || (address_size != 4 && address_size != 8) || segment_size != 0)
		return true; /* not one this table knows: skipped */
	size_t tuple = 2u * address_size;
	size_t into = (size_t)(set->p - set_start) % tuple;
	for (size_t pad = into ? tuple - into : 0; pad > 0; pad--)
		cq_wire_get_u8(set);
	while (!set->failed && (size_t)(set->end - set->p) >= tuple) {
		uint64_t start = get_address(set, address_size);
		uint64_t length = get_address(set, address_size);
		if (start == 0 && length == 0)
			break;
		append(g, start, length, unit);
	}
	return true;
}

static int by_start(const void *a, const void *b)
{
	const struct cq_arange *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->end > y->end) - (x->end < y->end);
}

struct cq_error *cq_aranges_parse(const uint8_t *data, size_t len, struct cq_aranges *out)
{
	*out = (struct cq_aranges){0};
	struct growing g = {.max = len / 16};
	struct cq_wire_reader r = {.p = data, .end = data + len};
	while (data && (size_t)(r.end - r.p) >= 4) {
		const uint8_t *set_start = r.p;
		uint64_t length = cq_wire_get_u32(&r);
		bool wide = length == 0xffffffffu;
		if (wide)
			length = cq_wire_get_u64(&r);
		else if (length >= 0xfffffff0u)
			break; /* reserved */
		if (r.failed || length > (uint64_t)(r.end - r.p))
			break;
		struct cq_wire_reader set = {.p = r.p, .end = r.p + length};
		r.p = set.end;
		if (!read_set(&set, set_start, wide, &g))
			break;
	}
	if (g.nomem) {
		free(g.v);
		return &cq_error_nomem;
	}
	if (g.n)
		qsort(g.v, g.n, sizeof(*g.v), by_start);
	out->ranges = g.v;
	out->n = g.n;
	return NULL;
}

bool cq_aranges_find(const struct cq_aranges *a, uint64_t addr, uint64_t *unit)
{
	size_t lo = 0, hi = a->n; /* the first range starting after addr is at hi */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (a->ranges[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= a->ranges[lo - 1].end)
		return false;
	*unit = a->ranges[lo - 1].unit;
	return true;
}

void cq_aranges_free(struct cq_aranges *a)
{
	free(a->ranges);
	*a = (struct cq_aranges){0};
}
