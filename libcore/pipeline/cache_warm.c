/*
 * cache_warm.c - compile a file's complete unwind table and Rust type index
 * into the cache (see cache_warm.h).
 */
#include "libcore/pipeline/cache_warm.h"

#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcore/base/arch.h"
#include "libcore/base/regular_file.h"
#include "libcore/db/cache.h"
#include "libcore/symbols/debuginfo.h"
#include "libcore/symbols/provenance.h"
#include "unwind/async/rust_index.h"
#include "unwind/cfi_table.h"

/* True if the cache holds a complete table for key already; its rows in *rows. */
static bool have_complete(struct cq_cache *cache, struct cq_cache_key *key, unsigned *rows)
{
	size_t len;
	uint8_t *blob = cq_cache_get_table(cache, key, CQ_CFI_TABLE_VERSION, &len);
	struct cq_cfi_table *t = NULL;
	if (blob)
		cq_error_free(cq_cfi_table_deserialize(blob, len, &t));
	free(blob);
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
	if (have_complete(cache, &prov.key, &r->rows)) {
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
		err = cq_rust_index_warm(&mod, debug_dirs, cache, &r->rust_types, &r->rust_cached);
	cq_module_destroy(&mod);
	return err;
}
