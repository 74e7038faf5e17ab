/*
 * gopclntab.h - the functions of a Go program, named from its .gopclntab,
 * the table the Go runtime itself reads to print its tracebacks.
 *
 * Every Go binary keeps .gopclntab, stripped or not (`-ldflags=-s -w` and
 * Debian's dh_strip remove .symtab and DWARF, not it): where the ELF symbol
 * table is gone, the symbolizer names a Go function from here, as Go prints
 * it (`runtime.raise`, not the symbol table's `runtime.raise.abi0`).
 *
 * Formats read (the header's magic): Go 1.2-1.15 (0xfffffffb), 1.16-1.17
 * (0xfffffffa), 1.18-1.19 (0xfffffff0) and 1.20 on (0xfffffff1), little
 * endian, 8-byte pointers; file and line from 1.16 on.  The section is untrusted input like the
 * core: every offset is bounds checked, a table whose entries do not ascend ends where they stop,
 * and a name is read only inside its name table.
 */
#ifndef CQ_GOPCLNTAB_H
#define CQ_GOPCLNTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

/* The table over a section's bytes (not copied: they must outlive it). */
struct cq_gopclntab {
	const uint8_t *data;
	size_t len;
	uint32_t magic;
	uint64_t text_start; /* 1.18 on: function entries are offsets from it */
	uint64_t nfunc;
	size_t ftab;         /* offset of the function table */
	size_t names;        /* offset of the function names (1.16 on; 1.2: the table itself) */
	size_t funcdata;     /* offset _func records are relative to */
	unsigned entry_size; /* bytes of one function table entry: 8 (1.18 on) or 16 */
	/* The line tables (1.16 on; 0: none): cutab, filetab, pctab offsets, pc quantum */
	size_t cutab, filetab, pctab;
	unsigned quantum;
	/* go:func.* (the inline trees), from cq_gopclntab_set_gofunc; NULL: not known */
	const uint8_t *gofunc;
	size_t gofunc_len;
};

/* One frame at an address: a function, and its file and line there (NULL, 0: unknown). */
struct cq_gopclntab_frame {
	const char *function, *file;
	int line;
};

/*
 * Reads the header of a .gopclntab (its bytes, len of them).  false: not a
 * table of a format read here (*t is then unusable).
 */
bool cq_gopclntab_init(struct cq_gopclntab *t, const uint8_t *data, size_t len);

/*
 * The name of the function holding addr (a link-time address) and its entry
 * address in *entry; NULL when no function of the table holds it.  The name
 * points into the section's bytes and is NUL-terminated there.
 */
const char *cq_gopclntab_find(const struct cq_gopclntab *t, uint64_t addr, uint64_t *entry);

/*
 * Function i's name (i < t->nfunc), NUL-terminated in the section's bytes;
 * NULL when unreadable.  With cq_gopclntab_entry, a walk of i finds a
 * function by name in a stripped program.
 */
const char *cq_gopclntab_name(const struct cq_gopclntab *t, uint64_t i);

/*
 * The file and line of addr (a link-time address; pc - 1 for a return
 * address, as Go's traceback looks it up) from the function's pcfile and
 * pcln tables, as `go tool addr2line` and the runtime's traceback give
 * them; false when the table (1.16 on) has none.  *file points into the
 * section's bytes.
 */
bool cq_gopclntab_line(const struct cq_gopclntab *t, uint64_t addr, const char **file, int *line);

/*
 * Gives t the bytes of go:func.* (moduledata.gofunc on, len of them: where
 * the inline trees are), so cq_gopclntab_frames can expand inlined calls.
 */
void cq_gopclntab_set_gofunc(struct cq_gopclntab *t, const uint8_t *gofunc, size_t len);

/*
 * The frames at addr (a link-time address; pc - 1 for a return address), as
 * Go's traceback prints them: the calls inlined there, innermost first
 * (Go 1.18/1.19's inline tree, when the gofunc bytes are known), then the
 * function itself, each with its file and line; at most cap of them, 0 when
 * no function of the table holds addr.  Names and files point into the
 * section's bytes.
 */
size_t cq_gopclntab_frames(const struct cq_gopclntab *t, uint64_t addr,
                           struct cq_gopclntab_frame *out, size_t cap);

/*
 * The bytes the function holding addr (a link-time address) keeps on the
 * stack below its return address at addr, from its pcsp table: what Go's
 * traceback adds to a frame's sp to find its caller's return address.
 * False when the table (1.16 on) has none.
 */
bool cq_gopclntab_frame_size(const struct cq_gopclntab *t, uint64_t addr, uint64_t *size);

/* Function i's entry address (i < t->nfunc; i == nfunc: the end of the last); false if unreadable.
 */
bool cq_gopclntab_entry(const struct cq_gopclntab *t, uint64_t i, uint64_t *entry);

#endif
