/*
 * rust_index.c - read the Rust async types of a process from DWARF (see
 * rust_index.h).
 *
 * The walk visits, in each Rust compile unit, the DIEs directly under the
 * unit and under namespaces only: that is where rustc puts vtable variables,
 * types and functions.  It never descends into structs or subprograms, so
 * its cost is about one pass of libdw's DIE reader over the unit.  What it
 * keeps is small: namespace nodes (name + parent), one (DIE offset,
 * namespace) pair per named type, the vtables and the poll functions.
 *
 * The conversion to the model is a worklist from the vtables' types: a type
 * gets its slot (and index) when first referenced, and is filled when taken
 * off the list, so nesting depth costs no stack.  A struct is
 *   - a state machine when it has a variant part whose discriminant is the
 *     member `__state`;
 *   - a wrapper when following single non-empty members and pointers leads,
 *     within CQ_RUST_MAX_HOPS pointer hops, to a state machine or to a
 *     {pointer, vtable} fat pointer to `dyn ...` (Pin, Box, GenFuture.__0,
 *     &mut F, Pin<Box<dyn Future>>);
 *   - otherwise a leaf, named after itself, or after what its pointers lead
 *     to (Pin<&mut Parked> is reported as Parked).
 */
#include "unwind/async/rust_index.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcore/base/clock.h"
#include "libcore/model/core.h"
#include "libcore/symbols/debuginfo.h"
#include "libcore/model/module.h"
#include "libcore/base/regular_file.h"

#define VTABLE_SUFFIX     " as core::future::future::Future>::{vtable}"
#define MAX_NS_DEPTH      64
#define MAX_PATH_LEN      4096
#define MAX_PEEL          8
#define MAX_WRAPPER_STEPS 32
#define MAX_MEMBERS       4096
#define MAX_VARIANTS      65536
#define MAX_TYPES         (1u << 20)
#define MAX_SECTIONS      65536
#define MAX_COMMENT_BYTES (64u * 1024u)

/* ---- growable arrays ------------------------------------------------------- */

static bool grow(void **items, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return true;
	size_t ncap = *cap ? *cap * 2 : 64;
	while (ncap < need)
		ncap *= 2;
	void *p = realloc(*items, ncap * size);
	if (!p)
		return false;
	*items = p;
	*cap = ncap;
	return true;
}

/* ---- what the walk of one module collects ---------------------------------- */

struct ns_node {
	int32_t parent; /* -1 at the unit */
	const char *name;
};

struct named_type {
	Dwarf_Off off;
	int32_t ns;
};

struct walk {
	Dwarf *dwarf;
	uint64_t bias;
	struct ns_node *ns;
	size_t nns, cap_ns;
	struct named_type *named;
	size_t nnamed, cap_named;
	struct {
		uint64_t addr;
		Dwarf_Off type; /* the vtable's containing type */
	} * vt;
	size_t nvt, cap_vt;
};

/* ---- what the index is built into ------------------------------------------- */

struct type_slot {
	Dwarf_Off off; /* the DIE, in the module being converted */
	int32_t index;
};

struct builder {
	struct cq_rust_type *types;
	size_t ntypes, cap_types;
	struct cq_rust_vtable *vtables;
	size_t nvtables, cap_vtables;
	struct cq_rust_resume *resumes;
	size_t nresumes, cap_resumes;
	/* per module: DIE offset -> type index, open addressing */
	struct type_slot *slots;
	size_t cap_slots, used_slots;
	unsigned origin; /* index of the module being converted */
	Dwarf_Off *offs; /* by type index: its DIE in the module being converted */
	size_t cap_offs;
	int32_t *work; /* types to fill */
	size_t nwork, cap_work;
};

