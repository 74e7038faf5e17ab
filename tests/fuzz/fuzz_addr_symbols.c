/*
 * fuzz_addr_symbols.c - differential libFuzzer target for
 * libcore/symbols/addr_symbols.c: the symbol index must name every address
 * as libdwfl's dwfl_module_addrinfo does, on symbol tables shaped by the
 * input (a debuginfo file's table is untrusted input).
 *
 * The input is a list of 8-byte symbols: start and size in the 4 KiB text
 * (a size byte of 0xff makes a huge one), binding, type and section picked
 * from small sets, so nesting, aliases, labels and odd bindings are common.
 * The first byte says how many of them are locals.  The table is written as
 * an ELF object (tests/common/symtab_elf.h), reported to libdwfl offline,
 * and every byte address of the text and a little around it is compared.
 */
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libcore/symbols/addr_symbols.h"
#include "tests/common/symtab_elf.h"

#define MAX_SYMS 48

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const unsigned char binds[] = {STB_LOCAL, STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE};
static const unsigned char types[] = {STT_FUNC, STT_OBJECT, STT_NOTYPE,    STT_SECTION,
                                      STT_FILE, STT_TLS,    STT_GNU_IFUNC, STT_FUNC};
static const uint16_t shndxs[] = {1, 1, 1, SHN_ABS, SHN_UNDEF, 1, 1, 2};

static const Dwfl_Callbacks offline = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t n = (size - 1) / 8;
	if (n > MAX_SYMS)
		n = MAX_SYMS;
	struct symtab_elf_sym syms[MAX_SYMS];
	char names[MAX_SYMS][8];
	for (size_t i = 0; i < n; i++) {
		const uint8_t *b = data + 1 + 8 * i;
		snprintf(names[i], sizeof(names[i]), "s%zu", i);
		uint64_t start = (uint64_t)(b[0] | b[1] << 8) % (SYMTAB_ELF_TEXT_SIZE + 0x40);
		uint64_t len =
		    b[3] == 0xff ? UINT64_MAX - b[2] : (uint64_t)(b[2] | (b[3] & 0x0f) << 8);
		syms[i] = (struct symtab_elf_sym){.name = (b[4] & 0x80) ? "" : names[i],
		                                  .value = SYMTAB_ELF_TEXT - 0x20 + start,
		                                  .size = (b[4] & 0x40) ? 0 : len,
		                                  .bind = binds[b[5] % sizeof(binds)],
		                                  .type = types[b[6] % sizeof(types)],
		                                  .shndx = shndxs[b[7] % 8]};
	}
	size_t nlocal = n ? data[0] % (n + 1) : 0;
	int fd = memfd_create("fuzz-symtab", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	Dwfl *dwfl = symtab_elf_write(fd, syms, n, nlocal) ? dwfl_begin(&offline) : NULL;
	Dwfl_Module *m = dwfl ? dwfl_report_offline(dwfl, "fuzz", path, -1) : NULL;
	if (dwfl)
		dwfl_report_end(dwfl, NULL, NULL);
	Dwarf_Addr bias;
	struct cq_addr_symbols *t = NULL;
	if (m && dwfl_module_getelf(m, &bias) && !cq_addr_symbols_build(m, &t)) {
		uint64_t from = bias + SYMTAB_ELF_TEXT - 0x40;
		uint64_t to = bias + SYMTAB_ELF_TEXT + SYMTAB_ELF_TEXT_SIZE + 0x40;
		for (uint64_t a = from; a < to; a++) {
			GElf_Off want_off = 0, got_off = 0;
			GElf_Sym s;
			const char *want =
			    dwfl_module_addrinfo(m, a, &want_off, &s, NULL, NULL, NULL);
			const char *got = cq_addr_symbols_find(t, m, a, &got_off);
			if ((want == NULL) != (got == NULL) ||
			    (want && (strcmp(want, got) != 0 || want_off != got_off))) {
				fprintf(stderr, "at +0x%llx libdwfl %s+%llu, index %s+%llu\n",
				        (unsigned long long)(a - bias), want ? want : "(none)",
				        (unsigned long long)want_off, got ? got : "(none)",
				        (unsigned long long)got_off);
				abort();
			}
		}
	}
	cq_addr_symbols_free(t);
	if (dwfl)
		dwfl_end(dwfl);
	close(fd);
	return 0;
}
