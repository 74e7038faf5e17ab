/*
 * test_rust_index_blob.c - the Rust type index cache rows
 * (unwind/async/rust_index_blob.h): a hand-made index with every kind of
 * entry survives encode/decode field for field; every truncation, every
 * damaged byte under the CRC, and every out-of-range reference behind a
 * correct CRC is rejected (or decodes to an index that encodes back to the
 * same bytes), never read past.
 *
 * Files tested: unwind/async/rust_index_blob.c, unwind/async/rust_index.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "blob_damage.h"

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

static char *xdup(const char *s)
{
	char *d = strdup(s);
	assert_non_null(d);
	return d;
}

/* Two state machines (one awaiting the other through a Box), a leaf, a vtable, a resume, a tokio
 * kind, a block_on. */
static struct cq_rust_index *sample(void)
{
	struct cq_rust_index *ix = calloc(1, sizeof(*ix));
	struct cq_rust_type *t = calloc(4, sizeof(*t));
	struct cq_rust_variant *v = calloc(2, sizeof(*v));
	assert_true(ix && t && v);
	v[0] = (struct cq_rust_variant){.discr = 0, .name = xdup("Unresumed"), .awaitee = -1};
	v[1] = (struct cq_rust_variant){.discr = 3,
	                                .name = xdup("Suspend0"),
	                                .file = xdup("/src/app.rs"),
	                                .line = 42,
	                                .awaitee = 2,
	                                .awaitee_offset = 16};
	t[0] = (struct cq_rust_type){.name = xdup("app::serve::{async_fn_env#0}"),
	                             .kind = CQ_RUST_STATE_MACHINE,
	                             .size = 64,
	                             .align = 8,
	                             .state_offset = 40,
	                             .state_size = 1,
	                             .variants = v,
	                             .nvariants = 2,
	                             .resume_name = xdup("app::serve::{async_fn#0}"),
	                             .target = -1};
	t[1] = (struct cq_rust_type){.name = xdup("tokio::time::sleep::Sleep"),
	                             .kind = CQ_RUST_LEAF,
	                             .size = 128,
	                             .align = 128,
	                             .target = -1};
	t[2] = (struct cq_rust_type){.name = xdup("Pin<Box<dyn Future>>"),
	                             .kind = CQ_RUST_WRAPPER,
	                             .size = 16,
	                             .hops = {{0, false}},
	                             .nhops = 1,
	                             .is_dyn = true,
	                             .dyn_vtable_offset = 8,
	                             .target = -1};
	t[3] = (struct cq_rust_type){.name = xdup("Box<Sleep>"),
	                             .kind = CQ_RUST_WRAPPER,
	                             .hops = {{0, true}, {8, false}},
	                             .nhops = 2,
	                             .target = 1};
	ix->model.types = t;
	ix->model.ntypes = 4;
	struct cq_rust_vtable *vt = calloc(2, sizeof(*vt));
	vt[0] = (struct cq_rust_vtable){.addr = 0x1000, .type = 0};
	vt[1] = (struct cq_rust_vtable){.addr = 0x2000, .type = 1};
	ix->model.vtables = vt;
	ix->model.nvtables = 2;
	ix->resumes = calloc(1, sizeof(*ix->resumes));
	ix->resumes[0] = (struct cq_rust_resume){
	    .lo = 0x400, .hi = 0x480, .name = xdup("app::serve::{async_fn#0}")};
	ix->nresumes = 1;
	struct cq_tokio_kind *kinds = calloc(1, sizeof(*kinds));
	kinds[0] = (struct cq_tokio_kind){.poll = 0x500,
	                                  .code = {{0x500, 0x540}, {0x600, 0x700}},
	                                  .ncode = 2,
	                                  .future = 0,
	                                  .future_from_id = -24,
	                                  .sched_ptr = 0,
	                                  .owned = 0x1a0,
	                                  .owned_id = 0x28,
	                                  .owned_head = 0x30,
	                                  .hdr_state = 0,
	                                  .hdr_vtable = 16,
	                                  .hdr_owner = 24,
	                                  .vt_poll = 0,
	                                  .vt_trailer = 0x68,
	                                  .vt_scheduler = 0x70,
	                                  .vt_id = 0x78,
	                                  .trailer_next = 8,
	                                  .scheduler = xdup("Arc<Handle>")};
	assert_true(cq_tokio_index_set(ix, kinds, 1, 3)); /* tokio's part of the index */
	ix->block_ons = calloc(1, sizeof(*ix->block_ons));
	struct cq_rust_local *loc = calloc(3, sizeof(*loc));
	loc[0] = (struct cq_rust_local){.lo = 0x800,
	                                .hi = 0x880,
	                                .base = CQ_RUST_BASE_CFA,
	                                .offset = -96,
	                                .deref = true,
	                                .add = 8,
	                                .type = 2};
	/* format 8: a fat pointer in registers 14 (data) and 3 (vtable) */
	loc[1] = (struct cq_rust_local){
	    .lo = 0x880, .hi = 0x8c0, .base = CQ_RUST_BASE_REGS, .offset = 14, .add = 3, .type = 2};
	/* and memory at register 3 + 16 */
	loc[2] = (struct cq_rust_local){
	    .lo = 0x8c0, .hi = 0x900, .base = CQ_RUST_BASE_BREG, .reg = 3, .offset = 16, .type = 0};
	ix->block_ons[0] = (struct cq_rust_block_on){
	    .lo = 0x800, .hi = 0x900, .future = 0, .locs = loc, .nlocs = 3};
	ix->nblock_ons = 1;
	/* Functions monomorphized over a future (format 7): 0x3000 folded, over two futures. */
	ix->monos = calloc(3, sizeof(*ix->monos));
	ix->monos[0] = (struct cq_rust_mono){.lo = 0x3000, .hi = 0x3020, .future = 0};
	ix->monos[1] = (struct cq_rust_mono){.lo = 0x3000, .hi = 0x3020, .future = 3};
	ix->monos[2] = (struct cq_rust_mono){.lo = 0x3040, .hi = 0x3080, .future = 1};
	ix->nmonos = 3;
	return ix;
}

