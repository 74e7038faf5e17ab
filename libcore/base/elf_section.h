/*
 * elf_section.h - one section of an ELF file, found by its name.
 *
 * The unwinder (.eh_frame, .debug_frame), the debuginfo search
 * (.debug_info), the Rust index (.comment) and the symbolizer
 * (.debug_aranges) each look a section up by name in files a core names,
 * which are untrusted: the walk is bounded and skips sections whose header
 * or name cannot be read.
 */
#ifndef CQ_ELF_SECTION_H
#define CQ_ELF_SECTION_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

/* Past this many sections a file is not searched further. */
#define CQ_ELF_MAX_SECTIONS 65536u

/*
 * The first section called name that has bytes in the file (not
 * SHT_NOBITS), with its header in *shdr; NULL when there is none.
 */
Elf_Scn *cq_elf_section(Elf *elf, const char *name, GElf_Shdr *shdr);

/*
 * The first 8-byte-aligned little-endian word of section name that equals
 * value and has room bytes (at least 8) of the section from it: its bytes
 * in the file, its link-time address in *addr; NULL when there is none.  A
 * Go program's runtime.firstmoduledata is the word of .noptrdata that
 * points at .gopclntab.
 */
const uint8_t *cq_elf_section_word(Elf *elf, const char *name, uint64_t value, size_t room,
                                   uint64_t *addr);

#endif
