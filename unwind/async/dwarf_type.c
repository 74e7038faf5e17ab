/*
 * dwarf_type.c - bounded questions about DWARF types (see dwarf_type.h).
 */
#include "unwind/async/dwarf_type.h"

#include <dwarf.h>
#include <string.h>

#define MAX_PEEL    8
#define MAX_MEMBERS 4096

bool cq_dwt_type(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Attribute attr;
	return dwarf_formref_die(dwarf_attr(die, DW_AT_type, &attr), out) != NULL;
}

bool cq_dwt_peel(Dwarf_Die *die)
{
	for (int i = 0; i < MAX_PEEL; i++) {
		int tag = dwarf_tag(die);
		if (tag != DW_TAG_typedef && tag != DW_TAG_const_type &&
		    tag != DW_TAG_volatile_type)
			return true;
		if (!cq_dwt_type(die, die))
			return false;
	}
	return false;
}

bool cq_dwt_member_offset(Dwarf_Die *member, uint64_t *out)
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

uint64_t cq_dwt_size(Dwarf_Die *type)
{
	Dwarf_Word size;
	Dwarf_Die t = *type;
	if (!cq_dwt_peel(&t))
		return 0;
	return dwarf_aggregate_size(&t, &size) == 0 ? size : 0;
}

/* Searches the children of die (a struct or a variant); *budget bounds the DIEs read. */
static bool find_in(Dwarf_Die *die, cq_dwt_match_fn match, const void *arg, unsigned depth,
                    unsigned *budget, uint64_t *offset, Dwarf_Die *found)
{
	Dwarf_Die child;
	if (dwarf_child(die, &child) != 0)
		return false;
	do {
		if ((*budget)-- == 0)
			return false;
		int tag = dwarf_tag(&child);
		if (tag == DW_TAG_variant_part || tag == DW_TAG_variant) {
			if (find_in(&child, match, arg, depth, budget, offset, found))
				return true;
			continue;
		}
		if (tag != DW_TAG_member)
			continue;
		Dwarf_Die t;
		uint64_t off;
		if (!cq_dwt_type(&child, &t) || !cq_dwt_peel(&t) ||
		    !cq_dwt_member_offset(&child, &off))
			continue;
		if (match(&child, &t, arg)) {
			*offset = off;
			*found = t;
			return true;
		}
		uint64_t inner;
		if (depth > 0 && dwarf_tag(&t) == DW_TAG_structure_type &&
		    find_in(&t, match, arg, depth - 1, budget, &inner, found)) {
			*offset = off + inner;
			return true;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

bool cq_dwt_find_member(Dwarf_Die *type, cq_dwt_match_fn match, const void *arg, unsigned max_depth,
                        uint64_t *offset, Dwarf_Die *found)
{
	unsigned budget = MAX_MEMBERS;
	Dwarf_Die t = *type;
	if (!cq_dwt_peel(&t))
		return false;
	return find_in(&t, match, arg, max_depth, &budget, offset, found);
}

bool cq_dwt_named(Dwarf_Die *member, Dwarf_Die *type, const void *arg)
{
	(void)type;
	const char *n = dwarf_diename(member);
	return n && strcmp(n, arg) == 0;
}

bool cq_dwt_type_named(Dwarf_Die *member, Dwarf_Die *type, const void *arg)
{
	(void)member;
	const char *n = dwarf_diename(type);
	return n && strcmp(n, arg) == 0;
}

bool cq_dwt_type_prefixed(Dwarf_Die *member, Dwarf_Die *type, const void *arg)
{
	(void)member;
	const char *n = dwarf_diename(type);
	return n && strncmp(n, arg, strlen(arg)) == 0;
}

bool cq_dwt_pointer(Dwarf_Die *member, Dwarf_Die *type, const void *arg)
{
	(void)member;
	(void)arg;
	return dwarf_tag(type) == DW_TAG_pointer_type;
}
