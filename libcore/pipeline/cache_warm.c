/*
 * cache_warm.c - compile a file's complete unwind table and every async
 * runtime's blobs into the cache (see cache_warm.h).
 */
#include "libcore/pipeline/cache_warm.h"

#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcore/base/arch.h"
#include "libcore/analysis/unwind_target.h"
#include "libcore/base/regular_file.h"
#include "libcore/db/cache.h"
#include "libcore/symbols/debuginfo.h"
#include "libcore/symbols/provenance.h"
#include "unwind/async/runtime.h"
#include "unwind/cfi_table.h"

/* True if the cache holds a complete table for key already; its rows in *rows. */
static bool have_complete(struct cq_cache *cache, struct cq_cache_key *key, unsigned nregs,
                          unsigned *rows)
{
	struct cq_cfi_table *t = cq_core_target_cached_table(cache, key, nregs);
	bool complete = t && (t->flags & CQ_CFI_TABLE_COMPLETE);
	if (complete)
		*rows = t->nrows;
	cq_cfi_table_free(t);
	return complete;
}

/* Compiles mod's complete table, .debug_frame of its debuginfo included, into the cache. */
static struct cq_error *warm_table(struct cq_module *mod, const struct cq_arch *arch,
                                   const char *const *debug_dirs, struct cq_cache *cache,
                                   struct cq_cache_warm_result *r)
{
	char *debug_path = cq_debuginfo_find(mod, debug_dirs);
	struct cq_provenance prov; /* the cache key: this file and its debuginfo */
	cq_provenance_init(&prov, mod, debug_path);
	if (have_complete(cache, &prov.key, arch->nregs, &r->rows)) {
		r->table_cached = true;
		free(debug_path);
		cq_provenance_free(&prov);
		return NULL;
	}
	int debug_fd = -1;
	Elf *debug_elf = NULL;
	if (debug_path && strcmp(debug_path, mod->file_path) != 0) {
		if ((debug_fd = cq_open_regular(debug_path)) >= 0)
			debug_elf = elf_begin(debug_fd, ELF_C_READ_MMAP, NULL);
	} else if (debug_path) {
		debug_elf = mod->elf;
	}
	r->debug_frame = debug_elf != NULL;
	free(debug_path);
	struct cq_cfi_table *t = NULL;
	struct cq_error *err = cq_cfi_table_build(mod->elf, debug_elf, arch->nregs, &t);
	if (debug_elf && debug_elf != mod->elf)
		elf_end(debug_elf);
	if (debug_fd >= 0)
		close(debug_fd);
	uint8_t *blob = NULL;
	size_t len;
	if (!err)
		err = cq_cfi_table_serialize(t, &blob, &len);
	if (!err) {
		r->rows = t->nrows;
		cq_cache_put_table(cache, &prov.key, CQ_CFI_TABLE_VERSION, t->nrows, blob, len);
	}
	cq_provenance_free(&prov);
	free(blob);
	cq_cfi_table_free(t);
	return err;
}

/* The one module `cache warm` looks at, as unwind/ sees a target (target.h). */
struct warm_target {
	struct cq_module *mod;
	const char *const *debug_dirs;
	struct cq_cache *cache;
	struct cq_provenance prov; /* made on first use */
	bool prov_made;
	bool dwarf_tried; /* its DWARF, opened on first use */
	int dwarf_fd;
	Elf *dwarf_elf;
	Dwarf *dwarf;
};

static struct Dwarf *warm_dwarf(void *p, size_t m)
{
	(void)m;
	struct warm_target *w = p;
	if (w->dwarf_tried)
		return w->dwarf;
	w->dwarf_tried = true;
	char *path = cq_debuginfo_find(w->mod, w->debug_dirs);
	if (path && w->mod->file_path && strcmp(path, w->mod->file_path) == 0)
		w->dwarf_elf = w->mod->elf;
	else if (path && (w->dwarf_fd = cq_open_regular(path)) >= 0)
		w->dwarf_elf = elf_begin(w->dwarf_fd, ELF_C_READ_MMAP, NULL);
	free(path);
	w->dwarf = w->dwarf_elf ? dwarf_begin_elf(w->dwarf_elf, DWARF_C_READ, NULL) : NULL;
	return w->dwarf;
}

