/*
 * elf_writer.h - builds small x86_64 shared objects by hand for the unit
 * tests of symbol lookup (test_elf_symbols.c, test_frame_names.c): an
 * ET_DYN file with one PT_LOAD (and PT_DYNAMIC), a .text section symbols point into, a
 * .dynsym/.dynstr pair, an optional .symtab/.strtab pair and an optional
 * .dynamic with DT_SONAME.  Layouts follow elf(5); every symbol, value and
 * string is the caller's, so a test knows the answer without asking coreq.
 */
#ifndef CQ_TEST_ELF_WRITER_H
#define CQ_TEST_ELF_WRITER_H

#include <elf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define EW_MAX      65536
#define EW_TEXT     1 /* section index of .text */
#define EW_TEXT_VA  0x1000
#define EW_TEXT_LEN 0x10000

struct ew_sym {
	const char *name;
	uint64_t value, size;
	unsigned type, bind; /* STT_*, STB_* */
	bool undef;          /* st_shndx SHN_UNDEF rather than .text */
};

struct ew_spec {
	const struct ew_sym *dynsyms; /* .dynsym (after the null symbol) */
	size_t ndyn;
	const struct ew_sym *syms; /* .symtab; none when nsym is 0 */
	size_t nsym;
	const char *soname; /* DT_SONAME; NULL: none */
	bool no_dynamic;    /* no .dynamic at all */
	bool no_dt_null;    /* .dynamic holds only DT_SONAME entries, no DT_NULL */
	uint64_t soname_at; /* nonzero: DT_SONAME's value, whatever it points at */
	bool dynsym_entsize_zero;
};

struct ew_buf {
	uint8_t b[EW_MAX];
	size_t len;
};

static inline size_t ew_append(struct ew_buf *w, const void *p, size_t n)
{
	size_t at = (w->len + 7) & ~(size_t)7;
	if (at + n > sizeof(w->b))
		return 0;
	memset(w->b + w->len, 0, at - w->len);
	memcpy(w->b + at, p, n);
	w->len = at + n;
	return at;
}

/* A string table: appends s and returns its offset in tab. */
static inline uint32_t ew_str(char *tab, size_t *len, const char *s)
{
	uint32_t at = (uint32_t)*len;
	size_t n = strlen(s) + 1;
	memcpy(tab + *len, s, n);
	*len += n;
	return at;
}

static inline void ew_symtab(const struct ew_sym *s, size_t n, Elf64_Sym *out, char *str,
                             size_t *strlen_)
{
	memset(out, 0, sizeof(*out)); /* the null symbol */
	for (size_t i = 0; i < n; i++) {
		Elf64_Sym *e = &out[i + 1];
		memset(e, 0, sizeof(*e));
		e->st_name = ew_str(str, strlen_, s[i].name);
		e->st_info = (unsigned char)ELF64_ST_INFO(s[i].bind, s[i].type);
		e->st_shndx = s[i].undef ? SHN_UNDEF : EW_TEXT;
		e->st_value = s[i].value;
		e->st_size = s[i].size;
	}
}

