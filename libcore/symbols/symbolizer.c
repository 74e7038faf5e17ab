/*
 * symbolizer.c - addresses to function, file, line and inline frames, with
 * libdwfl (see symbolizer.h).
 *
 * Every FOUND module (of a core, or given alone) is reported to one Dwfl
 * at its load bias.
 * dwfl_report_elf is called with add_p_vaddr = true, so its base argument
 * is the bias itself: for ET_DYN (shared objects, PIE, static-pie, vdso)
 * libdwfl uses it as given; for ET_EXEC (non-PIE, static) libdwfl forces the
 * bias to 0, which is right because such files run at their link addresses.
 * (With add_p_vaddr = false, base would instead be the address of the first
 * PT_LOAD, which equals the bias only when that segment's p_vaddr is 0.)
 * The vdso has no file: its bytes are copied from the core into a memfd.
 *
 * libdwfl asks find_debuginfo for each module's DWARF on first use; the
 * answer is cq_debuginfo_find's only.  dwfl_standard_find_debuginfo is not
 * used as a fallback: it searches the same places with weaker checks and may
 * query debuginfod servers over the network (DEBUGINFOD_URLS), which a
 * crash hook must not do and which would make results depend on the host.
 *
 * Inline frames: the module's scope index (scope_index.h, built unit by
 * unit on first use) gives the DIEs enclosing the address in the CU (the
 * concrete tree, innermost first), also in gcc LTO units where libdw's
 * dwarf_getscopes finds none; for an address no indexed subprogram holds,
 * dwarf_getscopes gives the innermost DIE and dwarf_getscopes_die its
 * enclosing DIEs.  Each DW_TAG_inlined_subroutine up to the
 * first DW_TAG_subprogram is one inline frame.  The innermost frame's line
 * is the line-table row at the address; each frame further out is at the
 * DW_AT_call_file/DW_AT_call_line of the inlined subroutine just inside it.
 *
 * Results are cached in an open-addressing hash table keyed by (module
 * index, lookup address).  Each entry's frames and strings live in one
 * malloc'd block, so pointers handed out stay valid until destroy.
 */
#include "libcore/symbols/symbolizer.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libcore/base/bytes.h"
#include "libcore/db/cache.h"
#include "libcore/base/elf_section.h"
#include "libcore/model/core.h"
#include "libcore/symbols/addr_symbols.h"
#include "libcore/symbols/aranges.h"
#include "libcore/symbols/debug_image.h"
#include "libcore/symbols/debuginfo.h"
#include "libcore/symbols/gopclntab.h"
#include "libcore/symbols/demangle.h"
#include "libcore/symbols/go_names.h"
#include "libcore/symbols/line_files.h"
#include "libcore/symbols/provenance.h"
#include "libcore/symbols/scope_index.h"
#include "libcore/symbols/symbol_blob.h"
#include "libcore/model/module.h"
#include "libcore/base/regular_file.h"
#include "libcore/base/write_all.h"

#define MAX_DEBUG_DIRS 256
#define MAX_STRING_LEN CQ_SYMBOL_BLOB_MAX_STRING
/* A Go symbol name as Go prints it is cut to this (go_names.h). */
#define MAX_GO_NAME   1024
#define CACHE_MIN_CAP 256u
#define MAX_FRAMES    (CQ_SYMBOLIZER_MAX_INLINE + 1)

/* What libdwfl's per-module userdata points at. */
struct sym_module {
	struct cq_symbolizer *owner;
	const struct cq_module *mod;
	size_t index;              /* in the symbolizer's modules */
	struct cq_aranges aranges; /* its DWARF's .debug_aranges, once read */
	bool aranges_read;
	struct cq_addr_symbols *symbols; /* its symbol table by address, once built */
	bool symbols_built;
	struct cq_gopclntab gopcln; /* a Go program's function table (gopclntab.h), once read */
	bool gopcln_read, gopcln_ok;
	struct cq_scope_index *scopes; /* its units' subprograms by address, made on first use */
	/* The file table of the unit last asked about (line_files.h), by its line table. */
	struct cq_line_files files;
	Dwarf *files_dwarf;
	uint64_t files_offset;
	bool files_read, files_ok;
};

/* One cache entry; frames == NULL marks an empty slot. */
struct cache_slot {
	uint64_t addr;
	size_t module;
	struct cq_symbol_frame *frames; /* one block: frames, then their strings */
	size_t nframes;
};

/* A module's debuginfo being inflated ahead of its lookups (cq_symbolizer_prefetch). */
struct prefetch {
	pthread_t thread;
	bool started; /* the thread runs or has run, not yet joined */
	char *path;   /* the debuginfo file */
	int fd;       /* the thread's result: the inflated image, or -1 */
};

struct cq_symbolizer {
	struct cq_module *modules; /* sorted by start: a core's, or given alone */
	size_t nmodules;
	struct cq_cache *cache; /* may be NULL */
	int8_t *has_debuginfo;  /* by module index: -1 not yet known, else 0/1 */
	struct cq_provenance
	    *provenance; /* by module index, with a cache: known with has_debuginfo */
	bool dwfl_started;
	Dwfl *dwfl;
	Dwfl_Callbacks callbacks;
	char **debug_dirs;           /* NULL-terminated copy */
	struct sym_module *reported; /* by module index */
	struct cache_slot *slots;
	size_t cap, used; /* cap is 0 or a power of two */
	struct cq_symbol_frame unknown;
	struct prefetch *prefetch; /* by module index; NULL until the first */
	bool out_of_memory; /* an allocation failed: names may be missing (cq_symbolizer_ok) */
};

/* Frames being assembled for one address, before they are packed. */
struct frame_draft {
	struct cq_symbol_frame frames[MAX_FRAMES];
	size_t n;
	char *owned[2 * MAX_FRAMES]; /* names made here, freed after packing */
	size_t nowned;
};

/* ---- libdwfl callbacks ---------------------------------------------------- */

/* Every module is reported with its ELF already open, so this never runs. */
static int no_find_elf(Dwfl_Module *dm, void **userdata, const char *modname, Dwarf_Addr base,
                       char **file_name, Elf **elfp)
{
	(void)dm, (void)userdata, (void)modname, (void)base, (void)file_name, (void)elfp;
	return -1;
}

