/*
 * fuzz_go_names.c - libFuzzer target for Go's printed names
 * (libcore/symbols/go_names.c) and the signature name normalisation that
 * applies them (cq_bucket_normalize_name).
 *
 * The input is a symbol name, as a module's symbol table or DWARF (files
 * on disk: untrusted) spells it.  Whatever it holds, the printed name fits
 * its buffer, is NUL-terminated, is no longer than the name, and says it
 * changed only when it did; a name already printed as Go prints it stays.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/symbols/go_names.h"
#include "libcore/triage/bucket.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *name = malloc(size + 1);
	if (!name)
		return 0;
	memcpy(name, data, size);
	name[size] = '\0';
	static const size_t caps[] = {1, 7, 64, 1024};
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		char out[1024 + 1];
		out[caps[i]] = 'X'; /* a guard past the buffer */
		if (cq_name_go_printed(name, out, caps[i])) {
			size_t n = strnlen(out, caps[i]);
			if (n == caps[i] || n > strlen(name) || out[caps[i]] != 'X')
				abort();
			if (caps[i] == 1024 && n + 1 < caps[i] && strcmp(out, name) == 0)
				abort(); /* "changed" to itself */
		}
	}
	char norm[512];
	cq_bucket_normalize_name(name, norm, sizeof(norm));
	if (strnlen(norm, sizeof(norm)) == sizeof(norm))
		abort();
	free(name);
	return 0;
}
