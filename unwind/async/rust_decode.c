/*
 * rust_decode.c - decode Rust async state machines and find `dyn Future`
 * fat pointers in memory (see rust_decode.h).
 *
 * The decoder is a loop, not a recursion: each step either reads one state
 * machine (one frame), follows one wrapper (its hops, then a vtable lookup
 * for dyn), or stops at a leaf.  Steps are bounded by CQ_RUST_MAX_DEPTH
 * frames and by CQ_RUST_MAX_DEPTH * CQ_RUST_MAX_HOPS steps in all, so a
 * cycle of wrappers that never reaches a state machine ends too.
 */
#include "unwind/async/rust_decode.h"

#include <stdio.h>
#include <string.h>

#include "libcore/base/bytes.h"

#define MAX_STEPS (CQ_RUST_MAX_DEPTH * CQ_RUST_MAX_HOPS)

/* The environment struct names rustc gives coroutines, and what polls them. */
static const struct {
	const char *env;      /* "{async_fn_env#" */
	const char *resume;   /* "{async_fn#" */
	bool named_by_parent; /* an async fn is reported as its own path */
} env_kinds[] = {
    {"{async_fn_env#", "{async_fn#", true},
    {"{async_block_env#", "{async_block#", false},
    {"{async_closure_env#", "{async_closure#", false},
    {"{closure_env#", "{closure#", false},
    {"{coroutine_env#", "{coroutine#", false},
    {"{generator_env#", "{generator#", false},
};

int32_t cq_rust_unwrapped(const struct cq_rust_model *m, int32_t type)
{
	for (int i = 0; i < 8 && type >= 0 && (size_t)type < m->ntypes; i++) {
		const struct cq_rust_type *ty = &m->types[type];
		if (ty->kind != CQ_RUST_WRAPPER || ty->is_dyn || ty->target < 0)
			break;
		type = ty->target;
	}
	return type;
}

