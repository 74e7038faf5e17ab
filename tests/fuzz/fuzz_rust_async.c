/*
 * fuzz_rust_async.c - libFuzzer target for the Rust await-chain decoder and
 * the `dyn Future` fat-pointer scan (unwind/async/rust_decode.c), with a small fixed
 * type model over memory made from the input.
 *
 * Input layout (little-endian; a short input is zero-padded):
 *
 *   0   scan start misalignment (b % 8), 3 spare bytes
 *   4   two decodes of 2 bytes: type ((b & 0x7f) % (NTYPES + 2); the last
 *       two mean -1 and a missing type; bit 7 misaligns the address by 1)
 *       and address (MEM_BASE + 8 * b)
 *   8   memory, readable at MEM_BASE: pointers in it may point back into it
 *
 * The model has three state machines (1-, 4- and 8-byte __state, variants
 * awaiting inline, through Box, through dyn, at their own address, past the
 * end of the address space, and of a type that does not exist), a leaf,
 * wrappers (inline dyn, Box<dyn>, Box<T>, eight hops, a wrapper that loops on
 * itself, one whose target does not exist) and five vtables, one of them for
 * a type that does not exist.
 *
 * The scan must agree with a plain word loop; every fat pointer it finds,
 * and the two header futures, are decoded, and each chain must keep the
 * documented invariants (at most CQ_RUST_MAX_DEPTH frames, a valid end,
 * frames that are state machines with a matching variant read from memory
 * or a final leaf, each awaiting the next, no future twice), or abort.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/async/rust_decode.h"

#define MEM_BASE 0x10000000ull
#define HDR_SIZE 8
#define VT_BASE  0x50000000ull
#define MAX_SCAN 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { T_A, T_B, T_C, T_LEAF, T_DYN, T_BOX_DYN, T_BOX_A, T_HOPS, T_LOOP, T_BAD_TARGET, NTYPES };
#define T_MISSING 99

/* A: 1-byte state at +40. */
static const struct cq_rust_variant a_variants[] = {
    {.discr = 0, .name = "Unresumed", .awaitee = -1},
    {.discr = 1, .name = "Returned", .awaitee = -1},
    {.discr = 2, .name = "Panicked", .awaitee = -1},
    {.discr = 3, .name = "Suspend0", .awaitee = T_BOX_DYN, .awaitee_offset = 0},
    {.discr = 4, .name = "Suspend1", .awaitee = T_B, .awaitee_offset = 8},
    {.discr = 5, .name = "Suspend2", .awaitee = T_BOX_A, .awaitee_offset = 16},
    {.discr = 6, .name = "Suspend3", .awaitee = T_DYN, .awaitee_offset = 16},
};

/* B: 4-byte state at +0. */
static const struct cq_rust_variant b_variants[] = {
    {.discr = 0, .name = "Unresumed", .awaitee = -1},
    {.discr = 3, .name = "Suspend0", .awaitee = T_LEAF, .awaitee_offset = 8},
    {.discr = 0x10000, .name = "Suspend1", .awaitee = T_DYN, .awaitee_offset = 16},
    {.discr = 5, .name = "Suspend2", .awaitee = T_B, .awaitee_offset = 0},
    {.discr = 6, .name = "Suspend3", .awaitee = T_C, .awaitee_offset = 0},
    {.discr = 7, .name = "Suspend4", .awaitee = T_A, .awaitee_offset = 48},
};

/* C: 8-byte state at +8. */
static const struct cq_rust_variant c_variants[] = {
    {.discr = 1, .name = "Returned", .awaitee = -1},
    {.discr = 3, .name = "Suspend0", .awaitee = T_HOPS, .awaitee_offset = 16},
    {.discr = 4, .name = "Suspend1", .awaitee = T_LOOP, .awaitee_offset = 16},
    {.discr = 5, .name = "Suspend2", .awaitee = T_A, .awaitee_offset = UINT64_MAX - 7},
    {.discr = 6, .name = "Suspend3", .awaitee = T_MISSING, .awaitee_offset = 0},
    {.discr = UINT64_MAX, .name = "Suspend4", .awaitee = T_BAD_TARGET, .awaitee_offset = 0},
    {.discr = 8, .name = "Suspend5", .awaitee = T_B, .awaitee_offset = 16},
};

#define NV(v) (sizeof(v) / sizeof((v)[0]))

