/*
 * dwarf_type.h - small, bounded questions about DWARF types that the Rust
 * and tokio indexes ask: a DIE's type, typedefs peeled, a member's offset, a
 * type's size, and where a member is found inside a type.
 *
 * Every walk is bounded (depth and member counts), so a damaged or hostile
 * DWARF tree costs at most a few thousand DIE reads.
 */
#ifndef CQ_ASYNC_DWARF_TYPE_H
#define CQ_ASYNC_DWARF_TYPE_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stdint.h>

/* die's DW_AT_type, as a DIE. */
bool cq_dwt_type(Dwarf_Die *die, Dwarf_Die *out);

/* Follows typedef / const / volatile to the real type; false on a broken chain. */
bool cq_dwt_peel(Dwarf_Die *die);

/* A member's DW_AT_data_member_location when it is a constant. */
bool cq_dwt_member_offset(Dwarf_Die *member, uint64_t *out);

/* A type's size in bytes (typedefs peeled); 0 when unknown. */
uint64_t cq_dwt_size(Dwarf_Die *type);

/* A test on a member (its DIE and its peeled type). */
typedef bool (*cq_dwt_match_fn)(Dwarf_Die *member, Dwarf_Die *type, const void *arg);

/*
 * Depth-first search of the members of struct type `type` (and of the
 * members of its variants), not through pointers, down to max_depth nested
 * structs, for the first member that match() accepts.  *offset is its offset
 * from the start of `type`, *found its peeled type.
 */
bool cq_dwt_find_member(Dwarf_Die *type, cq_dwt_match_fn match, const void *arg, unsigned max_depth,
                        uint64_t *offset, Dwarf_Die *found);

/* Matchers: a member named arg; a member whose type's name is arg; ... starts with arg. */
bool cq_dwt_named(Dwarf_Die *member, Dwarf_Die *type, const void *arg);
bool cq_dwt_type_named(Dwarf_Die *member, Dwarf_Die *type, const void *arg);
bool cq_dwt_type_prefixed(Dwarf_Die *member, Dwarf_Die *type, const void *arg);
/* A member that is a pointer (arg unused). */
bool cq_dwt_pointer(Dwarf_Die *member, Dwarf_Die *type, const void *arg);

#endif
