/*
 * frame_names.c - the names crash signatures give frames whose function
 * name would split one bug into several buckets (see frame_names.h):
 *
 *   - a CPU-specific variant that glibc's ifunc resolver picked at load
 *     time (__memset_avx2_unaligned_erms on one host, __memset_sse2_...
 *     on another) is named by the public function.  The rule is data: a
 *     name "__NAME_SUFFIX..." whose module exports NAME as an ifunc
 *     (STT_GNU_IFUNC in .dynsym) is that function's variant.
 *   - a frame with no name in a library is named by the exported function
 *     whose [value, value + size) covers it, else by the library's soname
 *     in brackets, never by an offset that moves with every update.
 *
 * The main executable's unnamed frames keep module+offset: the fleet runs
 * one build of it, and offsets there tell crash sites apart.
 */
#include "libcore/triage/frame_names.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/model/core.h"
#include "libcore/model/elf_symbols.h"
#include "libcore/model/module.h"
#include "unwind/frames.h"

struct module_names {
	bool loaded;
	struct cq_elf_export *exports; /* sorted by value */
	size_t nexports;
	const char **ifuncs; /* names of the ifunc exports, sorted */
	size_t nifuncs;
};

struct cq_bucket_namer {
	const struct cq_core *core;
	struct module_names *m; /* one per core module */
};

struct cq_error *cq_bucket_namer_create(const struct cq_core *core, struct cq_bucket_namer **out)
{
	*out = NULL;
	struct cq_bucket_namer *nm = calloc(1, sizeof(*nm));
	if (!nm || !(nm->m = calloc(core->nmodules ? core->nmodules : 1, sizeof(*nm->m)))) {
		free(nm);
		return &cq_error_nomem;
	}
	nm->core = core;
	*out = nm;
	return NULL;
}

void cq_bucket_namer_destroy(struct cq_bucket_namer *nm)
{
	if (!nm)
		return;
	for (size_t i = 0; i < nm->core->nmodules; i++) {
		free(nm->m[i].exports);
		free(nm->m[i].ifuncs);
	}
	free(nm->m);
	free(nm);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The module's export tables, read on first use; NULL when the module has none. */
static const struct module_names *names_of(struct cq_bucket_namer *nm, const struct cq_module *mod)
{
	const struct cq_core *core = nm->core;
	if (mod < core->modules || mod >= core->modules + core->nmodules)
		return NULL;
	struct module_names *m = &nm->m[mod - core->modules];
	if (m->loaded)
		return m;
	m->loaded = true;
	struct cq_error *err = cq_elf_exports(mod, &m->exports, &m->nexports);
	if (err) { /* out of memory: the frame keeps a placeholder */
		cq_error_free(err);
		return m;
	}
	size_t k = 0;
	for (size_t i = 0; i < m->nexports; i++)
		k += m->exports[i].ifunc;
	if (k && (m->ifuncs = malloc(k * sizeof(*m->ifuncs)))) {
		for (size_t i = 0; i < m->nexports; i++)
			if (m->exports[i].ifunc)
				m->ifuncs[m->nifuncs++] = m->exports[i].name;
		qsort(m->ifuncs, m->nifuncs, sizeof(*m->ifuncs), cmp_name);
	}
	return m;
}

/* "__memset_avx2_unaligned_erms" -> "memset" when the module exports memset as an ifunc. */
static const char *ifunc_public_name(const struct module_names *m, const char *function, char *buf,
                                     size_t cap)
{
	if (!m || m->nifuncs == 0 || strncmp(function, "__", 2) != 0 || strlen(function + 2) >= cap)
		return NULL;
	snprintf(buf, cap, "%s", function + 2);
	for (char *cut; (cut = strrchr(buf, '_'));) {
		*cut = '\0';
		const char *key = buf;
		if (buf[0] && bsearch(&key, m->ifuncs, m->nifuncs, sizeof(*m->ifuncs), cmp_name))
			return buf;
	}
	return NULL;
}

/* The exported function covering offset, or NULL. */
static const char *covering_export(const struct module_names *m, uint64_t offset)
{
	if (!m || m->nexports == 0)
		return NULL;
	size_t lo = 0, hi = m->nexports;
	while (lo < hi) { /* the first export with value > offset */
		size_t mid = lo + (hi - lo) / 2;
		if (m->exports[mid].value <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* The exports at the greatest value <= offset (aliases share it). */
	for (size_t i = lo; i > 0 && m->exports[i - 1].value == m->exports[lo - 1].value; i--)
		if (offset - m->exports[i - 1].value < m->exports[i - 1].size)
			return m->exports[i - 1].name;
	return NULL;
}

const char *cq_bucket_alt_name(struct cq_bucket_namer *nm, const struct cq_stack_frame *f,
                               char *buf, size_t cap)
{
	const struct cq_module *mod = f->module;
	/* The symbol table's name, which is there with or without debuginfo. */
	const char *name = f->symbol ? f->symbol : f->function;
	const struct module_names *m = nm && mod && !mod->is_main ? names_of(nm, mod) : NULL;
	const char *ifunc = m && name ? ifunc_public_name(m, name, buf, cap) : NULL;
	if (ifunc)
		return ifunc;
	if (f->symbol) {
		snprintf(buf, cap, "%s", f->symbol);
		return buf;
	}
	if (!mod || mod->is_main)
		return NULL;
	if (f->function)
		return NULL;
	const char *cover = covering_export(m, f->offset);
	if (cover) {
		snprintf(buf, cap, "%s", cover);
		return buf;
	}
	char so[256];
	cq_frame_soname(mod, mod->name, so, sizeof(so));
	snprintf(buf, cap, "[%s]", so);
	return buf;
}

void cq_frame_soname(const struct cq_module *mod, const char *path, char *out, size_t cap)
{
	const char *soname = mod ? cq_elf_soname(mod) : NULL;
	if (soname) {
		snprintf(out, cap, "%s", soname);
		return;
	}
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	snprintf(out, cap, "%s", base);
	char *so = strstr(out, ".so.");
	if (so) {
		char *end = so + 4;
		while (isdigit((unsigned char)*end))
			end++;
		*end = '\0';
	}
}
