/*
 * fuzz_stack_blob.c - libFuzzer target for libcore/formats/stack_blob.c.
 *
 * The input goes to the frames_blob decoder.  Whatever decodes must
 * re-encode, and that encoding must decode to the same frames.  Any
 * difference aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/formats/stack_blob.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cq_stack_blob_frame *frames, *again;
	size_t n, n2, len;
	uint8_t *blob;
	struct cq_error *err = cq_stack_blob_decode(data, size, &frames, &n);
	if (err) {
		cq_error_free(err);
		return 0;
	}
	if (cq_stack_blob_encode(frames, n, &blob, &len))
		abort(); /* a decoded stack always fits the format */
	if (cq_stack_blob_decode(blob, len, &again, &n2) || n2 != n)
		abort();
	for (size_t i = 0; i < n; i++)
		if (again[i].module_id != frames[i].module_id ||
		    again[i].offset != frames[i].offset || again[i].kind != frames[i].kind)
			abort();
	free(again);
	free(blob);
	free(frames);
	return 0;
}
