/*
 * fuzz_rust_index_blob.c - libFuzzer target for unwind/async/rust_index_blob.c,
 * the Rust type index rows of the cache file (untrusted input).
 *
 * The input is decoded (as is, and with its trailing CRC-32 made right so
 * that the structural checks behind it are reached).  An index that is
 * accepted must encode back to the same bytes; every type reference in it
 * must be in range; every function monomorphized over a future (format 7)
 * must be found at its address; and the lookups and the await-chain decoder must run
 * over it (memory of 0x5a bytes: every state and pointer read succeeds)
 * without tripping.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/reseal.h"
#include "unwind/async/rust_index.h"
#include "unwind/async/rust_index_blob.h"
#include "unwind/async/runtime.h"
#include "unwind/async/tokio_index.h"

/* The parts of every runtime of the table, as the driver hands them out. */
static struct cq_rust_parts table_parts(void)
{
	size_t n;
	const struct cq_async_runtime *const *rt = cq_async_runtimes(&n);
	struct cq_rust_parts parts;
	cq_rust_index_parts(rt, n, &parts);
	return parts;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool fill_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < 0x1000 || addr > UINT64_MAX - len)
		return false;
	memset(buf, 0x5a, len);
	return true;
}

static const struct cq_unwind_target_ops fill_ops = {.read = fill_read};

static void in_range(int32_t ref, size_t ntypes, int none_ok)
{
	if ((ref < 0 && !(none_ok && ref == -1)) || (ref >= 0 && (size_t)ref >= ntypes))
		abort();
}

static void check(const uint8_t *data, size_t size)
{
	struct cq_rust_index *ix = NULL;
	struct cq_rust_parts parts = table_parts();
	struct cq_error *err = cq_rust_index_blob_decode(data, size, &parts, &ix);
	if (err) {
		cq_error_free(err);
		return;
	}
	size_t len;
	uint8_t *blob = cq_rust_index_blob_encode(ix, &len);
	if (!blob || len != size || memcmp(blob, data, size) != 0)
		abort();
	free(blob);
	const struct cq_rust_model *m = &ix->model;
	for (size_t i = 0; i < m->ntypes; i++) {
		in_range(m->types[i].target, m->ntypes, 1);
		for (size_t v = 0; v < m->types[i].nvariants; v++)
			in_range(m->types[i].variants[v].awaitee, m->ntypes, 1);
	}
	struct cq_unwind_target tg = {.ops = &fill_ops};
	struct cq_rust_chain chain;
	for (size_t i = 0; i < m->nvtables; i++) {
		in_range(m->vtables[i].type, m->ntypes, 0);
		if (cq_rust_vtable_type(m, m->vtables[i].addr) < 0)
			abort();
		cq_rust_decode(&tg, m, 0x10000, m->vtables[i].type, &chain);
		if (chain.nframes > CQ_RUST_MAX_DEPTH)
			abort();
	}
	const struct cq_tokio_index *ti = cq_tokio_index_of(ix);
	for (size_t i = 0; ti && i < ti->n; i++) {
		in_range(ti->kinds[i].future, m->ntypes, 0);
		cq_rust_decode(&tg, m, 0x20000, ti->kinds[i].future, &chain);
	}
	for (size_t i = 0; i < ix->nresumes; i++)
		if (ix->resumes[i].lo < ix->resumes[i].hi &&
		    !cq_rust_index_resume_at(ix, ix->resumes[i].lo))
			abort();
	for (size_t i = 0; i < ix->nblock_ons; i++) {
		in_range(ix->block_ons[i].future, m->ntypes, 0);
		for (size_t l = 0; l < ix->block_ons[i].nlocs; l++)
			in_range(ix->block_ons[i].locs[l].type, m->ntypes, 0);
		(void)cq_rust_index_block_on_at(ix, ix->block_ons[i].lo);
	}
	for (size_t i = 0; i < ix->nmonos; i++) {
		in_range(ix->monos[i].future, m->ntypes, 0);
		size_t n;
		const struct cq_rust_mono *at = cq_rust_index_monos_at(ix, ix->monos[i].lo, &n);
		if (!at || n == 0 || at > &ix->monos[i] || &ix->monos[i] >= at + n ||
		    ix->monos[i].hi <= ix->monos[i].lo)
			abort();
		/* its entry is in the code of the group folded there (format 8) */
		if (!cq_rust_index_monos_containing(ix, ix->monos[i].lo, &n) || n == 0)
			abort();
		cq_rust_decode(&tg, m, 0x30000, ix->monos[i].future, &chain);
	}
	cq_rust_index_free(ix);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_as_is_and_resealed(data, size, check);
	return 0;
}
