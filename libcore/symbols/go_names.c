/*
 * go_names.c - Go function names as Go's traceback prints them (see
 * go_names.h).
 *
 * The rules are Go's own: cmd/internal/obj names an assembly function's
 * ABI0 symbol NAME.abi0 and an ABIInternal wrapper NAME.abiinternal (the
 * linker writes them so into .symtab); the runtime's funcNameForPrint
 * (runtime/symtab.go) prints a generic instantiation with its bracketed
 * type arguments, from the first '[' to the last ']', as "[...]".  The
 * shape types the compiler instantiates with are named go.shape.*, which
 * no C, C++ or Rust name contains.
 */
#include "libcore/symbols/go_names.h"

#include <stdio.h>
#include <string.h>

/* The ABI suffixes Go's toolchain appends to a symbol's name. */
static const char *const abi_suffixes[] = {".abi0", ".abiinternal"};

/* The length of name without an ABI suffix. */
static size_t without_abi(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(abi_suffixes) / sizeof(abi_suffixes[0]); i++) {
		size_t n = strlen(abi_suffixes[i]);
		if (len > n && memcmp(name + len - n, abi_suffixes[i], n) == 0)
			return len - n;
	}
	return len;
}

bool cq_name_go_printed(const char *name, char *out, size_t cap)
{
	if (!name || cap == 0)
		return false;
	size_t len = without_abi(name, strlen(name));
	const char *open = strstr(name, "[go.shape.");
	const char *close = open ? strrchr(name, ']') : NULL;
	if (open && (!close || close < open || (size_t)(close - name) >= len))
		open = NULL;
	if (!open && len == strlen(name))
		return false;
	if (!open) {
		snprintf(out, cap, "%.*s", (int)len, name);
		return true;
	}
	size_t tail = len - (size_t)(close + 1 - name);
	snprintf(out, cap, "%.*s[...]%.*s", (int)(open - name), name, (int)tail, close + 1);
	return true;
}