static int find_debuginfo(Dwfl_Module *dm, void **userdata, const char *modname, Dwarf_Addr base,
                          const char *file_name, const char *debuglink_file,
                          GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	(void)dm, (void)modname, (void)base, (void)file_name, (void)debuglink_file;
	(void)debuglink_crc;
	const struct sym_module *sm = *userdata;
	if (!sm)
		return -1;
	struct prefetch *pf = sm->owner->prefetch ? &sm->owner->prefetch[sm->index] : NULL;
	if (pf && pf->started) {
		pthread_join(pf->thread, NULL);
		pf->started = false;
		if (pf->fd >= 0) {
			*debuginfo_file_name = pf->path; /* libdwfl frees it, and closes fd */
			pf->path = NULL;
			int fd = pf->fd;
			pf->fd = -1;
			return fd;
		}
	}
	char *path = cq_debuginfo_find(sm->mod, (const char *const *)sm->owner->debug_dirs);
	if (!path)
		return -1;
	int fd = cq_open_regular(path);
	if (fd < 0) {
		free(path);
		return -1;
	}
	/* Compressed DWARF: inflated once, fast, and only what lookups read. */
	int plain = cq_debug_image_inflate(fd, 2);
	if (plain >= 0) {
		close(fd);
		fd = plain;
	}
	*debuginfo_file_name = path; /* libdwfl frees it, and closes fd */
	return fd;
}

/* ---- reporting modules ------------------------------------------------------ */

