/*
 * fuzz_cxx_types_blob.c - libFuzzer target for unwind/async/cxx_types_blob.c,
 * the C++ coroutine type rows of the cache file (untrusted input).
 *
 * The input is decoded (as is, and with its trailing CRC-32 made right so
 * that the structural checks behind it are reached).  Rows that are
 * accepted must encode back to the same bytes, and each must hold what the
 * frame scan relies on: a non-empty actor, a destroy word, and (with a
 * layout) the promise and resume index inside the frame.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/reseal.h"
#include "unwind/async/cxx_types_blob.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const uint8_t *data, size_t size)
{
	struct cq_cxx_type_row *rows;
	size_t n, len;
	bool dwarf;
	struct cq_error *err = cq_cxx_types_blob_decode(data, size, &rows, &n, &dwarf);
	if (err) {
		cq_error_free(err);
		return;
	}
	uint8_t *blob = cq_cxx_types_blob_encode(rows, n, dwarf, &len);
	if (!blob || len != size || memcmp(blob, data, size) != 0)
		abort();
	free(blob);
	for (size_t i = 0; i < n; i++) {
		const struct cq_cxx_type_row *t = &rows[i];
		if (t->actor == 0 || t->actor >= t->actor_end || t->destroy == 0)
			abort();
		if ((!t->clang || t->layout) &&
		    (t->size < 16 || t->index_off > t->size - 2 || t->promise_off > t->size ||
		     t->promise_size > t->size - t->promise_off))
			abort();
		if (t->layout && t->index_shift + t->index_bits > 8 * t->index_bytes)
			abort();
	}
	free(rows);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_as_is_and_resealed(data, size, check);
	return 0;
}
