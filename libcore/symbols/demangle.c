/*
 * demangle.c - C++ and Rust symbol demangling (see demangle.h).
 *
 * A thin wrapper over libiberty's cplus_demangle in "auto" style, which tries
 * Rust first (legacy _ZN...17h<hash>E names overlap with the Itanium C++ ABI,
 * and v0 _R... names) and then the Itanium ABI.  Names come from symbol
 * tables and DWARF of files on disk, so they are bounded in length before
 * they reach the demangler; libiberty bounds its own recursion.
 */
#include "libcore/symbols/demangle.h"

#include <libiberty/demangle.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Longer "names" are not symbols a person would want demangled. */
#define MAX_MANGLED_LEN (64u * 1024u)

static bool is_candidate(const char *name)
{
	if (!name || strnlen(name, MAX_MANGLED_LEN + 1) > MAX_MANGLED_LEN)
		return false;
	return (name[0] == '_' && (name[1] == 'Z' || name[1] == 'R')) ||
	       strncmp(name, "_GLOBAL_", 8) == 0;
}

char *cq_demangle(const char *name)
{
	if (!is_candidate(name))
		return NULL;
	return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
}