/* An fd holding the vdso image copied out of the core, or -1. */
static int vdso_fd(const struct cq_module *mod)
{
	if (!mod->image_copy || mod->end <= mod->start)
		return -1;
	int fd = memfd_create("coreq-vdso", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (!cq_write_all(fd, mod->image_copy, (size_t)(mod->end - mod->start), -1)) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool reportable(const struct cq_module *mod)
{
	GElf_Ehdr ehdr;
	if (mod->status != CQ_MODULE_FOUND || !mod->elf || !gelf_getehdr(mod->elf, &ehdr))
		return false;
	if (ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN)
		return false;
	return mod->is_vdso || mod->file_path;
}

/*
 * The debuginfo file of a module whose own file is not on this host, or is
 * another build (a program upgraded after it crashed): found by the
 * build-id the core recorded, it stands in for the module (same program
 * headers, so the same bias applies).  Its fd in *fd, its path returned.
 */
static char *stand_in(struct cq_symbolizer *s, const struct cq_module *mod, int *fd)
{
	*fd = -1;
	if (mod->status == CQ_MODULE_FOUND || mod->is_vdso || mod->build_id_len == 0)
		return NULL;
	char *path = cq_debuginfo_find(mod, (const char *const *)s->debug_dirs);
	if (path && (*fd = cq_open_regular(path)) < 0) {
		free(path);
		path = NULL;
	}
	return path;
}

/*
 * Reports one module; a module libdwfl refuses is left out, and its
 * addresses then symbolize as unknown.  On success libdwfl owns fd.
 */
static void report_module(struct cq_symbolizer *s, const struct cq_module *mod, size_t index)
{
	int fd = -1;
	char *debug_path = NULL;
	if (!reportable(mod) && !(debug_path = stand_in(s, mod, &fd)))
		return;
	if (!debug_path)
		fd = mod->is_vdso ? vdso_fd(mod) : fcntl(mod->fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0 && mod->is_vdso)
		return;
	const char *file = debug_path ? debug_path : mod->is_vdso ? mod->name : mod->file_path;
	Dwfl_Module *dm = dwfl_report_elf(s->dwfl, mod->name, file, fd, mod->bias, true);
	free(debug_path);
	if (!dm) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct sym_module *sm = &s->reported[index];
	*sm = (struct sym_module){.owner = s, .mod = mod, .index = index};
	void **userdata = NULL;
	if (dwfl_module_info(dm, &userdata, NULL, NULL, NULL, NULL, NULL, NULL) && userdata)
		*userdata = sm;
}

/* Starts libdwfl on first need: a run that every cache answers never does. */
static struct cq_error *report_modules(struct cq_symbolizer *s)
{
	s->dwfl_started = true;
	s->callbacks.find_elf = no_find_elf;
	s->callbacks.find_debuginfo = find_debuginfo;
	s->dwfl = dwfl_begin(&s->callbacks);
	if (!s->dwfl)
		return cq_error_create(CQ_ERR_NOMEM, "libdwfl: %s", dwfl_errmsg(-1));
	dwfl_report_begin(s->dwfl);
	for (size_t i = 0; i < s->nmodules; i++)
		report_module(s, &s->modules[i], i);
	if (dwfl_report_end(s->dwfl, NULL, NULL) != 0)
		return cq_error_create(CQ_ERR_FORMAT, "libdwfl: %s", dwfl_errmsg(-1));
	return NULL;
}

static struct cq_error *copy_debug_dirs(struct cq_symbolizer *s, const char *const *debug_dirs)
{
	size_t n = 0;
	while (debug_dirs && n < MAX_DEBUG_DIRS && debug_dirs[n])
		n++;
	s->debug_dirs = calloc(n + 1, sizeof(*s->debug_dirs));
	if (!s->debug_dirs)
		return &cq_error_nomem;
	for (size_t i = 0; i < n; i++) {
		if (!(s->debug_dirs[i] = strdup(debug_dirs[i])))
			return &cq_error_nomem;
	}
	return NULL;
}

struct cq_error *cq_symbolizer_create(struct cq_core *core, const char *const *debug_dirs,
                                      struct cq_cache *cache, struct cq_symbolizer **out)
{
	return cq_symbolizer_create_modules(core->modules, core->nmodules, debug_dirs, cache, out);
}

struct cq_error *cq_symbolizer_create_modules(struct cq_module *modules, size_t n,
                                              const char *const *debug_dirs, struct cq_cache *cache,
                                              struct cq_symbolizer **out)
{
	*out = NULL;
	struct cq_symbolizer *s = calloc(1, sizeof(*s));
	if (!s)
		return &cq_error_nomem;
	s->modules = modules;
	s->nmodules = n;
	s->cache = cache;
	struct cq_error *err = copy_debug_dirs(s, debug_dirs);
	if (!err && n) {
		s->reported = calloc(n, sizeof(*s->reported));
		s->has_debuginfo = malloc(n);
		s->provenance = cache ? calloc(n, sizeof(*s->provenance)) : NULL;
		if (!s->reported || !s->has_debuginfo || (cache && !s->provenance))
			err = &cq_error_nomem;
		else
			memset(s->has_debuginfo, -1, n);
	}
	if (err) {
		cq_symbolizer_destroy(s);
		return err;
	}
	*out = s;
	return NULL;
}

void cq_symbolizer_destroy(struct cq_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; s->prefetch && i < s->nmodules; i++) {
		if (s->prefetch[i].started)
			pthread_join(s->prefetch[i].thread, NULL);
		if (s->prefetch[i].fd >= 0)
			close(s->prefetch[i].fd);
		free(s->prefetch[i].path);
	}
	free(s->prefetch);
	for (size_t i = 0; s->reported && i < s->nmodules; i++) {
		cq_aranges_free(&s->reported[i].aranges);
		cq_line_files_free(&s->reported[i].files);
		cq_addr_symbols_free(s->reported[i].symbols);
		cq_scope_index_free(s->reported[i].scopes);
	}
	for (size_t i = 0; i < s->cap; i++)
		free(s->slots[i].frames);
	free(s->slots);
	if (s->dwfl)
		dwfl_end(s->dwfl);
	free(s->reported);
	free(s->has_debuginfo);
	for (size_t i = 0; s->provenance && i < s->nmodules; i++)
		cq_provenance_free(&s->provenance[i]);
	free(s->provenance);
	for (size_t i = 0; s->debug_dirs && s->debug_dirs[i]; i++)
		free(s->debug_dirs[i]);
	free(s->debug_dirs);
	free(s);
}

/* ---- inflating debuginfo ahead ----------------------------------------------------- */

static void *prefetch_main(void *arg)
{
	struct prefetch *pf = arg;
	int fd = cq_open_regular(pf->path);
	if (fd >= 0) {
		pf->fd = cq_debug_image_inflate(fd, 2);
		close(fd);
	}
	return NULL;
}

void cq_symbolizer_prefetch(struct cq_symbolizer *s, const struct cq_module *mod)
{
	if (!s || s->dwfl_started || !mod)
		return;
	const struct cq_module *m = cq_module_find(s->modules, s->nmodules, mod->start);
	if (!m || m->start != mod->start)
		return;
	size_t index = (size_t)(m - s->modules);
	if (!s->prefetch) {
		if (!(s->prefetch = calloc(s->nmodules, sizeof(*s->prefetch))))
			return;
		for (size_t i = 0; i < s->nmodules; i++)
			s->prefetch[i].fd = -1;
	}
	struct prefetch *pf = &s->prefetch[index];
	if (pf->started || pf->path || !reportable(m))
		return;
	if (!(pf->path = cq_debuginfo_find(m, (const char *const *)s->debug_dirs)))
		return;
	pf->started = pthread_create(&pf->thread, NULL, prefetch_main, pf) == 0;
}

/* ---- describing one address ---------------------------------------------------- */

/* Keeps s (malloc'd, may be NULL) until the draft is packed. */
static const char *keep(struct frame_draft *d, char *s)
{
	if (s && d->nowned == sizeof(d->owned) / sizeof(d->owned[0])) {
		free(s);
		return NULL;
	}
	if (s)
		d->owned[d->nowned++] = s;
	return s;
}

/* The demangled form of name (kept in the draft), or name itself. */
static const char *demangled_or_raw(struct frame_draft *d, const char *name)
{
	const char *demangled = keep(d, cq_demangle(name));
	return demangled ? demangled : name;
}

/* name as Go prints it where Go spells it otherwise (go_names.h), kept; else name. */
static const char *go_printed(struct frame_draft *d, const char *name)
{
	char go[MAX_GO_NAME];
	const char *printed =
	    name && cq_name_go_printed(name, go, sizeof(go)) ? keep(d, strdup(go)) : NULL;
	return printed ? printed : name;
}

/*
 * A symbol-table name as a function name: without the symbol version that
 * glibc's .symtab spells into names ("pthread_kill@@GLIBC_2.34"), demangled;
 * a Go symbol as Go prints it ("runtime.raise", not "runtime.raise.abi0":
 * go_names.h).
 */
static const char *symbol_function_name(struct frame_draft *d, const char *symbol)
{
	const char *at = symbol ? strchr(symbol, '@') : NULL;
	if (at && at != symbol)
		symbol = keep(d, strndup(symbol, (size_t)(at - symbol)));
	symbol = go_printed(d, symbol);
	return symbol ? demangled_or_raw(d, symbol) : NULL;
}

/* A subprogram's or inlined subroutine's name, from its abstract origin, as gdb names it. */
static const char *die_function_name(struct frame_draft *d, Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *linkage =
	    dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!linkage)
		linkage =
		    dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	/* The linkage name, demangled, as a debugger prints it: for C, the asm
	 * name an alias macro gave (glibc's __GI___futex_abstimed_wait_cancelable64). */
	if (linkage)
		return demangled_or_raw(d, linkage);
	return go_printed(d, dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr)));
}

/* name without trailing clone suffixes (demangle.h), kept. */
static const char *without_clone(struct frame_draft *d, const char *name)
{
	size_t len = cq_name_unclone(name);
	return len == strlen(name) ? name : keep(d, strndup(name, len));
}

/*
 * Whether the demangled symbol base names the function DWARF calls name:
 * name's identifier (before any "<") stands in base alone or after "::",
 * followed by its arguments ("ns::cls::name<...>(...)").
 */
static bool names_same_function(const char *base, const char *name)
{
	/* DWARF spells a template's arguments its own way: compare the identifier. */
	size_t n = strcspn(name, "<");
	if (n == 0)
		return false;
	const char *end = base + strnlen(base, MAX_STRING_LEN);
	for (const char *p = memmem(base, (size_t)(end - base), name, n); p;
	     p = memmem(p + 1, (size_t)(end - p - 1), name, n)) {
		bool start = p == base || (p - base >= 2 && p[-1] == ':' && p[-2] == ':');
		char after = p[n];
		if (start && (after == '\0' || after == '(' || after == '<' || after == ' '))
			return true;
	}
	return false;
}

/*
 * A C++20 coroutine's body split out by the compiler: gcc's actor and
 * destroyer, clang's resume, destroy and cleanup parts (demangled as
 * "f(int) [clone .actor]").
 */
