/*
 * dynlib.h - shared libraries loaded when first needed, not at start.
 *
 * libcurl (coreq push) and libdebuginfod (--debuginfod) pull in some forty
 * libraries (TLS, Kerberos, LDAP, ...) whose loading and relocation cost
 * about 6 ms at every process start: more than a warm `coreq stack` of a
 * small core.  libarchive (decompressing a compressed core, compressing the
 * core the hook stores; see archive_api.h) brings libxml2, ICU, libstdc++,
 * nettle and acl: 1.6 ms more.  The code that uses them loads them with
 * cq_dynlib_load; every other command never maps them.  The headers are
 * the libraries' own, so the function pointer types are checked at compile
 * time.
 */
#ifndef CQ_DYNLIB_H
#define CQ_DYNLIB_H

#include <stddef.h>

#include "libcore/base/error.h"

/* One function to resolve: its name, and where its address goes. */
struct cq_dynlib_sym {
	const char *name;
	void **slot;
};

/*
 * Loads the library by soname (once per process, whichever threads ask;
 * later calls return at once) and fills every slot, syms[0]'s last: a
 * caller that sees it set sees them all.  A library or function that is
 * missing is an error naming it (CQ_ERR_IO), and every slot is then NULL.
 */
struct cq_error *cq_dynlib_load(const char *soname, const struct cq_dynlib_sym *syms, size_t n);

#endif
