/*
 * debuginfo.c - find the separate debuginfo file of a module (see
 * debuginfo.h for the search order).
 *
 * Invariant: a path is returned only for a file whose build-id equals the
 * module's (or, for a module without a build-id, whose CRC equals the one its
 * .gnu_debuglink records), so stale debuginfo never names frames wrongly.
 * The module's own file is never returned as its "separate" debuginfo unless
 * it really carries .debug_info.  No lookup goes to the network.
 */
#include "libcore/symbols/debuginfo.h"

#include <assert.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "libcore/base/build_id.h"
#include "libcore/base/elf_section.h"
#include "libcore/base/regular_file.h"
#include "libcore/base/root_file.h"
#include "libcore/model/module.h"

#define SYSTEM_DEBUG_DIR "/usr/lib/debug"
#define MAX_DEBUG_DIRS   256
#define CRC_CHUNK        (64u * 1024u)

/* True when the ELF has a (possibly compressed) .debug_info section. */
static bool elf_has_debug_info(Elf *elf)
{
	GElf_Shdr shdr;
	return cq_elf_section(elf, ".debug_info", &shdr) ||
	       cq_elf_section(elf, ".zdebug_info", &shdr);
}

static bool build_id_matches(Elf *elf, const uint8_t *want, size_t want_len)
{
	const void *id = NULL;
	ssize_t len = dwelf_elf_gnu_build_id(elf, &id);
	return len > 0 && (size_t)len == want_len && memcmp(id, want, want_len) == 0;
}

/* The standard CRC-32 (zlib's) of a whole file, as .gnu_debuglink records it. */
static bool file_crc32(int fd, uint32_t *out)
{
	unsigned char *buf = malloc(CRC_CHUNK);
	if (!buf)
		return false;
	uLong crc = crc32(0L, Z_NULL, 0);
	off_t off = 0;
	ssize_t n;
	while ((n = pread(fd, buf, CRC_CHUNK, off)) > 0) {
		crc = crc32(crc, buf, (uInt)n);
		off += n;
	}
	free(buf);
	*out = (uint32_t)crc;
	return n == 0;
}

/* True when fd is an ELF file whose build-id is id[0..len). */
static bool fd_has_build_id(int fd, const uint8_t *id, size_t len)
{
	elf_version(EV_CURRENT); /* when no core was opened before */
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	bool ok = elf && elf_kind(elf) == ELF_K_ELF && build_id_matches(elf, id, len);
	if (elf)
		elf_end(elf);
	return ok;
}

/* True when path is a regular ELF file whose build-id is id[0..len). */
static bool file_has_build_id(const char *path, const uint8_t *id, size_t len)
{
	int fd = cq_open_regular(path);
	if (fd < 0)
		return false;
	bool ok = fd_has_build_id(fd, id, len);
	close(fd);
	return ok;
}

/*
 * Accepts the debuglink candidate open as fd when it is an ELF file with the
 * module's build-id, or, when the module has none, when its CRC is want_crc.
 */
static bool candidate_ok(int fd, const struct cq_module *mod, uint32_t want_crc)
{
	if (mod->build_id_len > 0)
		return fd_has_build_id(fd, mod->build_id, mod->build_id_len);
	uint32_t crc;
	return file_crc32(fd, &crc) && crc == want_crc;
}

/*
 * D/.build-id/xx/rest.debug for a build-id in hex, or NULL.  hex must pass
 * cq_build_id_hex_valid: nothing else ever becomes part of the path, so the
 * result names a file inside D's build-id tree.
 */
static char *build_id_path(const char *dir, const char *hex)
{
	assert(cq_build_id_hex_valid(hex));
	char *path;
	if (asprintf(&path, "%s/.build-id/%.2s/%s.debug", dir, hex, hex + 2) < 0)
		return NULL;
	return path;
}

/* The build-id tree file of dir for hex whose build-id is id[0..len), or NULL. */
static char *try_build_id_dir(const char *dir, const char *hex, const uint8_t *id, size_t len)
{
	char *path = build_id_path(dir, hex);
	if (path && file_has_build_id(path, id, len))
		return path;
	free(path);
	return NULL;
}

static char *find_in_build_id_dirs(const char *hex, const uint8_t *id, size_t len,
                                   const char *const *debug_dirs)
{
	for (size_t i = 0; debug_dirs && i < MAX_DEBUG_DIRS && debug_dirs[i]; i++) {
		char *path = try_build_id_dir(debug_dirs[i], hex, id, len);
		if (path)
			return path;
	}
	return NULL;
}

static char *find_by_build_id(const struct cq_module *mod, const char *const *debug_dirs)
{
	/* Two bytes at least: the tree's xx/ directory and a non-empty name. */
	if (mod->build_id_len < 2)
		return NULL;
	char hex[2 * CQ_BUILD_ID_MAX + 1];
	cq_module_build_id_hex(mod, hex, sizeof(hex));
	char *path = find_in_build_id_dirs(hex, mod->build_id, mod->build_id_len, debug_dirs);
	if (!path)
		path = try_build_id_dir(SYSTEM_DEBUG_DIR, hex, mod->build_id, mod->build_id_len);
	return path;
}

