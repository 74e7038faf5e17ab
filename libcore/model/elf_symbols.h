/*
 * elf_symbols.h - data symbols of a module, looked up by name.
 *
 * The async-stack walkers need a few exported variables of the crashed
 * program (folly's TLS key and cookie) and of libc (the _thread_db_*
 * descriptors).  These are found in the module's own file, .symtab first and
 * then .dynsym, and only in modules whose file matched the core's build-id.
 * Several names are looked up in one pass over each symbol table, so asking
 * for three symbols costs what asking for one does.
 */
#ifndef CQ_ELF_SYMBOLS_H
#define CQ_ELF_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

struct cq_module;

/* One symbol to look up: fill name; found, addr and size are the answer. */
struct cq_symbol_query {
	const char *name;
	bool found;
	uint64_t addr; /* runtime address: st_value + the module's bias */
	uint64_t size;
};

/*
 * Looks every query not yet found up in mod's symbol tables (defined
 * symbols only).  Returns how many of the queries are found after the call.
 * A module without a matching file finds nothing.
 */
size_t cq_elf_find_symbols(const struct cq_module *mod, struct cq_symbol_query *q, size_t n);

/* A function a module exports (its .dynsym), at its link-time address. */
/*
 * The function symbol (STT_FUNC, of a size) of mod's .symtab or .dynsym
 * whose range holds the runtime address addr: out->addr its runtime start,
 * out->size its size (out->name is left alone).  False when none does.  A
 * linear pass, as cq_elf_find_symbols.
 */
bool cq_elf_function_at(const struct cq_module *mod, uint64_t addr, struct cq_symbol_query *out);

struct cq_elf_export {
	const char *name; /* points into the module's ELF string table */
	uint64_t value, size;
	bool ifunc; /* STT_GNU_IFUNC: a resolver that picks a variant at load time */
};

/*
 * The defined functions and ifuncs of mod's .dynsym, sorted by value
 * (malloc'd in *out; *n set; nothing for a module without a matching file).
 * Only these names are stable across rebuilds and CPUs of one library
 * version: they are its ABI.
 */
struct cq_error *cq_elf_exports(const struct cq_module *mod, struct cq_elf_export **out, size_t *n);

/* mod's DT_SONAME, or NULL; points into the module's ELF. */
const char *cq_elf_soname(const struct cq_module *mod);

#endif
