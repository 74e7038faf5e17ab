/*
 * elf_section.c - an ELF section by name (see elf_section.h).
 */
#include "libcore/base/elf_section.h"

#include <string.h>

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
