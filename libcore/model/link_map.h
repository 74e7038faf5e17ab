/*
 * link_map.h - the loaded objects of a process, found the way a debugger
 * finds them, for cores that have no NT_FILE note (qemu-user writes none;
 * a kernel-written core may lack it too).
 *
 * The executable's program headers are at AT_PHDR (AT_PHNUM of them); its
 * PT_DYNAMIC holds DT_DEBUG, the address of the dynamic loader's r_debug,
 * whose r_map starts the loader's list of struct link_map {l_addr, l_name,
 * l_ld, l_next, l_prev}.  Each object's range comes from its own program
 * headers, read from core memory at its load address.  The result is a
 * list of mappings shaped like NT_FILE's (one per object, file offset 0),
 * so module discovery (module.h), with its build-id check, works unchanged.
 *
 * Every address and count comes from the core: loops are bounded, cycles
 * and unreadable memory end the walk, and what was found up to there is
 * kept.  A static executable has no DT_DEBUG: it is the only object.
 */
#ifndef CQ_LINK_MAP_H
#define CQ_LINK_MAP_H

#include "libcore/base/error.h"

struct cq_core;

/*
 * Fills core->mappings from the executable's headers and the loader's
 * list (core->nmappings stays 0 when neither can be read).  Errors only for
 * out of memory.
 */
struct cq_error *cq_link_map_mappings(struct cq_core *core);

#endif
