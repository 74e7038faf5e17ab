/*
 * curl_api.h - libcurl, loaded when first needed, not at start.
 *
 * libcurl pulls in some forty libraries (TLS, Kerberos, LDAP, ...) whose
 * loading costs about 6 ms at every process start, for every command,
 * though only the ones that talk HTTP need it (`coreq push`).  So it is
 * loaded with cq_dynlib_load (libcore/base/dynlib.h) the first time one is
 * needed, and called through this one table of function pointers: the one
 * libcurl loader of coreq.  The fields are typed with libcurl's own
 * declarations, so every call is checked at compile time.
 */
#ifndef CQ_CURL_API_H
#define CQ_CURL_API_H

#include <curl/curl.h>

#include "libcore/base/error.h"

/* Every libcurl function coreq calls: curl_NAME is the field NAME. */
struct cq_curl_api {
	__typeof__(curl_global_init) *global_init;
	__typeof__(curl_global_cleanup) *global_cleanup;
	__typeof__(curl_easy_init) *easy_init;
	__typeof__(curl_easy_cleanup) *easy_cleanup;
	__typeof__(curl_easy_setopt) *easy_setopt;
	__typeof__(curl_easy_perform) *easy_perform;
	__typeof__(curl_easy_getinfo) *easy_getinfo;
	__typeof__(curl_easy_strerror) *easy_strerror;
	__typeof__(curl_easy_escape) *easy_escape;
	__typeof__(curl_free) *free;
};

/*
 * Loads libcurl.so.4 (once per process, safe from any thread; later calls
 * return at once) and sets *out to the table, every field set.  If the
 * library or one of its functions is missing, *out is NULL and the error
 * names what is missing (CQ_ERR_IO); a later call tries again.
 */
struct cq_error *cq_curl_api(const struct cq_curl_api **out);

#endif
