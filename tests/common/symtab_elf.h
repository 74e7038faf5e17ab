/*
 * symtab_elf.h - writes a small x86-64 ELF shared object with a symbol
 * table of the caller's choosing, for tests and fuzz targets that compare
 * coreq's symbol index with libdwfl on tables real files rarely hold.
 *
 * Layout: one PT_LOAD over .text at SYMTAB_ELF_TEXT (SYMTAB_ELF_TEXT_SIZE
 * bytes of zeros), then .symtab (the null symbol, then the given ones; the
 * first nlocal are its locals), .strtab and .shstrtab.  Header only: each
 * includer gets its own static copy.
 */
#ifndef CQ_TESTS_SYMTAB_ELF_H
#define CQ_TESTS_SYMTAB_ELF_H

#include <elf.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SYMTAB_ELF_TEXT      0x1000u
#define SYMTAB_ELF_TEXT_SIZE 0x1000u

struct symtab_elf_sym {
	const char *name;
	uint64_t value, size;
	unsigned char bind, type;
	uint16_t shndx;
};

/* Writes the object to fd (empty, open for writing); false if libelf refused. */
static inline bool symtab_elf_write(int fd, const struct symtab_elf_sym *syms, size_t n,
                                    size_t nlocal)
{
	static char shstr[] = "\0.text\0.symtab\0.strtab\0.shstrtab\0";
	enum { NAME_TEXT = 1, NAME_SYMTAB = 7, NAME_STRTAB = 15, NAME_SHSTRTAB = 23 };
	static uint8_t text[SYMTAB_ELF_TEXT_SIZE];
	size_t strtab_size = 1;
	for (size_t i = 0; i < n; i++)
		strtab_size += strlen(syms[i].name) + 1;
	char *strtab = calloc(1, strtab_size);
	Elf64_Sym *table = calloc(n + 1, sizeof(*table));
	Elf *e = NULL;
	bool ok = strtab && table && elf_version(EV_CURRENT) != EV_NONE &&
	          (e = elf_begin(fd, ELF_C_WRITE, NULL)) != NULL;
	for (size_t i = 0, at = 1; ok && i < n; i++) {
		size_t len = strlen(syms[i].name) + 1;
		memcpy(strtab + at, syms[i].name, len);
		table[i + 1] = (Elf64_Sym){.st_name = (Elf64_Word)at,
		                           .st_info = GELF_ST_INFO(syms[i].bind, syms[i].type),
		                           .st_shndx = syms[i].shndx,
		                           .st_value = syms[i].value,
		                           .st_size = syms[i].size};
		at += len;
	}
	GElf_Ehdr eh;
	ok = ok && gelf_newehdr(e, ELFCLASS64) && gelf_newphdr(e, 1) && gelf_getehdr(e, &eh);
	if (ok) {
		eh.e_ident[EI_DATA] = ELFDATA2LSB;
		eh.e_type = ET_DYN;
		eh.e_machine = EM_X86_64;
		eh.e_version = EV_CURRENT;
		eh.e_shstrndx = 4;
		ok = gelf_update_ehdr(e, &eh);
	}
	const struct {
		Elf64_Word name, type, link, info;
		uint64_t flags, addr, entsize, align;
		void *buf;
		size_t size;
		Elf_Type dtype;
	} secs[] = {
	    {NAME_TEXT, SHT_PROGBITS, 0, 0, SHF_ALLOC | SHF_EXECINSTR, SYMTAB_ELF_TEXT, 0, 1, text,
	     sizeof(text), ELF_T_BYTE},
	    {NAME_SYMTAB, SHT_SYMTAB, 3, (Elf64_Word)(nlocal + 1), 0, 0, sizeof(Elf64_Sym), 8,
	     table, (n + 1) * sizeof(Elf64_Sym), ELF_T_SYM},
	    {NAME_STRTAB, SHT_STRTAB, 0, 0, 0, 0, 0, 1, strtab, strtab_size, ELF_T_BYTE},
	    {NAME_SHSTRTAB, SHT_STRTAB, 0, 0, 0, 0, 0, 1, shstr, sizeof(shstr), ELF_T_BYTE},
	};
	for (size_t k = 0; ok && k < sizeof(secs) / sizeof(secs[0]); k++) {
		Elf_Scn *scn = elf_newscn(e);
		Elf_Data *d = scn ? elf_newdata(scn) : NULL;
		GElf_Shdr sh;
		if (!d || !gelf_getshdr(scn, &sh)) {
			ok = false;
			break;
		}
		d->d_buf = secs[k].buf;
		d->d_size = secs[k].size;
		d->d_type = secs[k].dtype;
		d->d_align = secs[k].align;
		sh.sh_name = secs[k].name;
		sh.sh_type = secs[k].type;
		sh.sh_flags = secs[k].flags;
		sh.sh_addr = secs[k].addr;
		sh.sh_addralign = secs[k].align;
		sh.sh_link = secs[k].link;
		sh.sh_info = secs[k].info;
		sh.sh_entsize = secs[k].entsize;
		ok = gelf_update_shdr(scn, &sh);
	}
	GElf_Shdr text_sh;
	ok = ok && elf_update(e, ELF_C_NULL) >= 0 && gelf_getshdr(elf_getscn(e, 1), &text_sh);
	if (ok) {
		GElf_Phdr ph = {.p_type = PT_LOAD,
		                .p_flags = PF_R | PF_X,
		                .p_offset = text_sh.sh_offset,
		                .p_vaddr = SYMTAB_ELF_TEXT,
		                .p_paddr = SYMTAB_ELF_TEXT,
		                .p_filesz = SYMTAB_ELF_TEXT_SIZE,
		                .p_memsz = SYMTAB_ELF_TEXT_SIZE,
		                .p_align = 0x1000};
		ok = gelf_update_phdr(e, 0, &ph) && elf_update(e, ELF_C_WRITE) >= 0;
	}
	if (e)
		elf_end(e);
	free(strtab);
	free(table);
	return ok;
}

#endif
