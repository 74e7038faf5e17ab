/*
 * test_rust_index_load.c - a target's Rust type index put together from
 * its modules (unwind/async/rust_index_load.c), on a synthetic target of
 * four modules whose ELF images are built here (tests/unit/rust_target.h):
 * two built by rustc whose indexes the cache holds (encoded here with the
 * blob codec), one a C library (never looked at), one rustc module whose
 * cached blob is damaged and which has no DWARF.  Expected: the two cached
 * indexes merged, the second's types numbered after the first's and every
 * address moved by its module's bias; the damaged blob counted once and
 * nothing stored for it; `cache warm`'s per-module entry; and the index
 * shared by the runtimes of one analysis, built once.  The expected values
 * come from the indexes made here, not from coreq's output.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/unit/rust_target.h"

#define NMOD 4
static const uint64_t bias[NMOD] = {0x100000, 0x200000, 0x500000, 0x700000};

struct fake {
	const struct cq_rust_index *held[NMOD]; /* what the cache holds per module */
	bool damaged[NMOD];
	unsigned gets[NMOD], puts, rejects;
};

static uint8_t *fake_get(void *ctx, size_t m, const struct cq_target_blob *b, size_t *len)
{
	struct fake *f = ctx;
	f->gets[m]++;
	if (!rt_rust_index(b) || b->format != CQ_RUST_INDEX_BLOB_FORMAT || !f->held[m])
		return NULL;
	uint8_t *blob = cq_rust_index_blob_encode(f->held[m], len);
	if (blob && f->damaged[m])
		blob[*len / 2] ^= 0x40;
	return blob;
}

static void fake_put(void *ctx, size_t m, const struct cq_target_blob *b, const uint8_t *data,
                     size_t len)
{
	(void)m, (void)b, (void)data, (void)len;
	((struct fake *)ctx)->puts++;
}

static void fake_reject(void *ctx)
{
	((struct fake *)ctx)->rejects++;
}

static struct Dwarf *fake_dwarf(void *ctx, size_t m)
{
	(void)ctx, (void)m;
	return NULL; /* no debuginfo anywhere */
}

static const struct cq_unwind_target_ops fake_ops = {
    .dwarf = fake_dwarf, .cache_get = fake_get, .cache_put = fake_put, .cache_reject = fake_reject};

/* One module's index: ntypes leaves, a vtable at vt for its last type, one resume range. */
static struct cq_rust_index *module_index(size_t ntypes, uint64_t vt, uint64_t resume)
{
	struct cq_rust_index *ix = calloc(1, sizeof(*ix));
	struct cq_rust_type *t = calloc(ntypes, sizeof(*t));
	struct cq_rust_vtable *v = calloc(1, sizeof(*v));
	ix->resumes = calloc(1, sizeof(*ix->resumes));
	assert_true(ix && t && v && ix->resumes);
	ix->kinds = rt_table_parts();
	for (size_t i = 0; i < ntypes; i++) {
		char name[32];
		snprintf(name, sizeof(name), "m%llx::T%zu", (unsigned long long)vt, i);
		t[i] = rt_leaf(name, 8 * (i + 1), 8);
	}
	ix->model.types = t;
	ix->model.ntypes = ntypes;
	v[0] = (struct cq_rust_vtable){.addr = vt, .type = (int32_t)(ntypes - 1)};
	ix->model.vtables = v;
	ix->model.nvtables = 1;
	ix->resumes[0] = (struct cq_rust_resume){
	    .lo = resume, .hi = resume + 0x40, .name = rt_dup("app::f::{async_fn#0}")};
	ix->nresumes = 1;
	return ix;
}

struct world {
	struct rt_elf elf[NMOD];
	struct cq_target_module mods[NMOD];
	struct fake fake;
	struct cq_unwind_target t;
	struct cq_rust_index *a, *b;
};

static void world_make(struct world *w)
{
	memset(w, 0, sizeof(*w));
	static const char rustc[] = "rustc version 1.80.0\0GCC: (Debian) 12\0";
	static const char gcc[] = "GCC: (Debian) 12\0";
	for (size_t m = 0; m < NMOD; m++) {
		if (m == 1)
			rt_elf_build(&w->elf[m], gcc, sizeof(gcc));
		else
			rt_elf_build(&w->elf[m], rustc, sizeof(rustc));
		assert_non_null(w->elf[m].elf);
		w->mods[m] = (struct cq_target_module){.name = "m",
		                                       .start = bias[m],
		                                       .end = bias[m] + 0x100000,
		                                       .bias = bias[m],
		                                       .elf = w->elf[m].elf,
		                                       .found = true};
	}
	w->a = module_index(2, 0x10010, 0x2000);
	w->b = module_index(1, 0x10020, 0x3000);
	w->fake.held[0] = w->a;
	w->fake.held[2] = w->b;
	w->fake.held[3] = w->a;
	w->fake.damaged[3] = true;
	w->t = (struct cq_unwind_target){.ops = &fake_ops,
	                                 .ctx = &w->fake,
	                                 .arch = &cq_arch_x86_64,
	                                 .modules = w->mods,
	                                 .nmodules = NMOD};
}

