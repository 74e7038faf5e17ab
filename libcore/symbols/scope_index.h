/*
 * scope_index.h - the chain of DWARF scopes at an address, read by coreq
 * itself: the concrete DIEs (subprogram, inlined subroutines, lexical
 * blocks) whose code holds the address, innermost first.
 *
 * libdw 0.188's dwarf_getscopes finds no scope when the innermost one is an
 * inlined subroutine whose DW_AT_abstract_origin lies in another unit
 * (DW_FORM_ref_addr): having found the scopes, it searches the inlined
 * subroutine's own unit for that origin, does not find it there, and
 * answers 0.  A gcc LTO build puts every function's code in `<artificial>`
 * units whose DIEs all name their origins in the early-debug unit of their
 * source file, so libdw shows no inline frame at all there (Debian's
 * python3.11; Ubuntu and Fedora build most packages so).  gdb reads them.
 *
 * Per unit, once: the unit's code-bearing DIEs (subprograms, also those
 * inside namespaces, classes, structures and modules) sorted by address;
 * an address is then a binary search to its subprogram and a walk down
 * that subprogram's children holding the address.  Units are indexed
 * lazily, the first time an address in them is asked about.
 *
 * Layer: symbols (libcore/symbols/).
 */
#ifndef CQ_SCOPE_INDEX_H
#define CQ_SCOPE_INDEX_H

#include <elfutils/libdw.h>

#include "libcore/base/error.h"

struct cq_scope_index; /* one module's DWARF: its indexed units */

/* An empty index for one Dwarf (units are added as they are asked about). */
struct cq_error *cq_scope_index_create(Dwarf *dw, struct cq_scope_index **out);
void cq_scope_index_free(struct cq_scope_index *ix);

/*
 * The scopes of cudie (a unit of ix's Dwarf) holding pc (a DWARF address),
 * innermost first, ending at the subprogram that holds them: *chain is a
 * malloc'd array the caller frees.  Returns their count; 0 when no
 * subprogram of the unit's index holds pc (a function nested in another
 * one's DIE is not indexed) or on error (NOMEM in *err, else *err NULL: a
 * damaged unit only costs its own answer).
 */
int cq_scope_index_chain(struct cq_scope_index *ix, Dwarf_Die *cudie, Dwarf_Addr pc,
                         Dwarf_Die **chain, struct cq_error **err);

#endif
