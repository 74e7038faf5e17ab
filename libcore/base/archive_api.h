/*
 * archive_api.h - libarchive, loaded when first needed, not at start.
 *
 * libarchive decompresses a compressed core that is not seekable zstd
 * (libcore/model/source.c): xz, lz4, gzip, bzip2 and a single zstd frame.  Linked,
 * it maps libxml2, two ICU libraries, libstdc++, nettle, acl and lz4 into
 * every coreq process: 1.6 ms more at each start, for every command, even
 * the many that never see a compressed core.  So it is loaded with
 * cq_dynlib_load (libcore/base/dynlib.h) the first time one is needed, and
 * called through one table of function pointers.  The fields are typed with
 * libarchive's own declarations, so every call is checked at compile time.
 */
#ifndef CQ_ARCHIVE_API_H
#define CQ_ARCHIVE_API_H

#include <archive.h>
#include <archive_entry.h>

#include "libcore/base/error.h"

/* Every libarchive function coreq calls: archive_NAME is the field NAME. */
struct cq_archive_api {
	__typeof__(archive_error_string) *error_string;
	__typeof__(archive_set_error) *set_error;
	__typeof__(archive_filter_code) *filter_code;
	/* reading (source.c) */
	__typeof__(archive_read_new) *read_new;
	__typeof__(archive_read_support_filter_all) *read_support_filter_all;
	__typeof__(archive_read_support_format_raw) *read_support_format_raw;
	__typeof__(archive_read_support_format_empty) *read_support_format_empty;
	__typeof__(archive_read_open_fd) *read_open_fd;
	__typeof__(archive_read_next_header) *read_next_header;
	__typeof__(archive_read_data) *read_data;
	__typeof__(archive_read_free) *read_free;
};

/*
 * Loads libarchive.so.13 (once per process, safe from any thread; later
 * calls return at once) and sets *out to the table, every field set.  If
 * the library or one of its functions is missing, *out is NULL and the
 * error names what is missing (CQ_ERR_IO); a later call tries again.
 */
struct cq_error *cq_archive_api(const struct cq_archive_api **out);

#endif
