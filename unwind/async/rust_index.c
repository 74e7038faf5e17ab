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
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcore/base/bytes.h"

#include "libcore/base/elf_section.h"
#include "unwind/async/dwarf_type.h"
#include "unwind/async/runtime.h"

#define VTABLE_SUFFIX     " as core::future::future::Future>::{vtable}"
#define MAX_NS_DEPTH      64
#define MAX_PATH_LEN      4096
#define MAX_WRAPPER_STEPS 32
#define MAX_MEMBERS       4096
#define MAX_VARIANTS      65536
#define MAX_TYPES         CQ_RUST_INDEX_MAX_TYPES
#define MAX_COMMENT_BYTES (64u * 1024u)

/* ---- growable arrays ------------------------------------------------------- */

bool cq_rust_grow(void **items, size_t *cap, size_t need, size_t size)
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

#define grow cq_rust_grow

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
	struct ns_node *ns;
	size_t nns, cap_ns;
	struct named_type *named;
	size_t nnamed, cap_named;
	struct {
		uint64_t addr;
		Dwarf_Off type; /* the vtable's containing type */
	} * vt;
	size_t nvt, cap_vt;
	/* the runtimes' parts of the index, and their states for this module */
	const struct cq_rust_index_part *parts[CQ_RUST_MAX_PARTS];
	void *pstate[CQ_RUST_MAX_PARTS];
	size_t nparts;
	struct builder *b;
	struct block_on_fn {
		Dwarf_Off die;
		const char *var; /* the future's variable (a part's driver); NULL: a caller's */
	} * block_ons;
	size_t nblock_ons, cap_block_ons;
	/* functions monomorphized over a future: entry, the type parameter's DIE */
	struct {
		uint64_t lo, hi;
		Dwarf_Off type;
	} * monos;
	size_t nmonos, cap_monos;
};

/* What a runtime's part of the index sees of the walk (rust_index.h). */
struct cq_rust_walk {
	struct walk *w;
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
	Dwarf_Off *offs; /* by type index: its DIE in the module being converted */
	size_t cap_offs;
	int32_t *work; /* types to fill */
	size_t nwork, cap_work;
	struct cq_rust_block_on *block_ons;
	size_t nblock_ons, cap_block_ons;
	struct cq_rust_mono *monos;
	size_t nmonos, cap_monos;
};

bool cq_rust_index_built_by_rustc(void *elf_handle)
{
	Elf *elf = elf_handle;
	GElf_Shdr shdr;
	Elf_Scn *scn = cq_elf_section(elf, ".comment", &shdr);
	Elf_Data *data = scn && shdr.sh_type == SHT_PROGBITS ? elf_getdata(scn, NULL) : NULL;
	if (!data || !data->d_buf)
		return false;
	size_t len = data->d_size < MAX_COMMENT_BYTES ? data->d_size : MAX_COMMENT_BYTES;
	return memmem(data->d_buf, len, "rustc version", 13) != NULL;
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
	w->vt[w->nvt].addr = ops[0].number;
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
		    (struct cq_rust_resume){.lo = lo, .hi = hi, .name = copy};
	}
}

/*
 * A concrete generic function (its name has generic arguments, one of them a
 * coroutine environment) whose template type parameter is a future type: a
 * coroutine environment, or a wrapper of one (Pin<Box<...{async_block_env#0}...>>).
 * At -O2 rustc emits a method's code as a unit-level DIE whose
 * DW_AT_specification is a declaration inside its type: the name and the
 * template parameters are the declaration's (dwarf_diename follows the
 * link; the parameters are read from the declaration's children).
 */
static void add_mono(struct walk *w, Dwarf_Die *die, const char *name)
{
	Dwarf_Addr lo, hi;
	Dwarf_Die child, decl;
	Dwarf_Attribute link;
	if (!strstr(name, "_env#") || dwarf_lowpc(die, &lo) != 0)
		return;
	if (dwarf_highpc(die, &hi) != 0 || hi <= lo)
		hi = lo + 1;
	if (dwarf_formref_die(dwarf_attr(die, DW_AT_specification, &link), &decl) ||
	    dwarf_formref_die(dwarf_attr(die, DW_AT_abstract_origin, &link), &decl))
		die = &decl;
	if (dwarf_child(die, &child) != 0)
		return;
	int n = 0;
	do {
		Dwarf_Attribute attr;
		Dwarf_Die type;
		const char *tn;
		if (dwarf_tag(&child) != DW_TAG_template_type_parameter ||
		    !dwarf_formref_die(dwarf_attr(&child, DW_AT_type, &attr), &type) ||
		    !(tn = dwarf_diename(&type)) || !strstr(tn, "_env#"))
			continue;
		if (!grow((void **)&w->monos, &w->cap_monos, w->nmonos + 1, sizeof(*w->monos)))
			return;
		w->monos[w->nmonos].lo = lo;
		w->monos[w->nmonos].hi = hi;
		w->monos[w->nmonos].type = dwarf_dieoffset(&type);
		w->nmonos++;
		return; /* the first future parameter: F before T */
	} while (++n < 16 && dwarf_siblingof(&child, &child) == 0);
}

