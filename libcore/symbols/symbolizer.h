/*
 * symbolizer.h - addresses to function, file, line, with inline frames.
 *
 * One symbolizer serves one core, or one set of modules (such as a single
 * ELF file opened with cq_module_open_elf, whose addresses are its link-time
 * addresses).  It reports every FOUND module to libdwfl at its load bias, finds debuginfo with
 * cq_debuginfo_find (so --debug-dir, /usr/lib/debug/.build-id and
 * .gnu_debuglink all work), and answers lookups with libdw: the function
 * name from the symbol table (.symtab, else .dynsym) demangled with
 * libiberty, the source file and line from DWARF, and the chain of inlined
 * subroutines at the address as extra frames, innermost first, as
 * `eu-stack -i` and gdb show them.
 *
 * Results are cached per (module, offset) for the life of the symbolizer, so
 * 3000 threads parked in the same function cost one DWARF lookup, and, when a
 * cache file is given, per (build-id, address) across processes: libdwfl is
 * only started on the first address neither cache knows.
 *
 * Layer: symbols (libcore/symbols/): names for addresses; above db and unwind.
 * The layer order is in docs/internals.md (Layout) and tests/check-layers.
 */
#ifndef CQ_SYMBOLIZER_H
#define CQ_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

struct cq_cache;
struct cq_core;
struct cq_module;
struct cq_symbolizer;

/* One source-level frame at an address. */
struct cq_symbol_frame {
	/* demangled; NULL when unknown.  As a debugger names it: the DWARF
	 * subprogram's name where debuginfo covers the address (no compiler clone
	 * suffix: `__new_sem_wait_slow64`), else the symbol table's. */
	const char *function;
	/* The symbol table's name for a frame that is not inlined (demangled,
	 * without a symbol version: `__new_sem_wait_slow64.constprop.0`) when it
	 * differs from function; NULL when it is the same or there is none.  It
	 * is there with or without debuginfo, so crash signatures use it. */
	const char *symbol;
	const char *file; /* source path as DWARF names it; NULL when unknown */
	int line;         /* 0 when unknown */
	bool inlined;     /* an inlined call inside the next frame out */
};

#define CQ_SYMBOLIZER_MAX_INLINE 16

/* cache may be NULL; core and cache must outlive the symbolizer. */
struct cq_error *cq_symbolizer_create(struct cq_core *core, const char *const *debug_dirs,
                                      struct cq_cache *cache, struct cq_symbolizer **out);

/*
 * The same over modules[0..n), sorted by start and not overlapping, which
 * must outlive the symbolizer.
 */
struct cq_error *cq_symbolizer_create_modules(struct cq_module *modules, size_t n,
                                              const char *const *debug_dirs, struct cq_cache *cache,
                                              struct cq_symbolizer **out);
/*
 * The first core of a binary (its unwind table was not in the cache): starts
 * inflating mod's compressed debuginfo (debug_image.h) on another thread now,
 * while the caller builds the unwind table, for the lookups that follow.
 * Does nothing for a module without debuginfo, or once lookups have begun.
 */
void cq_symbolizer_prefetch(struct cq_symbolizer *s, const struct cq_module *mod);

void cq_symbolizer_destroy(struct cq_symbolizer *s);

/*
 * Describes pc.  For a return address (every frame but the first and those
 * interrupted by a signal) pass is_return_address so the lookup is done at
 * pc - 1, inside the call instruction.  Sets *frames to an array owned by the
 * symbolizer: the innermost inlined frame first, the containing real function
 * last (that one has inlined == false).  Returns the count, at least 1 (a
 * single frame with function NULL when nothing is known).
 */
size_t cq_symbolizer_lookup(struct cq_symbolizer *s, uint64_t pc, bool is_return_address,
                            const struct cq_symbol_frame **frames);

/*
 * The identity of mod's files (provenance.h) as the symbolizer found them,
 * for another cache user of the same run to copy instead of searching again;
 * NULL without a cache or for a module of another core.  Valid while s is.
 */
struct cq_provenance;
const struct cq_provenance *cq_symbolizer_provenance(struct cq_symbolizer *s,
                                                     const struct cq_module *mod);

/*
 * False when an allocation failed while naming frames: some frames then
 * went unnamed, and the caller reports out of memory rather than a result
 * that looks whole.  A damaged table of one module is no failure: libdwfl
 * answers for it.
 */
bool cq_symbolizer_ok(const struct cq_symbolizer *s);

#endif
