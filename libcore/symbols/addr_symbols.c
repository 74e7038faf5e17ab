/*
 * addr_symbols.c - an address-sorted index of a module's symbol table that
 * answers as dwfl_module_addrinfo does (see addr_symbols.h).
 *
 * libdwfl 0.188's __libdwfl_addrsym (libdwfl/dwfl_module_addrsym.c) looks at
 * the symbols that pass its filter (a name, a section, not a section, file
 * or TLS symbol) and start at or below the address, in table order: first
 * the global part of the table, then, only if no symbol with a size holds
 * the address and no sizeless global symbol sits exactly at it, the local
 * part.  Among the sized symbols that hold the address, one replaces the
 * one chosen so far when it starts later or binds more strongly (global >
 * weak > local > other), or starts at the same address and is smaller
 * without binding more weakly.  Failing those, it takes a sizeless symbol
 * in the address's section that no other symbol below the address reaches
 * past.
 *
 * The index answers the first two cases exactly, and answers "none" when no
 * symbol holds the address and no sizeless symbol could be taken (none
 * starts between the highest end of the global symbols below the address
 * and the address).  Anything else, and any address that would need more
 * than MAX_SCAN entries looked at, goes to dwfl_module_addrinfo.
 *
 * One deliberate difference: a Go program's "PKG(SECTION)" symbols (the Go
 * linker's names for the sections of cgo's C objects) answer with the name
 * of the function symbol at the same address (name_host_sections).
 */
#include "libcore/symbols/addr_symbols.h"

#include <elf.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/arch.h"

#define MAX_SCAN       4096u
#define MAX_CANDIDATES 64u

struct entry {
	uint64_t value, size;
	const char *name;
	int index;   /* in libdwfl's table: ties go to the lower */
	int binding; /* libdwfl's preference: higher is better */
	bool global; /* in the part of the table searched first */
};

struct cq_addr_symbols {
	struct entry *e;      /* sorted by value; equal values in table order */
	uint64_t *max_end;    /* max_end[i]: the highest end among e[0..i] */
	uint64_t *global_end; /* global_end[i]: the same among the global ones */
	size_t n;
};

static int binding_value(unsigned char info)
{
	switch (GELF_ST_BIND(info)) {
	case STB_GLOBAL:
		return 3;
	case STB_WEAK:
		return 2;
	case STB_LOCAL:
		return 1;
	default:
		return 0;
	}
}

/*
 * Only where libdwfl's value of a function symbol is its st_value plus the
 * bias: not for function descriptors (ppc64), which it also matches by
 * their resolved address.
 */
static bool plain_values(Dwfl_Module *dm)
{
	Dwarf_Addr bias;
	Elf *elf = dwfl_module_getelf(dm, &bias);
	GElf_Ehdr eh;
	return elf && gelf_getehdr(elf, &eh) && eh.e_type != ET_REL &&
	       cq_arch_from_machine(eh.e_machine) != NULL; /* the arch table: no descriptors */
}

/* Stable sort by value (LSD radix, a byte a pass; passes where all bytes agree are skipped). */
static bool sort_by_value(struct entry *e, size_t n)
{
	struct entry *tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return false;
	struct entry *from = e, *to = tmp;
	for (unsigned shift = 0; shift < 64; shift += 8) {
		size_t count[257] = {0};
		for (size_t i = 0; i < n; i++)
			count[((from[i].value >> shift) & 0xff) + 1]++;
		if (count[((from[0].value >> shift) & 0xff) + 1] == n)
			continue;
		for (size_t b = 1; b < 257; b++)
			count[b] += count[b - 1];
		for (size_t i = 0; i < n; i++)
			to[count[(from[i].value >> shift) & 0xff]++] = from[i];
		struct entry *swap = from;
		from = to;
		to = swap;
	}
	if (from != e)
		memcpy(e, from, n * sizeof(*e));
	free(tmp);
	return true;
}

/*
 * Whether name is the Go linker's name for a section of a C object it linked
 * in itself (cgo's code, internal linking): "PKG(SECTION)", such as
 * "runtime/cgo(.text)" (cmd/link/internal/loadelf names them so).  Such a
 * symbol has the size of the function it starts with, whose own symbol
 * (crosscall_amd64, from assembly) may have none.
 */
static bool host_section_name(const char *name)
{
	size_t n = strlen(name);
	const char *open = strstr(name, "(.");
	return n > 3 && name[n - 1] == ')' && open && open > name && !strchr(open + 2, '(');
}

/*
 * A Go host-object section symbol takes the name of a function symbol at
 * the same address (e sorted by value): the frame is named by the C
 * function (crosscall_amd64, threadentry), not by the object's section.
 */
static void name_host_sections(struct entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!host_section_name(e[i].name))
			continue;
		size_t lo = i, hi = i;
		while (lo > 0 && e[lo - 1].value == e[i].value)
			lo--;
		while (hi + 1 < n && e[hi + 1].value == e[i].value)
			hi++;
		for (size_t k = lo; k <= hi; k++) {
			if (!host_section_name(e[k].name)) {
				e[i].name = e[k].name;
				break;
			}
		}
	}
}

