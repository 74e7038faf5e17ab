/*
 * elf_section.c - an ELF section by name (see elf_section.h).
 */
#include "libcore/base/elf_section.h"

#include <string.h>

#include "libcore/base/bytes.h"

Elf_Scn *cq_elf_section(Elf *elf, const char *name, GElf_Shdr *shdr)
{
	size_t shstrndx;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	Elf_Scn *scn = NULL;
	for (unsigned i = 0; i < CQ_ELF_MAX_SECTIONS && (scn = elf_nextscn(elf, scn)) != NULL;
	     i++) {
		if (!gelf_getshdr(scn, shdr) || shdr->sh_type == SHT_NOBITS)
			continue;
		const char *at = elf_strptr(elf, shstrndx, shdr->sh_name);
		if (at && strcmp(at, name) == 0)
			return scn;
	}
	return NULL;
}

const uint8_t *cq_elf_section_word(Elf *elf, const char *name, uint64_t value, size_t room,
                                   uint64_t *addr)
{
	GElf_Shdr sh;
	Elf_Scn *scn = cq_elf_section(elf, name, &sh);
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	if (!d || !d->d_buf || room < 8)
		return NULL;
	const uint8_t *b = d->d_buf;
	for (size_t at = 0; at + room <= d->d_size; at += 8)
		if (cq_load_u64(b + at) == value) {
			*addr = sh.sh_addr + at;
			return b + at;
		}
	return NULL;
}
