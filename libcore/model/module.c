/*
 * module.c - discover the modules of a core (see module.h).
 *
 * Modules come from NT_FILE: a run of consecutive entries for one path, the
 * first at file offset 0, whose first page holds an ELF header.  The header
 * and its PT_NOTE (with NT_GNU_BUILD_ID) are read from core memory, because
 * the default coredump_filter dumps every ELF object's first page.  The vdso
 * exists only in core memory (AT_SYSINFO_EHDR).
 *
 * Once a module's file is accepted, its pages are added to the memory reader
 * as the fallback layer, so text and rodata absent from the core read from it.
 *
 * Invariants (asserted): the page size is a power of two; a module is a run
 * [first, last] of the core's mappings; a build-id note read is inside the
 * bytes read; the modules are sorted by start once loaded (cq_module_find
 * searches them by halves).
 */
#include "libcore/model/module.h"

#include <assert.h>
#include <elf.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcore/base/bytes.h"
#include "libcore/model/core.h"
#include "libcore/base/regular_file.h"
#include "libcore/base/root_file.h"

#define MAX_PHNUM      128
#define MAX_NOTE_BYTES 4096
#define MAX_VDSO_BYTES (1u << 20)

/* What an ELF header in target memory says about its object. */
struct mem_elf_info {
	bool has_bias;
	uint64_t bias;
	uint8_t build_id[CQ_BUILD_ID_MAX];
	size_t build_id_len;
};

static bool find_build_id_note(const uint8_t *buf, size_t len, struct mem_elf_info *info)
{
	size_t off = 0;
	while (off + 12 <= len) {
		uint32_t namesz = cq_load_u32(buf + off), descsz = cq_load_u32(buf + off + 4);
		uint32_t type = cq_load_u32(buf + off + 8);
		size_t name_off = off + 12;
		size_t desc_off = name_off + (((size_t)namesz + 3) & ~(size_t)3);
		if (namesz > len || descsz > len || desc_off > len || descsz > len - desc_off)
			return false;
		assert(name_off <= desc_off && desc_off + descsz <= len);
		if (type == NT_GNU_BUILD_ID && namesz == 4 &&
		    memcmp(buf + name_off, "GNU", 4) == 0 && descsz > 0 &&
		    descsz <= CQ_BUILD_ID_MAX) {
			memcpy(info->build_id, buf + desc_off, descsz);
			info->build_id_len = descsz;
			return true;
		}
		off = desc_off + (((size_t)descsz + 3) & ~(size_t)3);
	}
	return false;
}

static uint64_t load_bias(uint64_t map_start, uint64_t p_vaddr, uint64_t p_offset, uint64_t page)
{
	return map_start - ((p_vaddr - p_offset) & ~(page - 1));
}

/* Reads the ELF header at start from target memory; false if it is not there. */
static bool read_elf_from_memory(struct cq_mem *mem, uint64_t start, uint64_t page,
                                 struct mem_elf_info *info)
{
	assert(page && (page & (page - 1)) == 0);
	Elf64_Ehdr eh;
	memset(info, 0, sizeof(*info));
	if (!cq_mem_read(mem, start, &eh, sizeof(eh)) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    eh.e_phnum > MAX_PHNUM || eh.e_phoff > (1u << 20))
		return false;
	Elf64_Phdr ph[MAX_PHNUM];
	if (!cq_mem_read(mem, start + eh.e_phoff, ph, eh.e_phnum * sizeof(Elf64_Phdr)))
		return false;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && !info->has_bias) {
			info->bias = load_bias(start, ph[i].p_vaddr, ph[i].p_offset, page);
			info->has_bias = true;
		}
	}
	for (unsigned i = 0; i < eh.e_phnum && info->has_bias; i++) {
		if (ph[i].p_type != PT_NOTE)
			continue;
		uint8_t buf[MAX_NOTE_BYTES];
		size_t len = ph[i].p_memsz < sizeof(buf) ? (size_t)ph[i].p_memsz : sizeof(buf);
		len = cq_mem_read_partial(mem, ph[i].p_vaddr + info->bias, buf, len);
		if (find_build_id_note(buf, len, info))
			break;
	}
	return true;
}

static bool file_load_bias(Elf *elf, uint64_t map_start, uint64_t page, uint64_t *bias)
{
	size_t phnum;
	if (elf_getphdrnum(elf, &phnum) != 0)
		return false;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD) {
			*bias = load_bias(map_start, ph.p_vaddr, ph.p_offset, page);
			return true;
		}
	}
	return false;
}