struct cq_error *cq_addr_symbols_build(Dwfl_Module *dm, struct cq_addr_symbols **out)
{
	*out = NULL;
	int nsyms = dwfl_module_getsymtab(dm);
	int first_global = nsyms > 0 ? dwfl_module_getsymtab_first_global(dm) : -1;
	if (nsyms <= 1 || first_global < 0 || !plain_values(dm))
		return NULL;
	int global_from = first_global > 1 ? first_global : 1;
	struct cq_addr_symbols *t = calloc(1, sizeof(*t));
	if (!t || !(t->e = calloc((size_t)nsyms, sizeof(*t->e)))) {
		free(t);
		return &cq_error_nomem;
	}
	for (int i = 1; i < nsyms; i++) {
		GElf_Sym sym;
		GElf_Addr value;
		const char *name = dwfl_module_getsym_info(dm, i, &sym, &value, NULL, NULL, NULL);
		int type = name ? GELF_ST_TYPE(sym.st_info) : STT_SECTION;
		if (!name || !name[0] || sym.st_shndx == SHN_UNDEF || type == STT_SECTION ||
		    type == STT_FILE || type == STT_TLS)
			continue;
		t->e[t->n++] = (struct entry){.value = value,
		                              .size = sym.st_size,
		                              .name = name,
		                              .index = i,
		                              .binding = binding_value(sym.st_info),
		                              .global = i >= global_from};
	}
	if (t->n == 0) {
		cq_addr_symbols_free(t);
		return NULL;
	}
	if (!(t->max_end = malloc(t->n * sizeof(*t->max_end))) ||
	    !(t->global_end = malloc(t->n * sizeof(*t->global_end))) ||
	    !sort_by_value(t->e, t->n)) {
		cq_addr_symbols_free(t);
		return &cq_error_nomem;
	}
	name_host_sections(t->e, t->n);
	uint64_t high = 0, global_high = 0;
	for (size_t i = 0; i < t->n; i++) {
		uint64_t end = t->e[i].value + t->e[i].size;
		if (end < t->e[i].value)
			end = UINT64_MAX;
		high = end > high ? end : high;
		if (t->e[i].global && end > global_high)
			global_high = end;
		t->max_end[i] = high;
		t->global_end[i] = global_high;
	}
	*out = t;
	return NULL;
}

static int by_index(const void *a, const void *b)
{
	const struct entry *x = *(const struct entry *const *)a,
	                   *y = *(const struct entry *const *)b;
	return (x->index > y->index) - (x->index < y->index);
}

/* libdwfl's choice among sized symbols that all hold the address (put in table order here). */
static const struct entry *fold(const struct entry **cand, size_t n)
{
	qsort(cand, n, sizeof(*cand), by_index);
	const struct entry *best = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct entry *c = cand[i];
		if (!best || best->value < c->value || best->binding < c->binding)
			best = c;
		else if (best->value == c->value &&
		         ((best->size > c->size && best->binding <= c->binding) ||
		          (best->size >= c->size && best->binding < c->binding)))
			best = c;
	}
	return best;
}

enum answer { ANSWER_SYMBOL, ANSWER_NONE, ASK_LIBDWFL };

static enum answer pick(const struct cq_addr_symbols *t, uint64_t addr, const struct entry **out)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->e[mid].value <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t below = lo; /* e[0..below) start at or below addr */
	const struct entry *global[MAX_CANDIDATES], *local[MAX_CANDIDATES];
	size_t nglobal = 0, nlocal = 0, scanned = 0;
	for (size_t i = below; i-- > 0 && t->max_end[i] > addr;) {
		const struct entry *e = &t->e[i];
		if (++scanned > MAX_SCAN)
			return ASK_LIBDWFL;
		if (addr - e->value >= e->size)
			continue; /* sizeless, or ends at or below addr */
		if ((e->global ? nglobal : nlocal) == MAX_CANDIDATES)
			return ASK_LIBDWFL;
		if (e->global)
			global[nglobal++] = e;
		else
			local[nlocal++] = e;
	}
	if (nglobal) {
		*out = fold(global, nglobal);
		return ANSWER_SYMBOL;
	}
	/* A sizeless global symbol at addr itself may stop the search of the locals. */
	for (size_t i = below; i-- > 0 && t->e[i].value == addr;)
		if (t->e[i].size == 0 && t->e[i].global)
			return ASK_LIBDWFL;
	if (nlocal) {
		*out = fold(local, nlocal);
		return ANSWER_SYMBOL;
	}
	/* No symbol holds addr: a sizeless one would have to start at or past every global's end.
	 */
	uint64_t floor = below ? t->global_end[below - 1] : 0;
	scanned = 0;
	for (size_t i = below; i-- > 0 && t->e[i].value >= floor;) {
		if (++scanned > MAX_SCAN || t->e[i].size == 0)
			return ASK_LIBDWFL;
	}
	return ANSWER_NONE;
}

const char *cq_addr_symbols_find(const struct cq_addr_symbols *t, Dwfl_Module *dm, GElf_Addr addr,
                                 GElf_Off *offset)
{
	const struct entry *e = NULL;
	enum answer a = t ? pick(t, addr, &e) : ASK_LIBDWFL;
	if (a == ANSWER_SYMBOL) {
		*offset = addr - e->value;
		return e->name;
	}
	if (a == ANSWER_NONE) {
		*offset = 0;
		return NULL;
	}
	GElf_Sym sym;
	return dwfl_module_addrinfo(dm, addr, offset, &sym, NULL, NULL, NULL);
}

void cq_addr_symbols_free(struct cq_addr_symbols *t)
{
	if (!t)
		return;
	free(t->e);
	free(t->max_end);
	free(t->global_end);
	free(t);
}
