/*
 * rust_index_blob.c - encoding and strict decoding of Rust type index cache
 * rows (see rust_index_blob.h).
 *
 * Layout (format 8), little-endian, strings as in libcore/base/wire.h:
 *   u32 counts: types, vtables, resumes, block_ons;
 *   per type: name, u8 kind, u64 size, u64 align, u64 state_offset, u8 state_size,
 *     resume_name, u8 nhops, per hop (u64 offset, u8 deref), u8 is_dyn,
 *     u64 dyn_data_offset, u64 dyn_vtable_offset, u32 target,
 *     u32 nvariants, per variant (u64 discr, name, file, u32 line, u32 awaitee,
 *     u64 awaitee_offset);
 *   per vtable: u64 addr, u32 type;
 *   per resume: u64 lo, u64 hi, name;
 *   per block_on: u64 lo, u64 hi, u32 future, u32 nlocs, per loc (u64 lo, u64 hi,
 *     u8 base, u8 reg, u64 offset, u8 deref, u64 add, u32 type; base 3:
 *     offset and add are DWARF register numbers, add UINT64_MAX for none; base 4:
 *     memory at register reg + offset);
 *   u32 nmonos, per mono: u64 lo, u64 hi, u32 future;
 *   per runtime part (the index's kinds, runtime_list.h order): u8 present, then its bytes
 *     (tokio.c: its task kinds);
 *   u32 CRC-32 of every byte before it.
 * A type reference is a u32 holding the int32 index (-1 for none where the
 * model allows it).  Origins are not stored: a row is one module's.
 */
#include "unwind/async/rust_index_blob.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/wire.h"
#include "unwind/async/rust_index.h"

#define MAX_STRING (1u << 20)
#define put_ref    cq_rust_blob_put_ref
#define get_ref    cq_rust_blob_get_ref

/* ---- encoding -------------------------------------------------------------------- */

void cq_rust_blob_put_ref(struct cq_wire_writer *w, int32_t ref)
{
	cq_wire_put_u32(w, (uint32_t)ref);
}

static void put_type(struct cq_wire_writer *w, const struct cq_rust_type *t)
{
	cq_wire_put_str(w, t->name);
	cq_wire_put_u8(w, (uint8_t)t->kind);
	cq_wire_put_u64(w, t->size);
	cq_wire_put_u64(w, t->align);
	cq_wire_put_u64(w, t->state_offset);
	cq_wire_put_u8(w, (uint8_t)t->state_size);
	cq_wire_put_str(w, t->resume_name);
	cq_wire_put_u8(w, (uint8_t)t->nhops);
	for (unsigned h = 0; h < t->nhops && h < CQ_RUST_MAX_HOPS; h++) {
		cq_wire_put_u64(w, t->hops[h].offset);
		cq_wire_put_u8(w, t->hops[h].deref);
	}
	cq_wire_put_u8(w, t->is_dyn);
	cq_wire_put_u64(w, t->dyn_data_offset);
	cq_wire_put_u64(w, t->dyn_vtable_offset);
	put_ref(w, t->target);
	cq_wire_put_u32(w, (uint32_t)t->nvariants);
	for (size_t v = 0; v < t->nvariants; v++) {
		const struct cq_rust_variant *var = &t->variants[v];
		cq_wire_put_u64(w, var->discr);
		cq_wire_put_str(w, var->name);
		cq_wire_put_str(w, var->file);
		cq_wire_put_u32(w, (uint32_t)var->line);
		put_ref(w, var->awaitee);
		cq_wire_put_u64(w, var->awaitee_offset);
	}
}