struct cq_error *cq_module_open_host_file(const struct cq_core *core, const char *name,
                                          bool is_main, int *fd, char **path, char **in_root)
{
	const char *root = core->options.sysroot;
	*fd = -1;
	*path = *in_root = NULL;
	if (is_main && core->options.exe) {
		if (!(*path = strdup(core->options.exe)))
			return &cq_error_nomem;
		*fd = cq_open_regular(*path);
	} else if (root) {
		/* Inside the sysroot only: nothing outside it is ever tried. */
		char *normal = cq_root_normalize(name);
		if (!normal || asprintf(path, "%s%s", root, normal) < 0) {
			free(normal);
			*path = NULL;
			return &cq_error_nomem;
		}
		free(normal);
		*fd = cq_open_in_root(root, name, in_root);
		if (*fd < 0 && errno == ENOMEM) {
			free(*path);
			*path = NULL;
			return &cq_error_nomem;
		}
	} else {
		if (!(*path = strdup(name)))
			return &cq_error_nomem;
		*fd = cq_open_regular(*path);
	}
	if (*fd < 0) {
		free(*path);
		*path = NULL;
	}
	return NULL;
}

/*
 * The kernel appends " (deleted)" to the NT_FILE name of a file replaced or
 * removed after it was mapped (the normal state after a package upgrade).
 * The module keeps the path without it, everywhere, and the fact as a flag.
 */
static void strip_deleted(struct cq_module *mod)
{
	static const char suffix[] = " (deleted)";
	size_t n = strlen(mod->name), k = sizeof(suffix) - 1;
	if (n > k && strcmp(mod->name + n - k, suffix) == 0) {
		mod->name[n - k] = '\0';
		mod->deleted = true;
	}
}

/*
 * Opens the module's file (cq_module_open_host_file): FOUND (and the module
 * takes the file), MISSING (no readable ELF file there) or MISMATCH
 * (another architecture's file, or a build-id other than the core's).
 */