static bool coroutine_part(const char *name)
{
	static const char *const parts[] = {"[clone .actor]", "[clone .destroy]", "[clone .resume]",
	                                    "[clone .cleanup]"};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (strstr(name, parts[i]))
			return true;
	return false;
}

/*
 * A frame's function as a debugger names it, from the subprogram holding
 * the pc (NULL: no DWARF covers it) and the symbol table's name (may be
 * NULL): the subprogram's linkage name, demangled; else its DW_AT_name,
 * qualified as the symbol spells it when the symbol (without its clone
 * suffix) names the same function (a C++ template's DIE often has no
 * linkage name); else the symbol.  A C++20 coroutine's split-out part keeps
 * the symbol's name: gcc describes its actor as nested in the ramp, clang
 * names its parts as the ramp.
 */
static const char *outer_function_name(struct frame_draft *d, Dwarf_Die *subprogram,
                                       const char *from_symbol)
{
	if (!subprogram)
		return from_symbol;
	if (from_symbol && coroutine_part(from_symbol))
		return from_symbol;
	Dwarf_Attribute attr;
	const char *linkage =
	    dwarf_formstring(dwarf_attr_integrate(subprogram, DW_AT_linkage_name, &attr));
	if (!linkage)
		linkage = dwarf_formstring(
		    dwarf_attr_integrate(subprogram, DW_AT_MIPS_linkage_name, &attr));
	if (linkage)
		return demangled_or_raw(d, linkage);
	const char *name =
	    go_printed(d, dwarf_formstring(dwarf_attr_integrate(subprogram, DW_AT_name, &attr)));
	if (!name)
		return from_symbol;
	if (from_symbol) {
		const char *base = without_clone(d, from_symbol);
		if (base && names_same_function(base, name))
			return base;
	}
	return name;
}

static int clamp_line(Dwarf_Word line)
{
	return line > INT_MAX ? 0 : (int)line;
}

/*
 * Frees err: a damaged table only costs that table (libdwfl answers
 * instead), but running out of memory is remembered for cq_symbolizer_ok.
 */
static void drop_error(struct cq_symbolizer *s, struct cq_error *err)
{
	if (err && err->code == CQ_ERR_NOMEM)
		s->out_of_memory = true;
	cq_error_free(err);
}

/*
 * A DWARF section of dw's file, as bytes this file's readers take: little
 * endian and not compressed (libdw inflates the sections it reads itself);
 * NULL otherwise, the caller then answering through libdw alone.
 */
static Elf_Data *dwarf_section(Dwarf *dw, const char *name)
{
	Elf *elf = dwarf_getelf(dw);
	GElf_Ehdr eh;
	GElf_Shdr sh;
	Elf_Scn *scn = elf && gelf_getehdr(elf, &eh) && eh.e_ident[EI_DATA] == ELFDATA2LSB
	                   ? cq_elf_section(elf, name, &sh)
	                   : NULL;
	Elf_Data *data = scn && !(sh.sh_flags & SHF_COMPRESSED) ? elf_getdata(scn, NULL) : NULL;
	return data && data->d_buf ? data : NULL;
}

/*
 * The file table of the unit's line program (line_files.h), read once per
 * unit in a row: NULL when the unit has none or it cannot be read (file
 * names are then libdw's joined paths).
 */
static const struct cq_line_files *unit_files(struct sym_module *sm, Dwarf_Die *cudie)
{
	Dwarf_Attribute attr;
	Dwarf_Word offset;
	Dwarf *dw = cudie ? dwarf_cu_getdwarf(cudie->cu) : NULL;
	if (!sm || !dw || dwarf_formudata(dwarf_attr(cudie, DW_AT_stmt_list, &attr), &offset) != 0)
		return NULL;
	if (sm->files_read && sm->files_dwarf == dw && sm->files_offset == offset)
		return sm->files_ok ? &sm->files : NULL;
	cq_line_files_free(&sm->files);
	sm->files_read = true;
	sm->files_ok = false;
	sm->files_dwarf = dw;
	sm->files_offset = offset;
	Elf_Data *data = dwarf_section(dw, ".debug_line");
	if (!data)
		return NULL;
	struct cq_error *err = cq_line_files_parse(data->d_buf, data->d_size, offset, &sm->files);
	sm->files_ok = !err;
	drop_error(sm->owner, err);
	return sm->files_ok ? &sm->files : NULL;
}

/*
 * A source file as gdb's backtrace prints it (line_files.h): file number
 * index of the unit's line table, whose joined path libdw gives as path.
 */
static const char *shown_file(struct sym_module *sm, Dwarf_Die *cudie, size_t index,
                              const char *path)
{
	if (!path || !cudie)
		return path;
	Dwarf_Attribute attr;
	const char *unit_name = dwarf_formstring(dwarf_attr(cudie, DW_AT_name, &attr));
	const char *comp_dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &attr));
	return cq_line_files_display(unit_files(sm, cudie), index, path, unit_name, comp_dir);
}

/* The number of the file whose joined path libdw gave as path, or SIZE_MAX. */
static size_t file_index(Dwarf_Die *cudie, const char *path)
{
	Dwarf_Files *files;
	size_t nfiles;
	if (!path || dwarf_getsrcfiles(cudie, &files, &nfiles) != 0)
		return SIZE_MAX;
	for (size_t i = 0; i < nfiles; i++) /* libdw hands out its own strings */
		if (dwarf_filesrc(files, i, NULL, NULL) == path)
			return i;
	for (size_t i = 0; i < nfiles; i++) {
		const char *name = dwarf_filesrc(files, i, NULL, NULL);
		if (name && strcmp(name, path) == 0)
			return i;
	}
	return SIZE_MAX;
}

/*
 * Where the inlined subroutine was called from: a location in its caller.
 * None without a call line (rustc writes DW_AT_call_line 0 beside a call
 * file): gdb then shows no location rather than pretend to know one.
 */
static void call_site(struct sym_module *sm, Dwarf_Die *cudie, Dwarf_Die *inlined,
                      Dwarf_Files *files, size_t nfiles, const char **file, int *line)
{
	Dwarf_Attribute attr;
	Dwarf_Word value;
	*file = NULL;
	*line = 0;
	if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &attr), &value) == 0)
		*line = clamp_line(value);
	if (*line != 0 && files &&
	    dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr), &value) == 0 &&
	    value < nfiles)
		*file = shown_file(sm, cudie, (size_t)value,
		                   dwarf_filesrc(files, (size_t)value, NULL, NULL));
}

