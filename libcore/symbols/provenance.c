/*
 * provenance.c - the identity of the files behind a module's cached entries
 * (see provenance.h for the rule).
 */
#include "libcore/symbols/provenance.h"

#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcore/model/module.h"
#include "libcore/symbols/debuginfo.h"

/* Appends len bytes to the growing identity; false when out of memory. */
static bool append(struct cq_provenance *p, const void *data, size_t len)
{
	uint8_t *grown = realloc(p->identity, p->identity_len + len);
	if (!grown)
		return false;
	memcpy(grown + p->identity_len, data, len);
	p->identity = grown;
	p->identity_len += len;
	return true;
}

/* "what=REALPATH dev=D ino=I size=S mtime=SEC.NSEC\n" of a file; false if it cannot be told. */
static bool append_file(struct cq_provenance *p, const char *what, const char *path, int fd)
{
	struct stat st;
	if (fd >= 0 ? fstat(fd, &st) != 0 : stat(path, &st) != 0)
		return false;
	char *real = realpath(path, NULL);
	char *line = NULL;
	int n = asprintf(&line, "%s=%s dev=%llu ino=%llu size=%lld mtime=%lld.%09ld\n", what,
	                 real ? real : path, (unsigned long long)st.st_dev,
	                 (unsigned long long)st.st_ino, (long long)st.st_size,
	                 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	free(real);
	bool ok = n > 0 && append(p, line, (size_t)n);
	free(line);
	return ok;
}

static bool describe(struct cq_provenance *p, const struct cq_module *mod,
                     const char *debuginfo_path)
{
	if (mod->is_vdso) {
		/* From the core's memory: the bytes are the identity. */
		if (!mod->image_copy || mod->end <= mod->start)
			return false;
		static const char tag[] = "memory\n";
		return append(p, tag, sizeof(tag) - 1) &&
		       append(p, mod->image_copy, (size_t)(mod->end - mod->start));
	}
	bool found = mod->status == CQ_MODULE_FOUND && mod->file_path;
	static const char no_file[] = "file=none\n";
	if (found ? !append_file(p, "file", mod->file_path, mod->fd)
	          : !append(p, no_file, sizeof(no_file) - 1))
		return false;
	if (!debuginfo_path) {
		static const char none[] = "debuginfo=none\n";
		return append(p, none, sizeof(none) - 1);
	}
	if (found && strcmp(debuginfo_path, mod->file_path) == 0) {
		static const char self[] = "debuginfo=file\n";
		return append(p, self, sizeof(self) - 1);
	}
	return append_file(p, "debuginfo", debuginfo_path, -1);
}

void cq_provenance_init(struct cq_provenance *p, const struct cq_module *mod,
                        const char *debuginfo_path)
{
	memset(p, 0, sizeof(*p));
	cq_module_build_id_hex(mod, p->build_id, sizeof(p->build_id));
	p->key.build_id = p->build_id;
	if (!p->build_id[0] || !describe(p, mod, debuginfo_path)) {
		free(p->identity);
		p->identity = NULL;
		p->identity_len = 0;
	}
	p->key.identity = p->identity;
	p->key.identity_len = p->identity_len;
}

void cq_provenance_find(struct cq_provenance *p, const struct cq_module *mod,
                        const char *const *debug_dirs)
{
	char *debuginfo = mod->is_vdso ? NULL : cq_debuginfo_find(mod, debug_dirs);
	cq_provenance_init(p, mod, debuginfo);
	free(debuginfo);
}

void cq_provenance_free(struct cq_provenance *p)
{
	free(p->identity);
	memset(p, 0, sizeof(*p));
}

void cq_provenance_copy(struct cq_provenance *dst, const struct cq_provenance *src)
{
	memset(dst, 0, sizeof(*dst));
	memcpy(dst->build_id, src->build_id, sizeof(dst->build_id));
	dst->key.build_id = dst->build_id;
	if (src->identity_len && (dst->identity = malloc(src->identity_len))) {
		memcpy(dst->identity, src->identity, src->identity_len);
		dst->identity_len = src->identity_len;
	}
	dst->key.identity = dst->identity;
	dst->key.identity_len = dst->identity_len;
}
