/*
 * rust_index_load.c - a target's Rust type index (see rust_index.h): each
 * Rust module's index from the target's cache when it holds one (the blob
 * codec, rust_index_blob.h), else read from its DWARF (rust_index.c) and
 * stored back, then all merged at runtime addresses.
 */
#include <stdlib.h>
#include <string.h>

#include "libcore/base/clock.h"
#include "unwind/async/runtime.h"
#include "unwind/async/rust_index.h"
#include "unwind/async/rust_index_blob.h"

const struct cq_target_blob cq_rust_index_blob = {"rust", "index", CQ_RUST_INDEX_BLOB_FORMAT};

/* Grows *items (n of size bytes) to hold more; false when out of memory. */
static bool append_room(void **items, size_t n, size_t more, size_t size)
{
	if (more == 0)
		return true;
	void *p = realloc(*items, (n + more) * size);
	if (!p)
		return false;
	*items = p;
	return true;
}

static int32_t shifted(int32_t ref, size_t base)
{
	return ref < 0 ? ref : (int32_t)(ref + (int32_t)base);
}

/*
 * Moves one module's index (link-time addresses, origin 0) into all: its
 * types renumbered after all's, its addresses moved by bias.  one is freed
 * in every case.
 */
static struct cq_error *merge(struct cq_rust_index *all, struct cq_rust_index *one, unsigned origin,
                              uint64_t bias)
{
	struct cq_rust_model *am = &all->model, *om = &one->model;
	if (am->ntypes + om->ntypes > CQ_RUST_INDEX_MAX_TYPES ||
	    !append_room((void **)&am->types, am->ntypes, om->ntypes, sizeof(*am->types)) ||
	    !append_room((void **)&am->vtables, am->nvtables, om->nvtables, sizeof(*am->vtables)) ||
	    !append_room((void **)&all->resumes, all->nresumes, one->nresumes,
	                 sizeof(*all->resumes)) ||
	    !append_room((void **)&all->block_ons, all->nblock_ons, one->nblock_ons,
	                 sizeof(*all->block_ons)) ||
	    !append_room((void **)&all->monos, all->nmonos, one->nmonos, sizeof(*all->monos))) {
		cq_rust_index_free(one);
		return am->ntypes + om->ntypes > CQ_RUST_INDEX_MAX_TYPES ? NULL : &cq_error_nomem;
	}
	size_t base = am->ntypes;
	struct cq_rust_type *types = (struct cq_rust_type *)am->types;
	for (size_t i = 0; i < om->ntypes; i++) {
		struct cq_rust_type *t = &types[base + i];
		*t = om->types[i];
		t->origin = origin;
		t->target = shifted(t->target, base);
		struct cq_rust_variant *vars = (struct cq_rust_variant *)t->variants;
		for (size_t v = 0; v < t->nvariants; v++)
			vars[v].awaitee = shifted(vars[v].awaitee, base);
	}
	am->ntypes += om->ntypes;
	struct cq_rust_vtable *vts = (struct cq_rust_vtable *)am->vtables;
	for (size_t i = 0; i < om->nvtables; i++)
		vts[am->nvtables++] = (struct cq_rust_vtable){
		    .addr = om->vtables[i].addr + bias, .type = shifted(om->vtables[i].type, base)};
	for (size_t i = 0; i < one->nresumes; i++) {
		struct cq_rust_resume r = one->resumes[i];
		r.lo += bias;
		r.hi += bias;
		all->resumes[all->nresumes++] = r;
	}
	bool nomem = false;
	for (size_t i = 0; i < one->kinds.n; i++) { /* all's kinds are the same */
		if (one->parts[i] && !one->kinds.v[i]->merge(&all->parts[i], one->parts[i], origin,
		                                             bias, (int32_t)base))
			nomem = true;
		one->parts[i] = NULL;
	}
	for (size_t i = 0; i < one->nblock_ons; i++) {
		struct cq_rust_block_on bo = one->block_ons[i];
		bo.lo += bias;
		bo.hi += bias;
		bo.future = shifted(bo.future, base);
		for (size_t l = 0; l < bo.nlocs; l++) {
			bo.locs[l].lo += bias;
			bo.locs[l].hi += bias;
			bo.locs[l].type = shifted(bo.locs[l].type, base);
		}
		all->block_ons[all->nblock_ons++] = bo;
	}
	for (size_t i = 0; i < one->nmonos; i++)
		all->monos[all->nmonos++] =
		    (struct cq_rust_mono){.lo = one->monos[i].lo + bias,
		                          .hi = one->monos[i].hi + bias,
		                          .future = shifted(one->monos[i].future, base)};
	/* Everything one owned now belongs to all: free its arrays only. */
	free((void *)om->types);
	free((void *)om->vtables);
	free(one->resumes);
	free(one->block_ons);
	free(one->monos);
	free(one);
	return nomem ? &cq_error_nomem : NULL;
}

