/*
 * link_map.c - loaded objects from the dynamic loader's list in memory
 * (see link_map.h).  64-bit little-endian layouts, as every architecture
 * coreq reads:
 *
 *   Elf64_Dyn  {d_tag, d_val}                     16 bytes
 *   r_debug    {r_version (int, padded), r_map, r_brk, r_state, r_ldbase}
 *   link_map   {l_addr, l_name, l_ld, l_next, l_prev}
 *
 * Invariants (asserted): the page size is a power of two; a load range is
 * non-empty; every found object's path lies inside the one paths buffer,
 * and the list is handed over sorted, only to a core that has no mappings.
 */
#include "libcore/model/link_map.h"

#include <assert.h>
#include <elf.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcore/model/core.h"
#include "libcore/model/module.h"

#define MAX_PHNUM    256
#define MAX_DYN      4096
#define MAX_OBJECTS  4096
#define MAX_NAME     4096
#define PATHS_BUDGET (1u << 22)

struct found {
	struct cq_core_mapping *map;
	size_t n, cap;
	char *paths; /* every path, NUL-separated; map[i].path points in after the walk */
	size_t paths_len, paths_cap;
	size_t *path_at; /* map[i]'s path offset in paths */
};

/* The range [start, end) of the PT_LOAD segments of phdrs, relocated by bias. */
static bool load_range(const Elf64_Phdr *ph, size_t n, uint64_t bias, uint64_t page,
                       uint64_t *start, uint64_t *end)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	for (size_t i = 0; i < n; i++) {
		if (ph[i].p_type != PT_LOAD || ph[i].p_memsz > UINT64_MAX - ph[i].p_vaddr)
			continue;
		lo = ph[i].p_vaddr < lo ? ph[i].p_vaddr : lo;
		hi = ph[i].p_vaddr + ph[i].p_memsz > hi ? ph[i].p_vaddr + ph[i].p_memsz : hi;
	}
	assert(page && (page & (page - 1)) == 0);
	if (lo >= hi || hi > UINT64_MAX - bias - page)
		return false;
	*start = (lo + bias) & ~(page - 1);
	*end = (hi + bias + page - 1) & ~(page - 1);
	assert(*start < *end);
	return true;
}

static struct cq_error *add(struct found *f, uint64_t start, uint64_t end, const char *path)
{
	size_t len = strlen(path) + 1;
	if (f->paths_len + len > PATHS_BUDGET)
		return NULL; /* enough: the rest is left out */
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 16;
		struct cq_core_mapping *m = realloc(f->map, cap * sizeof(*m));
		size_t *at = m ? realloc(f->path_at, cap * sizeof(*at)) : NULL;
		if (m)
			f->map = m;
		if (!at)
			return &cq_error_nomem;
		f->path_at = at;
		f->cap = cap;
	}
	if (f->paths_len + len > f->paths_cap) {
		size_t cap = f->paths_cap ? f->paths_cap * 2 : 4096;
		while (cap < f->paths_len + len)
			cap *= 2;
		char *p = realloc(f->paths, cap);
		if (!p)
			return &cq_error_nomem;
		f->paths = p;
		f->paths_cap = cap;
	}
	assert(f->n < f->cap && f->paths_len + len <= f->paths_cap);
	memcpy(f->paths + f->paths_len, path, len);
	f->path_at[f->n] = f->paths_len;
	f->paths_len += len;
	f->map[f->n++] = (struct cq_core_mapping){.start = start, .end = end, .file_offset = 0};
	return NULL;
}

/* The PT_INTERP string of the ELF file open as fd into buf (cap bytes), or "". */
static void file_interp(int fd, char *buf, size_t cap)
{
	buf[0] = '\0';
	if (fd < 0)
		return;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t phnum = 0;
	if (elf && elf_getphdrnum(elf, &phnum) == 0) {
		for (size_t i = 0; i < phnum && i < MAX_PHNUM; i++) {
			GElf_Phdr g;
			if (!gelf_getphdr(elf, (int)i, &g) || g.p_type != PT_INTERP ||
			    g.p_filesz == 0 || g.p_filesz >= cap)
				continue;
			if (pread(fd, buf, (size_t)g.p_filesz, (off_t)g.p_offset) ==
			    (ssize_t)g.p_filesz)
				buf[g.p_filesz - 1] = '\0';
			else
				buf[0] = '\0';
			break;
		}
	}
	if (elf)
		elf_end(elf);
}

/*
 * The program headers (and e_entry) of the ELF file open as fd, built for
 * the core's architecture; false if unreadable or another architecture's.
 */
