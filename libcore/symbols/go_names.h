/*
 * go_names.h - Go function names as Go's own traceback prints them.
 *
 * A Go program's symbol table (and so its frames) spells some functions
 * otherwise than the runtime does when it prints a stack:
 *
 *   - assembly functions and their ABI wrappers carry the ABI as a suffix:
 *     `runtime.raise.abi0`, `runtime.sigtramp.abi0`, `x.F.abiinternal`;
 *     the traceback (and gdb, dlv) print `runtime.raise`.
 *   - a generic function's instantiation names its shape types:
 *     `main.pick[go.shape.int_0]`, `main.pick[go.shape.int_0].func1`; the
 *     traceback prints `main.pick[...]` and `main.pick[...].func1`
 *     (runtime.FuncForPC(pc).Name() says the same).
 *
 * Closures (`main.main.func1`) and methods (`main.(*T).M`) are spelled
 * alike in both and stay as they are.
 */
#ifndef CQ_GO_NAMES_H
#define CQ_GO_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Go's printed name for a symbol name: true, with the name in out (cap
 * bytes, NUL-terminated, cut to fit), when it differs from name; false (out
 * untouched) when name is already how Go prints it or is no Go name.  Only
 * Go's own spellings are rewritten: a C++ name (`operator[]`, `f[abi:cxx11]`)
 * never changes.
 */
bool cq_name_go_printed(const char *name, char *out, size_t cap);

#endif
