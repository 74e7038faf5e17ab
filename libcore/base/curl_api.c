/*
 * curl_api.c - libcurl's functions, resolved on first use (see curl_api.h).
 */
#include "libcore/base/curl_api.h"

#include <stdbool.h>

#include "libcore/base/dynlib.h"

static struct cq_curl_api api;

/* Each field of api with the name it is resolved by. */
static const struct cq_dynlib_sym syms[] = {
    {"curl_global_init", (void **)&api.global_init},
    {"curl_global_cleanup", (void **)&api.global_cleanup},
    {"curl_easy_init", (void **)&api.easy_init},
    {"curl_easy_cleanup", (void **)&api.easy_cleanup},
    {"curl_easy_setopt", (void **)&api.easy_setopt},
    {"curl_easy_perform", (void **)&api.easy_perform},
    {"curl_easy_getinfo", (void **)&api.easy_getinfo},
    {"curl_easy_strerror", (void **)&api.easy_strerror},
    {"curl_easy_escape", (void **)&api.easy_escape},
    {"curl_free", (void **)&api.free},
};

/* A field added to the table without a name here would stay NULL. */
_Static_assert(sizeof(syms) / sizeof(syms[0]) == sizeof(api) / sizeof(void (*)(void)),
               "every field of struct cq_curl_api has its entry in syms");

struct cq_error *cq_curl_api(const struct cq_curl_api **out)
{
	*out = NULL;
	struct cq_error *err = cq_dynlib_load("libcurl.so.4", syms, sizeof(syms) / sizeof(syms[0]));
	if (!err)
		*out = &api;
	return err;
}
