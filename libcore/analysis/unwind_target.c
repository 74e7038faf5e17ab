/*
 * unwind_target.c - the core as the unwinder sees it (struct
 * cq_unwind_target, unwind/unwind.h): memory reads, executable test, stack
 * bounds, and each module's CFI table, kept on the module.  Tables come
 * from the cache when it holds one for the build-id, the very files this
 * run uses (libcore/symbols/provenance.h) and the format version.
 * Otherwise the module's .eh_frame (plus .debug_frame of its debuginfo) is
 * compiled a row at a time as the walks meet its pcs (cq_cfi_lazy), on top
 * of the partial table the cache may hold, and stored back when it grew:
 * the first core of a binary pays for the rows it visits, not the whole
 * module (`coreq cache warm` compiles complete tables).
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
#include "libcore/symbols/provenance.h"
#include "libcore/model/module.h"
#include "libcore/analysis/stacktrace.h"
#include "libcore/base/regular_file.h"

struct module_cfi {
	struct cq_module *mod;
	const struct cq_core_target *ctx;
	struct cq_provenance prov;  /* the cache key: build-id and the files used */
	struct cq_cfi_table *table; /* a complete table, from the cache */
	struct cq_cfi_lazy *lazy;   /* else rows compiled as met; NULL: no usable CFI */
	Elf *debug_elf;             /* the lazy table's debuginfo, once needed */
	int debug_fd;
	struct cq_error *error; /* why the table could not be built, if it failed */
};

static void module_cfi_free(void *p)
{
	struct module_cfi *m = p;
	cq_cfi_table_free(m->table);
	cq_cfi_lazy_free(m->lazy);
	if (m->debug_elf && m->debug_elf != m->mod->elf)
		elf_end(m->debug_elf);
	if (m->debug_fd >= 0)
		close(m->debug_fd);
	cq_error_free(m->error);
	cq_provenance_free(&m->prov);
	free(m);
}

/* The table the cache holds for key, complete or partial, or NULL. */
static struct cq_cfi_table *cached_table(struct cq_cache *cache, struct cq_cache_key *key,
                                         unsigned nregs)
{
	size_t len;
	uint8_t *blob = cache ? cq_cache_get_table(cache, key, CQ_CFI_TABLE_VERSION, &len) : NULL;
	if (!blob)
		return NULL;
	struct cq_cfi_table *table = NULL;
	cq_error_free(cq_cfi_table_deserialize(blob, len, &table));
	free(blob);
	if (table && table->nregs == nregs)
		return table;
	if (!table)
		cq_cache_reject(cache); /* damaged: compiled afresh */
	cq_cfi_table_free(table);       /* damaged or for another architecture */
	return NULL;
}

/* The module's debuginfo, opened the first time its .debug_frame is needed. */
static void *open_debug_elf(void *arg)
{
	struct module_cfi *m = arg;
	struct cq_module *mod = m->mod;
	char *path = mod->is_vdso ? NULL : cq_debuginfo_find(mod, m->ctx->options->debug_dirs);
	if (path && (!mod->file_path || strcmp(path, mod->file_path) != 0)) {
		m->debug_fd = cq_open_regular(path);
		if (m->debug_fd >= 0)
			m->debug_elf = elf_begin(m->debug_fd, ELF_C_READ_MMAP, NULL);
	} else if (path) {
		m->debug_elf = mod->elf;
	}
	free(path);
	return m->debug_elf;
}

/*
 * The module's table: complete from the cache, else compiled as the walk
 * meets its pcs, on top of the rows the cache holds.
 */
static void load_module(struct cq_core_target *ctx, struct cq_module *mod, struct module_cfi *m)
{
	unsigned nregs = ctx->core->arch->nregs;
	struct cq_cache *cache = ctx->options->cache;
	if (cache)
		cq_provenance_find(&m->prov, mod, ctx->options->debug_dirs);
	struct cq_cfi_table *cached = cached_table(cache, &m->prov.key, nregs);
	if (cached && (cached->flags & CQ_CFI_TABLE_COMPLETE)) {
		m->table = cached;
		return;
	}
	if (!cached) /* a binary met for the first time: its symbols will be looked up next */
		cq_symbolizer_prefetch(ctx->symbolizer, mod);
	m->error = cq_cfi_lazy_create(mod->elf, open_debug_elf, m, nregs, cached, &m->lazy);
	if (m->error && m->error != &cq_error_nomem && cached) {
		cq_error_free(m->error); /* a partial table that cannot be extended: start over */
		m->error = cq_cfi_lazy_create(mod->elf, open_debug_elf, m, nregs, NULL, &m->lazy);
	}
	cq_cfi_table_free(cached);
}

