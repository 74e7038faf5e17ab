/*
 * dynlib.c - load a shared library when first needed (see dynlib.h).
 */
#include "libcore/base/dynlib.h"

#include <dlfcn.h>
#include <pthread.h>

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

/* Resolves every slot from h, the first slot last (it says "loaded"). */
static struct cq_error *resolve(void *h, const char *soname, const struct cq_dynlib_sym *syms,
                                size_t n)
{
	for (size_t i = n; i-- > 0;) {
		void *f = dlsym(h, syms[i].name);
		if (!f) {
			for (size_t k = 0; k < n; k++)
				*syms[k].slot = NULL;
			return cq_error_create(CQ_ERR_IO, "%s has no %s", soname, syms[i].name);
		}
		if (i == 0)
			__atomic_store_n(syms[0].slot, f, __ATOMIC_RELEASE);
		else
			*syms[i].slot = f;
	}
	return NULL;
}

struct cq_error *cq_dynlib_load(const char *soname, const struct cq_dynlib_sym *syms, size_t n)
{
	if (n == 0 || __atomic_load_n(syms[0].slot, __ATOMIC_ACQUIRE))
		return NULL; /* loaded before */
	pthread_mutex_lock(&load_lock);
	struct cq_error *err = NULL;
	if (!*syms[0].slot) { /* not loaded by a thread that held the lock before us */
		void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			const char *why = dlerror();
			err = cq_error_create(CQ_ERR_IO, "cannot load %s: %s", soname,
			                      why ? why : "not found");
		} else if ((err = resolve(h, soname, syms, n))) {
			dlclose(h);
		}
		/* Otherwise kept for the life of the process: the slots point into it. */
	}
	pthread_mutex_unlock(&load_lock);
	return err;
}
