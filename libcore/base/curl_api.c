/*
 * curl_api.c - libcurl's functions, resolved on first use (see curl_api.h).
 */
#include "libcore/base/curl_api.h"

#include <pthread.h>
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

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static bool loaded; /* set (release) once every field of api is */

struct cq_error *cq_curl_api(const struct cq_curl_api **out)
{
	*out = NULL;
	if (!__atomic_load_n(&loaded, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&load_lock);
		struct cq_error *err = NULL;
		if (!loaded) {
			err = cq_dynlib_load("libcurl.so.4", syms, sizeof(syms) / sizeof(syms[0]));
			if (!err)
				__atomic_store_n(&loaded, true, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&load_lock);
		if (err)
			return err;
	}
	*out = &api;
	return NULL;
}