static struct cq_error *open_module_file(struct cq_core *core, struct cq_module *mod,
                                         const struct mem_elf_info *info, uint64_t page)
{
	char *path, *in_root;
	int fd;
	mod->status = CQ_MODULE_MISSING;
	struct cq_error *err =
	    cq_module_open_host_file(core, mod->name, mod->is_main, &fd, &path, &in_root);
	if (err || fd < 0)
		return err;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	GElf_Ehdr eh;
	if (elf && elf_kind(elf) == ELF_K_ELF && gelf_getehdr(elf, &eh)) {
		const void *id = NULL;
		ssize_t idlen = dwelf_elf_gnu_build_id(elf, &id);
		bool core_has_id = info->build_id_len > 0;
		mod->status = CQ_MODULE_MISMATCH;
		if (eh.e_machine == core->arch->e_machine &&
		    (!core_has_id || (idlen == (ssize_t)info->build_id_len &&
		                      memcmp(id, info->build_id, info->build_id_len) == 0))) {
			if (!core_has_id && idlen > 0 && idlen <= CQ_BUILD_ID_MAX) {
				memcpy(mod->build_id, id, (size_t)idlen);
				mod->build_id_len = (size_t)idlen;
			}
			if (!info->has_bias && !file_load_bias(elf, mod->start, page, &mod->bias))
				mod->bias = 0;
			mod->status = CQ_MODULE_FOUND;
			mod->file_path = path;
			mod->root = in_root ? core->options.sysroot : NULL;
			mod->file_in_root = in_root;
			mod->elf = elf;
			mod->fd = fd;
			return NULL;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	free(path);
	free(in_root);
	return NULL;
}

/*
 * The protection the loader gave the mapping at addr of mod: the flags of
 * the file's PT_LOAD whose pages hold addr (the last one, as the loader maps
 * them in order and a later segment's pages replace an earlier's), else
 * read-only.  NT_FILE carries no protection, and a core may have no PT_LOAD
 * for a mapping: gdb's gcore writes none for unmodified read-only file
 * mappings, so text is known as code from the file alone.
 */
static unsigned mapping_flags(const struct cq_module *mod, uint64_t addr, uint64_t page)
{
	size_t phnum;
	unsigned flags = CQ_MEM_READ;
	if (elf_getphdrnum(mod->elf, &phnum) != 0 || phnum > MAX_PHNUM)
		return flags;
	uint64_t link = addr - mod->bias;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(mod->elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    ph.p_memsz > UINT64_MAX - ph.p_vaddr)
			continue;
		uint64_t lo = ph.p_vaddr & ~(page - 1), hi = ph.p_vaddr + ph.p_memsz;
		if (link >= lo && link < hi)
			flags = (ph.p_flags & PF_R ? CQ_MEM_READ : 0) |
			        (ph.p_flags & PF_W ? CQ_MEM_WRITE : 0) |
			        (ph.p_flags & PF_X ? CQ_MEM_EXEC : 0);
	}
	return flags;
}

/*
 * Adds the file's bytes behind every mapping of the module as fallback
 * memory, with the protection the file's program headers give each mapping.
 */
static struct cq_error *add_file_memory(struct cq_core *core, struct cq_module *mod, size_t first,
                                        size_t last, uint64_t page)
{
	assert(first <= last && last < core->nmappings && mod->elf);
	size_t size;
	const uint8_t *image = (const uint8_t *)elf_rawfile(mod->elf, &size);
	if (!image)
		return NULL;
	for (size_t i = first; i <= last; i++) {
		const struct cq_core_mapping *m = &core->mappings[i];
		uint64_t avail = m->file_offset < size ? size - m->file_offset : 0;
		struct cq_error *err = cq_mem_add(&core->mem, CQ_MEM_LAYER_FILE, m->start, m->end,
		                                  avail ? image + m->file_offset : NULL, avail,
		                                  mapping_flags(mod, m->start, page));
		if (err)
			return err;
	}
	return NULL;
}

static bool looks_like_shared_object(const char *path)
{
	const char *base = strrchr(path, '/');
	return strstr(base ? base : path, ".so") != NULL;
}

static struct cq_module *new_module(struct cq_core *core, size_t *cap)
{
	if (core->nmodules == *cap) {
		size_t ncap = *cap ? *cap * 2 : 32;
		struct cq_module *m = realloc(core->modules, ncap * sizeof(*m));
		if (!m)
			return NULL;
		core->modules = m;
		*cap = ncap;
	}
	assert(core->nmodules < *cap);
	struct cq_module *mod = &core->modules[core->nmodules++];
	memset(mod, 0, sizeof(*mod));
	mod->fd = -1;
	return mod;
}

static struct cq_error *add_file_module(struct cq_core *core, size_t first, size_t last,
                                        size_t *cap, uint64_t page)
{
	assert(first <= last && last < core->nmappings);
	const struct cq_core_mapping *m = &core->mappings[first];
	struct mem_elf_info info;
	bool in_core = read_elf_from_memory(&core->mem, m->start, page, &info);
	bool is_main = core->at_phdr >= m->start && core->at_phdr < core->mappings[last].end;
	if (!in_core && !is_main && !looks_like_shared_object(m->path))
		return NULL; /* no sign that this file is an ELF object */
	struct cq_module *mod = new_module(core, cap);
	if (!mod || !(mod->name = strdup(m->path)))
		return &cq_error_nomem;
	strip_deleted(mod);
	mod->start = m->start;
	mod->end = core->mappings[last].end;
	mod->is_main = is_main;
	mod->bias = info.bias;
	mod->build_id_from_core = info.build_id_len > 0;
	memcpy(mod->build_id, info.build_id, info.build_id_len);
	mod->build_id_len = info.build_id_len;
	struct cq_error *err = open_module_file(core, mod, &info, page);
	if (err)
		return err;
	if (mod->status == CQ_MODULE_FOUND)
		return add_file_memory(core, mod, first, last, page);
	return NULL;
}

static struct cq_error *add_vdso_module(struct cq_core *core, size_t *cap, uint64_t page)
{
	const struct cq_mem_segment *seg = cq_mem_find(&core->mem, core->at_sysinfo_ehdr);
	if (!seg)
		return NULL;
	uint64_t len = seg->end - core->at_sysinfo_ehdr;
	if (len > MAX_VDSO_BYTES)
		len = MAX_VDSO_BYTES;
	uint8_t *copy = malloc(len);
	if (!copy)
		return &cq_error_nomem;
	len = cq_mem_read_partial(&core->mem, core->at_sysinfo_ehdr, copy, len);
	assert(len <= MAX_VDSO_BYTES);
	struct mem_elf_info info;
	if (len < sizeof(Elf64_Ehdr) ||
	    !read_elf_from_memory(&core->mem, core->at_sysinfo_ehdr, page, &info)) {
		free(copy);
		return NULL;
	}
	struct cq_module *mod = new_module(core, cap);
	if (!mod || !(mod->name = strdup("[vdso]"))) {
		free(copy);
		return &cq_error_nomem;
	}
	mod->is_vdso = true;
	mod->start = core->at_sysinfo_ehdr;
	mod->end = core->at_sysinfo_ehdr + len;
	mod->bias = info.bias;
	memcpy(mod->build_id, info.build_id, info.build_id_len);
	mod->build_id_len = info.build_id_len;
	mod->build_id_from_core = true;
	mod->status = CQ_MODULE_FOUND;
	mod->image_copy = copy;
	mod->elf = elf_memory((char *)copy, len);
	return NULL;
}

static int module_cmp(const void *a, const void *b)
{
	const struct cq_module *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

struct cq_error *cq_core_load_modules(struct cq_core *core)
{
	assert(core && core->nmodules == 0 && (core->mappings || core->nmappings == 0));
	size_t cap = 0;
	uint64_t page = core->at_pagesz ? core->at_pagesz : 4096;
	if (page & (page - 1))
		page = 4096;
	struct cq_error *err = NULL;
	for (size_t i = 0; i < core->nmappings && !err;) {
		size_t last = i;
		while (last + 1 < core->nmappings &&
		       strcmp(core->mappings[last + 1].path, core->mappings[i].path) == 0 &&
		       core->mappings[last + 1].start >= core->mappings[last].end)
			last++;
		if (core->mappings[i].file_offset == 0)
			err = add_file_module(core, i, last, &cap, page);
		i = last + 1;
	}
	if (!err && core->at_sysinfo_ehdr)
		err = add_vdso_module(core, &cap, page);
	if (err)
		return err;
	if (core->nmodules > 1)
		qsort(core->modules, core->nmodules, sizeof(*core->modules), module_cmp);
	for (size_t i = 1; i < core->nmodules; i++)
		assert(core->modules[i - 1].start <= core->modules[i].start);
	cq_mem_finish(&core->mem);
	return NULL;
}

/* The lowest and highest+1 link-time addresses of elf's PT_LOAD segments. */
static bool load_range(Elf *elf, uint64_t *start, uint64_t *end)
{
	size_t phnum;
	if (elf_getphdrnum(elf, &phnum) != 0 || phnum > MAX_PHNUM)
		return false;
	*start = UINT64_MAX;
	*end = 0;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    ph.p_memsz > UINT64_MAX - ph.p_vaddr)
			continue;
		if (ph.p_vaddr < *start)
			*start = ph.p_vaddr;
		if (ph.p_vaddr + ph.p_memsz > *end)
			*end = ph.p_vaddr + ph.p_memsz;
	}
	return *start < *end;
}

