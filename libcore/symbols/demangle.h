/*
 * demangle.h - C++ and Rust (legacy and v0) symbol demangling via libiberty.
 */
#ifndef CQ_DEMANGLE_H
#define CQ_DEMANGLE_H

/* A malloc'd demangled name, or NULL if name is not mangled (or on error). */
char *cq_demangle(const char *name);

#endif