static const struct cq_rust_type types[NTYPES] = {
    [T_A] = {.name = "app::a::{async_fn_env#0}",
             .kind = CQ_RUST_STATE_MACHINE,
             .size = 48,
             .state_offset = 40,
             .state_size = 1,
             .variants = a_variants,
             .nvariants = NV(a_variants)},
    [T_B] = {.name = "app::b::{async_block_env#1}",
             .kind = CQ_RUST_STATE_MACHINE,
             .size = 64,
             .state_offset = 0,
             .state_size = 4,
             .variants = b_variants,
             .nvariants = NV(b_variants)},
    [T_C] = {.name = "app::c::{closure_env#0}",
             .kind = CQ_RUST_STATE_MACHINE,
             .size = 32,
             .state_offset = 8,
             .state_size = 8,
             .variants = c_variants,
             .nvariants = NV(c_variants)},
    [T_LEAF] = {.name = "tokio::time::Sleep", .kind = CQ_RUST_LEAF, .size = 16},
    [T_DYN] = {.name = "Pin<&mut dyn Future>",
               .kind = CQ_RUST_WRAPPER,
               .is_dyn = true,
               .dyn_data_offset = 0,
               .dyn_vtable_offset = 8,
               .target = -1},
    [T_BOX_DYN] = {.name = "Box<Pin<Box<dyn Future>>>",
                   .kind = CQ_RUST_WRAPPER,
                   .hops = {{.offset = 0, .deref = true}},
                   .nhops = 1,
                   .is_dyn = true,
                   .dyn_data_offset = 8,
                   .dyn_vtable_offset = 16,
                   .target = -1},
    [T_BOX_A] = {.name = "Pin<Box<app::a::{async_fn_env#0}>>",
                 .kind = CQ_RUST_WRAPPER,
                 .hops = {{.offset = 0, .deref = true}},
                 .nhops = 1,
                 .target = T_A},
    [T_HOPS] = {.name = "Deep",
                .kind = CQ_RUST_WRAPPER,
                .hops = {{8, true},
                         {0, false},
                         {16, true},
                         {8, false},
                         {0, true},
                         {24, false},
                         {0, true},
                         {8, true}},
                .nhops = CQ_RUST_MAX_HOPS,
                .target = T_C},
    [T_LOOP] = {.name = "Loop",
                .kind = CQ_RUST_WRAPPER,
                .hops = {{.offset = 8, .deref = true}},
                .nhops = 1,
                .target = T_LOOP},
    [T_BAD_TARGET] = {.name = "Bad",
                      .kind = CQ_RUST_WRAPPER,
                      .hops = {{.offset = 0, .deref = false}},
                      .nhops = 1,
                      .target = T_MISSING},
};

/* Sorted by address. */
static const struct cq_rust_vtable vtables[] = {
    {VT_BASE + 0x00, T_A},    {VT_BASE + 0x40, T_B},        {VT_BASE + 0x80, T_C},
    {VT_BASE + 0xc0, T_LEAF}, {VT_BASE + 0x100, T_MISSING}, {VT_BASE + 0x140, T_BOX_A},
};

static const struct cq_rust_model model = {
    .types = types, .ntypes = NTYPES, .vtables = vtables, .nvtables = NV(vtables)};

struct space {
	const uint8_t *mem;
	size_t len;
};

static bool sp_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct space *s = ctx;
	if (addr < MEM_BASE || addr - MEM_BASE > s->len || len > s->len - (addr - MEM_BASE))
		return false;
	memcpy(buf, s->mem + (addr - MEM_BASE), len);
	return true;
}

static const struct cq_unwind_target_ops sp_ops = {.read = sp_read};

static uint64_t get(const uint8_t *b, size_t n)
{
	uint64_t v = 0;
	for (size_t i = n; i-- > 0;)
		v = v << 8 | b[i];
	return v;
}

static bool valid_variant(const struct cq_rust_type *ty, const struct cq_rust_variant *v)
{
	for (size_t i = 0; i < ty->nvariants; i++)
		if (&ty->variants[i] == v)
			return true;
	return false;
}

