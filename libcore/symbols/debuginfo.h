/*
 * debuginfo.h - find the separate debuginfo file of a module.
 *
 * Search order, each candidate accepted only if its build-id matches the
 * module's: the module file itself when it carries .debug_info; every
 * --debug-dir D as D/.build-id/xx/rest.debug; /usr/lib/debug/.build-id/...;
 * then the .gnu_debuglink name next to the file, in its .debug/ directory,
 * and under /usr/lib/debug/<dir>/ (debuglink candidates are checked by CRC
 * when the module has no build-id; for a module found under --sysroot they
 * are looked for inside the sysroot, /usr/lib/debug/<dir>/ too).  Used by both the CFI table
 * compiler
 * (.debug_frame) and the symbolizer (DWARF lines and inlines).
 */
#ifndef CQ_DEBUGINFO_H
#define CQ_DEBUGINFO_H

#include <stdbool.h>

#include "libcore/base/error.h"

struct cq_module;

/*
 * Returns a malloc'd path of the debuginfo file for mod, or NULL when there
 * is none.  debug_dirs is NULL-terminated (may be NULL).  The module's own
 * file is returned as mod->file_path, unless under --sysroot links led to
 * it: then as the file was resolved inside the sysroot.
 */
char *cq_debuginfo_find(const struct cq_module *mod, const char *const *debug_dirs);

/*
 * The debuginfo file for a build-id given as text (a stored one, say) in the
 * build-id trees of debug_dirs (D/.build-id/xx/rest.debug), accepted only
 * when it carries that build-id; NULL when there is none, or when hex is not
 * a valid build-id (libcore/base/build_id.h) of at least two bytes, which
 * never becomes part of a path.
 */
char *cq_debuginfo_find_by_build_id(const char *hex, const char *const *debug_dirs);

/* True when path is a regular ELF file carrying the build-id hex (a valid one). */
bool cq_debuginfo_has_build_id(const char *path, const char *hex);

#endif