/*
 * libdw's own leak (elfutils 0.188, Debian 12): when dwarf_getscopes fails
 * after its first pass (an inlined call whose DW_AT_abstract_origin points
 * nowhere, in corrupt DWARF), it returns -1 and drops the scope array it
 * allocated, so no caller can free it.  LeakSanitizer would fail every
 * sanitized run on such a file; the frame inside libdw has no symbol to
 * name in a suppression file, so the sanitized build ignores exactly the
 * allocations of this call.  (tests/e2e/test_libdw_leak.py)
 */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CQ_SANITIZED 1 /* clang */
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) /* gcc */
#define CQ_SANITIZED 1
#endif
#if defined(CQ_SANITIZED)
#include <sanitizer/lsan_interface.h>
static int getscopes(Dwarf_Die *cudie, Dwarf_Addr pc, Dwarf_Die **scopes)
{
	__lsan_disable();
	int n = dwarf_getscopes(cudie, pc, scopes);
	__lsan_enable();
	return n;
}
#else
#define getscopes dwarf_getscopes
#endif

/*
 * The DIEs enclosing the innermost scope at pc (CU-relative), innermost
 * first: from the module's scope index (scope_index.h, which reads the
 * inlined subroutines of LTO units that dwarf_getscopes misses); where that
 * has no subprogram holding pc (a function nested in another's DIE), from
 * libdw.
 */
static int scope_chain(struct sym_module *sm, Dwarf_Die *cudie, Dwarf_Addr pc, Dwarf_Die **chain)
{
	Dwarf_Die *scopes = NULL;
	*chain = NULL;
	Dwarf *dw = dwarf_cu_getdwarf(cudie->cu);
	if (sm && !sm->scopes && dw)
		drop_error(sm->owner, cq_scope_index_create(dw, &sm->scopes));
	struct cq_error *err = NULL;
	int m = sm ? cq_scope_index_chain(sm->scopes, cudie, pc, chain, &err) : 0;
	if (sm)
		drop_error(sm->owner, err);
	if (m > 0)
		return m;
	int n = getscopes(cudie, pc, &scopes);
	if (n <= 0)
		return 0;
	m = dwarf_getscopes_die(&scopes[0], chain);
	free(scopes);
	return m > 0 ? m : 0;
}

static void push_frame(struct frame_draft *d, const char *function, const char *file, int line,
                       bool inlined)
{
	if (d->n < MAX_FRAMES)
		d->frames[d->n++] = (struct cq_symbol_frame){
		    .function = function, .file = file, .line = line, .inlined = inlined};
}

/*
 * Adds one frame per inlined subroutine in chain (up to the enclosing
 * subprogram, which *subprogram is set to), innermost first.  On entry
 * *file and *line are the location at the address; on return they are the
 * location in the real function (the outermost inline's call site).
 */
/* Whether a DIE, through its abstract origin, has a name die_function_name can give. */
static bool die_named(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr)) ||
	       dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr)) ||
	       dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
}

static void add_inline_frames(struct frame_draft *d, struct sym_module *sm, Dwarf_Die *cudie,
                              Dwarf_Die *chain, int nchain, const char **file, int *line,
                              Dwarf_Die **subprogram)
{
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	if (dwarf_getsrcfiles(cudie, &files, &nfiles) != 0)
		files = NULL;
	*subprogram = NULL;
	/*
	 * An inlined call whose abstract origin names nothing (damaged DWARF: a
	 * reference past its unit) makes the whole chain untrustworthy: no
	 * inline frame, and the location at the address, as libdw gives.
	 */
	bool whole = true;
	for (int i = 0; i < nchain && dwarf_tag(&chain[i]) != DW_TAG_subprogram; i++)
		if (dwarf_tag(&chain[i]) == DW_TAG_inlined_subroutine && !die_named(&chain[i]))
			whole = false;
	for (int i = 0; i < nchain; i++) {
		int tag = dwarf_tag(&chain[i]);
		if (tag == DW_TAG_subprogram) {
			*subprogram = &chain[i];
			return;
		}
		if (tag != DW_TAG_inlined_subroutine || !whole)
			continue;
		if (d->n < CQ_SYMBOLIZER_MAX_INLINE)
			push_frame(d, die_function_name(d, &chain[i]), *file, *line, true);
		call_site(sm, cudie, &chain[i], files, nfiles, file, line);
	}
}

/* The section of elf holding link-time address addr, its bytes from there in *len; or NULL. */
static const uint8_t *bytes_at(Elf *elf, uint64_t addr, size_t *len)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || addr < sh.sh_addr ||
		    addr - sh.sh_addr >= sh.sh_size)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || addr - sh.sh_addr >= d->d_size)
			return NULL;
		*len = d->d_size - (size_t)(addr - sh.sh_addr);
		return (const uint8_t *)d->d_buf + (addr - sh.sh_addr);
	}
	return NULL;
}

#define GO119_MODULEDATA_GOFUNC 304 /* moduledata.gofunc, Go 1.18 and 1.19 (amd64, arm64) */

/*
 * Where a Go 1.18/1.19 program keeps its inline trees (go:func.*): the
 * runtime's first moduledata is the word of .noptrdata that points at
 * .gopclntab (its pcHeader), and its gofunc field says where they are.
 */
static void go_inline_trees(struct cq_gopclntab *t, Elf *elf, uint64_t pclntab_addr)
{
	uint64_t md;
	const uint8_t *b =
	    cq_elf_section_word(elf, ".noptrdata", pclntab_addr, GO119_MODULEDATA_GOFUNC + 8, &md);
	size_t len = 0;
	const uint8_t *gofunc =
	    b ? bytes_at(elf, cq_load_u64(b + GO119_MODULEDATA_GOFUNC), &len) : NULL;
	if (gofunc)
		cq_gopclntab_set_gofunc(t, gofunc, len);
}

/*
 * The Go function holding addr, from the module's .gopclntab (gopclntab.h):
 * named as Go prints it, where the symbol table says `runtime.raise.abi0`
 * or is gone (a stripped Go program).  NULL for a module that is no Go
 * program, and for code the table does not cover (cgo's C code).
 */