static void test_round_trip(void **state)
{
	(void)state;
	struct cq_rust_index *ix = sample();
	size_t len;
	uint8_t *blob = cq_rust_index_blob_encode(ix, &len);
	assert_non_null(blob);
	struct cq_rust_index *back;
	struct cq_rust_parts parts = table_parts();
	assert_null(cq_rust_index_blob_decode(blob, len, &parts, &back));
	assert_int_equal(back->model.ntypes, 4);
	const struct cq_rust_type *t = back->model.types;
	assert_string_equal(t[0].name, "app::serve::{async_fn_env#0}");
	assert_int_equal(t[0].kind, CQ_RUST_STATE_MACHINE);
	assert_int_equal(t[0].state_offset, 40);
	assert_int_equal(t[0].nvariants, 2);
	assert_string_equal(t[0].variants[1].file, "/src/app.rs");
	assert_null(t[0].variants[0].file);
	assert_int_equal(t[0].variants[1].line, 42);
	assert_int_equal(t[0].variants[1].awaitee, 2);
	assert_int_equal(t[0].variants[0].awaitee, -1);
	assert_string_equal(t[0].resume_name, "app::serve::{async_fn#0}");
	assert_int_equal(t[1].align, 128);
	assert_true(t[2].is_dyn);
	assert_int_equal(t[2].dyn_vtable_offset, 8);
	assert_int_equal(t[3].nhops, 2);
	assert_int_equal(t[3].hops[1].offset, 8);
	assert_true(t[3].hops[0].deref);
	assert_int_equal(t[3].target, 1);
	assert_int_equal(back->model.nvtables, 2);
	assert_int_equal(cq_rust_vtable_type(&back->model, 0x2000), 1);
	assert_string_equal(cq_rust_index_resume_at(back, 0x440), "app::serve::{async_fn#0}");
	const struct cq_tokio_index *ti = cq_tokio_index_of(back);
	assert_non_null(ti);
	assert_int_equal(ti->n, 1);
	assert_int_equal(ti->kinds[0].ncode, 2);
	assert_int_equal(ti->kinds[0].code[1].hi, 0x700);
	assert_int_equal(ti->kinds[0].future_from_id, -24);
	assert_int_equal(ti->kinds[0].vt_id, 0x78);
	assert_string_equal(ti->kinds[0].scheduler, "Arc<Handle>");
	assert_int_equal(ti->unresolved, 3);
	const struct cq_rust_block_on *bo = cq_rust_index_block_on_at(back, 0x850);
	assert_non_null(bo);
	assert_int_equal(bo->nlocs, 3);
	assert_int_equal(bo->locs[0].base, CQ_RUST_BASE_CFA);
	assert_int_equal(bo->locs[0].offset, -96);
	assert_true(bo->locs[0].deref);
	assert_int_equal(bo->locs[0].type, 2);
	assert_int_equal(bo->locs[1].base, CQ_RUST_BASE_REGS);
	assert_int_equal(bo->locs[1].offset, 14);
	assert_int_equal(bo->locs[1].add, 3);
	assert_int_equal(bo->locs[2].base, CQ_RUST_BASE_BREG);
	assert_int_equal(bo->locs[2].reg, 3);
	assert_int_equal(bo->locs[2].offset, 16);
	size_t n;
	const struct cq_rust_mono *mo = cq_rust_index_monos_at(back, 0x3000, &n);
	assert_non_null(mo);
	assert_int_equal(n, 2);
	assert_int_equal(mo[0].future + mo[1].future, 3);
	mo = cq_rust_index_monos_at(back, 0x3040, &n);
	assert_int_equal(n, 1);
	assert_int_equal(mo[0].future, 1);
	assert_null(cq_rust_index_monos_at(back, 0x3008, &n));
	assert_int_equal(n, 0);
	/* format 8: the code each holds, folded entries together */
	mo = cq_rust_index_monos_containing(back, 0x3008, &n);
	assert_non_null(mo);
	assert_int_equal(n, 2);
	assert_int_equal(mo[0].hi, 0x3020);
	assert_null(cq_rust_index_monos_containing(back, 0x3020, &n)); /* between the two */
	assert_int_equal(n, 0);
	assert_null(cq_rust_index_monos_containing(back, 0x2fff, &n));
	mo = cq_rust_index_monos_containing(back, 0x307f, &n);
	assert_int_equal(n, 1);
	assert_int_equal(mo[0].future, 1);
	assert_null(cq_rust_index_monos_containing(back, 0x3080, &n));
	size_t len2;
	uint8_t *again = cq_rust_index_blob_encode(back, &len2);
	assert_int_equal(len2, len);
	assert_memory_equal(again, blob, len);
	free(again);
	cq_rust_index_free(back);
	cq_rust_index_free(ix);
	free(blob);
}

