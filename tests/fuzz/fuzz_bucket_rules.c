/*
 * fuzz_bucket_rules.c - libFuzzer target for the bucketing rules parser
 * (libcore/triage/rules.c) and the signature made under the rules it
 * accepts (libcore/triage/bucket.c).
 *
 * The input is a rules file.  Whatever parses is applied to a fixed crashed
 * stack (names with glob-like and bracket characters, a library frame with
 * no name, a scanned frame): the signature must be made, end in the signal's
 * name, and hash to 16 hex digits.  Any other outcome aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/triage/bucket.h"
#include "libcore/triage/rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cq_bucket_rules *r;
	struct cq_error *err = cq_bucket_rules_parse((const char *)data, size, "fuzz", &r);
	if (err) {
		cq_error_free(err);
		return 0;
	}
	static const struct cq_bucket_frame frames[] = {
	    {.function = "raise"},
	    {.function = "abort"},
	    {.function = "[*]?"},
	    {.module = "/usr/lib/libx.so.1.2", .offset = 0x10},
	    {.function = "std::vector<int>::at(unsigned long)", .module = "/opt/app"},
	    {.function = "main", .module = "/opt/app", .main = true},
	    {.function = "hidden", .scanned = true},
	    {.function = "__libc_start_call_main"},
	};
	struct cq_bucket_signature sig;
	if (cq_bucket_signature_of(r, frames, sizeof(frames) / sizeof(frames[0]), 6, 5, &sig))
		abort();
	size_t n = strlen(sig.text);
	if (n < 7 || strcmp(sig.text + n - 7, "SIGABRT") != 0 || strlen(sig.hash) != 16)
		abort();
	cq_bucket_signature_free(&sig);
	cq_bucket_rules_free(r);
	return 0;
}