static const char *go_function_at(struct sym_module *sm, Dwfl_Module *dm, Dwarf_Addr addr)
{
	if (!sm)
		return NULL;
	if (!sm->gopcln_read) {
		sm->gopcln_read = true;
		GElf_Addr bias;
		Elf *elf = dwfl_module_getelf(dm, &bias);
		GElf_Shdr sh;
		Elf_Scn *scn = elf ? cq_elf_section(elf, ".gopclntab", &sh) : NULL;
		Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
		sm->gopcln_ok = data && data->d_buf &&
		                cq_gopclntab_init(&sm->gopcln, data->d_buf, data->d_size);
		if (sm->gopcln_ok)
			go_inline_trees(&sm->gopcln, elf, sh.sh_addr);
	}
	if (!sm->gopcln_ok)
		return NULL;
	Dwarf_Addr bias = 0;
	if (!dwfl_module_getelf(dm, &bias) || addr < bias)
		return NULL;
	uint64_t entry;
	return cq_gopclntab_find(&sm->gopcln, addr - bias, &entry);
}

/*
 * A Go program's frames at addr from its .gopclntab (gopclntab.h), where no
 * DWARF covers addr (a stripped Go program): the calls inlined there, then
 * the function, each with its file and line, as Go's own traceback prints
 * them; how many (0 for any other module).
 */
static size_t go_frames_at(struct sym_module *sm, Dwfl_Module *dm, Dwarf_Addr addr,
                           struct cq_gopclntab_frame *out, size_t cap)
{
	Dwarf_Addr bias = 0;
	if (!sm || !go_function_at(sm, dm, addr) || !dwfl_module_getelf(dm, &bias) || addr < bias)
		return 0;
	return cq_gopclntab_frames(&sm->gopcln, addr - bias, out, cap);
}

/*
 * The name of the symbol holding addr: a Go function's from its
 * .gopclntab, else through the module's symbol index (addr_symbols.h).
 */
static const char *symbol_at(struct sym_module *sm, Dwfl_Module *dm, Dwarf_Addr addr)
{
	const char *go = go_function_at(sm, dm, addr);
	if (go)
		return go;
	if (sm && !sm->symbols_built) {
		sm->symbols_built = true;
		drop_error(sm->owner, cq_addr_symbols_build(dm, &sm->symbols));
	}
	GElf_Off offset;
	return cq_addr_symbols_find(sm ? sm->symbols : NULL, dm, addr, &offset);
}

/* The module's .debug_aranges as a table (read once; empty when it has none). */
static const struct cq_aranges *module_aranges(struct sym_module *sm, Dwarf *dw)
{
	if (sm->aranges_read)
		return &sm->aranges;
	sm->aranges_read = true;
	Elf_Data *data = dwarf_section(dw, ".debug_aranges");
	if (data)
		drop_error(sm->owner, cq_aranges_parse(data->d_buf, data->d_size, &sm->aranges));
	return &sm->aranges;
}

/* At most this many units are walked for an address when there is no .debug_aranges. */
#define MAX_UNITS_WALKED (1u << 16)

/*
 * The compile unit whose own ranges hold a (a DWARF address), unit by unit:
 * for a module without .debug_aranges (clang writes none), where libdw
 * 0.188's dwfl_module_addrdie finds nothing.  NULL when none does.
 */
static Dwarf_Die *unit_by_ranges(Dwarf *dw, Dwarf_Addr a, Dwarf_Die *mem)
{
	Dwarf_Off off = 0, next;
	size_t header_size;
	for (unsigned k = 0;
	     k < MAX_UNITS_WALKED &&
	     dwarf_next_unit(dw, off, &next, &header_size, NULL, NULL, NULL, NULL, NULL, NULL) == 0;
	     k++, off = next) {
		if (!dwarf_offdie(dw, off + header_size, mem))
			continue;
		int tag = dwarf_tag(mem);
		if ((tag == DW_TAG_compile_unit || tag == DW_TAG_partial_unit) &&
		    dwarf_haspc(mem, a) == 1)
			return mem;
	}
	return NULL;
}

/*
 * The unit DIE holding addr, through the module's own .debug_aranges: libdw
 * then reads the units up to that one only (see aranges.h); without that
 * section, the unit whose ranges hold addr (unit_by_ranges).  NULL when the
 * table has no answer or the unit does not hold addr.
 */
static Dwarf_Die *unit_at(struct sym_module *sm, Dwfl_Module *dm, Dwarf_Addr addr, Dwarf_Die *mem,
                          Dwarf_Addr *bias)
{
	Dwarf *dw = sm ? dwfl_module_getdwarf(dm, bias) : NULL;
	uint64_t unit;
	Dwarf_Off next;
	size_t header_size;
	if (dw && module_aranges(sm, dw)->n == 0 && !dwarf_section(dw, ".debug_aranges"))
		return unit_by_ranges(dw, addr - *bias, mem);
	if (!dw || !cq_aranges_find(module_aranges(sm, dw), addr - *bias, &unit) ||
	    dwarf_next_unit(dw, unit, &next, &header_size, NULL, NULL, NULL, NULL, NULL, NULL) !=
	        0 ||
	    !dwarf_offdie(dw, unit + header_size, mem))
		return NULL;
	int tag = dwarf_tag(mem);
	if ((tag != DW_TAG_compile_unit && tag != DW_TAG_partial_unit) ||
	    dwarf_haspc(mem, addr - *bias) != 1)
		return NULL;
	return mem;
}

/* Flags of a row; false when libdw cannot say. */
static bool ends_sequence(Dwarf_Line *row)
{
	bool flag;
	return row && dwarf_lineendsequence(row, &flag) == 0 && flag;
}

static bool is_statement(Dwarf_Line *row)
{
	bool flag;
	return row && dwarf_linebeginstatement(row, &flag) == 0 && flag;
}

/* A row gdb keeps: gdb 13 drops line-0 rows (code of no line) from its tables. */
static bool has_line(Dwarf_Line *row)
{
	int line;
	return row && dwarf_lineno(row, &line) == 0 && line != 0;
}

/*
 * The line-table row for addr (a DWARF address) in the unit, chosen as gdb
 * 13 chooses it, from the rows it keeps (has_line):
 *   - the last row at the greatest address not above addr, without
 *     crossing the end of a sequence: none when addr lies past the code
 *     the sequence covers (libdw 0.188's dwarf_getsrc_die would hand out
 *     the end row, with the file and line of the row before it);
 *   - among the rows at that address, the last statement boundary
 *     (is_stmt), when that row is not one.
 */
