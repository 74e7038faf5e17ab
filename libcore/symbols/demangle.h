/*
 * demangle.h - C++ and Rust (legacy and v0) symbol demangling via libiberty.
 */
#ifndef CQ_DEMANGLE_H
#define CQ_DEMANGLE_H

#include <stddef.h>

/* A malloc'd demangled name, or NULL if name is not mangled (or on error). */
char *cq_demangle(const char *name);

/*
 * The length of name without the clone suffixes compilers add, chained or
 * not: ".constprop.0", ".isra.0", ".part.0", ".lto_priv.0", ".cold" (with
 * or without a number), and the demangler's " [clone .constprop.0]".
 */
size_t cq_name_unclone(const char *name);

#endif
