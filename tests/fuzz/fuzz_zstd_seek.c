/*
 * fuzz_zstd_seek.c - libFuzzer target for libcore/formats/zstd_seek.c, the
 * seek table at the end of a seekable zstd core (untrusted input).
 *
 * The input is a whole file.  A table that is accepted must tile the file
 * before it exactly, each frame non-empty and within the frame bound, and
 * cq_zseek_find must map every frame's first and last byte back to it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/formats/zstd_seek.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!cq_zseek_has_footer(data, size))
		return 0;
	uint64_t tsize = cq_zseek_table_size(data + size - CQ_ZSEEK_FOOTER, size);
	if (tsize == 0)
		return 0;
	if (tsize > size)
		abort();
	struct cq_zseek z;
	struct cq_error *err = cq_zseek_parse(data + size - tsize, (size_t)tsize, size, 0, &z);
	if (err) {
		if (z.n || z.frame)
			abort();
		cq_error_free(err);
		return 0;
	}
	uint64_t comp = 0, raw = 0;
	for (size_t i = 0; i < z.n; i++) {
		const struct cq_zseek_frame *f = &z.frame[i];
		if (f->comp_off != comp || f->raw_off != raw || f->comp_size == 0 ||
		    f->raw_size == 0 || f->raw_size > CQ_ZSEEK_MAX_FRAME)
			abort();
		if (cq_zseek_find(&z, f->raw_off) != i ||
		    cq_zseek_find(&z, f->raw_off + f->raw_size - 1) != i)
			abort();
		comp += f->comp_size;
		raw += f->raw_size;
	}
	if (comp + tsize != size || raw != z.raw_size || cq_zseek_find(&z, raw) != z.n)
		abort();
	cq_zseek_free(&z);
	return 0;
}
