/*
 * module.h - the ELF objects mapped into a crashed process.
 *
 * A module is one mapped ELF file (the executable, each shared library) or
 * the vdso.  Its build-id is read from the core's own copy of the module's
 * first page when the core holds it, else from the file.  The file on this
 * host (inside --sysroot, or --exe for the executable; see
 * cq_module_open_host_file) is used only when its build-id matches the core's
 * and it is built for the core's architecture: a mismatch is reported and
 * the file ignored, never silently used to fill in memory or symbols.
 */
#ifndef CQ_MODULE_H
#define CQ_MODULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

struct cq_core;

#define CQ_BUILD_ID_MAX 64

enum cq_module_status {
	CQ_MODULE_FOUND,    /* file present with a matching build-id (or in-core vdso) */
	CQ_MODULE_MISSING,  /* no readable ELF file at the expected path */
	CQ_MODULE_MISMATCH, /* the file's build-id differs from the core's */
};

struct cq_module {
	char *name;          /* path as recorded in the core, or "[vdso]" */
	char *file_path;     /* the file used on this host, when FOUND */
	uint64_t start, end; /* lowest and highest+1 mapped address */
	uint64_t bias;       /* runtime address - link-time address */
	uint8_t build_id[CQ_BUILD_ID_MAX];
	size_t build_id_len;
	bool build_id_from_core; /* false: the core lacked the header page */
	enum cq_module_status status;
	bool is_vdso;
	bool is_main;
	/*
	 * The sysroot file_path was found in (borrowed from the core's options)
	 * and the file's path from there as resolved (malloc'd): whatever is
	 * looked for next to the file is looked for inside the same root.  Both
	 * NULL when the file is not under --sysroot.
	 */
	const char *root;
	char *file_in_root;
	bool deleted; /* the file was replaced after it was mapped; name has no " (deleted)" */
	void *elf;    /* Elf * of file_path (or of the in-core vdso image) */
	int fd;
	uint8_t *image_copy; /* vdso: its bytes copied out of the core */
	void *analysis;      /* per-module caches owned by higher layers */
	void (*analysis_free)(void *);
};

/*
 * Opens the file that stands on this host for the object a core records as
 * name: --exe for the executable when given; else name inside --sysroot,
 * resolved as if it were "/" (cq_open_in_root: no "..", absolute name or
 * link leaves it, and nothing outside it is ever tried, not even for the
 * executable); without --sysroot, name itself.  Only a regular file is
 * opened.  *fd (read-only) is -1 when there is no such file; else *path is
 * its name for output (the sysroot then name normalized), and *in_root its
 * path inside the sysroot as resolved, NULL when no sysroot was used (both
 * malloc'd).  Errors only for out of memory.
 */
struct cq_error *cq_module_open_host_file(const struct cq_core *core, const char *name,
                                          bool is_main, int *fd, char **path, char **in_root);

/* Finds modules from NT_FILE and the auxv, opens their files, adds file memory. */
struct cq_error *cq_core_load_modules(struct cq_core *core);

/*
 * Opens the ELF file at path as a module of its own, outside any core: an
 * executable or shared object at its link-time addresses (bias 0, start and
 * end spanning its PT_LOAD segments), status FOUND.  Used to symbolize
 * addresses that come from a log rather than a core (coreq lws).  Release it
 * with cq_module_destroy.
 */
struct cq_error *cq_module_open_elf(const char *path, struct cq_module *out);

void cq_module_destroy(struct cq_module *mod);

/* The module of modules[0..n) (sorted by start) containing addr, or NULL. */
struct cq_module *cq_module_find(struct cq_module *modules, size_t n, uint64_t addr);

const char *cq_module_status_name(enum cq_module_status status);

/* Lower-case hex of the build-id into buf (2*len+1 bytes); "" when unknown. */
void cq_module_build_id_hex(const struct cq_module *mod, char *buf, size_t cap);

/* Basename of the module's name. */
const char *cq_module_basename(const struct cq_module *mod);

#endif