/* A part's driving block_on<F>: its future's variable, or NULL. */
static const char *block_on_var(const struct walk *w, Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *link = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!link || !dwarf_hasattr(die, DW_AT_low_pc))
		return NULL;
	for (size_t i = 0; i < w->nparts; i++) {
		const char *var =
		    w->parts[i]->block_on_var ? w->parts[i]->block_on_var(link) : NULL;
		if (var)
			return var;
	}
	return NULL;
}

/* Offers a DIE to every part: true when one took it. */
static bool to_parts(struct walk *w, Dwarf_Die *die, int tag, const char *name, int32_t ns)
{
	struct cq_rust_walk rw = {.w = w};
	bool taken = false;
	for (size_t i = 0; i < w->nparts; i++)
		if (w->pstate[i] && w->parts[i]->visit)
			taken |= w->parts[i]->visit(w->pstate[i], &rw, die, tag, name, ns);
	return taken;
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
		const char *name = dwarf_diename(&child), *var;
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
			if (name && tag == DW_TAG_structure_type)
				to_parts(w, &child, tag, name, ns);
			break;
		case DW_TAG_variable:
			if (name && ends_with(name, VTABLE_SUFFIX))
				add_vtable(w, &child);
			break;
		case DW_TAG_subprogram:
			if (name && name[0] == '{' && is_resume_name(name))
				add_resume(b, w, &child, ns, name);
			else if (name && to_parts(w, &child, tag, name, ns))
				break;
			else if (name && strncmp(name, "block_on<", 9) == 0 &&
			         (var = block_on_var(w, &child)) &&
			         grow((void **)&w->block_ons, &w->cap_block_ons, w->nblock_ons + 1,
			              sizeof(*w->block_ons)))
				w->block_ons[w->nblock_ons++] = (struct block_on_fn){
				    .die = dwarf_dieoffset(&child), .var = var};
			else if (name && strchr(name, '<')) {
				add_mono(w, &child, name);
				/* another block_on<F>: kept if a driver's F is its F */
				if (strncmp(name, "block_on<", 9) == 0 &&
				    dwarf_hasattr(&child, DW_AT_low_pc) &&
				    grow((void **)&w->block_ons, &w->cap_block_ons,
				         w->nblock_ons + 1, sizeof(*w->block_ons)))
					w->block_ons[w->nblock_ons++] = (struct block_on_fn){
					    .die = dwarf_dieoffset(&child), .var = NULL};
			}
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
		if (!name || !cq_dwt_type(&child, &t))
			return false;
		if (strcmp(name, "pointer") == 0 && dwarf_tag(&t) == DW_TAG_pointer_type) {
			Dwarf_Die pointee;
			const char *pn;
			/* "dyn Trait", or "(dyn Trait + Send)" with auto traits */
			if (!cq_dwt_type(&t, &pointee) || !(pn = dwarf_diename(&pointee)) ||
			    (strncmp(pn, "dyn ", 4) != 0 && strncmp(pn, "(dyn ", 5) != 0))
				return false;
			has_data = cq_dwt_member_offset(&child, data_off);
		} else if (strcmp(name, "vtable") == 0) {
			has_vt = cq_dwt_member_offset(&child, vt_off);
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return n == 2 && has_data && has_vt;
}

/* A pointer or reference DIE tag. */
static bool is_pointer_tag(int tag)
{
	return tag == DW_TAG_pointer_type || tag == DW_TAG_reference_type ||
	       tag == DW_TAG_rvalue_reference_type;
}

static bool single_member(Dwarf_Die *st, uint64_t *off, Dwarf_Die *type);

/*
 * Whether a value of type t is or leads to a future: a state machine or a
 * dyn fat pointer, through pointers and single-member structs (at most
 * depth steps).
 */
static bool leads_to_future(Dwarf_Die t, int depth)
{
	for (; depth > 0; depth--) {
		if (!cq_dwt_peel(&t))
			return false;
		int tag = dwarf_tag(&t);
		if (is_pointer_tag(tag)) {
			if (!cq_dwt_type(&t, &t))
				return false;
			continue;
		}
		Dwarf_Die part, state, inner;
		uint64_t a, b;
		if (tag != DW_TAG_structure_type)
			return false;
		if (state_variant_part(&t, &part, &state) || is_dyn_fat_pointer(&t, &a, &b))
			return true;
		if (!single_member(&t, &a, &inner))
			return false;
		t = inner;
	}
	return false;
}

/*
 * The one member of struct st that is (or leads to) a future, held beside
 * other state: a combinator that drives the future it holds (tokio's
 * LocalSet RunUntil, async-std's SupportTaskLocals).  False when no member
 * or more than one is a future (a select of two is no wrapper).
 */
static bool future_member(Dwarf_Die *st, uint64_t *off, Dwarf_Die *type)
{
	Dwarf_Die child;
	if (dwarf_child(st, &child) != 0)
		return false;
	int n = 0;
	bool found = false;
	do {
		if (dwarf_tag(&child) == DW_TAG_variant_part)
			return false;
		Dwarf_Die t;
		uint64_t o;
		if (dwarf_tag(&child) != DW_TAG_member || !cq_dwt_type(&child, &t) ||
		    !leads_to_future(t, 6))
			continue;
		if (found || !cq_dwt_member_offset(&child, &o))
			return false;
		found = true;
		*off = o;
		*type = t;
	} while (++n < MAX_MEMBERS && dwarf_siblingof(&child, &child) == 0);
	return found;
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
		if (!cq_dwt_type(&child, &t) || !cq_dwt_member_offset(&child, &o))
			return false;
		if (cq_dwt_size(&t) == 0)
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
	b->types[index] = (struct cq_rust_type){.kind = CQ_RUST_LEAF, .target = -1};
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

/*
 * An Unresumed variant's captured future (rust_decode.h): the first of its
 * upvars whose type is an async fn's, block's or closure's environment, as
 * the awaitee of the variant.  An executor's wrapper (async-executor's
 * `async move { let _guard = ..; future.await }`) captured the program's
 * future this way: its never-polled task is named by that future.
 */
static void add_captured(struct builder *b, struct cq_rust_variant *var, Dwarf_Die *vtype,
                         uint64_t moff)
{
	Dwarf_Die f;
	if (dwarf_child(vtype, &f) != 0)
		return;
	do {
		Dwarf_Die at;
		uint64_t off;
		const char *tn;
		if (dwarf_tag(&f) != DW_TAG_member || !cq_dwt_type(&f, &at) || !cq_dwt_peel(&at) ||
		    dwarf_tag(&at) != DW_TAG_structure_type || !(tn = dwarf_diename(&at)) ||
		    !strstr(tn, "{async_") || !strstr(tn, "_env#") ||
		    !cq_dwt_member_offset(&f, &off))
			continue;
		var->awaitee_offset = moff + off;
		var->awaitee = type_for(b, dwarf_dieoffset(&at));
		return;
	} while (dwarf_siblingof(&f, &f) == 0);
}

static void fill_state_machine(struct builder *b, const struct walk *w, int32_t index,
                               Dwarf_Die *die, Dwarf_Die *part, Dwarf_Die *state)
{
	struct cq_rust_type *ty = &b->types[index];
	ty->kind = CQ_RUST_STATE_MACHINE;
	Dwarf_Die st;
	if (!cq_dwt_member_offset(state, &ty->state_offset) || !cq_dwt_type(state, &st))
		goto bad;
	uint64_t ssize = cq_dwt_size(&st);
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
		    !cq_dwt_type(&member, &vtype))
			continue;
		if (nvars >= MAX_VARIANTS || !grow((void **)&vars, &cap, nvars + 1, sizeof(*vars)))
			break;
		struct cq_rust_variant *var = &vars[nvars++];
		uint64_t moff = 0;
		cq_dwt_member_offset(&member, &moff);
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
			    strcmp(fname, "__awaitee") == 0 && cq_dwt_type(&f, &at) &&
			    cq_dwt_member_offset(&f, &aoff) && cq_dwt_peel(&at)) {
				var->awaitee_offset = moff + aoff;
				var->awaitee = type_for(b, dwarf_dieoffset(&at));
				ty = &b->types[index]; /* type_for may move the array */
				break;
			}
		} while (dwarf_siblingof(&f, &f) == 0);
		if (var->awaitee < 0 && discr == 0 && vname && strcmp(vname, "Unresumed") == 0)
			add_captured(b, var, &vtype, moff);
		ty = &b->types[index];
	} while (dwarf_siblingof(&v, &v) == 0);
	ty->variants = vars;
	ty->nvariants = nvars;
	(void)die;
	(void)w;
	return;