struct cq_error *cq_module_open_elf(const char *path, struct cq_module *out)
{
	memset(out, 0, sizeof(*out));
	out->fd = -1;
	elf_version(EV_CURRENT);
	int fd = cq_open_regular(path);
	if (fd < 0)
		return cq_error_errno(errno, "cannot open");
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	GElf_Ehdr ehdr;
	struct cq_error *err = NULL;
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr))
		err = cq_error_create(CQ_ERR_FORMAT, "not an ELF file");
	else if (ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN)
		err = cq_error_create(CQ_ERR_FORMAT,
		                      "ELF type %u is not an executable or "
		                      "shared object",
		                      (unsigned)ehdr.e_type);
	else if (!load_range(elf, &out->start, &out->end))
		err = cq_error_create(CQ_ERR_FORMAT, "no loadable segment");
	if (err) {
		if (elf)
			elf_end(elf);
		close(fd);
		return err;
	}
	const void *id = NULL;
	ssize_t idlen = dwelf_elf_gnu_build_id(elf, &id);
	if (idlen > 0 && idlen <= CQ_BUILD_ID_MAX) {
		memcpy(out->build_id, id, (size_t)idlen);
		out->build_id_len = (size_t)idlen;
	}
	out->name = strdup(path);
	out->file_path = strdup(path);
	out->elf = elf;
	out->fd = fd;
	out->status = CQ_MODULE_FOUND;
	out->is_main = true;
	if (!out->name || !out->file_path) {
		cq_module_destroy(out);
		return &cq_error_nomem;
	}
	return NULL;
}

struct cq_module *cq_module_find(struct cq_module *modules, size_t n, uint64_t addr)
{
	assert(modules || n == 0);
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (modules[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= modules[lo - 1].end)
		return NULL;
	return &modules[lo - 1];
}

void cq_module_destroy(struct cq_module *mod)
{
	if (mod->analysis_free && mod->analysis)
		mod->analysis_free(mod->analysis);
	if (mod->elf)
		elf_end(mod->elf);
	if (mod->fd >= 0)
		close(mod->fd);
	free(mod->image_copy);
	free(mod->name);
	free(mod->file_path);
	free(mod->file_in_root);
}

const char *cq_module_status_name(enum cq_module_status status)
{
	switch (status) {
	case CQ_MODULE_FOUND:
		return "found";
	case CQ_MODULE_MISMATCH:
		return "mismatch";
	case CQ_MODULE_MISSING:
	default:
		return "missing";
	}
}

void cq_module_build_id_hex(const struct cq_module *mod, char *buf, size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	for (size_t i = 0; i < mod->build_id_len && o + 2 < cap; i++) {
		buf[o++] = hex[mod->build_id[i] >> 4];
		buf[o++] = hex[mod->build_id[i] & 15];
	}
	if (cap)
		buf[o] = '\0';
}

const char *cq_module_basename(const struct cq_module *mod)
{
	const char *s = strrchr(mod->name, '/');
	return s ? s + 1 : mod->name;
}
