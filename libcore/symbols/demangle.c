/*
 * demangle.c - C++ and Rust symbol demangling (see demangle.h).
 *
 * A thin wrapper over libiberty's cplus_demangle in "auto" style, which tries
 * Rust first (legacy _ZN...17h<hash>E names overlap with the Itanium C++ ABI,
 * and v0 _R... names) and then the Itanium ABI.  Names come from symbol
 * tables and DWARF of files on disk, so they are bounded in length before
 * they reach the demangler; libiberty bounds its own recursion (lifted
 * for names short enough that their length bounds it, see cq_demangle).
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

/*
 * libiberty refuses a name of more than DEMANGLE_RECURSION_LIMIT (2048)
 * components; Boost.Asio's coroutine frames have such names (1,109 bytes:
 * async_result<use_awaitable_t<any_executor<…>>>::initiate…Frame.actor).
 * A name up to this long is tried again without that limit: its nesting,
 * and so the demangler's recursion, is bounded by its length (a 5 KiB
 * name of nothing but nesting takes under 1 MiB of stack).
 */
#define MAX_UNLIMITED_LEN 4096u

char *cq_demangle(const char *name)
{
	if (!is_candidate(name))
		return NULL;
	char *out = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
	if (!out && strnlen(name, MAX_UNLIMITED_LEN + 1) <= MAX_UNLIMITED_LEN)
		out = cplus_demangle(name,
		                     DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO | DMGL_NO_RECURSE_LIMIT);
	return out;
}

/* A compiler's clone suffix words: ".constprop.0", ".isra.0", ".part.0", ".lto_priv.0", ".cold". */
static bool clone_word(const char *w, size_t n)
{
	static const char *const words[] = {"constprop", "isra", "part", "lto_priv", "cold"};
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strlen(words[i]) == n && !memcmp(w, words[i], n))
			return true;
	return false;
}

size_t cq_name_unclone(const char *name)
{
	size_t len = strlen(name);
	for (;;) {
		size_t was = len;
		if (len && name[len - 1] == ']') { /* the demangler's " [clone .x.N]" */
			const char *open = memrchr(name, '[', len);
			if (open && open > name && open[-1] == ' ' && !strncmp(open, "[clone .", 8))
				len = (size_t)(open - 1 - name);
		} else { /* ".word" or ".word.N" at the end */
			size_t end = len;
			while (end && name[end - 1] >= '0' && name[end - 1] <= '9')
				end--;
			if (end < len && (end == 0 || name[--end] != '.'))
				return len; /* digits not after a dot: no suffix */
			size_t dot = end;
			while (dot && name[dot - 1] != '.')
				dot--;
			if (dot > 1 && clone_word(name + dot, end - dot))
				len = dot - 1;
		}
		if (len == was)
			return len;
	}
}
