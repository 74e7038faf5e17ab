/*
 * core_writer.h - builds small x86_64 ELF core files by hand for the unit
 * tests of the core model (test_notes.c, test_module.c); aarch64 ones too
 * (machine, cw_prstatus_aarch64) where a test puts its own code in the core.  Layouts follow the
 * kernel's ELF core format (elf(5), linux/elfcore.h): an ET_CORE header, one
 * PT_NOTE segment of 4-byte-aligned notes, and optional PT_LOAD segments.
 */
#ifndef CQ_TEST_CORE_WRITER_H
#define CQ_TEST_CORE_WRITER_H

#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CW_MAX   16384
#define CW_LOADS 8

struct core_writer {
	uint8_t notes[CW_MAX];
	size_t notes_len;
	Elf64_Phdr loads[CW_LOADS];
	const uint8_t *load_bytes[CW_LOADS];
	unsigned nloads;
	uint16_t machine; /* e_machine; 0: EM_X86_64 */
};

static inline void cw_put(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Appends one note; the name is padded to 4 bytes, then the descriptor. */
static inline void cw_note(struct core_writer *w, const char *name, uint32_t type, const void *desc,
                           size_t desc_len)
{
	size_t namesz = strlen(name) + 1;
	uint8_t *p = w->notes + w->notes_len;
	cw_put(p, namesz, 4);
	cw_put(p + 4, desc_len, 4);
	cw_put(p + 8, type, 4);
	memcpy(p + 12, name, namesz);
	size_t off = 12 + ((namesz + 3) & ~(size_t)3);
	memcpy(p + off, desc, desc_len);
	w->notes_len += off + ((desc_len + 3) & ~(size_t)3);
}

/* NT_PRSTATUS: pr_cursig at 12, pr_pid at 32, pr_reg (27 words) at 112;
 * pr_reg slot 16 is rip, 19 rsp, 21 fs_base. */
static inline void cw_prstatus(struct core_writer *w, int32_t tid, int sig, uint64_t rip,
                               uint64_t rsp, uint64_t fs_base)
{
	uint8_t d[336] = {0};
	cw_put(d + 12, (uint64_t)sig, 2);
	cw_put(d + 32, (uint64_t)(uint32_t)tid, 4);
	cw_put(d + 112 + 8 * 16, rip, 8);
	cw_put(d + 112 + 8 * 19, rsp, 8);
	cw_put(d + 112 + 8 * 21, fs_base, 8);
	cw_note(w, "CORE", NT_PRSTATUS, d, sizeof(d));
}

/* aarch64's NT_PRSTATUS: pr_reg (34 words: x0..x30, sp, pc, pstate) at 112. */
static inline void cw_prstatus_aarch64(struct core_writer *w, int32_t tid, int sig, uint64_t pc,
                                       uint64_t sp)
{
	uint8_t d[392] = {0};
	cw_put(d + 12, (uint64_t)sig, 2);
	cw_put(d + 32, (uint64_t)(uint32_t)tid, 4);
	cw_put(d + 112 + 8 * 31, sp, 8);
	cw_put(d + 112 + 8 * 32, pc, 8);
	cw_note(w, "CORE", NT_PRSTATUS, d, sizeof(d));
}

/* A loadable segment whose bytes are written after the notes. */
static inline void cw_load(struct core_writer *w, uint64_t vaddr, const uint8_t *bytes,
                           uint64_t len, uint32_t flags)
{
	if (w->nloads == CW_LOADS)
		abort(); /* a test that needs more segments raises CW_LOADS */
	Elf64_Phdr *ph = &w->loads[w->nloads];
	memset(ph, 0, sizeof(*ph));
	ph->p_type = PT_LOAD;
	ph->p_flags = flags;
	ph->p_vaddr = vaddr;
	ph->p_filesz = ph->p_memsz = len;
	ph->p_align = 1;
	w->load_bytes[w->nloads++] = bytes;
}

/* Writes the core to path; the note segment's file size can be overstated
 * (note_size_lie bytes past the file's end) to build a truncated core. */
static inline int cw_write(const struct core_writer *w, const char *path, uint64_t note_size_lie)
{
	Elf64_Ehdr eh = {0};
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_CORE;
	eh.e_machine = w->machine ? w->machine : EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = sizeof(eh);
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = (uint16_t)(1 + w->nloads);
	Elf64_Phdr ph[1 + CW_LOADS];
	uint64_t off = sizeof(eh) + eh.e_phnum * sizeof(Elf64_Phdr);
	memset(&ph[0], 0, sizeof(ph[0]));
	ph[0].p_type = PT_NOTE;
	ph[0].p_offset = off;
	ph[0].p_filesz = w->notes_len + note_size_lie;
	ph[0].p_align = 4;
	off += w->notes_len;
	for (unsigned i = 0; i < w->nloads; i++) {
		ph[1 + i] = w->loads[i];
		ph[1 + i].p_offset = off;
		off += w->loads[i].p_filesz;
	}
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	fwrite(&eh, sizeof(eh), 1, f);
	fwrite(ph, sizeof(ph[0]), eh.e_phnum, f);
	fwrite(w->notes, 1, w->notes_len, f);
	for (unsigned i = 0; i < w->nloads; i++)
		fwrite(w->load_bytes[i], 1, w->loads[i].p_filesz, f);
	return fclose(f);
}

#endif