/* Decodes the future at addr twice and checks the chain's invariants. */
static void decode(const struct cq_unwind_target *tg, uint64_t addr, int32_t type)
{
	struct cq_rust_chain c, again;
	memset(&c, 0xa5, sizeof(c));
	cq_rust_decode(tg, &model, addr, type, &c);
	cq_rust_decode(tg, &model, addr, type, &again);
	if (c.nframes > CQ_RUST_MAX_DEPTH || c.end > CQ_RUST_END_LOOP)
		abort();
	if (again.nframes != c.nframes || again.end != c.end)
		abort();
	/* Field by field: the walker need not write padding. */
	for (size_t i = 0; i < c.nframes; i++)
		if (again.frames[i].addr != c.frames[i].addr ||
		    again.frames[i].type != c.frames[i].type ||
		    again.frames[i].variant != c.frames[i].variant ||
		    again.frames[i].state != c.frames[i].state)
			abort();
	for (size_t i = 0; i < c.nframes; i++) {
		const struct cq_rust_frame *f = &c.frames[i];
		bool last = i + 1 == c.nframes;
		if (f->type < 0 || (size_t)f->type >= NTYPES)
			abort();
		const struct cq_rust_type *ty = &types[f->type];
		for (size_t j = 0; j < i; j++)
			if (c.frames[j].addr == f->addr && c.frames[j].type == f->type)
				abort(); /* a future twice in one chain */
		if (ty->kind == CQ_RUST_LEAF) {
			if (!last || f->variant || c.end != CQ_RUST_END_LEAF)
				abort();
			continue;
		}
		if (ty->kind != CQ_RUST_STATE_MACHINE || !f->variant ||
		    !valid_variant(ty, f->variant))
			abort(); /* wrappers add no frame */
		/* The state is what memory holds, and selects the variant. */
		uint8_t b[8];
		if (!sp_read(tg->ctx, f->addr + ty->state_offset, b, ty->state_size) ||
		    get(b, ty->state_size) != f->state || f->variant->discr != f->state)
			abort();
		if (!last && f->variant->awaitee < 0)
			abort();
		/* An inline state machine awaitee is the next frame, at its offset. */
		if (!last && f->variant->awaitee >= 0 && f->variant->awaitee < NTYPES &&
		    types[f->variant->awaitee].kind != CQ_RUST_WRAPPER &&
		    (c.frames[i + 1].type != f->variant->awaitee ||
		     c.frames[i + 1].addr != f->addr + f->variant->awaitee_offset))
			abort();
		if (last && c.end == CQ_RUST_END_NO_AWAITEE && f->variant->awaitee >= 0)
			abort();
	}
	if ((c.end == CQ_RUST_END_LEAF || c.end == CQ_RUST_END_NO_AWAITEE) && c.nframes == 0)
		abort();
	if (c.end == CQ_RUST_END_NO_AWAITEE &&
	    types[c.frames[c.nframes - 1].type].kind == CQ_RUST_LEAF)
		abort();
}

struct found {
	uint64_t where[MAX_SCAN], data[MAX_SCAN];
	int32_t type[MAX_SCAN];
	size_t n;
};

static void on_found(void *ctx, uint64_t where, uint64_t data, int32_t type)
{
	struct found *f = ctx;
	if (f->n < MAX_SCAN) {
		f->where[f->n] = where;
		f->data[f->n] = data;
		f->type[f->n] = type;
	}
	f->n++;
}

static int32_t vtable_type_slow(uint64_t addr)
{
	for (size_t i = 0; i < NV(vtables); i++)
		if (vtables[i].addr == addr)
			return vtables[i].type;
	return -1;
}

/* The scan of [start, start + len), checked against a plain word loop. */
static void scan(const struct cq_unwind_target *tg, const uint8_t *bytes, uint64_t start,
                 uint64_t len)
{
	struct found f = {0};
	size_t n = cq_rust_scan(&model, bytes, start, len, on_found, &f);
	if (n != f.n)
		abort();
	size_t want = 0;
	for (uint64_t off = 8; off + 8 <= len; off++) {
		if ((start + off) & 7)
			continue;
		int32_t type = vtable_type_slow(get(bytes + off, 8));
		uint64_t data = get(bytes + off - 8, 8);
		if (type < 0 || data == 0)
			continue;
		if (want < MAX_SCAN && (f.where[want] != start + off - 8 || f.data[want] != data ||
		                        f.type[want] != type))
			abort();
		want++;
	}
	if (want != n)
		abort();
	for (size_t i = 0; i < n && i < MAX_SCAN; i++)
		decode(tg, f.data[i], f.type[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t none[1];
	uint8_t hdr[HDR_SIZE] = {0};
	memcpy(hdr, data, size < HDR_SIZE ? size : HDR_SIZE);
	struct space s = {.mem = size > HDR_SIZE ? data + HDR_SIZE : none,
	                  .len = size > HDR_SIZE ? size - HDR_SIZE : 0};
	struct cq_unwind_target tg = {.ops = &sp_ops, .ctx = &s};

	for (int i = 0; i < 2; i++) {
		const uint8_t *d = hdr + 4 + 2 * i;
		int32_t type = (int32_t)((d[0] & 0x7f) % (NTYPES + 2));
		if (type >= NTYPES)
			type = type == NTYPES ? -1 : T_MISSING;
		decode(&tg, MEM_BASE + (uint64_t)d[1] * 8 + (d[0] >> 7), type);
	}
	size_t skip = s.len ? hdr[0] % 8 % s.len : 0;
	scan(&tg, s.mem + skip, MEM_BASE + skip, s.len - skip);
	return 0;
}