bool cq_debuginfo_has_build_id(const char *path, const char *hex)
{
	uint8_t id[CQ_BUILD_ID_MAX];
	size_t len;
	return cq_build_id_from_hex(hex, id, sizeof(id), &len) && file_has_build_id(path, id, len);
}

char *cq_debuginfo_find_by_build_id(const char *hex, const char *const *debug_dirs)
{
	uint8_t id[CQ_BUILD_ID_MAX];
	size_t len;
	if (!cq_build_id_from_hex(hex, id, sizeof(id), &len) || len < 2)
		return NULL;
	return find_in_build_id_dirs(hex, id, len, debug_dirs);
}

/* A malloc'd copy of the directory part of path ("" for a bare name). */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	return strndup(path, slash ? (size_t)(slash - path) : 0);
}

/* Whether fd is the module's own file (its fd, else its path on this host). */
static bool is_module_file(int fd, const struct cq_module *mod)
{
	struct stat a, b;
	bool known =
	    mod->fd >= 0 ? fstat(mod->fd, &b) == 0 : !mod->root && stat(mod->file_path, &b) == 0;
	return known && fstat(fd, &a) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Whether path has a ".." component. */
static bool goes_up(const char *path)
{
	for (const char *p = path; (p = strstr(p, "..")) != NULL; p += 2)
		if ((p == path || p[-1] == '/') && (p[2] == '\0' || p[2] == '/'))
			return true;
	return false;
}

/*
 * One .gnu_debuglink candidate, dir + sub + "/" + name: inside the module's
 * root when its file was found under --sysroot (mod->root), as the file
 * itself was; else on this host.  The path of the file accepted, or NULL.
 */
static char *try_debuglink(const struct cq_module *mod, const char *dir, const char *sub,
                           const char *name, uint32_t crc)
{
	char *cand, *in_root = NULL, *path = NULL;
	if (asprintf(&cand, "%s%s/%s", dir, sub, name) < 0)
		return NULL;
	int fd = mod->root ? cq_open_in_root(mod->root, cand, &in_root) : cq_open_regular(cand);
	if (fd >= 0 && !is_module_file(fd, mod) && candidate_ok(fd, mod, crc)) {
		if (!in_root)
			path = cand, cand = NULL;
		else if (asprintf(&path, "%s%s", mod->root, in_root) < 0)
			path = NULL;
	}
	if (fd >= 0)
		close(fd);
	free(in_root);
	free(cand);
	return path;
}

/*
 * The debuglink name (a file name: one with a "/", or "." or "..", is
 * refused) next to the module's file, in its .debug/ directory, then under
 * /usr/lib/debug/ + the directory the crashed process knew the module by
 * (which is what debug packages mirror).  Under --sysroot every candidate
 * is inside the sysroot, /usr/lib/debug too; on this host a directory the
 * core names with a ".." is not tried.
 */
static char *find_by_debuglink(const struct cq_module *mod)
{
	if (!mod->elf || !mod->file_path)
		return NULL;
	GElf_Word crc = 0;
	const char *name = dwelf_elf_gnu_debuglink(mod->elf, &crc);
	if (!name || !name[0] || strchr(name, '/') || strcmp(name, ".") == 0 ||
	    strcmp(name, "..") == 0)
		return NULL;
	char *host_dir = dir_of(mod->root ? mod->file_in_root : mod->file_path);
	char *core_dir = dir_of(mod->name);
	char *path = NULL;
	if (host_dir && core_dir) {
		path = try_debuglink(mod, host_dir, "", name, crc);
		if (!path)
			path = try_debuglink(mod, host_dir, "/.debug", name, crc);
		if (!path && (mod->root || !goes_up(core_dir)))
			path = try_debuglink(mod, SYSTEM_DEBUG_DIR, core_dir, name, crc);
	}
	free(host_dir);
	free(core_dir);
	return path;
}

/*
 * The module's own file as a path its callers may open again: file_path;
 * under --sysroot, when the name went through links there, the file as it
 * was resolved inside the sysroot instead (a link in it, opened again on
 * this host, could lead out of it).
 */
static char *own_file(const struct cq_module *mod)
{
	char *path;
	if (!mod->root)
		return strdup(mod->file_path);
	if (asprintf(&path, "%s%s", mod->root, mod->file_in_root) < 0)
		return NULL;
	if (strcmp(path, mod->file_path) == 0) {
		free(path);
		return strdup(mod->file_path); /* callers compare it with file_path */
	}
	return path;
}

char *cq_debuginfo_find(const struct cq_module *mod, const char *const *debug_dirs)
{
	if (!mod || mod->is_vdso)
		return NULL;
	if (mod->elf && mod->file_path && elf_has_debug_info(mod->elf))
		return own_file(mod);
	char *path = find_by_build_id(mod, debug_dirs);
	if (!path)
		path = find_by_debuglink(mod);
	return path;
}
