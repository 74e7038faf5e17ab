/*
 * unwind_target.c - the core as the unwinder sees it (struct
 * cq_unwind_target, unwind/unwind.h): memory reads, executable test, stack
 * bounds, and each module's CFI table, compiled on first use and kept on the
 * module.  Tables come from the cache when it holds one for the build-id
 * and format version; otherwise they are compiled from the module's
 * .eh_frame (plus .debug_frame of its debuginfo) and stored back.
 */
#include "libcore/analysis/unwind_target.h"

#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcore/db/cache.h"
#include "libcore/symbols/symbolizer.h"
#include "libcore/model/core.h"
#include "libcore/symbols/debuginfo.h"
#include "libcore/model/module.h"
#include "libcore/analysis/stacktrace.h"
#include "libcore/base/regular_file.h"

struct module_cfi {
	struct cq_cfi_table *table; /* NULL: the module has no usable CFI */
	struct cq_error *error;     /* why the table could not be built, if it failed */
};

static void module_cfi_free(void *p)
{
	struct module_cfi *m = p;
	cq_cfi_table_free(m->table);
	cq_error_free(m->error);
	free(m);
}

/* Compiles the module's table from its file and its debuginfo's .debug_frame. */
static struct cq_cfi_table *compile_table(struct cq_module *mod, const struct cq_arch *arch,
                                          const char *const *debug_dirs, struct cq_error **error)
{
	Elf *debug_elf = NULL;
	int debug_fd = -1;
	char *debug_path = mod->is_vdso ? NULL : cq_debuginfo_find(mod, debug_dirs);
	if (debug_path && (!mod->file_path || strcmp(debug_path, mod->file_path) != 0)) {
		debug_fd = cq_open_regular(debug_path);
		if (debug_fd >= 0)
			debug_elf = elf_begin(debug_fd, ELF_C_READ_MMAP, NULL);
	} else if (debug_path) {
		debug_elf = mod->elf;
	}
	struct cq_cfi_table *table = NULL;
	*error = cq_cfi_table_build(mod->elf, debug_elf, arch->nregs, &table);
	if (debug_elf && debug_elf != mod->elf)
		elf_end(debug_elf);
	if (debug_fd >= 0)
		close(debug_fd);
	free(debug_path);
	return table;
}

static struct cq_cfi_table *load_table(struct cq_core_target *ctx, struct cq_module *mod,
                                       struct cq_error **error)
{
	const struct cq_arch *arch = ctx->core->arch;
	struct cq_cache *cache = ctx->options->cache;
	char id[2 * CQ_BUILD_ID_MAX + 1];
	cq_module_build_id_hex(mod, id, sizeof(id));
	struct cq_cfi_table *table = NULL;
	if (cache && id[0]) {
		size_t len;
		uint8_t *blob = cq_cache_get_table(cache, id, CQ_CFI_TABLE_VERSION, &len);
		if (blob) {
			struct cq_error *err = cq_cfi_table_deserialize(blob, len, &table);
			cq_error_free(err);
			free(blob);
			if (table && table->nregs == arch->nregs)
				return table;
			if (!table)
				cq_cache_reject(cache); /* damaged: rebuilt below */
			cq_cfi_table_free(table);       /* damaged or for another architecture */
			table = NULL;
		}
	}
	/* A binary met for the first time: its symbols will be looked up next. */
	cq_symbolizer_prefetch(ctx->symbolizer, mod);
	table = compile_table(mod, arch, ctx->options->debug_dirs, error);
	if (table && cache && id[0]) {
		uint8_t *blob;
		size_t len;
		if (!cq_cfi_table_serialize(table, &blob, &len)) {
			cq_cache_put_table(cache, id, CQ_CFI_TABLE_VERSION, table->nrows, blob,
			                   len);
			free(blob);
		}
	}
	return table;
}

static const struct cq_cfi_table *target_cfi_at(void *p, uint64_t pc, uint64_t *bias)
{
	struct cq_core_target *ctx = p;
	struct cq_module *mod = cq_core_module_at(ctx->core, pc);
	if (!mod || mod->status != CQ_MODULE_FOUND || !mod->elf)
		return NULL;
	if (!mod->analysis) {
		struct module_cfi *m = calloc(1, sizeof(*m));
		if (!m) {
			ctx->out_of_memory = true;
			return NULL;
		}
		m->table = load_table(ctx, mod, &m->error);
		if (m->error == &cq_error_nomem)
			ctx->out_of_memory = true;
		mod->analysis = m;
		mod->analysis_free = module_cfi_free;
	}
	*bias = mod->bias;
	return ((struct module_cfi *)mod->analysis)->table;
}

static bool target_read(void *p, uint64_t addr, void *buf, size_t len)
{
	struct cq_core_target *ctx = p;
	return cq_mem_read(&ctx->core->mem, addr, buf, len);
}

static bool target_is_code(void *p, uint64_t addr)
{
	struct cq_core_target *ctx = p;
	const struct cq_mem_segment *s = cq_mem_find(&ctx->core->mem, addr);
	return s && (s->flags & CQ_MEM_EXEC);
}

static bool target_stack_bounds(void *p, uint64_t sp, uint64_t *lo, uint64_t *hi)
{
	struct cq_core_target *ctx = p;
	const struct cq_mem_segment *s = cq_mem_find(&ctx->core->mem, sp);
	if (!s)
		return false;
	*lo = s->start;
	*hi = s->end;
	return true;
}

static const struct cq_unwind_target_ops target_ops = {
    .read = target_read,
    .cfi_at = target_cfi_at,
    .is_code = target_is_code,
    .stack_bounds = target_stack_bounds,
};

void cq_core_target_init(struct cq_core_target *ct, struct cq_core *core,
                         const struct cq_stack_options *o)
{
	ct->core = core;
	ct->options = o;
	ct->symbolizer = NULL;
	ct->out_of_memory = false;
	ct->target.ops = &target_ops;
	ct->target.ctx = ct;
	ct->target.arch = core->arch;
	ct->target.return_address_mask = core->pac_insn_mask;
}

const struct cq_error *cq_core_target_cfi_error(const struct cq_module *mod)
{
	const struct module_cfi *m = mod->analysis;
	return mod->analysis_free == module_cfi_free && m ? m->error : NULL;
}