int32_t cq_rust_vtable_type(const struct cq_rust_model *m, uint64_t addr)
{
	size_t lo = 0, hi = m->nvtables;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->vtables[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->nvtables && m->vtables[lo].addr == addr ? m->vtables[lo].type : -1;
}

static bool read_uint(const struct cq_unwind_target *t, uint64_t addr, unsigned size, uint64_t *out)
{
	uint8_t buf[8];
	if (size == 0 || size > 8 || !t->ops->read(t->ctx, addr, buf, size))
		return false;
	uint64_t v = 0;
	for (unsigned i = 0; i < size; i++)
		v |= (uint64_t)buf[i] << (8 * i);
	*out = v;
	return true;
}

static const struct cq_rust_variant *find_variant(const struct cq_rust_type *ty, uint64_t state)
{
	for (size_t i = 0; i < ty->nvariants; i++)
		if (ty->variants[i].discr == state)
			return &ty->variants[i];
	return NULL;
}

static bool seen_in_chain(const struct cq_rust_chain *c, uint64_t addr, int32_t type)
{
	for (size_t i = 0; i < c->nframes; i++)
		if (c->frames[i].addr == addr && c->frames[i].type == type)
			return true;
	return false;
}

/* Follows a wrapper's hops from *addr; sets *addr and *type to the inner future. */
static enum cq_rust_chain_end follow_wrapper(const struct cq_unwind_target *t,
                                             const struct cq_rust_model *m,
                                             const struct cq_rust_type *ty, uint64_t *addr,
                                             int32_t *type)
{
	uint64_t a = *addr;
	for (unsigned i = 0; i < ty->nhops && i < CQ_RUST_MAX_HOPS; i++) {
		if (a + ty->hops[i].offset < a)
			return CQ_RUST_END_BAD_MEMORY;
		a += ty->hops[i].offset;
		if (ty->hops[i].deref && (!read_uint(t, a, 8, &a) || a == 0))
			return CQ_RUST_END_BAD_MEMORY;
	}
	if (!ty->is_dyn) {
		*addr = a;
		*type = ty->target;
		return CQ_RUST_END_LEAF; /* meaning: continue */
	}
	uint64_t data, vtable;
	if (a + ty->dyn_data_offset < a || a + ty->dyn_vtable_offset < a ||
	    !read_uint(t, a + ty->dyn_data_offset, 8, &data) ||
	    !read_uint(t, a + ty->dyn_vtable_offset, 8, &vtable) || data == 0)
		return CQ_RUST_END_BAD_MEMORY;
	int32_t inner = cq_rust_vtable_type(m, vtable);
	if (inner < 0)
		return CQ_RUST_END_UNKNOWN_VTABLE;
	*addr = data;
	*type = inner;
	return CQ_RUST_END_LEAF;
}

void cq_rust_decode(const struct cq_unwind_target *t, const struct cq_rust_model *m, uint64_t addr,
                    int32_t type, struct cq_rust_chain *out)
{
	out->nframes = 0;
	out->end = CQ_RUST_END_MAX_DEPTH;
	for (unsigned step = 0; step < MAX_STEPS; step++) {
		if (type < 0 || (size_t)type >= m->ntypes) {
			out->end = CQ_RUST_END_BAD_TYPE;
			return;
		}
		const struct cq_rust_type *ty = &m->types[type];
		if (ty->kind == CQ_RUST_WRAPPER) {
			enum cq_rust_chain_end e = follow_wrapper(t, m, ty, &addr, &type);
			if (e != CQ_RUST_END_LEAF) {
				out->end = e;
				return;
			}
			continue;
		}
		if (out->nframes >= CQ_RUST_MAX_DEPTH) {
			out->end = CQ_RUST_END_MAX_DEPTH;
			return;
		}
		if (seen_in_chain(out, addr, type)) {
			out->end = CQ_RUST_END_LOOP;
			return;
		}
		struct cq_rust_frame *f = &out->frames[out->nframes];
		*f = (struct cq_rust_frame){.addr = addr, .type = type};
		if (ty->kind == CQ_RUST_LEAF) {
			out->nframes++;
			out->end = CQ_RUST_END_LEAF;
			return;
		}
		uint64_t state;
		if (addr + ty->state_offset < addr ||
		    !read_uint(t, addr + ty->state_offset, ty->state_size, &state)) {
			out->end = CQ_RUST_END_BAD_MEMORY;
			return;
		}
		const struct cq_rust_variant *v = find_variant(ty, state);
		if (!v) {
			out->end = CQ_RUST_END_BAD_STATE;
			return;
		}
		f->variant = v;
		f->state = state;
		out->nframes++;
		if (v->awaitee < 0) {
			out->end = CQ_RUST_END_NO_AWAITEE;
			return;
		}
		if (addr + v->awaitee_offset < addr) {
			out->end = CQ_RUST_END_BAD_MEMORY;
			return;
		}
		addr += v->awaitee_offset;
		type = v->awaitee;
	}
}

/* A state machine's Unresumed variant when it holds a captured future, else NULL. */
static const struct cq_rust_variant *captured(const struct cq_rust_type *ty)
{
	if (ty->kind != CQ_RUST_STATE_MACHINE)
		return NULL;
	for (size_t i = 0; i < ty->nvariants; i++)
		if (ty->variants[i].discr == 0 && ty->variants[i].awaitee >= 0 &&
		    ty->variants[i].name && strcmp(ty->variants[i].name, "Unresumed") == 0)
			return &ty->variants[i];
	return NULL;
}

void cq_rust_decode_types(const struct cq_rust_model *m, uint64_t addr, int32_t type,
                          struct cq_rust_chain *out)
{
	out->nframes = 0;
	out->end = CQ_RUST_END_MAX_DEPTH;
	for (unsigned step = 0; step < MAX_STEPS; step++) {
		if (type < 0 || (size_t)type >= m->ntypes) {
			out->end = CQ_RUST_END_BAD_TYPE;
			return;
		}
		const struct cq_rust_type *ty = &m->types[type];
		if (ty->kind == CQ_RUST_WRAPPER) {
			/* Only a wrapper that holds its future inline: no pointer to read. */
			uint64_t a = addr;
			bool inline_only = !ty->is_dyn && ty->target >= 0;
			for (unsigned i = 0; i < ty->nhops && inline_only; i++)
				inline_only =
				    !ty->hops[i].deref && (a += ty->hops[i].offset) >= addr;
			if (!inline_only) {
				out->end = CQ_RUST_END_LEAF;
				return;
			}
			addr = a;
			type = ty->target;
			continue;
		}
		if (out->nframes >= CQ_RUST_MAX_DEPTH)
			return;
		if (seen_in_chain(out, addr, type)) {
			out->end = CQ_RUST_END_LOOP;
			return;
		}
		out->frames[out->nframes++] = (struct cq_rust_frame){.addr = addr, .type = type};
		const struct cq_rust_variant *v = captured(ty);
		if (!v || addr + v->awaitee_offset < addr) {
			out->end = CQ_RUST_END_LEAF;
			return;
		}
		addr += v->awaitee_offset;
		type = v->awaitee;
	}
}

size_t cq_rust_scan(const struct cq_rust_model *m, const uint8_t *bytes, uint64_t start,
                    uint64_t len, cq_rust_found_fn found, void *ctx)
{
	if (m->nvtables == 0 || len < 16)
		return 0;
	uint64_t lo = m->vtables[0].addr, span = m->vtables[m->nvtables - 1].addr - lo;
	/* The first 8-aligned word that has a whole word before it. */
	uint64_t off = ((8 - (start & 7)) & 7) + 8;
	size_t n = 0;
	while (off + 8 <= len) {
		/* Four words at a time: almost no word is in the vtables' range. */
		if (off + 32 <= len) {
			const uint8_t *p = bytes + off;
			if (cq_load_u64(p) - lo > span && cq_load_u64(p + 8) - lo > span &&
			    cq_load_u64(p + 16) - lo > span && cq_load_u64(p + 24) - lo > span) {
				off += 32;
				continue;
			}
		}
		uint64_t v = cq_load_u64(bytes + off);
		int32_t type = v - lo > span ? -1 : cq_rust_vtable_type(m, v);
		uint64_t data = type < 0 ? 0 : cq_load_u64(bytes + off - 8);
		if (data != 0) {
			found(ctx, start + off - 8, data, type);
			n++;
		}
		off += 8;
	}
	return n;
}

/*
 * Splits a state machine's name at its coroutine component: *prefix_len is
 * the length of the path before "::{..._env#", *kind the env_kinds index,
 * *index_start where the number after '#' starts.  False for other names.
 * Only a component outside generic arguments counts.
 */
static bool split_env_name(const char *name, size_t *prefix_len, size_t *kind, const char **number)
{
	bool found = false;
	int depth = 0;
	for (const char *p = name; *p; p++) {
		if (*p == '<')
			depth++;
		else if (*p == '>' && depth > 0)
			depth--;
		if (depth != 0 || strncmp(p, "::{", 3) != 0)
			continue;
		for (size_t k = 0; k < sizeof(env_kinds) / sizeof(env_kinds[0]); k++) {
			size_t l = strlen(env_kinds[k].env);
			if (strncmp(p + 2, env_kinds[k].env, l) == 0) {
				*prefix_len = (size_t)(p - name);
				*kind = k;
				*number = p + 2 + l;
				found = true;
			}
		}
	}
	return found;
}

/* The digits of a "#N}" tail, as a length. */
static size_t number_len(const char *number)
{
	size_t n = 0;
	while (number[n] >= '0' && number[n] <= '9' && n < 12)
		n++;
	return n;
}

const char *cq_rust_frame_function(const struct cq_rust_type *type, char *buf, size_t cap)
{
	size_t prefix, kind;
	const char *number;
	if (type->kind != CQ_RUST_STATE_MACHINE || !type->name ||
	    !split_env_name(type->name, &prefix, &kind, &number))
		return type->name;
	if (env_kinds[kind].named_by_parent)
		snprintf(buf, cap, "%.*s", (int)prefix, type->name);
	else
		snprintf(buf, cap, "%.*s::%s%.*s}", (int)prefix, type->name, env_kinds[kind].resume,
		         (int)number_len(number), number);
	return buf;
}

/*
 * The name of the function that polls a state machine type, as DWARF names
 * its subprogram under the same namespace ("a::b::{async_fn#0}"), or NULL.
 */
const char *cq_rust_resume_function(const char *env_name, char *buf, size_t cap)
{
	size_t prefix, kind;
	const char *number;
	if (!env_name || !split_env_name(env_name, &prefix, &kind, &number))
		return NULL;
	snprintf(buf, cap, "%.*s::%s%.*s}", (int)prefix, env_name, env_kinds[kind].resume,
	         (int)number_len(number), number);
	return buf;
}

bool cq_rust_is_env_name(const char *component)
{
	for (size_t k = 0; k < sizeof(env_kinds) / sizeof(env_kinds[0]); k++)
		if (strncmp(component, env_kinds[k].env, strlen(env_kinds[k].env)) == 0)
			return true;
	return false;
}