/* Decodes b; an accepted blob must encode back to itself. */
static bool accepted(const uint8_t *b, size_t len)
{
	struct cq_rust_index *ix;
	struct cq_rust_parts parts = table_parts();
	struct cq_error *err = cq_rust_index_blob_decode(b, len, &parts, &ix);
	if (err) {
		cq_error_free(err);
		return false;
	}
	size_t len2;
	uint8_t *again = cq_rust_index_blob_encode(ix, &len2);
	assert_non_null(again);
	assert_int_equal(len2, len);
	assert_memory_equal(again, b, len);
	free(again);
	cq_rust_index_free(ix);
	return true;
}

static void test_damage_is_rejected(void **state)
{
	(void)state;
	struct cq_rust_index *ix = sample();
	size_t len;
	uint8_t *blob = cq_rust_index_blob_encode(ix, &len);
	cq_rust_index_free(ix);
	uint8_t *b = malloc(len);
	damage_every_byte(blob, len, accepted);
	/* The vtable's type reference (4 types: 4 is out of range). */
	memcpy(b, blob, len);
	size_t off = 0;
	for (size_t i = 0; i + 12 <= len - 4; i++) {
		uint64_t a;
		memcpy(&a, b + i, 8);
		if (a == 0x2000) {
			off = i + 8;
			break;
		}
	}
	assert_true(off > 0);
	b[off] = 4;
	reseal(b, len);
	assert_false(accepted(b, len));
	/* The monos: the last one's future reference out of range, then out of order. */
	size_t mono = 0;
	for (size_t i = 0; i + 12 <= len - 4; i++) {
		uint64_t a;
		memcpy(&a, blob + i, 8);
		if (a == 0x3040)
			mono = i;
	}
	assert_true(mono > 0);
	memcpy(b, blob, len);
	assert_true(accepted(b, len));
	b[mono + 16] = 4; /* after lo and hi */
	reseal(b, len);
	assert_false(accepted(b, len));
	memcpy(b, blob, len);
	uint64_t early = 0x2fff;
	memcpy(b + mono, &early, 8);
	reseal(b, len);
	assert_false(accepted(b, len));
	free(b);
	free(blob);
	/* A register location naming no register of the arch (or an unknown base): rejected. */
	for (int k = 0; k < 4; k++) {
		ix = sample();
		struct cq_rust_local *l = &ix->block_ons[0].locs[1];
		if (k == 0)
			l->offset = CQ_REGS_MAX;
		else if (k == 1)
			l->add = CQ_REGS_MAX + 7;
		else if (k == 2)
			l->base = (enum cq_rust_base)(CQ_RUST_BASE_BREG + 1);
		else
			ix->block_ons[0].locs[2].reg = CQ_REGS_MAX;
		blob = cq_rust_index_blob_encode(ix, &len);
		cq_rust_index_free(ix);
		assert_non_null(blob);
		assert_false(accepted(blob, len));
		free(blob);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_damage_is_rejected),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
