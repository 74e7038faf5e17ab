/*
 * debug_image.h - a debuginfo file with its compressed DWARF inflated, for
 * libdw to read without inflating it again.
 *
 * Debian's -dbg packages compress their debug sections (SHF_COMPRESSED,
 * zlib).  libdw inflates every such section with zlib when it opens the
 * file, location lists and macros included; for libc's debuginfo that was
 * half of the time of a first core (perf, 11-thread core).  Here the
 * sections the symbolizer reads (.debug_info, _abbrev, _line, _str,
 * _rnglists, ...) are inflated with libdeflate, on up to two threads, straight
 * into an anonymous in-memory copy of the file (memfd), and the sections it
 * never reads (location lists, macros, pubnames) are left out (SHT_NOBITS).
 * The file's other sections, program and section headers are kept, so the
 * copy has the same build-id, symbols and addresses.
 *
 * The input is untrusted like any file: every header is checked through
 * libelf, every inflated size must be what the compression header says, and
 * anything unexpected (ELF32, another byte order, zstd, an inflate error, a
 * section over CQ_DEBUG_IMAGE_MAX_SECTION or claiming more than deflate's
 * 1032:1 can give, an image over CQ_DEBUG_IMAGE_MAX_TOTAL) gives the
 * original file back.  The copy's pages exist only as they are written.
 */
#ifndef CQ_DEBUG_IMAGE_H
#define CQ_DEBUG_IMAGE_H

#include <stdbool.h>

#define CQ_DEBUG_IMAGE_MAX_SECTION (1ull << 31)
#define CQ_DEBUG_IMAGE_MAX_TOTAL   (4ull << 30)

/*
 * A new fd of the inflated copy of the ELF file open at fd (which stays
 * open and unchanged), or -1 when the file has nothing to inflate or
 * cannot be rewritten: then use fd itself.  The sections are inflated on
 * `workers` threads (1 or 2), this one included.
 */
int cq_debug_image_inflate(int fd, unsigned workers);

#endif