uint8_t *cq_rust_index_blob_encode(const struct cq_rust_index *ix, size_t *len)
{
	struct cq_wire_writer w = {0};
	const struct cq_rust_model *m = &ix->model;
	cq_wire_put_u32(&w, (uint32_t)m->ntypes);
	cq_wire_put_u32(&w, (uint32_t)m->nvtables);
	cq_wire_put_u32(&w, (uint32_t)ix->nresumes);
	cq_wire_put_u32(&w, (uint32_t)ix->nblock_ons);
	for (size_t i = 0; i < m->ntypes; i++)
		put_type(&w, &m->types[i]);
	for (size_t i = 0; i < m->nvtables; i++) {
		cq_wire_put_u64(&w, m->vtables[i].addr);
		put_ref(&w, m->vtables[i].type);
	}
	for (size_t i = 0; i < ix->nresumes; i++) {
		cq_wire_put_u64(&w, ix->resumes[i].lo);
		cq_wire_put_u64(&w, ix->resumes[i].hi);
		cq_wire_put_str(&w, ix->resumes[i].name);
	}
	for (size_t i = 0; i < ix->nblock_ons; i++) {
		const struct cq_rust_block_on *bo = &ix->block_ons[i];
		cq_wire_put_u64(&w, bo->lo);
		cq_wire_put_u64(&w, bo->hi);
		put_ref(&w, bo->future);
		cq_wire_put_u32(&w, (uint32_t)bo->nlocs);
		for (size_t l = 0; l < bo->nlocs; l++) {
			const struct cq_rust_local *loc = &bo->locs[l];
			cq_wire_put_u64(&w, loc->lo);
			cq_wire_put_u64(&w, loc->hi);
			cq_wire_put_u8(&w, (uint8_t)loc->base);
			cq_wire_put_u8(&w, (uint8_t)loc->reg);
			cq_wire_put_u64(&w, (uint64_t)loc->offset);
			cq_wire_put_u8(&w, loc->deref);
			cq_wire_put_u64(&w, loc->add);
			put_ref(&w, loc->type);
		}
	}
	cq_wire_put_u32(&w, (uint32_t)ix->nmonos);
	for (size_t i = 0; i < ix->nmonos; i++) {
		cq_wire_put_u64(&w, ix->monos[i].lo);
		cq_wire_put_u64(&w, ix->monos[i].hi);
		put_ref(&w, ix->monos[i].future);
	}
	/* each runtime's part: u8 present, then its own bytes */
	for (size_t i = 0; i < ix->kinds.n; i++) {
		cq_wire_put_u8(&w, ix->parts[i] != NULL);
		if (ix->parts[i])
			ix->kinds.v[i]->encode(ix->parts[i], &w);
	}
	return cq_wire_seal(&w, len);
}

/* ---- decoding -------------------------------------------------------------------- */

/* A type reference: an index below ntypes, or -1 where allowed. */
int32_t cq_rust_blob_get_ref(struct cq_wire_reader *r, size_t ntypes, bool none_ok)
{
	int32_t ref = (int32_t)cq_wire_get_u32(r);
	if ((ref < 0 && !(none_ok && ref == -1)) || (ref >= 0 && (size_t)ref >= ntypes))
		r->failed = true;
	return ref;
}

static bool get_bool(struct cq_wire_reader *r)
{
	uint8_t v = cq_wire_get_u8(r);
	if (v > 1)
		r->failed = true;
	return v == 1;
}