static bool file_phdrs(const struct cq_core *core, int fd, Elf64_Phdr *ph, size_t *n,
                       uint64_t *entry)
{
	if (fd < 0)
		return false;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	GElf_Ehdr eh;
	size_t phnum = 0;
	bool good = elf && gelf_getehdr(elf, &eh) && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
	            eh.e_machine == core->arch->e_machine && elf_getphdrnum(elf, &phnum) == 0 &&
	            phnum > 0 && phnum <= MAX_PHNUM;
	for (size_t i = 0; good && i < phnum; i++) {
		GElf_Phdr g;
		if (!gelf_getphdr(elf, (int)i, &g)) {
			good = false;
			break;
		}
		ph[i] = (Elf64_Phdr){.p_type = g.p_type,
		                     .p_flags = g.p_flags,
		                     .p_offset = g.p_offset,
		                     .p_vaddr = g.p_vaddr,
		                     .p_paddr = g.p_paddr,
		                     .p_filesz = g.p_filesz,
		                     .p_memsz = g.p_memsz,
		                     .p_align = g.p_align};
	}
	if (good) {
		*n = phnum;
		*entry = eh.e_entry;
	}
	if (elf)
		elf_end(elf);
	return good;
}

/* The file of a library the core names as name on this host (inside --sysroot), or -1. */
static int library_file(const struct cq_core *core, const char *name)
{
	char *path, *in_root;
	int fd;
	if (cq_module_open_host_file(core, name, false, &fd, &path, &in_root))
		return -1;
	free(path);
	free(in_root);
	return fd;
}

/*
 * The program headers of the object whose ELF header is at base: from core
 * memory, else from its file (name, inside the sysroot).
 */
static bool object_phdrs(struct cq_core *core, uint64_t base, const char *name, Elf64_Phdr *ph,
                         size_t *n, uint64_t *entry)
{
	Elf64_Ehdr eh;
	if (cq_mem_read(&core->mem, base, &eh, sizeof(eh)) &&
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
	    eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum > 0 && eh.e_phnum <= MAX_PHNUM &&
	    eh.e_phoff <= (1u << 20) &&
	    cq_mem_read(&core->mem, base + eh.e_phoff, ph, eh.e_phnum * sizeof(*ph))) {
		*n = eh.e_phnum;
		*entry = eh.e_entry;
		return true;
	}
	int fd = library_file(core, name);
	bool good = file_phdrs(core, fd, ph, n, entry);
	if (fd >= 0)
		close(fd);
	return good;
}

/* The object whose ELF header is at base (bias l_addr): its range. */
static bool object_range(struct cq_core *core, uint64_t base, const char *name, uint64_t page,
                         uint64_t *start, uint64_t *end)
{
	Elf64_Phdr ph[MAX_PHNUM];
	size_t n;
	uint64_t entry;
	return object_phdrs(core, base, name, ph, &n, &entry) &&
	       load_range(ph, n, base, page, start, end);
}

/* Whether fd is a readable ELF file (of any architecture). */
static bool is_elf_file(int fd)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	bool good = elf && elf_kind(elf) == ELF_K_ELF;
	if (elf)
		elf_end(elf);
	return good;
}

/*
 * The executable's file on this host (cq_module_open_host_file), with its
 * program headers, as in module discovery: its fd, or -1 when there is none,
 * it is no ELF file, or it is for another architecture.
 */