static void world_free(struct world *w)
{
	cq_rust_index_free(w->a);
	cq_rust_index_free(w->b);
	for (size_t m = 0; m < NMOD; m++)
		elf_end(w->elf[m].elf);
}

static void test_modules_merged(void **state)
{
	(void)state;
	struct world w;
	world_make(&w);
	struct cq_rust_parts parts = rt_table_parts();
	struct cq_rust_index *ix = NULL;
	assert_null(cq_rust_index_core(&w.t, &parts, &ix));
	assert_non_null(ix);
	assert_int_equal(ix->modules_indexed, 3); /* the rustc modules */
	assert_int_equal(ix->modules_cached, 2);
	assert_int_equal(w.fake.gets[1], 0); /* the C library is not looked at */
	assert_int_equal(w.fake.rejects, 1);
	assert_int_equal(w.fake.puts, 0); /* no DWARF: nothing read, nothing stored */
	/* a's two types, then b's one, each with its module as origin */
	assert_int_equal(ix->model.ntypes, 3);
	assert_string_equal(ix->model.types[0].name, "m10010::T0");
	assert_string_equal(ix->model.types[2].name, "m10020::T0");
	assert_int_equal(ix->model.types[0].origin, 0);
	assert_int_equal(ix->model.types[2].origin, 2);
	/* vtables at runtime addresses, sorted, pointing at the renumbered types */
	assert_int_equal(ix->model.nvtables, 2);
	assert_int_equal(ix->model.vtables[0].addr, 0x10010 + bias[0]);
	assert_int_equal(ix->model.vtables[0].type, 1);
	assert_int_equal(ix->model.vtables[1].addr, 0x10020 + bias[2]);
	assert_int_equal(ix->model.vtables[1].type, 2);
	assert_string_equal(cq_rust_index_resume_at(ix, 0x2010 + bias[0]), "app::f::{async_fn#0}");
	assert_non_null(cq_rust_index_resume_at(ix, 0x3000 + bias[2]));
	assert_null(cq_rust_index_resume_at(ix, 0x3000 + bias[0]));
	cq_rust_index_free(ix);
	world_free(&w);
}

static void test_warm_one_module(void **state)
{
	(void)state;
	struct world w;
	world_make(&w);
	struct cq_rust_parts parts = rt_table_parts();
	size_t types = 99;
	bool cached = false;
	assert_null(cq_rust_index_warm(&w.t, 0, &parts, &types, &cached));
	assert_int_equal(types, 2);
	assert_true(cached);
	assert_null(cq_rust_index_warm(&w.t, 1, &parts, &types, &cached)); /* not rustc's */
	assert_int_equal(types, 0);
	assert_false(cached);
	assert_int_equal(w.fake.gets[1], 0);
	assert_null(cq_rust_index_warm(&w.t, 3, &parts, &types, &cached)); /* damaged, no DWARF */
	assert_int_equal(types, 0);
	assert_false(cached);
	assert_int_equal(w.fake.rejects, 1);
	world_free(&w);
}

static void test_shared_by_the_runtimes(void **state)
{
	(void)state;
	struct world w;
	world_make(&w);
	struct cq_async_ctx ctx = {.target = &w.t};
	ctx.runtimes = cq_async_runtimes(&ctx.nruntimes);
	ctx.shared = cq_async_shared_new();
	assert_non_null(ctx.shared);
	assert_null(cq_async_rust_index_built(&ctx));
	struct cq_rust_index *ix = NULL, *again = NULL;
	assert_null(cq_async_rust_index(&ctx, &ix));
	assert_non_null(ix);
	assert_ptr_equal(cq_async_rust_index_built(&ctx), ix);
	assert_null(cq_async_rust_index(&ctx, &again));
	assert_ptr_equal(again, ix);
	assert_int_equal(w.fake.gets[0], 1); /* built once */
	cq_async_shared_free(ctx.shared);    /* frees the index */
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_modules_merged),
	    cmocka_unit_test(test_warm_one_module),
	    cmocka_unit_test(test_shared_by_the_runtimes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
