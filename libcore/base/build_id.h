/*
 * build_id.h - what a build-id may look like wherever it enters coreq as
 * text: lower- or upper-case hex of 2 to 128 digits (1 to 64 bytes, the
 * GNU build-id note's sizes in practice: 20 for SHA1, 16 for MD5/UUID).
 *
 * Build-ids read from a core's or an ELF file's note are bytes, bounded by
 * CQ_BUILD_ID_MAX, and hex-encoded by coreq itself.  A build-id read from a
 * database (a merged or handed-over one), an export or a command line is
 * text that may be anything, and is used as a cache key, a file name under
 * a debug directory and a debuginfod request: it must pass
 * cq_build_id_check first, so that "../../x" never becomes a path.
 *
 * Layer: base.
 */
#ifndef CQ_BUILD_ID_H
#define CQ_BUILD_ID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

#define CQ_BUILD_ID_HEX_MIN 2
#define CQ_BUILD_ID_HEX_MAX 128

/* True when s is 2 to 128 hex digits, an even number of them, and nothing else. */
bool cq_build_id_hex_valid(const char *s);

/*
 * NULL when s is a valid build-id (as above), else a CQ_ERR_FORMAT error
 * "bad build-id "…"" that quotes at most its first 40 bytes, escaped.
 */
struct cq_error *cq_build_id_check(const char *s);

/*
 * The bytes of a valid build-id s into out (cap bytes), their count in *len;
 * false (out untouched) when s is not valid or does not fit.
 */
bool cq_build_id_from_hex(const char *s, uint8_t *out, size_t cap, size_t *len);

#endif