static int executable_file(struct cq_core *core, const char *exe, Elf64_Phdr *ph, size_t *n,
                           uint64_t *entry)
{
	char *path, *in_root;
	int fd;
	if (cq_module_open_host_file(core, exe, true, &fd, &path, &in_root))
		return -1;
	free(path);
	free(in_root);
	if (fd >= 0 && (!is_elf_file(fd) || !file_phdrs(core, fd, ph, n, entry))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/*
 * The executable: its load bias (from PT_PHDR, else AT_ENTRY against its
 * header's e_entry), its range and its PT_DYNAMIC address (0: none).  Its
 * program headers are read at AT_PHDR in core memory, else from its file
 * (*fd, which the caller closes; -1 when the core held them).
 */
static bool executable(struct cq_core *core, const char *exe, uint64_t page, uint64_t *start,
                       uint64_t *end, uint64_t *dynamic, uint64_t *dynsz, int *fd)
{
	size_t n = core->at_phnum ? (size_t)core->at_phnum : 0;
	Elf64_Phdr ph[MAX_PHNUM];
	uint64_t entry = 0;
	bool from_file = false;
	*fd = -1;
	if (!core->at_phdr || n == 0 || n > MAX_PHNUM ||
	    !cq_mem_read(&core->mem, core->at_phdr, ph, n * sizeof(*ph))) {
		*fd = executable_file(core, exe, ph, &n, &entry);
		from_file = *fd >= 0;
		if (!from_file)
			return false;
	}
	bool has_bias = false;
	uint64_t bias = 0;
	for (size_t i = 0; i < n; i++) {
		if (ph[i].p_type == PT_PHDR && core->at_phdr >= ph[i].p_vaddr) {
			bias = core->at_phdr - ph[i].p_vaddr;
			has_bias = true;
		}
	}
	if (!has_bias && from_file && core->at_entry >= entry) {
		bias = core->at_entry - entry;
		has_bias = true;
	}
	if (!has_bias)
		return false;
	*dynamic = *dynsz = 0;
	for (size_t i = 0; i < n; i++) {
		if (ph[i].p_type == PT_DYNAMIC) {
			*dynamic = ph[i].p_vaddr + bias;
			*dynsz = ph[i].p_memsz;
		}
	}
	return load_range(ph, n, bias, page, start, end);
}

/* r_debug's address from the executable's DT_DEBUG, or 0. */
static uint64_t find_r_debug(struct cq_core *core, uint64_t dynamic, uint64_t dynsz)
{
	size_t n = (size_t)(dynsz / 16);
	for (size_t i = 0; i < n && i < MAX_DYN; i++) {
		uint64_t tag, val;
		if (!cq_mem_read_u64(&core->mem, dynamic + 16 * i, &tag) || tag == DT_NULL ||
		    !cq_mem_read_u64(&core->mem, dynamic + 16 * i + 8, &val))
			return 0;
		if (tag == DT_DEBUG)
			return val;
	}
	return 0;
}

/* The defined symbol name's value in the ELF file open as fd (.dynsym, then .symtab). */
static bool file_symbol(int fd, const char *name, uint64_t *value)
{
	if (fd < 0)
		return false;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	bool found = false;
	for (int pass = 0; elf && pass < 2 && !found; pass++) {
		Elf_Scn *scn = NULL;
		while (!found && (scn = elf_nextscn(elf, scn)) != NULL) {
			GElf_Shdr sh;
			Elf_Data *data;
			if (!gelf_getshdr(scn, &sh) ||
			    sh.sh_type != (pass == 0 ? SHT_DYNSYM : SHT_SYMTAB) ||
			    sh.sh_entsize == 0 || !(data = elf_getdata(scn, NULL)))
				continue;
			size_t nsyms = (size_t)(sh.sh_size / sh.sh_entsize);
			for (size_t i = 0; i < nsyms; i++) {
				GElf_Sym sym;
				const char *sname;
				if (!gelf_getsym(data, (int)i, &sym))
					break;
				if (sym.st_shndx != SHN_UNDEF &&
				    (sname = elf_strptr(elf, sh.sh_link, sym.st_name)) &&
				    strcmp(sname, name) == 0) {
					*value = sym.st_value;
					found = true;
					break;
				}
			}
		}
	}
	if (elf)
		elf_end(elf);
	return found;
}

/*
 * r_debug found through the dynamic loader, for a core whose executable
 * has its program headers neither in core memory nor in a file here
 * (qemu-user dumps no page of a file's text): AT_BASE is where the loader
 * was mapped, its file (the architecture's standard PT_INTERP path, inside
 * --sysroot) gives _r_debug's offset, and the r_debug there must have a
 * known r_version (1; 2 since glibc 2.35) and AT_BASE as its r_ldbase.  The loader's path goes to
 * interp (cap bytes); 0 when any of this fails.
 */
static uint64_t loader_r_debug(struct cq_core *core, uint64_t page, char *interp, size_t cap)
{
	const char *name = core->arch->interp_path;
	int fd;
	if (!core->at_base || !name || strlen(name) >= cap || (fd = library_file(core, name)) < 0)
		return 0;
	Elf64_Phdr ph[MAX_PHNUM];
	size_t n;
	uint64_t entry, value, lo, hi, version, ldbase;
	bool good = file_phdrs(core, fd, ph, &n, &entry) && load_range(ph, n, 0, page, &lo, &hi) &&
	            file_symbol(fd, "_r_debug", &value) && value >= lo && value < hi;
	close(fd);
	if (!good || core->at_base < lo)
		return 0;
	uint64_t r_debug = core->at_base - lo + value;
	if (!cq_mem_read_u64(&core->mem, r_debug, &version) ||
	    !cq_mem_read_u64(&core->mem, r_debug + 32, &ldbase) || (uint32_t)version < 1 ||
	    (uint32_t)version > 2 || ldbase != core->at_base)
		return 0;
	snprintf(interp, cap, "%s", name);
	return r_debug;
}

/* Whether addr is inside the vdso (its extent from its headers in core memory). */
static bool in_vdso(struct cq_core *core, uint64_t addr, uint64_t page)
{
	uint64_t base = core->at_sysinfo_ehdr, start, end;
	if (!base)
		return false;
	Elf64_Phdr ph[MAX_PHNUM];
	Elf64_Ehdr eh;
	if (!cq_mem_read(&core->mem, base, &eh, sizeof(eh)) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    eh.e_phnum == 0 || eh.e_phnum > MAX_PHNUM || eh.e_phoff > page ||
	    !cq_mem_read(&core->mem, base + eh.e_phoff, ph, eh.e_phnum * sizeof(*ph)) ||
	    !load_range(ph, eh.e_phnum, base - (ph[0].p_type == PT_LOAD ? ph[0].p_vaddr : 0), page,
	                &start, &end))
		return addr >= base && addr - base < 2 * page;
	return addr >= start && addr < end;
}

/*
 * Follows r_map through l_next, adding every object other than the
 * executable.  The dynamic loader's own entry names it with the
 * executable's PT_INTERP string, which lies in read-only memory a core may
 * lack: interp, from the executable's file, stands in for it there.
 */
static struct cq_error *walk_objects(struct cq_core *core, uint64_t r_debug, uint64_t exe_start,
                                     const char *interp, uint64_t page, struct found *f)
{
	uint64_t lm;
	if (!cq_mem_read_u64(&core->mem, r_debug + 8, &lm))
		return NULL;
	uint64_t seen[64];
	struct cq_error *err = NULL;
	for (size_t i = 0; lm && i < MAX_OBJECTS && !err; i++) {
		uint64_t l_addr, l_name, l_ld, next;
		if (!cq_mem_read_u64(&core->mem, lm, &l_addr) ||
		    !cq_mem_read_u64(&core->mem, lm + 8, &l_name) ||
		    !cq_mem_read_u64(&core->mem, lm + 16, &l_ld) ||
		    !cq_mem_read_u64(&core->mem, lm + 24, &next))
			break;
		/* A cycle: the recent entries are enough to see a short one; the bound the rest. */
		for (size_t k = 0; k < (i < 64 ? i : 64); k++)
			if (seen[k] == lm)
				return NULL;
		seen[i % 64] = lm;
		char name[MAX_NAME];
		uint64_t start, end;
		if (!l_name || !cq_mem_read_string(&core->mem, l_name, name, sizeof(name)))
			snprintf(name, sizeof(name), "%s",
			         core->at_base && l_addr == core->at_base ? interp : "");
		if (name[0] && !in_vdso(core, l_ld, page) &&
		    object_range(core, l_addr, name, page, &start, &end) && start != exe_start)
			err = add(f, start, end, name);
		lm = next;
	}
	return err;
}

static int by_start(const void *a, const void *b)
{
	const struct cq_core_mapping *x = a, *y = b;
	return (x->start > y->start) - (x->start < y->start);
}

struct cq_error *cq_link_map_mappings(struct cq_core *core)
{
	assert(core && core->nmappings == 0 && !core->mappings);
	uint64_t page = core->at_pagesz ? core->at_pagesz : 4096;
	if (page & (page - 1))
		page = 4096;
	struct found f = {0};
	uint64_t start = 0, end, dynamic = 0, dynsz = 0, r_debug = 0;
	struct cq_error *err = NULL;
	char interp[MAX_NAME] = "";
	int exe_fd = -1;
	const char *exe = core->execfn[0] ? core->execfn : core->has_psinfo ? core->fname : "";
	if (exe[0] && executable(core, exe, page, &start, &end, &dynamic, &dynsz, &exe_fd)) {
		err = add(&f, start, end, exe);
		r_debug = dynamic ? find_r_debug(core, dynamic, dynsz) : 0;
		if (exe_fd < 0) {
			Elf64_Phdr ph[MAX_PHNUM];
			size_t n;
			uint64_t entry;
			exe_fd = executable_file(core, exe, ph, &n, &entry);
		}
		file_interp(exe_fd, interp, sizeof(interp));
		if (exe_fd >= 0)
			close(exe_fd);
	} else {
		if (exe_fd >= 0)
			close(exe_fd); /* headers from a file that did not place the executable */
		r_debug = loader_r_debug(core, page, interp, sizeof(interp));
	}
	if (!err && r_debug)
		err = walk_objects(core, r_debug, start, interp, page, &f);
	if (err || f.n == 0) {
		free(f.map);
		free(f.path_at);
		free(f.paths);
		return err;
	}
	for (size_t i = 0; i < f.n; i++) {
		assert(f.path_at[i] < f.paths_len);
		f.map[i].path = f.paths + f.path_at[i];
	}
	free(f.path_at);
	qsort(f.map, f.n, sizeof(*f.map), by_start);
	core->mappings = f.map;
	core->nmappings = f.n;
	core->mapping_paths = f.paths;
	core->mappings_from_link_map = true;
	return NULL;
}