bad:
	ty->kind = CQ_RUST_LEAF;
}

/* A pointer, or a Pin / Box / NonNull around one: a type that is only a way to a future. */
static bool is_pointer_wrapper(Dwarf_Die *type)
{
	Dwarf_Die t = *type;
	if (!cq_dwt_peel(&t))
		return false;
	int tag = dwarf_tag(&t);
	if (is_pointer_tag(tag))
		return true;
	const char *n = dwarf_diename(&t);
	return n && (strncmp(n, "Pin<", 4) == 0 || strncmp(n, "Box<", 4) == 0 ||
	             strncmp(n, "NonNull<", 8) == 0 || strncmp(n, "Unique<", 7) == 0);
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
		if (!cq_dwt_peel(&die))
			break;
		int tag = dwarf_tag(&die);
		if (is_pointer_tag(tag)) {
			if (nhops >= CQ_RUST_MAX_HOPS || !cq_dwt_type(&die, &die))
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
		Dwarf_Die inner;
		if (!single_member(&die, &off, &inner) && !future_member(&die, &off, &inner))
			break;
		die = inner;
		pending += off;
	}
	/*
	 * A leaf: a pointer wrapper (Pin<&mut Parked>, Box<Parked>, &mut Parked)
	 * is named after what it points to; any other type after itself (a
	 * JoinHandle holds a pointer to a task Header, but is a JoinHandle).
	 */
	if (derefed && is_pointer_wrapper(start) && cq_dwt_peel(&last_pointee) &&
	    dwarf_diename(&last_pointee)) {
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
	b->types[index].size = cq_dwt_size(&die);
	Dwarf_Attribute attr;
	Dwarf_Word align;
	if (dwarf_formudata(dwarf_attr(&die, DW_AT_alignment, &attr), &align) == 0 && align > 0 &&
	    (align & (align - 1)) == 0)
		b->types[index].align = align;
	Dwarf_Die part, state;
	if (state_variant_part(&die, &part, &state))
		fill_state_machine(b, w, index, &die, &part, &state);
	else
		fill_other(b, w, index, &die);
}

/* The template type parameter `name` of die. */
static bool template_param(Dwarf_Die *die, const char *name, Dwarf_Die *out)
{
	Dwarf_Die child;
	if (dwarf_child(die, &child) != 0)
		return false;
	do {
		const char *n = dwarf_diename(&child);
		if (dwarf_tag(&child) == DW_TAG_template_type_parameter && n &&
		    strcmp(n, name) == 0)
			return cq_dwt_type(&child, out) && cq_dwt_peel(out);
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

/* ---- what a runtime's part of the index may ask the walk -------------------------- */

void *cq_rust_walk_dwarf(const struct cq_rust_walk *w)
{
	return w->w->dwarf;
}

const char *cq_rust_walk_ns(const struct cq_rust_walk *w, int32_t ns, int32_t *parent)
{
	if (ns < 0 || (size_t)ns >= w->w->nns) {
		*parent = -1;
		return NULL;
	}
	*parent = w->w->ns[ns].parent;
	return w->w->ns[ns].name;
}

int32_t cq_rust_walk_type(struct cq_rust_walk *w, void *type)
{
	return type_for(w->w->b, dwarf_dieoffset((Dwarf_Die *)type));
}

char *cq_rust_walk_type_name(const struct cq_rust_walk *w, void *type)
{
	return type_name(w->w, (Dwarf_Die *)type);
}

bool cq_rust_walk_template_param(void *die, const char *name, void *out)
{
	return template_param((Dwarf_Die *)die, name, (Dwarf_Die *)out);
}

/* ---- block_on futures ------------------------------------------------------------ */

/* The frame base of a subprogram, as a base register (+0); false when not that simple. */
static bool frame_base(Dwarf_Die *fn, enum cq_rust_base *base)
{
	Dwarf_Attribute attr;
	Dwarf_Op *ops;
	size_t n;
	if (!dwarf_attr(fn, DW_AT_frame_base, &attr) || dwarf_getlocation(&attr, &ops, &n) != 0 ||
	    n != 1)
		return false;
	if (ops[0].atom == DW_OP_call_frame_cfa)
		*base = CQ_RUST_BASE_CFA;
	else if (ops[0].atom == DW_OP_reg7)
		*base = CQ_RUST_BASE_SP;
	else if (ops[0].atom == DW_OP_reg6)
		*base = CQ_RUST_BASE_FP;
	else
		return false;
	return true;
}

/* The DWARF register a DW_OP_reg* / DW_OP_regx names, or -1. */
static int op_reg(const Dwarf_Op *op)
{
	if (op->atom >= DW_OP_reg0 && op->atom <= DW_OP_reg31)
		return op->atom - DW_OP_reg0;
	if (op->atom == DW_OP_regx && op->number < CQ_REGS_MAX)
		return (int)op->number;
	return -1;
}

/*
 * A value held in registers: DW_OP_regN alone, or DW_OP_regN DW_OP_piece 8
 * DW_OP_regM DW_OP_piece 8 (a fat pointer in two registers).
 */
static bool register_location(const Dwarf_Op *ops, size_t n, struct cq_rust_local *out)
{
	int r0 = n > 0 ? op_reg(&ops[0]) : -1, r1 = n == 4 ? op_reg(&ops[2]) : -1;
	if (r0 < 0 ||
	    !(n == 1 || (n == 4 && r1 >= 0 && ops[1].atom == DW_OP_piece && ops[1].number == 8 &&
	                 ops[3].atom == DW_OP_piece && ops[3].number == 8)))
		return false;
	out->base = CQ_RUST_BASE_REGS;
	out->offset = r0;
	out->add = r1 >= 0 ? (uint64_t)r1 : CQ_RUST_NO_REG;
	out->deref = false;
	return true;
}

/* One location expression as base + offset [deref] [+ add]; false when not that simple. */
static bool simple_location(const Dwarf_Op *ops, size_t n, bool have_fb, enum cq_rust_base fb,
                            struct cq_rust_local *out)
{
	if (register_location(ops, n, out))
		return true;
	if (n == 0 || n > 3)
		return false;
	switch (ops[0].atom) {
	case DW_OP_breg7:
		out->base = CQ_RUST_BASE_SP;
		break;
	case DW_OP_breg6:
		out->base = CQ_RUST_BASE_FP;
		break;
	case DW_OP_fbreg:
		if (!have_fb)
			return false;
		out->base = fb;
		break;
	default:
		if (ops[0].atom < DW_OP_breg0 || ops[0].atom > DW_OP_breg31)
			return false;
		out->base = CQ_RUST_BASE_BREG;
		out->reg = ops[0].atom - DW_OP_breg0;
		break;
	}
	out->offset = (int64_t)ops[0].number;
	out->deref = false;
	out->add = 0;
	size_t i = 1;
	if (i < n && ops[i].atom == DW_OP_deref) {
		out->deref = true;
		i++;
	}
	if (i < n && ops[i].atom == DW_OP_plus_uconst)
		out->add = ops[i++].number;
	return i == n;
}

/* Adds the pc ranges where variable `var` (of type index `type`) has a simple location. */
static void add_locations(Dwarf_Die *var, int32_t type, bool have_fb, enum cq_rust_base fb,
                          struct cq_rust_block_on *bo, size_t *cap)
{
	Dwarf_Attribute attr;
	Dwarf_Addr base, start, end;
	Dwarf_Op *ops;
	size_t nops;
	ptrdiff_t it = 0;
	if (!dwarf_attr(var, DW_AT_location, &attr))
		return;
	for (int i = 0;
	     i < 256 && (it = dwarf_getlocations(&attr, it, &base, &start, &end, &ops, &nops)) > 0;
	     i++) {
		struct cq_rust_local loc = {0};
		if (!simple_location(ops, nops, have_fb, fb, &loc) ||
		    !grow((void **)&bo->locs, cap, bo->nlocs + 1, sizeof(*bo->locs)))
			continue;
		bool whole = start == 0 && end == (Dwarf_Addr)-1;
		loc.lo = whole ? bo->lo : start;
		loc.hi = whole ? bo->hi : end;
		loc.type = type;
		bo->locs[bo->nlocs++] = loc;
	}
}

/* Every `var` (parameter or local) under die, through lexical blocks, down to depth. */
static void find_f(struct builder *b, const struct walk *w, Dwarf_Die *die, const char *var,
                   unsigned depth, bool have_fb, enum cq_rust_base fb, struct cq_rust_block_on *bo,
                   size_t *cap)
{
	Dwarf_Die child, type;
	if (dwarf_child(die, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);
		const char *n = dwarf_diename(&child);
		if ((tag == DW_TAG_formal_parameter || tag == DW_TAG_variable) && n &&
		    strcmp(n, var) == 0 && cq_dwt_type(&child, &type) && cq_dwt_peel(&type)) {
			int32_t t = type_for(b, dwarf_dieoffset(&type));
			if (t >= 0)
				add_locations(&child, t, have_fb, fb, bo, cap);
		} else if (tag == DW_TAG_lexical_block && depth > 0) {
			find_f(b, w, &child, var, depth - 1, have_fb, fb, bo, cap);
		}
	} while (dwarf_siblingof(&child, &child) == 0);
}

/* Whether the type DIE at off has the full name `name`. */
static bool named_as(const struct walk *w, Dwarf_Off off, const char *name)
{
	Dwarf_Die die;
	char *n = dwarf_offdie(w->dwarf, off, &die) ? type_name(w, &die) : NULL;
	bool same = n && strcmp(n, name) == 0;
	free(n);
	return same;
}

/*
 * Whether a value of type t refers to its future through a pointer
 * (Pin<Box<dyn Future>>, Pin<&mut F>, Box<F>): a copy of it in a caller
 * still designates the future block_on drives.  A future held by value
 * (an async block) was moved into block_on: the caller's copy is stale.
 */
static bool refers_by_pointer(Dwarf_Die t)
{
	for (int depth = 0; depth < 8; depth++) {
		if (!cq_dwt_peel(&t))
			return false;
		int tag = dwarf_tag(&t);
		if (is_pointer_tag(tag))
			return true;
		Dwarf_Die inner;
		uint64_t a, b;
		if (tag != DW_TAG_structure_type)
			return false;
		if (is_dyn_fat_pointer(&t, &a, &b))
			return true;
		if (!single_member(&t, &a, &inner))
			return false;
		t = inner;
	}
	return false;
}

/* The parameters of fn whose type is the DIE f (a caller's `future: F`). */
static void find_typed(struct builder *b, Dwarf_Die *fn, Dwarf_Die *f, int32_t ftype, bool have_fb,
                       enum cq_rust_base fb, struct cq_rust_block_on *bo, size_t *cap)
{
	Dwarf_Die child, type;
	if (dwarf_child(fn, &child) != 0)
		return;
	(void)b;
	int n = 0;
	do {
		if (dwarf_tag(&child) == DW_TAG_formal_parameter && cq_dwt_type(&child, &type) &&
		    cq_dwt_peel(&type) && dwarf_dieoffset(&type) == dwarf_dieoffset(f))
			add_locations(&child, ftype, have_fb, fb, bo, cap);
	} while (++n < MAX_MEMBERS && dwarf_siblingof(&child, &child) == 0);
}

/*
 * block_on<F>'s code and where its future lives: a driver's `var`, before
 * and after pin!(var); a caller's (var NULL, kept only when its F is a
 * driver's: drivers[0, ndrivers) are their F's DIEs, and refers to the
 * future by a pointer) parameter of type F.
 */
static void add_block_on(struct builder *b, const struct walk *w, Dwarf_Off off, const char *var,
                         const Dwarf_Off *drivers, size_t ndrivers)
{
	Dwarf_Die fn, decl, f;
	Dwarf_Attribute attr;
	Dwarf_Addr lo, hi;
	if (!dwarf_offdie(w->dwarf, off, &fn) || dwarf_lowpc(&fn, &lo) != 0 ||
	    dwarf_highpc(&fn, &hi) != 0 || hi <= lo)
		return;
	if (!template_param(&fn, "F", &f) &&
	    !(dwarf_formref_die(dwarf_attr(&fn, DW_AT_specification, &attr), &decl) &&
	      template_param(&decl, "F", &f)))
		return;
	enum cq_rust_base fb = CQ_RUST_BASE_SP;
	bool have_fb = frame_base(&fn, &fb);
	struct cq_rust_block_on bo = {.lo = lo, .hi = hi};
	size_t cap = 0;
	if (var) {
		find_f(b, w, &fn, var, 4, have_fb, fb, &bo, &cap);
	} else {
		/* the same F: a driver's F type, or one of the same path (another unit's) */
		int32_t ft = type_for(b, dwarf_dieoffset(&f));
		char *fname = type_name(w, &f);
		size_t d = 0;
		while (fname && d < ndrivers && !named_as(w, drivers[d], fname))
			d++;
		free(fname);
		if (ft < 0 || d >= ndrivers || !refers_by_pointer(f))
			return;
		find_typed(b, &fn, &f, ft, have_fb, fb, &bo, &cap);
	}
	if (bo.nlocs == 0 ||
	    !grow((void **)&b->block_ons, &b->cap_block_ons, b->nblock_ons + 1,
	          sizeof(*b->block_ons)) ||
	    (bo.future = type_for(b, dwarf_dieoffset(&f))) < 0) {
		free(bo.locs);
		return;
	}
	b->block_ons[b->nblock_ons++] = bo;
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

static int cmp_block_on(const void *a, const void *b)
{
	const struct cq_rust_block_on *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int cmp_mono(const void *a, const void *b)
{
	const struct cq_rust_mono *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int cmp_resume(const void *a, const void *b)
{
	const struct cq_rust_resume *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

void cq_rust_index_sort(struct cq_rust_index *ix)
{
	struct cq_rust_model *m = &ix->model;
	if (m->nvtables)
		qsort((void *)m->vtables, m->nvtables, sizeof(*m->vtables), cmp_vtable);
	if (ix->nresumes)
		qsort(ix->resumes, ix->nresumes, sizeof(*ix->resumes), cmp_resume);
	if (ix->nblock_ons)
		qsort(ix->block_ons, ix->nblock_ons, sizeof(*ix->block_ons), cmp_block_on);
	if (ix->nmonos)
		qsort(ix->monos, ix->nmonos, sizeof(*ix->monos), cmp_mono);
	for (size_t i = 0; i < ix->kinds.n; i++)
		if (ix->parts[i] && ix->kinds.v[i]->sort)
			ix->kinds.v[i]->sort(ix->parts[i]);
}

/* Moves the builder's finds into ix: one module's index, link-time addresses, sorted. */
static void builder_finish(struct builder *b, struct cq_rust_index *ix)
{
	free(b->slots);
	free(b->work);
	free(b->offs);
	ix->model = (struct cq_rust_model){
	    .types = b->types, .ntypes = b->ntypes, .vtables = b->vtables, .nvtables = b->nvtables};
	ix->resumes = b->resumes;
	ix->nresumes = b->nresumes;
	ix->block_ons = b->block_ons;
	ix->nblock_ons = b->nblock_ons;
	ix->monos = b->monos;
	ix->nmonos = b->nmonos;
	cq_rust_index_sort(ix);
}

/*
 * Reads one module's DWARF into its own index, at link-time addresses.
 * *out is NULL when the module's debuginfo is not found; the error is only
 * for running out of memory.
 */
struct cq_error *cq_rust_index_read_module(const struct cq_unwind_target *t, size_t m,
                                           const struct cq_rust_parts *parts,
                                           struct cq_rust_index **out)
{
	*out = NULL;
	Dwarf *dwarf = t->ops->dwarf ? t->ops->dwarf(t->ctx, m) : NULL; /* the target's */
	struct builder b = {0};
	struct cq_rust_index *ix = dwarf ? calloc(1, sizeof(*ix)) : NULL;
	if (ix) {
		struct walk w = {.dwarf = dwarf, .b = &b};
		ix->kinds = *parts;
		w.nparts = parts->n;
		for (size_t i = 0; i < w.nparts; i++)
			w.parts[i] = parts->v[i];
		for (size_t i = 0; i < w.nparts; i++)
			w.pstate[i] = w.parts[i]->begin ? w.parts[i]->begin() : NULL;
		index_units(&b, &w);
		for (size_t i = 0; i < w.nvt; i++) {
			int32_t type = type_for(&b, w.vt[i].type);
			if (type < 0 || !grow((void **)&b.vtables, &b.cap_vtables, b.nvtables + 1,
			                      sizeof(*b.vtables)))
				continue;
			b.vtables[b.nvtables++] =
			    (struct cq_rust_vtable){.addr = w.vt[i].addr, .type = type};
		}
		struct cq_rust_walk rw = {.w = &w};
		for (size_t i = 0; i < w.nparts; i++)
			if (w.pstate[i])
				ix->parts[i] = w.parts[i]->finish(w.pstate[i], &rw);
		/* the drivers first: a caller's block_on<F> is kept for a driver's F */
		for (size_t i = 0; i < w.nblock_ons; i++)
			if (w.block_ons[i].var)
				add_block_on(&b, &w, w.block_ons[i].die, w.block_ons[i].var, NULL,
				             0);
		size_t ndrivers = b.nblock_ons;
		Dwarf_Off *drivers = malloc((ndrivers ? ndrivers : 1) * sizeof(*drivers));
		for (size_t i = 0; drivers && i < ndrivers; i++)
			drivers[i] = b.offs[b.block_ons[i].future];
		for (size_t i = 0; drivers && ndrivers && i < w.nblock_ons; i++)
			if (!w.block_ons[i].var)
				add_block_on(&b, &w, w.block_ons[i].die, NULL, drivers, ndrivers);
		free(drivers);
		for (size_t i = 0; i < w.nmonos; i++) {
			int32_t type = type_for(&b, w.monos[i].type);
			if (type < 0 ||
			    !grow((void **)&b.monos, &b.cap_monos, b.nmonos + 1, sizeof(*b.monos)))
				continue;
			b.monos[b.nmonos++] = (struct cq_rust_mono){
			    .lo = w.monos[i].lo, .hi = w.monos[i].hi, .future = type};
		}
		while (b.nwork > 0) {
			int32_t index = b.work[--b.nwork];
			fill_type(&b, &w, index, b.offs[index]);
		}
		free(w.ns);
		free(w.named);
		free(w.vt);
		free(w.block_ons);
		free(w.monos);
	}
	if (!ix)
		return dwarf ? &cq_error_nomem : NULL;
	builder_finish(&b, ix);
	*out = ix;
	return NULL;
}

void cq_rust_index_parts(const struct cq_async_runtime *const *rt, size_t n,
                         struct cq_rust_parts *out)
{
	out->n = 0;
	for (size_t i = 0; i < n && out->n < CQ_RUST_MAX_PARTS; i++)
		if (rt[i]->rust_index_part)
			out->v[out->n++] = rt[i]->rust_index_part;
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
	for (size_t i = 0; i < ix->kinds.n; i++)
		if (ix->parts[i])
			ix->kinds.v[i]->free(ix->parts[i]);
	for (size_t i = 0; i < ix->nblock_ons; i++)
		free(ix->block_ons[i].locs);
	free(ix->block_ons);
	free(ix->monos);
	free(ix->resumes);
	free(ix);
}

/*
 * How many of n items (size bytes each, sorted by the uint64_t they start
 * with, their code's lo) start at or below pc: the last one is at the count - 1.
 */
static size_t at_or_below(const void *items, size_t n, size_t size, uint64_t pc)
{
	return pc == UINT64_MAX ? n : cq_sorted_below(items, n, size, pc + 1);
}

const char *cq_rust_index_resume_at(const struct cq_rust_index *ix, uint64_t pc)
{
	/* The last range starting at or below pc; ranges of one module do not nest. */
	size_t lo = at_or_below(ix->resumes, ix->nresumes, sizeof(*ix->resumes), pc);
	if (lo == 0)
		return NULL;
	const struct cq_rust_resume *r = &ix->resumes[lo - 1];
	return pc < r->hi ? r->name : NULL;
}

const struct cq_rust_mono *cq_rust_index_monos_at(const struct cq_rust_index *ix, uint64_t addr,
                                                  size_t *n)
{
	size_t lo = 0, hi = ix->nmonos;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ix->monos[mid].lo < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t end = lo;
	while (end < ix->nmonos && ix->monos[end].lo == addr)
		end++;
	*n = end - lo;
	return *n ? &ix->monos[lo] : NULL;
}

const struct cq_rust_mono *cq_rust_index_monos_containing(const struct cq_rust_index *ix,
                                                          uint64_t pc, size_t *n)
{
	size_t lo = at_or_below(ix->monos, ix->nmonos, sizeof(*ix->monos), pc);
	*n = 0;
	if (lo == 0)
		return NULL;
	size_t start = lo - 1;
	while (start > 0 && ix->monos[start - 1].lo == ix->monos[lo - 1].lo)
		start--;
	if (pc >= ix->monos[start].hi)
		return NULL;
	*n = lo - start;
	return &ix->monos[start];
}

const struct cq_rust_block_on *cq_rust_index_block_on_at(const struct cq_rust_index *ix,
                                                         uint64_t pc)
{
	for (size_t i = 0; i < ix->nblock_ons; i++)
		if (pc >= ix->block_ons[i].lo && pc < ix->block_ons[i].hi)
			return &ix->block_ons[i];
	return NULL;
}