static Dwarf_Line *row_at(Dwarf_Die *cudie, Dwarf_Addr addr)
{
	Dwarf_Lines *lines;
	size_t n;
	Dwarf_Addr a;
	if (dwarf_getsrclines(cudie, &lines, &n) != 0 || n == 0)
		return NULL;
	size_t lo = 0, hi = n; /* the first row above addr, by binary search */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (dwarf_lineaddr(dwarf_onesrcline(lines, mid), &a) == 0 && a <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t i = lo;
	Dwarf_Line *row = NULL;
	while (i > 0) { /* the last kept row, within the sequence */
		Dwarf_Line *r = dwarf_onesrcline(lines, --i);
		if (!r || ends_sequence(r))
			return NULL;
		if (has_line(r)) {
			row = r;
			break;
		}
	}
	Dwarf_Addr at;
	if (!row || is_statement(row) || dwarf_lineaddr(row, &at) != 0)
		return row;
	for (size_t k = i; k > 0; k--) {
		Dwarf_Line *prev = dwarf_onesrcline(lines, k - 1);
		if (!prev || dwarf_lineaddr(prev, &a) != 0 || a != at || ends_sequence(prev))
			break;
		if (has_line(prev) && is_statement(prev))
			return prev;
	}
	return row;
}

/* The file and line of row_at. */
static void line_in_unit(Dwarf_Die *cudie, Dwarf_Addr addr, const char **file, int *line)
{
	*file = NULL;
	*line = 0;
	Dwarf_Line *row = row_at(cudie, addr);
	if (row && (*file = dwarf_linesrc(row, NULL, NULL)) && dwarf_lineno(row, line) != 0)
		*line = 0;
	if (!*file || *line < 0)
		*line = 0;
}

/*
 * True when the unit states the code it covers and addr is not in it.
 * libdwfl 0.188's dwfl_module_addrdie answers with the unit of the nearest
 * .debug_aranges set below addr even past that set's end (_start, right
 * after the last function of a unit, then took that unit's last line); gdb
 * finds no line there.  A unit with no ranges at all is taken at its word.
 */
static bool outside_unit(Dwarf_Die *cudie, Dwarf_Addr addr)
{
	if (dwarf_haspc(cudie, addr) == 1)
		return false;
	return dwarf_hasattr(cudie, DW_AT_ranges) || dwarf_hasattr(cudie, DW_AT_low_pc);
}

static void describe(struct frame_draft *d, struct sym_module *sm, Dwfl_Module *dm, Dwarf_Addr addr)
{
	const char *symbol = symbol_at(sm, dm, addr);
	const char *file;
	int line;
	Dwarf_Addr bias = 0;
	Dwarf_Die unit_mem;
	Dwarf_Die *cudie = unit_at(sm, dm, addr, &unit_mem, &bias);
	if (!cudie) {
		cudie = dwfl_module_addrdie(dm, addr, &bias);
		if (cudie && outside_unit(cudie, addr - bias))
			cudie = NULL;
	}
	file = NULL;
	line = 0;
	if (cudie)
		line_in_unit(cudie, addr - bias, &file, &line);
	if (cudie)
		file = shown_file(sm, cudie, file_index(cudie, file), file);
	struct cq_gopclntab_frame go[MAX_FRAMES];
	size_t ngo = cudie ? 0 : go_frames_at(sm, dm, addr, go, MAX_FRAMES);
	for (size_t i = 0; i + 1 < ngo; i++) /* the inlined calls, as Go names them */
		push_frame(d, symbol_function_name(d, go[i].function), go[i].file, go[i].line,
		           true);
	if (ngo) {
		file = go[ngo - 1].file;
		line = go[ngo - 1].line;
	}
	Dwarf_Die *chain = NULL;
	int nchain = cudie ? scope_chain(sm, cudie, addr - bias, &chain) : 0;
	Dwarf_Die *subprogram = NULL;
	if (nchain > 0)
		add_inline_frames(d, sm, cudie, chain, nchain, &file, &line, &subprogram);

	const char *from_symbol = symbol_function_name(d, symbol);
	const char *function = outer_function_name(d, subprogram, from_symbol);
	size_t at = d->n;
	push_frame(d, function, file, line, false);
	if (d->n > at && from_symbol && strcmp(from_symbol, function) != 0)
		d->frames[at].symbol = from_symbol;
	free(chain);
}

static size_t bounded_len(const char *s)
{
	return s ? strnlen(s, MAX_STRING_LEN) + 1 : 0;
}

static const char *copy_string(char **cursor, const char *s)
{
	if (!s)
		return NULL;
	size_t len = strnlen(s, MAX_STRING_LEN);
	char *out = *cursor;
	memcpy(out, s, len);
	out[len] = '\0';
	*cursor += len + 1;
	return out;
}

/* The draft's frames and strings copied into one malloc'd block. */
static struct cq_symbol_frame *pack_frames(const struct frame_draft *d)
{
	size_t size = d->n * sizeof(struct cq_symbol_frame);
	for (size_t i = 0; i < d->n; i++)
		size += bounded_len(d->frames[i].function) + bounded_len(d->frames[i].file) +
		        bounded_len(d->frames[i].symbol);
	struct cq_symbol_frame *out = malloc(size);
	if (!out)
		return NULL;
	char *cursor = (char *)(out + d->n);
	for (size_t i = 0; i < d->n; i++) {
		out[i] = d->frames[i];
		out[i].function = copy_string(&cursor, d->frames[i].function);
		out[i].file = copy_string(&cursor, d->frames[i].file);
		out[i].symbol = copy_string(&cursor, d->frames[i].symbol);
	}
	return out;
}

/* ---- the cache ------------------------------------------------------------------- */

static uint64_t slot_hash(size_t module, uint64_t addr)
{
	uint64_t h = addr ^ ((uint64_t)module * 0x9e3779b97f4a7c15ull);
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	return h ^ (h >> 31);
}

/* The slot holding (module, addr), or the empty slot where it would go. */
static struct cache_slot *cache_probe(struct cache_slot *slots, size_t cap, size_t module,
                                      uint64_t addr)
{
	size_t mask = cap - 1;
	size_t i = (size_t)slot_hash(module, addr) & mask;
	for (size_t n = 0; n < cap; n++, i = (i + 1) & mask) {
		struct cache_slot *slot = &slots[i];
		if (!slot->frames || (slot->module == module && slot->addr == addr))
			return slot;
	}
	return NULL;
}

/* Makes room for one more entry, keeping the load factor at most 3/4. */
static bool cache_reserve(struct cq_symbolizer *s)
{
	if ((s->used + 1) * 4 <= s->cap * 3)
		return true;
	if (s->cap > SIZE_MAX / 2 / sizeof(struct cache_slot))
		return false;
	size_t cap = s->cap ? s->cap * 2 : CACHE_MIN_CAP;
	struct cache_slot *slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return false;
	for (size_t i = 0; i < s->cap; i++) {
		const struct cache_slot *old = &s->slots[i];
		if (old->frames)
			*cache_probe(slots, cap, old->module, old->addr) = *old;
	}
	free(s->slots);
	s->slots = slots;
	s->cap = cap;
	return true;
}

/* ---- lookup ---------------------------------------------------------------------- */

static struct sym_module *module_of(Dwfl_Module *dm)
{
	void **userdata = NULL;
	if (!dm || !dwfl_module_info(dm, &userdata, NULL, NULL, NULL, NULL, NULL, NULL) ||
	    !userdata)
		return NULL;
	return *userdata;
}

/* ---- the cache file -------------------------------------------------------------- */

static int module_has_debuginfo(struct cq_symbolizer *s, size_t index)
{
	if (s->has_debuginfo[index] < 0) {
		char *path =
		    cq_debuginfo_find(&s->modules[index], (const char *const *)s->debug_dirs);
		s->has_debuginfo[index] = path != NULL;
		if (s->provenance) /* the cache key: the files this run uses (provenance.h) */
			cq_provenance_init(&s->provenance[index], &s->modules[index], path);
		free(path);
	}
	return s->has_debuginfo[index];
}

/* Fills slot from the cache file, if it knows (module, addr). */
static bool fill_from_cache(struct cq_symbolizer *s, struct cache_slot *slot, size_t index,
                            uint64_t addr)
{
	const struct cq_module *mod = &s->modules[index];
	size_t len = 0;
	int debuginfo = module_has_debuginfo(s, index);
	uint8_t *blob = cq_cache_get_symbols(s->cache, &s->provenance[index].key, addr - mod->bias,
	                                     debuginfo, CQ_SYMBOL_BLOB_FORMAT, &len);
	if (!blob)
		return false;
	struct frame_draft draft = {.n = 0, .nowned = 0};
	draft.n = cq_symbol_blob_decode(blob, len, draft.frames, MAX_FRAMES);
	struct cq_symbol_frame *frames = draft.n ? pack_frames(&draft) : NULL;
	free(blob);
	if (!draft.n)
		cq_cache_reject(s->cache); /* rebuilt from the module and overwritten */
	if (!frames)
		return false;
	*slot = (struct cache_slot){
	    .addr = addr, .module = index, .frames = frames, .nframes = draft.n};
	return true;
}

/* Describes addr with libdwfl (started now if need be) and stores it in slot. */
static bool fill_from_dwarf(struct cq_symbolizer *s, struct cache_slot *slot, size_t index,
                            uint64_t addr)
{
	if (!s->dwfl_started)
		drop_error(s, report_modules(s));
	Dwfl_Module *dm = s->dwfl ? dwfl_addrmodule(s->dwfl, addr) : NULL;
	struct sym_module *sm = module_of(dm);
	if (!sm || sm->index != index)
		return false;
	struct frame_draft draft;
	draft.n = 0;
	draft.nowned = 0;
	describe(&draft, sm, dm, addr);
	struct cq_symbol_frame *frames = pack_frames(&draft);
	for (size_t i = 0; i < draft.nowned; i++)
		free(draft.owned[i]);
	if (!frames) {
		s->out_of_memory = true;
		return false;
	}
	*slot = (struct cache_slot){
	    .addr = addr, .module = index, .frames = frames, .nframes = draft.n};
	if (s->cache) {
		size_t len;
		int debuginfo = module_has_debuginfo(s, index);
		uint8_t *blob = cq_symbol_blob_encode(frames, draft.n, &len);
		if (blob)
			cq_cache_put_symbols(s->cache, &s->provenance[index].key,
			                     addr - sm->mod->bias, debuginfo, CQ_SYMBOL_BLOB_FORMAT,
			                     blob, len);
		free(blob);
	}
	return true;
}

size_t cq_symbolizer_lookup(struct cq_symbolizer *s, uint64_t pc, bool is_return_address,
                            const struct cq_symbol_frame **frames)
{
	*frames = &s->unknown;
	if (is_return_address && pc == 0)
		return 1;
	uint64_t addr = is_return_address ? pc - 1 : pc;
	const struct cq_module *mod = cq_module_find(s->modules, s->nmodules, addr);
	if (!mod)
		return 1;
	size_t index = (size_t)(mod - s->modules);
	if (!reportable(mod) && !(mod->status != CQ_MODULE_FOUND && !mod->is_vdso &&
	                          mod->build_id_len && module_has_debuginfo(s, index) == 1))
		return 1;
	struct cache_slot *slot = s->cap ? cache_probe(s->slots, s->cap, index, addr) : NULL;
	if (!slot || !slot->frames) {
		if (!cache_reserve(s)) {
			s->out_of_memory = true;
			return 1;
		}
		slot = cache_probe(s->slots, s->cap, index, addr);
		bool cached = s->cache && fill_from_cache(s, slot, index, addr);
		if (!slot || (!cached && !fill_from_dwarf(s, slot, index, addr)))
			return 1;
		s->used++;
	}
	*frames = slot->frames;
	return slot->nframes;
}

const struct cq_provenance *cq_symbolizer_provenance(struct cq_symbolizer *s,
                                                     const struct cq_module *mod)
{
	if (!s || !s->provenance || mod < s->modules || mod >= s->modules + s->nmodules)
		return NULL;
	size_t index = (size_t)(mod - s->modules);
	module_has_debuginfo(s, index); /* makes the module's provenance */
	return &s->provenance[index];
}

bool cq_symbolizer_ok(const struct cq_symbolizer *s)
{
	return !s || !s->out_of_memory;
}
