/*
 * fuzz_debug_image.c - libFuzzer target for libcore/symbols/debug_image.c,
 * which rewrites a debuginfo file (untrusted input) with its compressed
 * DWARF inflated.
 *
 * The input is the file.  An image that comes back must be an ELF that
 * libelf opens, with as many sections as the input, none of them still
 * compressed, every section's bytes inside the image.
 */
#include <gelf.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcore/symbols/debug_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	elf_version(EV_CURRENT);
	int fd = memfd_create("fuzz-debuginfo", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size || lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return 0;
	}
	int img = cq_debug_image_inflate(fd, 1 + size % 2);
	if (img >= 0) {
		struct stat st;
		Elf *in = elf_begin(fd, ELF_C_READ, NULL), *out = elf_begin(img, ELF_C_READ, NULL);
		size_t nin = 0, nout = 0;
		if (!out || fstat(img, &st) != 0 || elf_kind(out) != ELF_K_ELF ||
		    elf_getshdrnum(in, &nin) != 0 || elf_getshdrnum(out, &nout) != 0 || nin != nout)
			abort();
		for (size_t i = 1; i < nout; i++) {
			GElf_Shdr sh;
			if (!gelf_getshdr(elf_getscn(out, i), &sh) ||
			    (sh.sh_flags & SHF_COMPRESSED) ||
			    (sh.sh_type != SHT_NOBITS &&
			     sh.sh_offset + sh.sh_size > (uint64_t)st.st_size))
				abort();
		}
		elf_end(in);
		elf_end(out);
		close(img);
	}
	close(fd);
	return 0;
}