static void get_type(struct cq_wire_reader *r, struct cq_rust_type *t, size_t ntypes)
{
	t->name = cq_wire_get_str(r, MAX_STRING);
	uint8_t kind = cq_wire_get_u8(r);
	t->kind = (enum cq_rust_type_kind)kind;
	t->size = cq_wire_get_u64(r);
	t->align = cq_wire_get_u64(r);
	t->state_offset = cq_wire_get_u64(r);
	t->state_size = cq_wire_get_u8(r);
	t->resume_name = cq_wire_get_str(r, MAX_STRING);
	t->nhops = cq_wire_get_u8(r);
	if (!t->name || kind > CQ_RUST_WRAPPER || (t->align & (t->align - 1)) != 0 ||
	    t->nhops > CQ_RUST_MAX_HOPS ||
	    (kind == CQ_RUST_STATE_MACHINE && t->state_size != 1 && t->state_size != 2 &&
	     t->state_size != 4 && t->state_size != 8)) {
		r->failed = true;
		return;
	}
	for (unsigned h = 0; h < t->nhops; h++) {
		t->hops[h].offset = cq_wire_get_u64(r);
		t->hops[h].deref = get_bool(r);
	}
	t->is_dyn = get_bool(r);
	t->dyn_data_offset = cq_wire_get_u64(r);
	t->dyn_vtable_offset = cq_wire_get_u64(r);
	t->target = get_ref(r, ntypes, true);
	uint32_t nvariants = cq_wire_get_count(r, 32);
	if (r->failed || nvariants == 0)
		return;
	struct cq_rust_variant *vars = calloc(nvariants, sizeof(*vars));
	if (!vars) {
		r->failed = true;
		return;
	}
	t->variants = vars;
	for (uint32_t v = 0; v < nvariants && !r->failed; v++, t->nvariants++) {
		vars[v].discr = cq_wire_get_u64(r);
		vars[v].name = cq_wire_get_str(r, MAX_STRING);
		vars[v].file = cq_wire_get_str(r, MAX_STRING);
		uint32_t line = cq_wire_get_u32(r);
		vars[v].line = line <= INT32_MAX ? (int)line : 0;
		vars[v].awaitee = get_ref(r, ntypes, true);
		vars[v].awaitee_offset = cq_wire_get_u64(r);
		if (!vars[v].name || line > INT32_MAX)
			r->failed = true;
	}
}

static void get_block_on(struct cq_wire_reader *r, struct cq_rust_block_on *bo, size_t ntypes)
{
	bo->lo = cq_wire_get_u64(r);
	bo->hi = cq_wire_get_u64(r);
	bo->future = get_ref(r, ntypes, false);
	uint32_t nlocs = cq_wire_get_count(r, 39);
	if (r->failed || bo->lo > bo->hi || nlocs == 0) {
		r->failed |= bo->lo > bo->hi;
		return;
	}
	if (!(bo->locs = calloc(nlocs, sizeof(*bo->locs)))) {
		r->failed = true;
		return;
	}
	for (uint32_t l = 0; l < nlocs && !r->failed; l++, bo->nlocs++) {
		struct cq_rust_local *loc = &bo->locs[l];
		loc->lo = cq_wire_get_u64(r);
		loc->hi = cq_wire_get_u64(r);
		uint8_t base = cq_wire_get_u8(r);
		loc->base = (enum cq_rust_base)base;
		loc->reg = cq_wire_get_u8(r);
		loc->offset = (int64_t)cq_wire_get_u64(r);
		loc->deref = get_bool(r);
		loc->add = cq_wire_get_u64(r);
		loc->type = get_ref(r, ntypes, false);
		if (base > CQ_RUST_BASE_BREG || loc->lo > loc->hi || loc->reg >= CQ_REGS_MAX ||
		    (base == CQ_RUST_BASE_REGS &&
		     ((uint64_t)loc->offset >= CQ_REGS_MAX ||
		      (loc->add != CQ_RUST_NO_REG && loc->add >= CQ_REGS_MAX))))
			r->failed = true;
	}
}

/* True when the array is sorted by its u64 key at key_off (strictly for vtables). */
static bool sorted_by(const void *items, size_t n, size_t size, size_t key_off, bool strict)
{
	const uint8_t *p = items;
	for (size_t i = 1; i < n; i++) {
		uint64_t a, b;
		memcpy(&a, p + (i - 1) * size + key_off, 8);
		memcpy(&b, p + i * size + key_off, 8);
		if (strict ? a >= b : a > b)
			return false;
	}
	return true;
}

