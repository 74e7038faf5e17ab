/*
 * dynlib.c - load a shared library when first needed (see dynlib.h).
 */
#include "libcore/base/dynlib.h"

#include <dlfcn.h>

struct cq_error *cq_dynlib_load(const char *soname, const struct cq_dynlib_sym *syms, size_t n)
{
	if (n > 0 && *syms[0].slot)
		return NULL; /* loaded before */
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *why = dlerror();
		return cq_error_create(CQ_ERR_IO, "cannot load %s: %s", soname,
		                       why ? why : "not found");
	}
	for (size_t i = 0; i < n; i++) {
		void *f = dlsym(h, syms[i].name);
		if (!f) {
			for (size_t k = 0; k < n; k++)
				*syms[k].slot = NULL;
			dlclose(h);
			return cq_error_create(CQ_ERR_IO, "%s has no %s", soname, syms[i].name);
		}
		*syms[i].slot = f;
	}
	/* Kept for the life of the process: the slots point into it. */
	return NULL;
}
