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