static const struct cq_cfi_table *target_cfi_at(void *p, uint64_t pc, uint64_t *bias)
{
	struct cq_core_target *ctx = p;
	struct cq_module *mod = cq_core_module_at(ctx->core, pc);
	if (!mod || mod->status != CQ_MODULE_FOUND || !mod->elf)
		return NULL;
	struct module_cfi *m = mod->analysis;
	if (!m) {
		if (!(m = calloc(1, sizeof(*m)))) {
			ctx->out_of_memory = true;
			return NULL;
		}
		m->mod = mod;
		m->ctx = ctx;
		m->debug_fd = -1;
		mod->analysis = m;
		mod->analysis_free = module_cfi_free;
		load_module(ctx, mod, m);
		if (m->error == &cq_error_nomem)
			ctx->out_of_memory = true;
	}
	*bias = mod->bias;
	if (m->table || !m->lazy)
		return m->table;
	m->ctx = ctx; /* the module outlives this target: open_debug_elf needs the live one */
	struct cq_error *err;
	const struct cq_cfi_table *table = cq_cfi_lazy_at(m->lazy, pc - mod->bias, &err);
	if (err == &cq_error_nomem)
		ctx->out_of_memory = true;
	cq_error_free(err);
	return table;
}

void cq_core_target_store_tables(struct cq_core_target *ct)
{
	struct cq_cache *cache = ct->options->cache;
	for (size_t i = 0; cache && i < ct->core->nmodules; i++) {
		struct cq_module *mod = &ct->core->modules[i];
		struct module_cfi *m = mod->analysis_free == module_cfi_free ? mod->analysis : NULL;
		if (!m || !m->prov.identity || !cq_cfi_lazy_grew(m->lazy))
			continue;
		uint8_t *blob;
		size_t len;
		const struct cq_cfi_table *t = cq_cfi_lazy_table(m->lazy);
		if (!cq_cfi_table_serialize(t, &blob, &len)) {
			cq_cache_put_table(cache, &m->prov.key, CQ_CFI_TABLE_VERSION, t->nrows,
			                   blob, len);
			free(blob);
		}
	}
}

/* The core page holding addr, read into the page cache; NULL: read through the mapping. */
static const uint8_t *target_page(struct cq_core_target *ctx, uint64_t page_addr)
{
	size_t slot = (size_t)(page_addr / CQ_TARGET_PAGE_SIZE) % CQ_TARGET_PAGES;
	if (ctx->page_at[slot] == page_addr + 1)
		return ctx->page[slot];
	const struct cq_core *core = ctx->core;
	const struct cq_mem_segment *s = cq_mem_find(&ctx->core->mem, page_addr);
	if (!s || core->source.fd < 0 || s->data < core->image ||
	    s->data >= core->image + core->image_size || page_addr - s->start >= s->data_len ||
	    s->data_len - (page_addr - s->start) < CQ_TARGET_PAGE_SIZE)
		return NULL;
	uint64_t off = (uint64_t)(s->data - core->image) + (page_addr - s->start);
	if (off > core->image_size || core->image_size - off < CQ_TARGET_PAGE_SIZE ||
	    pread(core->source.fd, ctx->page[slot], CQ_TARGET_PAGE_SIZE, (off_t)off) !=
	        CQ_TARGET_PAGE_SIZE) {
		ctx->page_at[slot] = 0;
		return NULL;
	}
	ctx->page_at[slot] = page_addr + 1;
	return ctx->page[slot];
}

static bool target_read(void *p, uint64_t addr, void *buf, size_t len)
{
	struct cq_core_target *ctx = p;
	uint64_t page_addr = addr & ~(uint64_t)(CQ_TARGET_PAGE_SIZE - 1);
	if (len <= CQ_TARGET_PAGE_SIZE - (addr - page_addr)) {
		const uint8_t *page = target_page(ctx, page_addr);
		if (page) {
			memcpy(buf, page + (addr - page_addr), len);
			return true;
		}
	}
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
	memset(ct->page_at, 0, sizeof(ct->page_at));
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