/*
 * One module's index: from the target's cache when it has one made from the
 * same files, else from DWARF (then cached).
 */
static struct cq_error *module_index(const struct cq_unwind_target *t, size_t m,
                                     const struct cq_rust_parts *parts, struct cq_rust_index **out,
                                     bool *cached)
{
	*out = NULL;
	*cached = false;
	size_t len;
	uint8_t *blob =
	    t->ops->cache_get ? t->ops->cache_get(t->ctx, m, &cq_rust_index_blob, &len) : NULL;
	if (blob) {
		struct cq_error *err = cq_rust_index_blob_decode(blob, len, parts, out);
		free(blob);
		if (err == &cq_error_nomem || *out) {
			*cached = *out != NULL;
			return err;
		}
		cq_error_free(err);
		if (t->ops->cache_reject)
			t->ops->cache_reject(t->ctx); /* damaged: rebuilt below and replaced */
	}
	struct cq_error *err = cq_rust_index_read_module(t, m, parts, out);
	if (!err && *out && t->ops->cache_put) {
		blob = cq_rust_index_blob_encode(*out, &len);
		if (blob)
			t->ops->cache_put(t->ctx, m, &cq_rust_index_blob, blob, len);
		free(blob);
	}
	return err;
}

/* True for a module built (partly) by rustc whose file is open. */
static bool rust_module(const struct cq_target_module *mod)
{
	return mod->found && !mod->is_vdso && mod->elf && cq_rust_index_built_by_rustc(mod->elf);
}

struct cq_error *cq_rust_index_core(const struct cq_unwind_target *t,
                                    const struct cq_rust_parts *parts, struct cq_rust_index **out)
{
	*out = NULL;
	struct cq_rust_index *ix = calloc(1, sizeof(*ix));
	if (!ix)
		return &cq_error_nomem;
	ix->kinds = *parts;
	struct cq_error *err = NULL;
	for (size_t i = 0; i < t->nmodules && !err; i++) {
		const struct cq_target_module *mod = &t->modules[i];
		if (!rust_module(mod))
			continue;
		double t0 = cq_clock_seconds();
		struct cq_rust_index *one;
		bool cached;
		err = module_index(t, i, parts, &one, &cached);
		if (!err && one)
			err = merge(ix, one, (unsigned)i, mod->bias);
		ix->index_ms += (cq_clock_seconds() - t0) * 1e3;
		ix->modules_indexed++;
		ix->modules_cached += cached;
	}
	if (err) {
		cq_rust_index_free(ix);
		return err;
	}
	cq_rust_index_sort(ix);
	*out = ix;
	return NULL;
}

struct cq_error *cq_rust_index_warm(const struct cq_unwind_target *t, size_t m,
                                    const struct cq_rust_parts *parts, size_t *types, bool *cached)
{
	*types = 0;
	*cached = false;
	if (!rust_module(&t->modules[m]))
		return NULL;
	struct cq_rust_index *one;
	struct cq_error *err = module_index(t, m, parts, &one, cached);
	if (!err && one)
		*types = one->model.ntypes;
	cq_rust_index_free(one);
	return err;
}

static struct cq_error *share_build(const struct cq_async_ctx *ctx, void **out)
{
	struct cq_rust_parts parts;
	cq_rust_index_parts(ctx->runtimes, ctx->nruntimes, &parts);
	struct cq_rust_index *ix = NULL;
	struct cq_error *err = cq_rust_index_core(ctx->target, &parts, &ix);
	*out = ix;
	return err;
}

static void share_free(void *ix)
{
	cq_rust_index_free(ix);
}

/* The index as the runtimes of one analysis share it (runtime.h). */
static const struct cq_async_share rust_index_share = {share_build, share_free};

struct cq_error *cq_async_rust_index(const struct cq_async_ctx *ctx, struct cq_rust_index **out)
{
	void *v;
	struct cq_error *err = cq_async_shared_value(ctx, &rust_index_share, &v);
	*out = v;
	return err;
}

const struct cq_rust_index *cq_async_rust_index_built(const struct cq_async_ctx *ctx)
{
	return cq_async_shared_built(ctx, &rust_index_share);
}
