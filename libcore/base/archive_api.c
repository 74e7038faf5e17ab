/*
 * archive_api.c - libarchive's functions, resolved on first use (see
 * archive_api.h).
 */
#include "libcore/base/archive_api.h"

#include <stdbool.h>

#include "libcore/base/dynlib.h"

static struct cq_archive_api api;

/* Each field of api with the name it is resolved by. */
static const struct cq_dynlib_sym syms[] = {
    {"archive_error_string", (void **)&api.error_string},
    {"archive_set_error", (void **)&api.set_error},
    {"archive_filter_code", (void **)&api.filter_code},
    {"archive_read_new", (void **)&api.read_new},
    {"archive_read_support_filter_all", (void **)&api.read_support_filter_all},
    {"archive_read_support_format_raw", (void **)&api.read_support_format_raw},
    {"archive_read_support_format_empty", (void **)&api.read_support_format_empty},
    {"archive_read_open_fd", (void **)&api.read_open_fd},
    {"archive_read_next_header", (void **)&api.read_next_header},
    {"archive_read_data", (void **)&api.read_data},
    {"archive_read_free", (void **)&api.read_free},
    {"archive_write_new", (void **)&api.write_new},
    {"archive_write_add_filter_zstd", (void **)&api.write_add_filter_zstd},
    {"archive_write_set_filter_option", (void **)&api.write_set_filter_option},
    {"archive_write_set_format_raw", (void **)&api.write_set_format_raw},
    {"archive_write_set_bytes_per_block", (void **)&api.write_set_bytes_per_block},
    {"archive_write_set_bytes_in_last_block", (void **)&api.write_set_bytes_in_last_block},
    {"archive_write_open2", (void **)&api.write_open2},
    {"archive_write_header", (void **)&api.write_header},
    {"archive_write_data", (void **)&api.write_data},
    {"archive_write_close", (void **)&api.write_close},
    {"archive_write_free", (void **)&api.write_free},
    {"archive_entry_new", (void **)&api.entry_new},
    {"archive_entry_set_pathname", (void **)&api.entry_set_pathname},
    {"archive_entry_set_filetype", (void **)&api.entry_set_filetype},
    {"archive_entry_set_perm", (void **)&api.entry_set_perm},
    {"archive_entry_free", (void **)&api.entry_free},
};

/* A field added to the table without a name here would stay NULL. */
_Static_assert(sizeof(syms) / sizeof(syms[0]) == sizeof(api) / sizeof(void (*)(void)),
               "every field of struct cq_archive_api has its entry in syms");

struct cq_error *cq_archive_api(const struct cq_archive_api **out)
{
	*out = NULL;
	struct cq_error *err =
	    cq_dynlib_load("libarchive.so.13", syms, sizeof(syms) / sizeof(syms[0]));
	if (!err)
		*out = &api;
	return err;
}