/* True when the ELF's .comment says rustc built (part of) it. */
static bool built_by_rustc(Elf *elf)
{
	size_t shstrndx;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return false;
	Elf_Scn *scn = NULL;
	for (size_t i = 0; i < MAX_SECTIONS && (scn = elf_nextscn(elf, scn)) != NULL; i++) {
		GElf_Shdr shdr;
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_PROGBITS)
			continue;
		const char *name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (!name || strcmp(name, ".comment") != 0)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf)
			return false;
		size_t len = data->d_size < MAX_COMMENT_BYTES ? data->d_size : MAX_COMMENT_BYTES;
		return memmem(data->d_buf, len, "rustc version", 13) != NULL;
	}
	return false;
}

/* ---- the walk ---------------------------------------------------------------- */

static bool ends_with(const char *s, const char *suffix)
{
	size_t ls = strlen(s), lx = strlen(suffix);
	return ls >= lx && memcmp(s + ls - lx, suffix, lx) == 0;
}

/* The resume-function kinds whose code range we keep (not plain closures). */
static bool is_resume_name(const char *name)
{
	static const char *const kinds[] = {"{async_fn#", "{async_block#", "{async_closure#",
	                                    "{coroutine#", "{generator#"};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strncmp(name, kinds[i], strlen(kinds[i])) == 0)
			return true;
	return false;
}

/* "a::b::" + name into buf (path of namespace node ns). */
static const char *ns_path(const struct walk *w, int32_t ns, const char *name, char *buf,
                           size_t cap)
{
	const char *parts[MAX_NS_DEPTH];
	size_t n = 0;
	for (int32_t i = ns; i >= 0 && n < MAX_NS_DEPTH; i = w->ns[i].parent)
		parts[n++] = w->ns[i].name;
	size_t len = 0;
	buf[0] = '\0';
	while (n-- > 0 && len < cap)
		len += (size_t)snprintf(buf + len, cap - len, "%s::", parts[n]);
	if (len < cap)
		snprintf(buf + len, cap - len, "%s", name);
	return buf;
}

static void add_vtable(struct walk *w, Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	Dwarf_Op *ops;
	size_t nops;
	if (!dwarf_attr(die, DW_AT_location, &attr) || dwarf_getlocation(&attr, &ops, &nops) != 0 ||
	    nops != 1 || ops[0].atom != DW_OP_addr)
		return;
	Dwarf_Die vtype, concrete;
	if (!dwarf_formref_die(dwarf_attr(die, DW_AT_type, &attr), &vtype) ||
	    !dwarf_formref_die(dwarf_attr(&vtype, DW_AT_containing_type, &attr), &concrete))
		return;
	if (!grow((void **)&w->vt, &w->cap_vt, w->nvt + 1, sizeof(*w->vt)))
		return;
	w->vt[w->nvt].addr = ops[0].number + w->bias;
	w->vt[w->nvt].type = dwarf_dieoffset(&concrete);
	w->nvt++;
}

static void add_resume(struct builder *b, struct walk *w, Dwarf_Die *die, int32_t ns,
                       const char *name)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	char path[MAX_PATH_LEN];
	ns_path(w, ns, name, path, sizeof(path));
	/* Drop generic arguments after the closing brace: "{async_fn#0}<T>". */
	char *brace = strrchr(path, '}');
	if (brace)
		brace[1] = '\0';
	for (int i = 0; i < 16 && (off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0; i++) {
		if (hi <= lo || !grow((void **)&b->resumes, &b->cap_resumes, b->nresumes + 1,
		                      sizeof(*b->resumes)))
			continue;
		char *copy = strdup(path);
		if (!copy)
			return;
		b->resumes[b->nresumes++] =
		    (struct cq_rust_resume){.lo = lo + w->bias, .hi = hi + w->bias, .name = copy};
	}
}