static struct cq_cache_key *warm_key(struct warm_target *w)
{
	if (!w->prov_made) {
		cq_provenance_find(&w->prov, w->mod, w->debug_dirs);
		w->prov_made = true;
	}
	return &w->prov.key;
}

static uint8_t *warm_cache_get(void *p, size_t m, const struct cq_target_blob *blob, size_t *len)
{
	(void)m;
	struct warm_target *w = p;
	return cq_cache_get_blob(w->cache, warm_key(w), blob->runtime, blob->name, blob->format,
	                         len);
}

static void warm_cache_put(void *p, size_t m, const struct cq_target_blob *blob,
                           const uint8_t *data, size_t len)
{
	(void)m;
	struct warm_target *w = p;
	cq_cache_put_blob(w->cache, warm_key(w), blob->runtime, blob->name, blob->format, data,
	                  len);
}

static void warm_cache_reject(void *p)
{
	struct warm_target *w = p;
	cq_cache_reject(w->cache);
}

static size_t warm_find_symbols(void *p, size_t m, struct cq_target_symbol *q, size_t n)
{
	(void)m;
	struct warm_target *w = p;
	return cq_core_target_find_symbols(w->mod, q, n);
}

static const struct cq_unwind_target_ops warm_ops = {
    .find_symbols = warm_find_symbols,
    .dwarf = warm_dwarf,
    .cache_get = warm_cache_get,
    .cache_put = warm_cache_put,
    .cache_reject = warm_cache_reject,
};

/* mod's blobs of every async runtime (their warm hooks) into the cache. */
static struct cq_error *warm_runtimes(struct cq_module *mod, const struct cq_arch *arch,
                                      const char *const *debug_dirs, struct cq_cache *cache,
                                      struct cq_cache_warm_result *r)
{
	struct warm_target w = {
	    .mod = mod, .debug_dirs = debug_dirs, .cache = cache, .dwarf_fd = -1};
	struct cq_target_module view = cq_core_target_module_view(mod);
	struct cq_unwind_target t = {
	    .ops = &warm_ops, .ctx = &w, .arch = arch, .modules = &view, .nmodules = 1};
	struct cq_error *err = cq_async_warm(&t, 0, &r->runtimes, &r->runtimes_text);
	if (w.prov_made)
		cq_provenance_free(&w.prov);
	if (w.dwarf)
		dwarf_end(w.dwarf);
	if (w.dwarf_elf && w.dwarf_elf != mod->elf)
		elf_end(w.dwarf_elf);
	if (w.dwarf_fd >= 0)
		close(w.dwarf_fd);
	return err;
}

struct cq_error *cq_cache_warm(const char *path, const char *const *debug_dirs,
                               struct cq_cache *cache, struct cq_cache_warm_result *r)
{
	memset(r, 0, sizeof(*r));
	struct cq_module mod;
	struct cq_error *err = cq_module_open_elf(path, &mod);
	if (err)
		return err;
	GElf_Ehdr eh;
	const struct cq_arch *arch =
	    gelf_getehdr(mod.elf, &eh) ? cq_arch_from_machine(eh.e_machine) : NULL;
	cq_module_build_id_hex(&mod, r->build_id, sizeof(r->build_id));
	if (!arch)
		err = cq_error_create(CQ_ERR_UNSUPPORTED, "not an x86_64 or aarch64 ELF file");
	else if (!r->build_id[0])
		err = cq_error_create(CQ_ERR_UNSUPPORTED,
		                      "no build-id: the cache is keyed by build-id");
	if (!err)
		err = warm_table(&mod, arch, debug_dirs, cache, r);
	if (!err)
		err = warm_runtimes(&mod, arch, debug_dirs, cache, r);
	cq_module_destroy(&mod);
	return err;
}

void cq_cache_warm_result_free(struct cq_cache_warm_result *r)
{
	cq_stats_free(&r->runtimes);
	free(r->runtimes_text);
	r->runtimes_text = NULL;
}
