/*
 * symbol_blob: the row format of the symbol cache (the frames one address
 * symbolizes to), encoded when a lookup is stored and decoded, strictly,
 * when it is read back.  A cache file is input like a core: the decoder
 * checks every count, flag, length and terminator and a CRC-32 over the
 * whole row, and rejects the row rather than read past it.
 */
#ifndef CQ_SYMBOL_BLOB_H
#define CQ_SYMBOL_BLOB_H

#include <stddef.h>
#include <stdint.h>

#include "libcore/symbols/symbolizer.h"

/* The cache's `format` column for rows written by this codec. */
/* 4: source files named as gdb names them (line_files.h); 5: names past
 * libiberty's recursion limit demangled (demangle.c); 6: functions named by
 * their DWARF subprogram, the symbol table's name kept beside (symbolizer.h);
 * 7: the inline frames of gcc LTO units, whose abstract origins lie in other
 * units (scope_index.h); 8: Go functions named from .gopclntab (gopclntab.h), as Go
 * prints them, where the symbol table is gone or says `.abi0`; 9: their file and
 * line from .gopclntab too, where no DWARF covers them (a stripped Go program);
 * 10: and the calls inlined there, from its inline tree */
#define CQ_SYMBOL_BLOB_FORMAT 10
/* Longest function or file name kept (longer ones are cut). */
#define CQ_SYMBOL_BLOB_MAX_STRING (64u * 1024u)

/* A malloc'd blob of frames[0..n) (1 <= n <= 255); NULL when out of memory. */
uint8_t *cq_symbol_blob_encode(const struct cq_symbol_frame *frames, size_t n, size_t *len);

/*
 * Decodes blob into frames[0..max); the names point into blob.  Returns the
 * number of frames, or 0 when the blob is malformed in any way.
 */
size_t cq_symbol_blob_decode(const uint8_t *blob, size_t len, struct cq_symbol_frame *frames,
                             size_t max);

#endif