struct cq_error *cq_rust_index_blob_decode(const uint8_t *blob, size_t len,
                                           const struct cq_rust_parts *parts,
                                           struct cq_rust_index **out)
{
	*out = NULL;
	struct cq_wire_reader r;
	if (!cq_wire_open(&r, blob, len))
		return cq_error_create(CQ_ERR_FORMAT, "Rust index blob: checksum mismatch");
	struct cq_rust_index *ix = calloc(1, sizeof(*ix));
	if (!ix)
		return &cq_error_nomem;
	ix->kinds = *parts;
	/* Each item takes at least this many bytes, so counts cannot outrun the blob. */
	uint32_t ntypes = cq_wire_get_count(&r, 0), nvtables = cq_wire_get_count(&r, 0);
	uint32_t nresumes = cq_wire_get_count(&r, 0), nblock_ons = cq_wire_get_count(&r, 0);
	size_t left = (size_t)(r.end - r.p);
	if ((uint64_t)ntypes * 60 + (uint64_t)nvtables * 12 + (uint64_t)nresumes * 20 +
	        (uint64_t)nblock_ons * 24 >
	    left)
		r.failed = true;
	struct cq_rust_type *types = r.failed ? NULL : calloc(ntypes ? ntypes : 1, sizeof(*types));
	struct cq_rust_vtable *vts =
	    r.failed ? NULL : calloc(nvtables ? nvtables : 1, sizeof(*vts));
	ix->resumes = r.failed ? NULL : calloc(nresumes ? nresumes : 1, sizeof(*ix->resumes));
	ix->block_ons =
	    r.failed ? NULL : calloc(nblock_ons ? nblock_ons : 1, sizeof(*ix->block_ons));
	ix->model.types = types;
	ix->model.vtables = vts;
	bool nomem = !r.failed && (!types || !vts || !ix->resumes || !ix->block_ons);
	if (nomem)
		r.failed = true;
	for (uint32_t i = 0; i < ntypes && !r.failed; i++, ix->model.ntypes++)
		get_type(&r, &types[i], ntypes);
	for (uint32_t i = 0; i < nvtables && !r.failed; i++, ix->model.nvtables++) {
		vts[i].addr = cq_wire_get_u64(&r);
		vts[i].type = get_ref(&r, ntypes, false);
	}
	for (uint32_t i = 0; i < nresumes && !r.failed; i++, ix->nresumes++) {
		ix->resumes[i].lo = cq_wire_get_u64(&r);
		ix->resumes[i].hi = cq_wire_get_u64(&r);
		ix->resumes[i].name = cq_wire_get_str(&r, MAX_STRING);
		if (!ix->resumes[i].name || ix->resumes[i].lo > ix->resumes[i].hi)
			r.failed = true;
	}
	for (uint32_t i = 0; i < nblock_ons && !r.failed; i++, ix->nblock_ons++)
		get_block_on(&r, &ix->block_ons[i], ntypes);
	uint32_t nmonos = r.failed ? 0 : cq_wire_get_count(&r, 0);
	if (!r.failed && (uint64_t)nmonos * 20 > (size_t)(r.end - r.p))
		r.failed = true;
	ix->monos = r.failed ? NULL : calloc(nmonos ? nmonos : 1, sizeof(*ix->monos));
	if (!r.failed && !ix->monos)
		nomem = r.failed = true;
	for (uint32_t i = 0; i < nmonos && !r.failed; i++, ix->nmonos++) {
		ix->monos[i].lo = cq_wire_get_u64(&r);
		ix->monos[i].hi = cq_wire_get_u64(&r);
		ix->monos[i].future = get_ref(&r, ntypes, false);
		r.failed |= ix->monos[i].hi <= ix->monos[i].lo;
	}
	for (size_t i = 0; i < ix->kinds.n && !r.failed; i++)
		if (get_bool(&r) && !r.failed &&
		    !(ix->parts[i] = ix->kinds.v[i]->decode(&r, ntypes)))
			r.failed = true;
	/* The lookups binary-search these: an unsorted row is a damaged one. */
	if (!r.failed && (!sorted_by(vts, nvtables, sizeof(*vts),
	                             offsetof(struct cq_rust_vtable, addr), false) ||
	                  !sorted_by(ix->resumes, nresumes, sizeof(*ix->resumes),
	                             offsetof(struct cq_rust_resume, lo), false) ||
	                  !sorted_by(ix->monos, nmonos, sizeof(*ix->monos),
	                             offsetof(struct cq_rust_mono, lo), false)))
		r.failed = true;
	if (cq_wire_done(&r)) {
		ix->modules_indexed = 1;
		*out = ix;
		return NULL;
	}
	cq_rust_index_free(ix);
	return nomem ? &cq_error_nomem
	             : cq_error_create(CQ_ERR_FORMAT, "Rust index blob: malformed");
}
