/*
 * fuzz_line_files.c - libFuzzer target for libcore/symbols/line_files.c,
 * which reads the file table of a debuginfo file's .debug_line header
 * (untrusted input).
 *
 * The input is the section; the header at offset 0 is read.  A table must
 * hold no more files than the input has bytes, its version must be 2 to 5,
 * names (before DWARF 5) must lie inside the input, and asking how gdb
 * prints any of its files must answer with one of the strings given.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/symbols/line_files.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cq_line_files f;
	struct cq_error *err = cq_line_files_parse(data, size, 0, &f);
	if (err) {
		if (f.n || f.dir || f.name)
			abort();
		cq_error_free(err);
		return 0;
	}
	if (f.n > size || f.version < 2 || f.version > 5)
		abort();
	const char *path = "/w/a.c", *unit = "a.c", *comp = "/w";
	for (size_t i = 0; i <= f.n; i++) {
		const char *name = i < f.n ? f.name[i] : NULL;
		if (name && ((const uint8_t *)name < data || (const uint8_t *)name >= data + size ||
		             !memchr(name, 0, size - (size_t)((const uint8_t *)name - data))))
			abort();
		const char *shown = cq_line_files_display(&f, i, path, unit, comp);
		if (shown != path && shown != unit && shown != name)
			abort();
	}
	cq_line_files_free(&f);
	return 0;
}
