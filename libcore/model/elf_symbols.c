/*
 * elf_symbols.c - look up named symbols in a module's file (see
 * elf_symbols.h).  A linear pass over .symtab and .dynsym: cheap next to
 * everything else done per module, and it needs neither hash table to be
 * present or well formed.
 */
#include "libcore/model/elf_symbols.h"

#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/model/module.h"

/* Bound on symbols read per table: a hostile or huge table stops here. */
#define MAX_SYMBOLS (8u << 20)

static size_t count_found(const struct cq_symbol_query *q, size_t n)
{
	size_t found = 0;
	for (size_t i = 0; i < n; i++)
		found += q[i].found;
	return found;
}

static void search_table(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, uint64_t bias,
                         struct cq_symbol_query *q, size_t n)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	if (!data || sh->sh_entsize == 0)
		return;
	size_t count = sh->sh_size / sh->sh_entsize;
	if (count > MAX_SYMBOLS)
		count = MAX_SYMBOLS;
	for (size_t i = 1; i < count; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(data, (int)i, &sym))
			break;
		if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0)
			continue;
		const char *name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || !name[0])
			continue;
		for (size_t k = 0; k < n; k++) {
			if (q[k].found || strcmp(q[k].name, name) != 0)
				continue;
			q[k].found = true;
			q[k].addr = sym.st_value + bias;
			q[k].size = sym.st_size;
		}
	}
}

size_t cq_elf_find_symbols(const struct cq_module *mod, struct cq_symbol_query *q, size_t n)
{
	if (mod->status != CQ_MODULE_FOUND || !mod->elf || mod->is_vdso)
		return count_found(q, n);
	Elf *elf = mod->elf;
	static const GElf_Word types[] = {SHT_SYMTAB, SHT_DYNSYM};
	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		if (count_found(q, n) == n)
			break;
		Elf_Scn *scn = NULL;
		while ((scn = elf_nextscn(elf, scn)) != NULL) {
			GElf_Shdr sh;
			if (gelf_getshdr(scn, &sh) && sh.sh_type == types[t])
				search_table(elf, scn, &sh, mod->bias, q, n);
		}
	}
	return count_found(q, n);
}

static bool table_containing(Elf_Scn *scn, const GElf_Shdr *sh, uint64_t addr,
                             struct cq_symbol_query *out)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	if (!data || sh->sh_entsize == 0)
		return false;
	size_t count = sh->sh_size / sh->sh_entsize;
	if (count > MAX_SYMBOLS)
		count = MAX_SYMBOLS;
	for (size_t i = 1; i < count; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(data, (int)i, &sym))
			break;
		if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF ||
		    sym.st_size == 0 || addr < sym.st_value || addr - sym.st_value >= sym.st_size)
			continue;
		out->found = true;
		out->addr = sym.st_value;
		out->size = sym.st_size;
		return true;
	}
	return false;
}

bool cq_elf_function_at(const struct cq_module *mod, uint64_t addr, struct cq_symbol_query *out)
{
	out->found = false;
	if (mod->status != CQ_MODULE_FOUND || !mod->elf || mod->is_vdso || addr < mod->bias)
		return false;
	static const GElf_Word types[] = {SHT_SYMTAB, SHT_DYNSYM};
	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		Elf_Scn *scn = NULL;
		while ((scn = elf_nextscn(mod->elf, scn)) != NULL) {
			GElf_Shdr sh;
			if (gelf_getshdr(scn, &sh) && sh.sh_type == types[t] &&
			    table_containing(scn, &sh, addr - mod->bias, out)) {
				out->addr += mod->bias;
				return true;
			}
		}
	}
	return false;
}

static int export_cmp(const void *a, const void *b)
{
	const struct cq_elf_export *x = a, *y = b;
	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return strcmp(x->name, y->name);
}

static Elf_Scn *find_section_type(Elf *elf, GElf_Word type, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL)
		if (gelf_getshdr(scn, sh) && sh->sh_type == type)
			return scn;
	return NULL;
}

/*
 * The data of mod's first section of type (in a module whose file matched
 * the core), its header in *sh and its entry count in *count; NULL if none.
 */
static Elf_Data *module_section(const struct cq_module *mod, GElf_Word type, GElf_Shdr *sh,
                                size_t *count)
{
	if (mod->status != CQ_MODULE_FOUND || !mod->elf || mod->is_vdso)
		return NULL;
	Elf_Scn *scn = find_section_type(mod->elf, type, sh);
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
	if (!data || sh->sh_entsize == 0)
		return NULL;
	*count = sh->sh_size / sh->sh_entsize;
	return data;
}

struct cq_error *cq_elf_exports(const struct cq_module *mod, struct cq_elf_export **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	Elf *elf = mod->elf;
	GElf_Shdr sh;
	size_t count;
	Elf_Data *data = module_section(mod, SHT_DYNSYM, &sh, &count);
	if (!data)
		return NULL;
	if (count > MAX_SYMBOLS)
		count = MAX_SYMBOLS;
	struct cq_elf_export *e = malloc((count ? count : 1) * sizeof(*e));
	if (!e)
		return &cq_error_nomem;
	size_t k = 0;
	for (size_t i = 1; i < count; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(data, (int)i, &sym))
			break;
		int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
		if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0 ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC) || bind == STB_LOCAL)
			continue;
		const char *name = elf_strptr(elf, sh.sh_link, sym.st_name);
		if (!name || !name[0])
			continue;
		e[k++] = (struct cq_elf_export){.name = name,
		                                .value = sym.st_value,
		                                .size = sym.st_size,
		                                .ifunc = type == STT_GNU_IFUNC};
	}
	qsort(e, k, sizeof(*e), export_cmp);
	*out = e;
	*n = k;
	return NULL;
}

const char *cq_elf_soname(const struct cq_module *mod)
{
	GElf_Shdr sh;
	size_t count;
	Elf_Data *data = module_section(mod, SHT_DYNAMIC, &sh, &count);
	if (!data)
		return NULL;
	for (size_t i = 0; i < count && i < 4096; i++) {
		GElf_Dyn dyn;
		if (!gelf_getdyn(data, (int)i, &dyn) || dyn.d_tag == DT_NULL)
			break;
		if (dyn.d_tag == DT_SONAME)
			return elf_strptr(mod->elf, sh.sh_link, dyn.d_un.d_val);
	}
	return NULL;
}