/* Visits the children of parent (a unit or namespace node ns), recursing into namespaces. */
static void walk_scope(struct builder *b, struct walk *w, Dwarf_Die *parent, int32_t ns,
                       unsigned depth)
{
	Dwarf_Die child;
	if (depth >= MAX_NS_DEPTH || dwarf_child(parent, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);
		const char *name = dwarf_diename(&child);
		switch (tag) {
		case DW_TAG_namespace:
			if (!name || !grow((void **)&w->ns, &w->cap_ns, w->nns + 1, sizeof(*w->ns)))
				break;
			w->ns[w->nns] = (struct ns_node){.parent = ns, .name = name};
			w->nns++;
			walk_scope(b, w, &child, (int32_t)(w->nns - 1), depth + 1);
			break;
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
		case DW_TAG_enumeration_type:
			if (name && ns >= 0 &&
			    grow((void **)&w->named, &w->cap_named, w->nnamed + 1,
			         sizeof(*w->named)))
				w->named[w->nnamed++] =
				    (struct named_type){.off = dwarf_dieoffset(&child), .ns = ns};
			break;
		case DW_TAG_variable:
			if (name && ends_with(name, VTABLE_SUFFIX))
				add_vtable(w, &child);
			break;
		case DW_TAG_subprogram:
			if (name && name[0] == '{' && is_resume_name(name))
				add_resume(b, w, &child, ns, name);
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
}

static int32_t named_ns(const struct walk *w, Dwarf_Off off)
{
	size_t lo = 0, hi = w->nnamed;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (w->named[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < w->nnamed && w->named[lo].off == off ? w->named[lo].ns : -1;
}

/* ---- DIE helpers ------------------------------------------------------------- */

static bool die_type(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Attribute attr;
	return dwarf_formref_die(dwarf_attr(die, DW_AT_type, &attr), out) != NULL;
}

/* Follows typedef / const / volatile to the real type. */
static bool peel(Dwarf_Die *die)
{
	for (int i = 0; i < MAX_PEEL; i++) {
		int tag = dwarf_tag(die);
		if (tag != DW_TAG_typedef && tag != DW_TAG_const_type &&
		    tag != DW_TAG_volatile_type)
			return true;
		if (!die_type(die, die))
			return false;
	}
	return false;
}

static bool member_offset(Dwarf_Die *member, uint64_t *out)
{
	Dwarf_Attribute attr;
	Dwarf_Word v;
	if (!dwarf_attr(member, DW_AT_data_member_location, &attr))
		return false;
	if (dwarf_formudata(&attr, &v) != 0)
		return false;
	*out = v;
	return true;
}

static uint64_t type_size(Dwarf_Die *type)
{
	Dwarf_Word size;
	Dwarf_Die t = *type;
	if (!peel(&t))
		return 0;
	return dwarf_aggregate_size(&t, &size) == 0 ? size : 0;
}

/* The variant part of a state machine struct (discriminant `__state`), if any. */
static bool state_variant_part(Dwarf_Die *st, Dwarf_Die *part, Dwarf_Die *state)
{
	Dwarf_Die child;
	if (dwarf_tag(st) != DW_TAG_structure_type || dwarf_child(st, &child) != 0)
		return false;
	do {
		if (dwarf_tag(&child) != DW_TAG_variant_part)
			continue;
		Dwarf_Attribute attr;
		if (!dwarf_formref_die(dwarf_attr(&child, DW_AT_discr, &attr), state))
			return false;
		const char *n = dwarf_diename(state);
		if (!n || strcmp(n, "__state") != 0)
			return false;
		*part = child;
		return true;
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

/* A struct {pointer: *dyn ..., vtable: &[usize; N]}: offsets of both. */
static bool is_dyn_fat_pointer(Dwarf_Die *st, uint64_t *data_off, uint64_t *vt_off)
{
	Dwarf_Die child;
	bool has_data = false, has_vt = false;
	if (dwarf_tag(st) != DW_TAG_structure_type || dwarf_child(st, &child) != 0)
		return false;
	int n = 0;
	do {
		if (dwarf_tag(&child) != DW_TAG_member || ++n > 2)
			continue;
		const char *name = dwarf_diename(&child);
		Dwarf_Die t;
		if (!name || !die_type(&child, &t))
			return false;
		if (strcmp(name, "pointer") == 0 && dwarf_tag(&t) == DW_TAG_pointer_type) {
			Dwarf_Die pointee;
			const char *pn;
			if (!die_type(&t, &pointee) || !(pn = dwarf_diename(&pointee)) ||
			    strncmp(pn, "dyn ", 4) != 0)
				return false;
			has_data = member_offset(&child, data_off);
		} else if (strcmp(name, "vtable") == 0) {
			has_vt = member_offset(&child, vt_off);
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return n == 2 && has_data && has_vt;
}

/* The only member of st with a non-zero size (its offset and type). */
static bool single_member(Dwarf_Die *st, uint64_t *off, Dwarf_Die *type)
{
	Dwarf_Die child;
	bool found = false;
	if (dwarf_child(st, &child) != 0)
		return false;
	int n = 0;
	do {
		if (dwarf_tag(&child) == DW_TAG_variant_part)
			return false;
		if (dwarf_tag(&child) != DW_TAG_member || ++n > MAX_MEMBERS)
			continue;
		Dwarf_Die t;
		uint64_t o;
		if (!die_type(&child, &t) || !member_offset(&child, &o))
			return false;
		if (type_size(&t) == 0)
			continue;
		if (found)
			return false;
		found = true;
		*off = o;
		*type = t;
	} while (dwarf_siblingof(&child, &child) == 0);
	return found;
}

/* ---- conversion ---------------------------------------------------------------- */

static uint64_t slot_hash(Dwarf_Off off)
{
	uint64_t h = off * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

static struct type_slot *slot_find(struct builder *b, Dwarf_Off off)
{
	size_t mask = b->cap_slots - 1;
	for (size_t i = slot_hash(off) & mask, n = 0; n < b->cap_slots; n++, i = (i + 1) & mask)
		if (b->slots[i].index < 0 || b->slots[i].off == off)
			return &b->slots[i];
	return NULL;
}

static bool slots_reserve(struct builder *b)
{
	if ((b->used_slots + 1) * 2 <= b->cap_slots)
		return true;
	size_t cap = b->cap_slots ? b->cap_slots * 2 : 256;
	struct type_slot *old = b->slots;
	size_t old_cap = b->cap_slots;
	b->slots = malloc(cap * sizeof(*b->slots));
	if (!b->slots) {
		b->slots = old;
		return false;
	}
	b->cap_slots = cap;
	for (size_t i = 0; i < cap; i++)
		b->slots[i].index = -1;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].index >= 0)
			*slot_find(b, old[i].off) = old[i];
	free(old);
	return true;
}

/* The type index for the DIE at off, queued for filling when new; -1 on failure. */
static int32_t type_for(struct builder *b, Dwarf_Off off)
{
	if (!slots_reserve(b))
		return -1;
	struct type_slot *s = slot_find(b, off);
	if (!s)
		return -1;
	if (s->index >= 0)
		return s->index;
	if (b->ntypes >= MAX_TYPES ||
	    !grow((void **)&b->types, &b->cap_types, b->ntypes + 1, sizeof(*b->types)) ||
	    !grow((void **)&b->work, &b->cap_work, b->nwork + 1, sizeof(*b->work)) ||
	    !grow((void **)&b->offs, &b->cap_offs, b->ntypes + 1, sizeof(*b->offs)))
		return -1;
	b->offs[b->ntypes] = off;
	int32_t index = (int32_t)b->ntypes++;
	b->types[index] =
	    (struct cq_rust_type){.kind = CQ_RUST_LEAF, .target = -1, .origin = b->origin};
	*s = (struct type_slot){.off = off, .index = index};
	b->used_slots++;
	b->work[b->nwork++] = index;
	return index;
}

/* The type's full name: its namespace path + DW_AT_name, else DW_AT_name. */
static char *type_name(const struct walk *w, Dwarf_Die *die)
{
	const char *name = dwarf_diename(die);
	if (!name)
		return strdup("?");
	int32_t ns = named_ns(w, dwarf_dieoffset(die));
	if (ns < 0)
		return strdup(name);
	char buf[MAX_PATH_LEN];
	return strdup(ns_path(w, ns, name, buf, sizeof(buf)));
}

static void fill_state_machine(struct builder *b, const struct walk *w, int32_t index,
                               Dwarf_Die *die, Dwarf_Die *part, Dwarf_Die *state)
{
	struct cq_rust_type *ty = &b->types[index];
	ty->kind = CQ_RUST_STATE_MACHINE;
	Dwarf_Die st;
	if (!member_offset(state, &ty->state_offset) || !die_type(state, &st))
		goto bad;
	uint64_t ssize = type_size(&st);
	if (ssize != 1 && ssize != 2 && ssize != 4 && ssize != 8)
		goto bad;
	ty->state_size = (unsigned)ssize;
	char resume[MAX_PATH_LEN];
	const char *r = cq_rust_resume_function(ty->name, resume, sizeof(resume));
	ty->resume_name = r ? strdup(r) : NULL;

	struct cq_rust_variant *vars = NULL;
	size_t nvars = 0, cap = 0;
	Dwarf_Die v;
	if (dwarf_child(part, &v) != 0)
		goto bad;
	do {
		Dwarf_Attribute attr;
		Dwarf_Word discr;
		Dwarf_Die member, vtype;
		if (dwarf_tag(&v) != DW_TAG_variant ||
		    dwarf_formudata(dwarf_attr(&v, DW_AT_discr_value, &attr), &discr) != 0 ||
		    dwarf_child(&v, &member) != 0 || dwarf_tag(&member) != DW_TAG_member ||
		    !die_type(&member, &vtype))
			continue;
		if (nvars >= MAX_VARIANTS || !grow((void **)&vars, &cap, nvars + 1, sizeof(*vars)))
			break;
		struct cq_rust_variant *var = &vars[nvars++];
		uint64_t moff = 0;
		member_offset(&member, &moff);
		int line = 0;
		const char *file = dwarf_decl_file(&member);
		dwarf_decl_line(&member, &line);
		const char *vname = dwarf_diename(&vtype);
		*var = (struct cq_rust_variant){.discr = discr,
		                                .name = strdup(vname ? vname : "?"),
		                                .file = file ? strdup(file) : NULL,
		                                .line = line,
		                                .awaitee = -1};
		Dwarf_Die f;
		if (dwarf_child(&vtype, &f) != 0)
			continue;
		do {
			const char *fname = dwarf_diename(&f);
			Dwarf_Die at;
			uint64_t aoff;
			if (dwarf_tag(&f) == DW_TAG_member && fname &&
			    strcmp(fname, "__awaitee") == 0 && die_type(&f, &at) &&
			    member_offset(&f, &aoff) && peel(&at)) {
				var->awaitee_offset = moff + aoff;
				var->awaitee = type_for(b, dwarf_dieoffset(&at));
				ty = &b->types[index]; /* type_for may move the array */
				break;
			}
		} while (dwarf_siblingof(&f, &f) == 0);
	} while (dwarf_siblingof(&v, &v) == 0);
	ty->variants = vars;
	ty->nvariants = nvars;
	(void)die;
	(void)w;
	return;
bad:
	ty->kind = CQ_RUST_LEAF;
}

/*
 * Fills a non-state-machine type: a wrapper if its members and pointers
 * lead to a state machine or a dyn fat pointer, else a leaf.
 */
static void fill_other(struct builder *b, const struct walk *w, int32_t index, Dwarf_Die *start)
{
	struct cq_rust_hop hops[CQ_RUST_MAX_HOPS];
	unsigned nhops = 0;
	uint64_t pending = 0;
	Dwarf_Die die = *start, last_pointee;
	bool derefed = false;
	for (int step = 0; step < MAX_WRAPPER_STEPS; step++) {
		if (!peel(&die))
			break;
		int tag = dwarf_tag(&die);
		if (tag == DW_TAG_pointer_type || tag == DW_TAG_reference_type ||
		    tag == DW_TAG_rvalue_reference_type) {
			if (nhops >= CQ_RUST_MAX_HOPS || !die_type(&die, &die))
				break;
			hops[nhops++] = (struct cq_rust_hop){.offset = pending, .deref = true};
			pending = 0;
			derefed = true;
			last_pointee = die;
			continue;
		}
		if (tag != DW_TAG_structure_type)
			break;
		Dwarf_Die part, state;
		uint64_t data_off = 0, vt_off = 0, off;
		bool sm = step > 0 && state_variant_part(&die, &part, &state);
		bool fat = !sm && is_dyn_fat_pointer(&die, &data_off, &vt_off);
		if (sm || fat) {
			if (nhops >= CQ_RUST_MAX_HOPS)
				break;
			hops[nhops++] = (struct cq_rust_hop){.offset = pending, .deref = false};
			int32_t target = sm ? type_for(b, dwarf_dieoffset(&die)) : -1;
			if (sm && target < 0)
				break;
			struct cq_rust_type *ty = &b->types[index];
			ty->kind = CQ_RUST_WRAPPER;
			memcpy(ty->hops, hops, sizeof(hops));
			ty->nhops = nhops;
			ty->is_dyn = fat;
			ty->dyn_data_offset = fat ? data_off : 0;
			ty->dyn_vtable_offset = fat ? vt_off : 0;
			ty->target = target;
			return;
		}
		if (!single_member(&die, &off, &die))
			break;
		pending += off;
	}
	/* A leaf: named after what its pointers lead to, if they lead anywhere. */
	if (derefed && peel(&last_pointee) && dwarf_diename(&last_pointee)) {
		free((char *)b->types[index].name);
		b->types[index].name = type_name(w, &last_pointee);
	}
}

static void fill_type(struct builder *b, const struct walk *w, int32_t index, Dwarf_Off off)
{
	Dwarf_Die die;
	if (!dwarf_offdie(w->dwarf, off, &die))
		return;
	b->types[index].name = type_name(w, &die);
	b->types[index].size = type_size(&die);
	Dwarf_Die part, state;
	if (state_variant_part(&die, &part, &state))
		fill_state_machine(b, w, index, &die, &part, &state);
	else
		fill_other(b, w, index, &die);
}

/* ---- one module ---------------------------------------------------------------- */

static void index_units(struct builder *b, struct walk *w)
{
	Dwarf_Off off = 0, next;
	size_t hsize;
	for (size_t n = 0;
	     n < (1u << 24) && dwarf_nextcu(w->dwarf, off, &next, &hsize, NULL, NULL, NULL) == 0;
	     n++, off = next) {
		Dwarf_Die cu;
		if (!dwarf_offdie(w->dwarf, off + hsize, &cu))
			continue;
		Dwarf_Attribute attr;
		Dwarf_Word lang;
		if (dwarf_formudata(dwarf_attr(&cu, DW_AT_language, &attr), &lang) != 0 ||
		    lang != DW_LANG_Rust)
			continue;
		walk_scope(b, w, &cu, -1, 0);
	}
}

static int cmp_vtable(const void *a, const void *b)
{
	const struct cq_rust_vtable *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int cmp_resume(const void *a, const void *b)
{
	const struct cq_rust_resume *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void index_module(struct builder *b, struct cq_module *mod, const char *const *debug_dirs)
{
	char *path = cq_debuginfo_find(mod, debug_dirs);
	if (!path)
		return;
	int fd = -1;
	Elf *elf = NULL;
	if (mod->file_path && strcmp(path, mod->file_path) == 0) {
		elf = mod->elf;
	} else if ((fd = cq_open_regular(path)) >= 0) {
		elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	}
	free(path);
	Dwarf *dwarf = elf ? dwarf_begin_elf(elf, DWARF_C_READ, NULL) : NULL;
	if (dwarf) {
		struct walk w = {.dwarf = dwarf, .bias = mod->bias};
		index_units(b, &w);
		/* Per module: DIE offsets are only unique within one Dwarf. */
		for (size_t i = 0; i < b->cap_slots; i++)
			b->slots[i].index = -1;
		b->used_slots = 0;
		for (size_t i = 0; i < w.nvt; i++) {
			int32_t t = type_for(b, w.vt[i].type);
			if (t < 0 || !grow((void **)&b->vtables, &b->cap_vtables, b->nvtables + 1,
			                   sizeof(*b->vtables)))
				continue;
			b->vtables[b->nvtables++] =
			    (struct cq_rust_vtable){.addr = w.vt[i].addr, .type = t};
		}
		while (b->nwork > 0) {
			int32_t index = b->work[--b->nwork];
			fill_type(b, &w, index, b->offs[index]);
		}
		free(w.ns);
		free(w.named);
		free(w.vt);
		dwarf_end(dwarf);
	}
	if (elf && elf != mod->elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
}

struct cq_error *cq_rust_index_core(struct cq_core *core, const char *const *debug_dirs,
                                    struct cq_rust_index **out)
{
	*out = NULL;
	struct cq_rust_index *ix = calloc(1, sizeof(*ix));
	if (!ix)
		return &cq_error_nomem;
	struct builder b = {0};
	for (size_t i = 0; i < core->nmodules; i++) {
		struct cq_module *mod = &core->modules[i];
		if (mod->status != CQ_MODULE_FOUND || mod->is_vdso || !built_by_rustc(mod->elf))
			continue;
		double t0 = cq_clock_seconds();
		b.origin = (unsigned)i;
		index_module(&b, mod, debug_dirs);
		ix->index_ms += (cq_clock_seconds() - t0) * 1e3;
		ix->modules_indexed++;
	}
	if (b.vtables)
		qsort(b.vtables, b.nvtables, sizeof(*b.vtables), cmp_vtable);
	if (b.resumes)
		qsort(b.resumes, b.nresumes, sizeof(*b.resumes), cmp_resume);
	free(b.slots);
	free(b.work);
	free(b.offs);
	ix->model = (struct cq_rust_model){
	    .types = b.types, .ntypes = b.ntypes, .vtables = b.vtables, .nvtables = b.nvtables};
	ix->resumes = b.resumes;
	ix->nresumes = b.nresumes;
	*out = ix;
	return NULL;
}

void cq_rust_index_free(struct cq_rust_index *ix)
{
	if (!ix)
		return;
	for (size_t i = 0; i < ix->model.ntypes; i++) {
		const struct cq_rust_type *t = &ix->model.types[i];
		for (size_t v = 0; v < t->nvariants; v++) {
			free((char *)t->variants[v].name);
			free((char *)t->variants[v].file);
		}
		free((void *)t->variants);
		free((char *)t->name);
		free((char *)t->resume_name);
	}
	free((void *)ix->model.types);
	free((void *)ix->model.vtables);
	for (size_t i = 0; i < ix->nresumes; i++)
		free(ix->resumes[i].name);
	free(ix->resumes);
	free(ix);
}

const char *cq_rust_index_resume_at(const struct cq_rust_index *ix, uint64_t pc)
{
	/* The last range starting at or below pc; ranges of one module do not nest. */
	size_t lo = 0, hi = ix->nresumes;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ix->resumes[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct cq_rust_resume *r = &ix->resumes[lo - 1];
	return pc < r->hi ? r->name : NULL;
}
