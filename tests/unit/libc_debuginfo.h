/*
 * libc_debuginfo.h - for unit tests that take libdw as their oracle on a
 * real file: libc's debuginfo from libc6-dbg (installed by make deps).
 */
#ifndef CQ_TEST_LIBC_DEBUGINFO_H
#define CQ_TEST_LIBC_DEBUGINFO_H

#include <fcntl.h>
#include <gelf.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

/* libc's debuginfo from libc6-dbg, found through the running libc's build-id. */
static inline int open_libc_debuginfo(void)
{
	int fd = open("/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY);
	Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	const uint8_t *id = NULL;
	ssize_t n = -1;
	for (Elf_Scn *scn = e ? elf_nextscn(e, NULL) : NULL; scn && n < 0;
	     scn = elf_nextscn(e, scn)) {
		GElf_Shdr sh;
		Elf_Data *d = gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE
		                  ? elf_getdata(scn, NULL)
		                  : NULL;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;
		while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0)
			if (nh.n_type == NT_GNU_BUILD_ID) {
				id = (const uint8_t *)d->d_buf + desc_off;
				n = nh.n_descsz;
			}
	}
	char path[256];
	int len = snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%02x/", id ? id[0] : 0);
	for (ssize_t i = 1; id && i < n; i++)
		len += snprintf(path + len, sizeof(path) - (size_t)len, "%02x", id[i]);
	snprintf(path + len, sizeof(path) - (size_t)len, ".debug");
	elf_end(e);
	if (fd >= 0)
		close(fd);
	return id ? open(path, O_RDONLY) : -1;
}

#endif
