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

#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libcore/analysis/frame_list.h"
#include "libcore/db/cache.h"
#include "libcore/model/elf_symbols.h"
#include "libcore/symbols/symbolizer.h"
#include "libcore/model/core.h"
#include "libcore/base/elf_section.h"
#include "libcore/symbols/debuginfo.h"
#include "libcore/symbols/gopclntab.h"
#include "libcore/symbols/provenance.h"
#include "libcore/model/module.h"
#include "libcore/analysis/stacktrace.h"
#include "libcore/base/feed.h"
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

struct cq_cfi_table *cq_core_target_cached_table(struct cq_cache *cache, struct cq_cache_key *key,
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
	if (cache) {
		/* The symbolizer searched this module's files already: its identity serves. */
		const struct cq_provenance *known = cq_symbolizer_provenance(ctx->symbolizer, mod);
		if (known)
			cq_provenance_copy(&m->prov, known);
		else
			cq_provenance_find(&m->prov, mod, ctx->options->debug_dirs);
	}
	struct cq_cfi_table *cached = cq_core_target_cached_table(cache, &m->prov.key, nregs);
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

static void target_advise(void *p, const void *data, uint64_t len, int advice)
{
	struct cq_core_target *ctx = p;
	/* A kernel before 5.14 has no MADV_POPULATE_READ: it reads the pages ahead instead. */
	if (cq_core_advise(ctx->core, data, len, advice) != 0 && advice == MADV_POPULATE_READ)
		cq_core_advise(ctx->core, data, len, MADV_WILLNEED);
}

static void target_trim(void *p)
{
	struct cq_core_target *ctx = p;
	cq_core_trim(ctx->core);
}

static void *target_feed_start(void *p, const struct cq_unwind_span *spans, size_t n,
                               const struct cq_feed_words *words, size_t nwords)
{
	struct cq_core_target *ctx = p;
	struct cq_core *core = ctx->core;
	struct cq_feed_span *at = malloc((n ? n : 1) * sizeof(*at));
	struct cq_source_feed *feed = NULL;
	bool ok = at != NULL;
	for (size_t i = 0; ok && i < n; i++) {
		ok = spans[i].data >= core->image &&
		     spans[i].len <= core->image_size - (uint64_t)(spans[i].data - core->image);
		if (ok)
			at[i] = (struct cq_feed_span){(uint64_t)(spans[i].data - core->image),
			                              spans[i].len, spans[i].lead};
	}
	struct cq_error *err =
	    ok ? cq_source_feed_start(&core->source, at, n, words, nwords, &feed) : NULL;
	cq_error_free(err); /* no feed: the scan reads the image itself */
	free(at);
	return feed;
}

static const uint8_t *target_feed_next(void *feed, bool *none)
{
	return cq_source_feed_next(feed, none);
}

static void target_feed_stop(void *feed)
{
	cq_source_feed_stop(feed);
}

/*
 * The functions of q a Go program's .gopclntab names that its symbol tables
 * did not (a stripped Go program: `-ldflags=-s -w`, Debian's dh_strip): one
 * walk of the function table, each found at its entry plus the module's
 * bias, its size up to the next function's entry.
 */
/* mod's .gopclntab as a table over its file's bytes (gopclntab.h); false when it has none. */
static bool module_gopclntab(const struct cq_module *mod, struct cq_gopclntab *t)
{
	GElf_Shdr sh;
	Elf_Scn *scn =
	    mod->elf && !mod->is_vdso ? cq_elf_section(mod->elf, ".gopclntab", &sh) : NULL;
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
	return data && data->d_buf && cq_gopclntab_init(t, data->d_buf, data->d_size);
}

static void go_functions(const struct cq_module *mod, struct cq_target_symbol *q, size_t n)
{
	struct cq_gopclntab t;
	if (!module_gopclntab(mod, &t))
		return;
	size_t left = 0;
	for (size_t k = 0; k < n; k++)
		left += !q[k].found;
	for (uint64_t i = 0; i < t.nfunc && left; i++) {
		const char *name = cq_gopclntab_name(&t, i);
		uint64_t entry, next;
		if (!name || !cq_gopclntab_entry(&t, i, &entry) ||
		    !cq_gopclntab_entry(&t, i + 1, &next) || next < entry)
			continue;
		for (size_t k = 0; k < n; k++)
			if (!q[k].found && strcmp(q[k].name, name) == 0) {
				q[k] = (struct cq_target_symbol){.name = q[k].name,
				                                 .found = true,
				                                 .addr = entry + mod->bias,
				                                 .size = next - entry};
				left--;
			}
	}
}

size_t cq_core_target_find_symbols(const struct cq_module *mod, struct cq_target_symbol *q,
                                   size_t n)
{
	struct cq_symbol_query one[8]; /* one pass over the tables per 8 names */
	size_t found = 0;
	for (size_t at = 0; at < n; at += 8) {
		size_t k = n - at < 8 ? n - at : 8;
		for (size_t i = 0; i < k; i++)
			one[i] = (struct cq_symbol_query){.name = q[at + i].name,
			                                  .found = q[at + i].found,
			                                  .addr = q[at + i].addr,
			                                  .size = q[at + i].size};
		found += cq_elf_find_symbols(mod, one, k);
		for (size_t i = 0; i < k; i++)
			q[at + i] = (struct cq_target_symbol){.name = q[at + i].name,
			                                      .found = one[i].found,
			                                      .addr = one[i].addr,
			                                      .size = one[i].size};
	}
	if (found < n && mod->status == CQ_MODULE_FOUND) {
		go_functions(mod, q, n);
		found = 0;
		for (size_t i = 0; i < n; i++)
			found += q[i].found;
	}
	return found;
}

static size_t target_find_symbols(void *p, size_t m, struct cq_target_symbol *q, size_t n)
{
	struct cq_core_target *ctx = p;
	return cq_core_target_find_symbols(&ctx->core->modules[m], q, n);
}

static bool target_tls_prepare(void *p)
{
	struct cq_core_target *ctx = p;
	cq_tls_layout_load(ctx->core, &ctx->tls);
	cq_tls_recover_thread_pointers(ctx->core);
	return ctx->tls.from_libc;
}

static enum cq_target_tls target_tls_get(void *p, size_t t, uint32_t key, uint64_t *value)
{
	struct cq_core_target *ctx = p;
	switch (cq_tls_get_specific(ctx->core, &ctx->tls, &ctx->core->threads[t], key, value)) {
	case CQ_TLS_VALUE:
		return CQ_TARGET_TLS_VALUE;
	case CQ_TLS_NONE:
		return CQ_TARGET_TLS_NONE;
	case CQ_TLS_STALE:
		return CQ_TARGET_TLS_STALE;
	case CQ_TLS_UNREADABLE:
	default:
		return CQ_TARGET_TLS_UNREADABLE;
	}
}

static bool target_thread_has_tp(void *p, size_t t)
{
	struct cq_core_target *ctx = p;
	return ctx->core->threads[t].has_tp;
}

static const char *target_function_at(void *p, uint64_t pc, bool is_return_address)
{
	struct cq_core_target *ctx = p;
	const struct cq_symbol_frame *sf;
	if (!ctx->symbolizer)
		return NULL;
	size_t n = cq_symbolizer_lookup(ctx->symbolizer, pc, is_return_address, &sf);
	return n ? sf[n - 1].function : NULL;
}

static struct cq_error *target_add_frames(void *p, struct cq_frame_list *fl,
                                          const struct cq_unwind_frame *uf, int kind)
{
	struct cq_core_target *ctx = p;
	return cq_frame_list_add(fl, ctx->core, ctx->symbolizer, uf, (enum cq_frame_kind)kind);
}

struct Dwarf *cq_module_dwarf_open(struct cq_module_dwarf *d, const struct cq_module *mod,
                                   const char *const *debug_dirs)
{
	if (d->tried)
		return d->dwarf;
	d->tried = true;
	d->fd = -1;
	d->elf = NULL;
	d->dwarf = NULL;
	char *path = cq_debuginfo_find(mod, debug_dirs);
	if (path && mod->file_path && strcmp(path, mod->file_path) == 0)
		d->elf = mod->elf;
	else if (path && (d->fd = cq_open_regular(path)) >= 0)
		d->elf = elf_begin(d->fd, ELF_C_READ_MMAP, NULL);
	free(path);
	d->dwarf = d->elf ? dwarf_begin_elf(d->elf, DWARF_C_READ, NULL) : NULL;
	return d->dwarf;
}

void cq_module_dwarf_close(struct cq_module_dwarf *d, const struct cq_module *mod)
{
	if (!d->tried)
		return;
	if (d->dwarf)
		dwarf_end(d->dwarf);
	if (d->elf && d->elf != mod->elf)
		elf_end(d->elf);
	if (d->fd >= 0)
		close(d->fd);
	*d = (struct cq_module_dwarf){.fd = -1};
}

static struct Dwarf *target_dwarf(void *p, size_t m)
{
	struct cq_core_target *ctx = p;
	if (!ctx->dwarf || m >= ctx->core->nmodules)
		return NULL;
	return cq_module_dwarf_open(&ctx->dwarf[m], &ctx->core->modules[m],
	                            ctx->options->debug_dirs);
}

void cq_core_target_close_dwarf(struct cq_core_target *ct)
{
	for (size_t i = 0; ct->dwarf && i < ct->core->nmodules; i++)
		cq_module_dwarf_close(&ct->dwarf[i], &ct->core->modules[i]);
}

/* Module m's cache key (build-id and file identity), made on first use. */
static struct cq_cache_key *module_key(struct cq_core_target *ctx, size_t m)
{
	if (!ctx->options->cache || !ctx->provenance || m >= ctx->core->nmodules)
		return NULL;
	if (!ctx->provenance_made[m]) {
		const struct cq_module *mod = &ctx->core->modules[m];
		const struct cq_provenance *known = cq_symbolizer_provenance(ctx->symbolizer, mod);
		if (known)
			cq_provenance_copy(&ctx->provenance[m], known);
		else
			cq_provenance_find(&ctx->provenance[m], mod, ctx->options->debug_dirs);
		ctx->provenance_made[m] = true;
	}
	return &ctx->provenance[m].key;
}

static uint8_t *target_cache_get(void *p, size_t m, const struct cq_target_blob *blob, size_t *len)
{
	struct cq_core_target *ctx = p;
	struct cq_cache_key *key = module_key(ctx, m);
	return key ? cq_cache_get_blob(ctx->options->cache, key, blob->runtime, blob->name,
	                               blob->format, len)
	           : NULL;
}

static void target_cache_put(void *p, size_t m, const struct cq_target_blob *blob,
                             const uint8_t *data, size_t len)
{
	struct cq_core_target *ctx = p;
	struct cq_cache_key *key = module_key(ctx, m);
	if (key)
		cq_cache_put_blob(ctx->options->cache, key, blob->runtime, blob->name, blob->format,
		                  data, len);
}

static void target_cache_reject(void *p)
{
	struct cq_core_target *ctx = p;
	cq_cache_reject(ctx->options->cache);
}

/* A module's Go function table, for frame_size: read once (gopclntab.h). */
struct cq_target_gopclntab {
	bool tried, ok;
	struct cq_gopclntab table;
};

static bool target_frame_size(void *p, uint64_t pc, uint64_t *size)
{
	struct cq_core_target *ctx = p;
	ptrdiff_t m = cq_target_module_at(&ctx->target, pc);
	if (m < 0)
		return false;
	const struct cq_module *mod = &ctx->core->modules[m];
	struct cq_target_gopclntab *g = &ctx->gopcln[m];
	if (!g->tried) {
		g->tried = true;
		g->ok = module_gopclntab(mod, &g->table);
	}
	return g->ok && pc >= mod->bias && cq_gopclntab_frame_size(&g->table, pc - mod->bias, size);
}

static const struct cq_unwind_target_ops target_ops = {
    .read = target_read,
    .cfi_at = target_cfi_at,
    .is_code = target_is_code,
    .stack_bounds = target_stack_bounds,
    .advise = target_advise,
    .trim = target_trim,
    .feed_start = target_feed_start,
    .feed_next = target_feed_next,
    .feed_stop = target_feed_stop,
    .find_symbols = target_find_symbols,
    .tls_prepare = target_tls_prepare,
    .tls_get = target_tls_get,
    .thread_has_tp = target_thread_has_tp,
    .frame_size = target_frame_size,
    .function_at = target_function_at,
    .add_frames = target_add_frames,
    .dwarf = target_dwarf,
    .cache_get = target_cache_get,
    .cache_put = target_cache_put,
    .cache_reject = target_cache_reject,
};

struct cq_target_module cq_core_target_module_view(const struct cq_module *mod)
{
	return (struct cq_target_module){.handle = mod,
	                                 .name = mod->name,
	                                 .file_path = mod->file_path,
	                                 .start = mod->start,
	                                 .end = mod->end,
	                                 .bias = mod->bias,
	                                 .elf = mod->elf,
	                                 .found = mod->status == CQ_MODULE_FOUND,
	                                 .is_vdso = mod->is_vdso};
}

struct cq_error *cq_core_target_init(struct cq_core_target *ct, struct cq_core *core,
                                     const struct cq_stack_options *o,
                                     struct cq_symbolizer *symbolizer)
{
	memset(ct, 0, sizeof(*ct));
	ct->core = core;
	ct->options = o;
	ct->symbolizer = symbolizer;
	ct->target.ops = &target_ops;
	ct->target.ctx = ct;
	ct->target.arch = core->arch;
	ct->target.return_address_mask = core->pac_insn_mask;
	ct->target.mem = &core->mem;
	size_t nm = core->nmodules, nt = core->nthreads;
	ct->modules = calloc(nm ? nm : 1, sizeof(*ct->modules));
	ct->threads = calloc(nt ? nt : 1, sizeof(*ct->threads));
	ct->dwarf = calloc(nm ? nm : 1, sizeof(*ct->dwarf));
	ct->gopcln = calloc(nm ? nm : 1, sizeof(*ct->gopcln));
	if (o->cache) {
		ct->provenance = calloc(nm ? nm : 1, sizeof(*ct->provenance));
		ct->provenance_made = calloc(nm ? nm : 1, sizeof(*ct->provenance_made));
	}
	if (!ct->modules || !ct->threads || !ct->dwarf || !ct->gopcln ||
	    (o->cache && (!ct->provenance || !ct->provenance_made))) {
		cq_core_target_destroy(ct);
		return &cq_error_nomem;
	}
	for (size_t i = 0; i < nm; i++)
		ct->modules[i] = cq_core_target_module_view(&core->modules[i]);
	for (size_t i = 0; i < nt; i++)
		ct->threads[i] = (struct cq_target_thread){.handle = &core->threads[i],
		                                           .tid = core->threads[i].tid,
		                                           .regs = &core->threads[i].regs};
	ct->target.modules = ct->modules;
	ct->target.nmodules = nm;
	ct->target.threads = ct->threads;
	ct->target.nthreads = nt;
	return NULL;
}

void cq_core_target_destroy(struct cq_core_target *ct)
{
	for (size_t i = 0; ct->provenance && ct->provenance_made && i < ct->core->nmodules; i++)
		if (ct->provenance_made[i])
			cq_provenance_free(&ct->provenance[i]);
	cq_core_target_close_dwarf(ct);
	free(ct->dwarf);
	ct->dwarf = NULL;
	free(ct->gopcln);
	ct->gopcln = NULL;
	free(ct->provenance);
	free(ct->provenance_made);
	free(ct->modules);
	free(ct->threads);
	ct->provenance = NULL;
	ct->provenance_made = NULL;
	ct->modules = NULL;
	ct->threads = NULL;
}

const struct cq_error *cq_core_target_cfi_error(const struct cq_module *mod)
{
	const struct module_cfi *m = mod->analysis;
	return mod->analysis_free == module_cfi_free && m ? m->error : NULL;
}