/* Writes the object to path; 0 on success. */
static inline int ew_write(const struct ew_spec *s, const char *path)
{
	static struct ew_buf w;
	static char dynstr[8192], strtab[8192], shstr[256];
	static Elf64_Sym dynsym[128], symtab[128];
	if (s->ndyn >= 128 || s->nsym >= 128)
		return -1;
	memset(&w, 0, sizeof(w));
	size_t dynstr_len = 1, strtab_len = 1, shstr_len = 1;
	dynstr[0] = strtab[0] = shstr[0] = '\0';

	ew_symtab(s->dynsyms, s->ndyn, dynsym, dynstr, &dynstr_len);
	if (s->nsym)
		ew_symtab(s->syms, s->nsym, symtab, strtab, &strtab_len);
	Elf64_Dyn dyn[3];
	size_t ndyn = 0;
	if (s->soname || s->soname_at) {
		uint64_t at = s->soname_at ? s->soname_at : ew_str(dynstr, &dynstr_len, s->soname);
		dyn[ndyn++] = (Elf64_Dyn){.d_tag = DT_SONAME, .d_un.d_val = at};
		if (s->no_dt_null)
			dyn[ndyn++] = (Elf64_Dyn){.d_tag = DT_SONAME, .d_un.d_val = at};
	}
	if (!s->no_dt_null)
		dyn[ndyn++] = (Elf64_Dyn){.d_tag = DT_NULL};

	w.len = sizeof(Elf64_Ehdr) + 2 * sizeof(Elf64_Phdr);
	size_t dynstr_off = ew_append(&w, dynstr, dynstr_len);
	size_t dynsym_off = ew_append(&w, dynsym, (s->ndyn + 1) * sizeof(Elf64_Sym));
	size_t dynamic_off = ew_append(&w, dyn, ndyn * sizeof(Elf64_Dyn));
	size_t strtab_off = ew_append(&w, strtab, strtab_len);
	size_t symtab_off = ew_append(&w, symtab, (s->nsym + 1) * sizeof(Elf64_Sym));

	/* Sections: null, .text, .dynstr, .dynsym, [.dynamic], [.strtab, .symtab], .shstrtab. */
	Elf64_Shdr sh[8];
	memset(sh, 0, sizeof(sh));
	unsigned n = 1;
	sh[n++] = (Elf64_Shdr){.sh_name = ew_str(shstr, &shstr_len, ".text"),
	                       .sh_type = SHT_NOBITS,
	                       .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
	                       .sh_addr = EW_TEXT_VA,
	                       .sh_offset = EW_TEXT_VA,
	                       .sh_size = EW_TEXT_LEN,
	                       .sh_addralign = 16};
	unsigned dynstr_idx = n;
	sh[n++] = (Elf64_Shdr){.sh_name = ew_str(shstr, &shstr_len, ".dynstr"),
	                       .sh_type = SHT_STRTAB,
	                       .sh_flags = SHF_ALLOC,
	                       .sh_addr = dynstr_off,
	                       .sh_offset = dynstr_off,
	                       .sh_size = dynstr_len,
	                       .sh_addralign = 1};
	sh[n++] = (Elf64_Shdr){.sh_name = ew_str(shstr, &shstr_len, ".dynsym"),
	                       .sh_type = SHT_DYNSYM,
	                       .sh_flags = SHF_ALLOC,
	                       .sh_addr = dynsym_off,
	                       .sh_offset = dynsym_off,
	                       .sh_size = (s->ndyn + 1) * sizeof(Elf64_Sym),
	                       .sh_link = dynstr_idx,
	                       .sh_info = 1,
	                       .sh_addralign = 8,
	                       .sh_entsize = s->dynsym_entsize_zero ? 0 : sizeof(Elf64_Sym)};
	if (!s->no_dynamic)
		sh[n++] = (Elf64_Shdr){.sh_name = ew_str(shstr, &shstr_len, ".dynamic"),
		                       .sh_type = SHT_DYNAMIC,
		                       .sh_flags = SHF_ALLOC | SHF_WRITE,
		                       .sh_addr = dynamic_off,
		                       .sh_offset = dynamic_off,
		                       .sh_size = ndyn * sizeof(Elf64_Dyn),
		                       .sh_link = dynstr_idx,
		                       .sh_addralign = 8,
		                       .sh_entsize = sizeof(Elf64_Dyn)};
	if (s->nsym) {
		unsigned strtab_idx = n;
		sh[n++] = (Elf64_Shdr){.sh_name = ew_str(shstr, &shstr_len, ".strtab"),
		                       .sh_type = SHT_STRTAB,
		                       .sh_offset = strtab_off,
		                       .sh_size = strtab_len,
		                       .sh_addralign = 1};
		sh[n++] = (Elf64_Shdr){.sh_name = ew_str(shstr, &shstr_len, ".symtab"),
		                       .sh_type = SHT_SYMTAB,
		                       .sh_offset = symtab_off,
		                       .sh_size = (s->nsym + 1) * sizeof(Elf64_Sym),
		                       .sh_link = strtab_idx,
		                       .sh_info = 1,
		                       .sh_addralign = 8,
		                       .sh_entsize = sizeof(Elf64_Sym)};
	}
	unsigned shstr_idx = n;
	uint32_t shstr_name = ew_str(shstr, &shstr_len, ".shstrtab");
	size_t shstr_off = ew_append(&w, shstr, shstr_len);
	sh[n++] = (Elf64_Shdr){.sh_name = shstr_name,
	                       .sh_type = SHT_STRTAB,
	                       .sh_offset = shstr_off,
	                       .sh_size = shstr_len,
	                       .sh_addralign = 1};
	size_t shoff = ew_append(&w, sh, n * sizeof(Elf64_Shdr));
	if (!dynstr_off || !dynsym_off || !shstr_off || !shoff)
		return -1;

	Elf64_Ehdr eh = {0};
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_ident[EI_OSABI] = ELFOSABI_GNU; /* STT_GNU_IFUNC is a GNU symbol type */
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = sizeof(eh);
	eh.e_shoff = shoff;
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = s->no_dynamic ? 1 : 2;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = (uint16_t)n;
	eh.e_shstrndx = (uint16_t)shstr_idx;
	Elf64_Phdr ph[2] = {{.p_type = PT_LOAD,
	                     .p_flags = PF_R | PF_X,
	                     .p_offset = 0,
	                     .p_vaddr = 0,
	                     .p_filesz = w.len,
	                     .p_memsz = EW_TEXT_VA + EW_TEXT_LEN,
	                     .p_align = 0x1000},
	                    {.p_type = PT_DYNAMIC,
	                     .p_flags = PF_R | PF_W,
	                     .p_offset = dynamic_off,
	                     .p_vaddr = dynamic_off,
	                     .p_filesz = ndyn * sizeof(Elf64_Dyn),
	                     .p_memsz = ndyn * sizeof(Elf64_Dyn),
	                     .p_align = 8}};
	memcpy(w.b, &eh, sizeof(eh));
	memcpy(w.b + sizeof(eh), ph, eh.e_phnum * sizeof(ph[0]));
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t wrote = fwrite(w.b, 1, w.len, f);
	return fclose(f) == 0 && wrote == w.len ? 0 : -1;
}

#endif
