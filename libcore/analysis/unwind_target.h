/*
 * unwind_target.h - the core as unwind/ sees it: the one implementation of
 * struct cq_unwind_target (unwind/target.h) over a core.  It gives the
 * unwinder memory reads, the executable test, stack bounds and each
 * module's CFI table, compiled once per module and cached by build-id and
 * file identity; and it gives the async runtimes the address space, the
 * modules and their symbols, the threads and their TLS, named frames,
 * where debuginfo is, and the cache.
 *
 * Layer: analysis.
 */
#ifndef CQ_UNWIND_TARGET_H
#define CQ_UNWIND_TARGET_H

#include <stdbool.h>

#include "libcore/base/error.h"
#include "libcore/model/tls.h"
#include "unwind/unwind.h"

struct cq_cache;
struct cq_core;
struct cq_module;
struct cq_provenance;
struct cq_stack_options;

/* The unwinder's view of a core; valid while core and options live. */
struct cq_symbolizer;
struct cq_target_gopclntab;

#define CQ_TARGET_PAGES     16
#define CQ_TARGET_PAGE_SIZE 1024

struct cq_core_target {
	struct cq_unwind_target target;
	struct cq_core *core;
	const struct cq_stack_options *options;
	struct cq_symbolizer *symbolizer; /* may be NULL; told of every table built afresh */
	bool out_of_memory;               /* a table could not be built for want of memory */
	struct cq_target_module *modules; /* the views target.modules points at */
	struct cq_target_thread *threads;
	struct cq_tls_layout tls;         /* read by tls_prepare */
	struct cq_provenance *provenance; /* by module, for cache_get/put: made on first use */
	bool *provenance_made;
	struct cq_module_dwarf *dwarf; /* by module, for the dwarf op: opened on first use */
	struct cq_target_gopclntab
	    *gopcln; /* by module, for the frame_size op: read on first use */
	/*
	 * Core bytes the walks read, read with pread a 1 KiB block at a time:
	 * faulting them in through the mapping maps (and later unmaps) 64 KiB
	 * around each, and a walk touches a little of each of thousands of
	 * stacks (one pread per thread on the 3001-thread corpus core).
	 */
	uint64_t page_at[CQ_TARGET_PAGES]; /* target address of each page, + 1; 0: empty */
	uint8_t page[CQ_TARGET_PAGES][CQ_TARGET_PAGE_SIZE];
};

/*
 * A module's DWARF as a target's dwarf op hands it out (unwind/target.h),
 * read from the debuginfo cq_debuginfo_find finds for it (the module's own
 * file when that has DWARF): opened on the first call, the same handle on
 * every later one (NULL: none), closed once by cq_module_dwarf_close.  The
 * core's target and `cache warm`'s both keep theirs this way.
 */
struct cq_module_dwarf {
	bool tried;
	int fd;          /* the separate debuginfo file's, or -1 */
	struct Elf *elf; /* the module's own (then not ended here), or the debuginfo's */
	struct Dwarf *dwarf;
};
struct Dwarf *cq_module_dwarf_open(struct cq_module_dwarf *d, const struct cq_module *mod,
                                   const char *const *debug_dirs);
void cq_module_dwarf_close(struct cq_module_dwarf *d, const struct cq_module *mod);

/*
 * Closes every module's DWARF the dwarf op opened (a later call opens it
 * again): the analysis calls it once the runtimes' detect step, where they
 * read DWARF, is over, so that libdw's tables and the debuginfo's mapped
 * pages are not held through the threads' unwind, the scan and decode.
 */
void cq_core_target_close_dwarf(struct cq_core_target *ct);

/* The target's find_symbols over mod's symbol tables (cache warm's target uses it too). */
struct cq_target_symbol;
size_t cq_core_target_find_symbols(const struct cq_module *mod, struct cq_target_symbol *q,
                                   size_t n);

/* How a module of the core looks to unwind/ (struct cq_target_module, unwind/target.h). */
struct cq_target_module cq_core_target_module_view(const struct cq_module *mod);

/* Fills ct; symbolizer may be NULL (frames unnamed).  Release with cq_core_target_destroy. */
struct cq_error *cq_core_target_init(struct cq_core_target *ct, struct cq_core *core,
                                     const struct cq_stack_options *o,
                                     struct cq_symbolizer *symbolizer);
void cq_core_target_destroy(struct cq_core_target *ct);

/*
 * Stores in the cache the unwind tables that grew during the walks: rows
 * compiled for pcs the cached tables did not hold.
 */
void cq_core_target_store_tables(struct cq_core_target *ct);

/*
 * The CFI table the cache holds for key (complete or partial), or NULL; a
 * damaged blob is counted (cq_cache_reject) and a table for another
 * register count dropped, so the caller builds it afresh.  The one reader
 * of cached tables: the walks and `coreq cache warm` alike.
 */
struct cq_cache_key;
struct cq_error;
struct cq_cfi_table *cq_core_target_cached_table(struct cq_cache *cache, struct cq_cache_key *key,
                                                 unsigned nregs);

/*
 * Why mod's CFI table could not be built (a corrupt .eh_frame or
 * .debug_frame), or NULL: the unwinder then falls back to frame pointers
 * and scanning for that module, and the caller may say so.
 */
const struct cq_error *cq_core_target_cfi_error(const struct cq_module *mod);

#endif
