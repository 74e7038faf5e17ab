/*
 * line_files.h - the file table of one .debug_line program header: for
 * each file number, the index of its directory entry (and, before DWARF 5,
 * its name as written).
 *
 * libdw 0.188 hands out a line-table file only as one joined path (its
 * directory entry, '/', its name), but a debugger prints a file by the
 * entry's directory index: gdb joins the directory when the entry names
 * one, and before DWARF 5 prints the bare name for directory 0 (the unit's
 * DW_AT_comp_dir).  The symbolizer needs that index to print file names as
 * gdb does (see cq_line_files_display in symbolizer.c's use), and libdw has
 * no call that gives it, so this reads the header itself.
 *
 * The section is untrusted input: every read is bounds checked, only the
 * header at the given offset is read, and the table holds at most one file
 * per byte of header.  Strings are not copied: a name points into the
 * section, which must outlive the table.
 */
#ifndef CQ_LINE_FILES_H
#define CQ_LINE_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

struct cq_line_files {
	uint16_t version; /* 2 to 5 */
	/*
	 * Indexed by DWARF file number as the line program and DW_AT_call_file
	 * use it (and as libdw's Dwarf_Files is indexed): from 0 in DWARF 5,
	 * from 1 before (entry 0 then unused, dir 0 and name NULL).
	 */
	size_t n;
	uint64_t *dir;
	const char *const *name; /* the name as written before DWARF 5; NULL in DWARF 5 */
};

/*
 * Reads the header at offset of a little-endian .debug_line section.
 * CQ_ERR_FORMAT when it is damaged or of a version this does not read,
 * CQ_ERR_NOMEM when out of memory.  *out is left empty on error.
 */
struct cq_error *cq_line_files_parse(const uint8_t *section, size_t len, uint64_t offset,
                                     struct cq_line_files *out);

void cq_line_files_free(struct cq_line_files *f);

/*
 * The file as gdb 13's `bt` prints it.  path is libdw's joined path of file
 * number index (dwarf_filesrc), unit_name and comp_dir the unit's
 * DW_AT_name and DW_AT_comp_dir (either may be NULL); f may be NULL when the
 * header could not be read, and path is then returned.  The answer is one of
 * path, the entry's own name and unit_name:
 *   - before DWARF 5, a relative name of directory 0 is printed bare (gdb
 *     joins only a directory the entry names, and entry 0 is the unit's);
 *   - otherwise the joined path, as libdw gives it;
 *   - an absolute result that is comp_dir/unit_name is printed as unit_name
 *     (gdb's primary source file, named as the unit names it).
 */
const char *cq_line_files_display(const struct cq_line_files *f, size_t index, const char *path,
                                  const char *unit_name, const char *comp_dir);

#endif
