/*
 * fuzz_stream_plan.c - libFuzzer target for the keep plan of a one-stream
 * core (libcore/model/stream_image.c): an ELF core's headers and notes
 * (untrusted input), from which the pages kept as the stream passes are
 * chosen.
 *
 * The input is the head of a core.  A plan that is made must be ranges
 * that are page-aligned, sorted, disjoint and non-empty, and start with the
 * headers, the notes and the first MiB; the keep-all plan is one range over
 * the whole core.
 */
#include <stdint.h>
#include <stdlib.h>

#include "libcore/model/stream_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct cq_stream_plan *p)
{
	if (p->n == 0 || p->v[0].lo != 0 || p->head_len > p->size)
		abort();
	uint64_t prev = 0;
	for (size_t i = 0; i < p->n; i++) {
		const struct cq_stream_range *r = &p->v[i];
		if (r->lo % 4096 || r->hi % 4096 || r->hi <= r->lo || (i && r->lo <= prev))
			abort();
		prev = r->hi;
	}
	if (p->v[0].hi < p->head_len || p->v[0].hi < CQ_STREAM_KEEP_PREFIX)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cq_stream_plan p;
	if (cq_stream_plan_make(data, size, 0, &p)) {
		check(&p);
		cq_stream_plan_free(&p);
	}
	if (cq_stream_plan_make(data, size, UINT64_MAX, &p)) {
		if (p.n != 1 || p.v[0].lo != 0 || p.v[0].hi < p.size)
			abort();
		cq_stream_plan_free(&p);
	}
	return 0;
}
