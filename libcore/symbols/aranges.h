/*
 * aranges.h - which compilation unit holds an address, read straight from
 * a module's .debug_aranges.
 *
 * libdw 0.188's dwarf_getaranges (behind dwfl_module_addrdie and
 * dwfl_module_getsrc) reads every unit's header and abbreviations before it
 * answers: 4 ms for libc's 2083 units, most of the symbol time of a first
 * core.  This table answers from the section alone; the symbolizer then
 * opens only the units it needs (dwarf_offdie), checks that each holds the
 * address (dwarf_haspc), and asks libdwfl as before whenever the table has
 * no answer (no section, a gap, another byte order).
 *
 * The section is untrusted input like the core: every read is bounds
 * checked, a set whose header is damaged ends the table (the sets before it
 * stay), a set of a version or address size it does not know is skipped,
 * and the table holds at most one range per 16 bytes of section.
 */
#ifndef CQ_ARANGES_H
#define CQ_ARANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

/* Addresses [start, end) belong to the unit whose header is at unit in .debug_info. */
struct cq_arange {
	uint64_t start, end;
	uint64_t unit;
};

/* Ranges sorted by start. */
struct cq_aranges {
	struct cq_arange *ranges;
	size_t n;
};

/* Reads a little-endian .debug_aranges section; only out of memory is an error. */
struct cq_error *cq_aranges_parse(const uint8_t *data, size_t len, struct cq_aranges *out);

/* The header offset of the unit holding addr, when one range holds it. */
bool cq_aranges_find(const struct cq_aranges *a, uint64_t addr, uint64_t *unit);

void cq_aranges_free(struct cq_aranges *a);

#endif
