/*
 * test_rust_async.c - the Rust await-chain decoder and fat-pointer scan
 * (unwind/async/rust_decode.h) on synthetic types and memory: a chain through
 * dyn Future and Box, cycles, unreadable and null pointers, unknown
 * vtables, undecodable states, the depth limit, wrapper loops, the scan's
 * alignment and null checks, the names frames are reported under, and an
 * executor's wrapper: decoded into the future it captured, and walked by
 * types alone (cq_rust_decode_types).
 *
 * Files tested: unwind/async/rust.c, unwind/async/rust_decode.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "unwind/async/rust_decode.h"

#define BASE    0x10000u
#define MEMSIZE 8192u
#define SM_SIZE 32u
#define VT_SM   0x9000u
#define VT_LEAF 0x9100u

enum { T_SM, T_DYN, T_LEAF, T_BOX, T_SELF_WRAPPER, T_SPAWN, T_SELF_CAPTURE, T_BOX_CAPTURE, NTYPES };

static uint8_t mem[MEMSIZE];

static bool mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < BASE || addr - BASE > MEMSIZE || len > MEMSIZE - (addr - BASE))
		return false;
	memcpy(buf, mem + (addr - BASE), len);
	return true;
}

static const struct cq_unwind_target_ops ops = {.read = mem_read};
static const struct cq_unwind_target target = {.ops = &ops};

/* SM: state at +24; Suspend0 awaits a Pin<Box<dyn Future>> at +0. */
static const struct cq_rust_variant sm_variants[] = {
    {.discr = 0, .name = "Unresumed", .file = "a.rs", .line = 10, .awaitee = -1},
    {.discr = 1, .name = "Returned", .file = "a.rs", .line = 13, .awaitee = -1},
    {.discr = 2, .name = "Panicked", .file = "a.rs", .line = 13, .awaitee = -1},
    {.discr = 3, .name = "Suspend0", .file = "a.rs", .line = 11, .awaitee = T_DYN},
    {.discr = 4,
     .name = "Suspend1",
     .file = "a.rs",
     .line = 12,
     .awaitee = T_BOX,
     .awaitee_offset = 8},
};

/*
 * An executor's spawn wrapper (`async move { future.await }`): its state at
 * +40; Unresumed captured T_SM at +8 (the index gives the upvar as the
 * variant's awaitee), Suspend0 awaits it at +8 too.
 */
static const struct cq_rust_variant spawn_variants[] = {
    {.discr = 0, .name = "Unresumed", .line = 137, .awaitee = T_SM, .awaitee_offset = 8},
    {.discr = 3, .name = "Suspend0", .line = 139, .awaitee = T_SM, .awaitee_offset = 8},
};
/* A wrapper that captured itself (a damaged index): the type walk must end. */
static const struct cq_rust_variant self_capture_variants[] = {
    {.discr = 0, .name = "Unresumed", .awaitee = T_SELF_CAPTURE},
};
/* A wrapper that captured a Box: the type walk cannot go on without memory. */
static const struct cq_rust_variant box_capture_variants[] = {
    {.discr = 0, .name = "Unresumed", .awaitee = T_BOX, .awaitee_offset = 8},
};

static const struct cq_rust_type types[NTYPES] = {
    [T_SPAWN] = {.name = "exec::spawn::{async_block_env#0}<app::a::{async_fn_env#0}>",
                 .kind = CQ_RUST_STATE_MACHINE,
                 .size = 48,
                 .state_offset = 40,
                 .state_size = 1,
                 .variants = spawn_variants,
                 .nvariants = 2},
    [T_SELF_CAPTURE] = {.name = "x::{async_block_env#0}",
                        .kind = CQ_RUST_STATE_MACHINE,
                        .size = 8,
                        .state_offset = 0,
                        .state_size = 1,
                        .variants = self_capture_variants,
                        .nvariants = 1},
    [T_BOX_CAPTURE] = {.name = "y::{async_block_env#0}",
                       .kind = CQ_RUST_STATE_MACHINE,
                       .size = 16,
                       .state_offset = 0,
                       .state_size = 1,
                       .variants = box_capture_variants,
                       .nvariants = 1},
    [T_SM] = {.name = "app::a::{async_fn_env#0}",
              .kind = CQ_RUST_STATE_MACHINE,
              .size = SM_SIZE,
              .state_offset = 24,
              .state_size = 1,
              .variants = sm_variants,
              .nvariants = sizeof(sm_variants) / sizeof(sm_variants[0])},
    [T_DYN] = {.name = "Pin<Box<dyn Future>>",
               .kind = CQ_RUST_WRAPPER,
               .nhops = 1,
               .is_dyn = true,
               .dyn_data_offset = 0,
               .dyn_vtable_offset = 8,
               .target = -1},
    [T_LEAF] = {.name = "app::Leaf", .kind = CQ_RUST_LEAF, .size = 8},
    [T_BOX] = {.name = "Box<app::a::{async_fn_env#0}>",
               .kind = CQ_RUST_WRAPPER,
               .hops = {{.offset = 0, .deref = true}},
               .nhops = 1,
               .target = T_SM},
    [T_SELF_WRAPPER] = {.name = "Loop",
                        .kind = CQ_RUST_WRAPPER,
                        .hops = {{.offset = 0, .deref = true}},
                        .nhops = 1,
                        .target = T_SELF_WRAPPER},
};

static const struct cq_rust_vtable vtables[] = {{VT_SM, T_SM}, {VT_LEAF, T_LEAF}};
static const struct cq_rust_model model = {
    .types = types, .ntypes = NTYPES, .vtables = vtables, .nvtables = 2};

static void put64(uint64_t addr, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		mem[addr - BASE + (uint64_t)i] = (uint8_t)(v >> (8 * i));
}

/* A state machine at addr in state, awaiting the dyn future {data, vtable}. */
static void put_sm(uint64_t addr, uint8_t state, uint64_t data, uint64_t vtable)
{
	put64(addr, data);
	put64(addr + 8, vtable);
	mem[addr - BASE + 24] = state;
}

static int setup(void **st)
{
	(void)st;
	memset(mem, 0, sizeof(mem));
	return 0;
}

static void test_chain_through_dyn_to_leaf(void **st)
{
	(void)st;
	put_sm(BASE, 3, BASE + 0x100, VT_SM);
	put_sm(BASE + 0x100, 3, BASE + 0x200, VT_LEAF);
	struct cq_rust_chain c;
	cq_rust_decode(&target, &model, BASE, T_SM, &c);
	assert_int_equal(c.end, CQ_RUST_END_LEAF);
	assert_int_equal(c.nframes, 3);
	assert_string_equal(c.frames[0].variant->name, "Suspend0");
	assert_int_equal(c.frames[1].addr, BASE + 0x100);
	assert_int_equal(c.frames[2].type, T_LEAF);
	assert_int_equal(c.frames[2].addr, BASE + 0x200);
	assert_null(c.frames[2].variant);
}

static void test_box_and_second_await(void **st)
{
	(void)st;
	/* Suspend1 awaits a Box at +8 pointing at an Unresumed state machine. */
	put_sm(BASE, 4, 0, 0);
	put64(BASE + 8, BASE + 0x300);
	put_sm(BASE + 0x300, 0, 0, 0);
	struct cq_rust_chain c;
	cq_rust_decode(&target, &model, BASE, T_SM, &c);
	assert_int_equal(c.end, CQ_RUST_END_NO_AWAITEE);
	assert_int_equal(c.nframes, 2);
	assert_string_equal(c.frames[0].variant->name, "Suspend1");
	assert_int_equal(c.frames[0].variant->line, 12);
	assert_string_equal(c.frames[1].variant->name, "Unresumed");
	assert_int_equal(c.frames[1].addr, BASE + 0x300);
}

static void test_cycle_ends_the_chain(void **st)
{
	(void)st;
	put_sm(BASE, 3, BASE + 0x100, VT_SM);
	put_sm(BASE + 0x100, 3, BASE, VT_SM);
	struct cq_rust_chain c;
	cq_rust_decode(&target, &model, BASE, T_SM, &c);
	assert_int_equal(c.end, CQ_RUST_END_LOOP);
	assert_int_equal(c.nframes, 2);
}

static void test_bad_pointers(void **st)
{
	(void)st;
	struct cq_rust_chain c;
	/* The awaitee lives in unmapped memory. */
	put_sm(BASE, 3, 0xdead0000u, VT_SM);
	cq_rust_decode(&target, &model, BASE, T_SM, &c);
	assert_int_equal(c.end, CQ_RUST_END_BAD_MEMORY);
	assert_int_equal(c.nframes, 1);
	/* A null data pointer. */
	put_sm(BASE, 3, 0, VT_SM);
	cq_rust_decode(&target, &model, BASE, T_SM, &c);
	assert_int_equal(c.end, CQ_RUST_END_BAD_MEMORY);
	/* The root itself straddles the end of memory. */
	cq_rust_decode(&target, &model, BASE + MEMSIZE - 8, T_SM, &c);
	assert_int_equal(c.end, CQ_RUST_END_BAD_MEMORY);
	assert_int_equal(c.nframes, 0);
	/* Address arithmetic that would wrap. */
	cq_rust_decode(&target, &model, UINT64_MAX - 4, T_SM, &c);
	assert_int_equal(c.end, CQ_RUST_END_BAD_MEMORY);
	/* A Box pointing nowhere. */
	put_sm(BASE, 4, 0, 0);
	put64(BASE + 8, 0);
	cq_rust_decode(&target, &model, BASE, T_SM, &c);
	assert_int_equal(c.end, CQ_RUST_END_BAD_MEMORY);
	assert_int_equal(c.nframes, 1);
}

static void test_unknown_vtable_and_state(void **st)
{
	(void)st;
	struct cq_rust_chain c;
	put_sm(BASE, 3, BASE + 0x100, 0x1234);
	cq_rust_decode(&target, &model, BASE, T_SM, &c);
	assert_int_equal(c.end, CQ_RUST_END_UNKNOWN_VTABLE);
	assert_int_equal(c.nframes, 1);
	put_sm(BASE, 200, 0, 0);
	cq_rust_decode(&target, &model, BASE, T_SM, &c);
	assert_int_equal(c.end, CQ_RUST_END_BAD_STATE);
	assert_int_equal(c.nframes, 0);
	cq_rust_decode(&target, &model, BASE, 99, &c);
	assert_int_equal(c.end, CQ_RUST_END_BAD_TYPE);
	cq_rust_decode(&target, &model, BASE, -1, &c);
	assert_int_equal(c.end, CQ_RUST_END_BAD_TYPE);
}

static void test_depth_limit(void **st)
{
	(void)st;
	/* 100 state machines, each awaiting the next: more than the limit. */
	unsigned n = 100;
	for (unsigned i = 0; i < n; i++)
		put_sm(BASE + (uint64_t)i * 64, 3, BASE + (uint64_t)(i + 1) * 64, VT_SM);
	struct cq_rust_chain c;
	cq_rust_decode(&target, &model, BASE, T_SM, &c);
	assert_int_equal(c.end, CQ_RUST_END_MAX_DEPTH);
	assert_int_equal(c.nframes, CQ_RUST_MAX_DEPTH);
}

static void test_wrapper_loop_terminates(void **st)
{
	(void)st;
	put64(BASE, BASE); /* a pointer to itself */
	struct cq_rust_chain c;
	cq_rust_decode(&target, &model, BASE, T_SELF_WRAPPER, &c);
	assert_int_equal(c.end, CQ_RUST_END_MAX_DEPTH);
	assert_int_equal(c.nframes, 0);
}

struct found_list {
	uint64_t where[8], data[8];
	int32_t type[8];
	size_t n;
};

static void on_found(void *ctx, uint64_t where, uint64_t data, int32_t type)
{
	struct found_list *f = ctx;
	if (f->n < 8) {
		f->where[f->n] = where;
		f->data[f->n] = data;
		f->type[f->n++] = type;
	}
}

static void test_scan(void **st)
{
	(void)st;
	put64(BASE + 0x40, BASE + 0x100); /* a fat pointer */
	put64(BASE + 0x48, VT_SM);
	put64(BASE + 0x80, 0); /* null data: not a future */
	put64(BASE + 0x88, VT_LEAF);
	put64(BASE + 0xc4, BASE + 0x200); /* misaligned vtable word: not seen */
	put64(BASE + 0xcc, VT_LEAF);
	put64(BASE + 0x100, 0x9050); /* between vtables, not one */
	put64(BASE + 0x0, VT_SM);    /* first word: no data word before it */
	struct found_list f = {0};
	size_t n = cq_rust_scan(&model, mem, BASE, 0x400, on_found, &f);
	assert_int_equal(n, 1);
	assert_int_equal(f.where[0], BASE + 0x40);
	assert_int_equal(f.data[0], BASE + 0x100);
	assert_int_equal(f.type[0], T_SM);
	/* A range starting off alignment: words are aligned by target address. */
	memset(&f, 0, sizeof(f));
	n = cq_rust_scan(&model, mem + 4, BASE + 4, 0x3f0, on_found, &f);
	assert_int_equal(n, 1);
	assert_int_equal(f.where[0], BASE + 0x40);
	/* An empty model finds nothing and reads nothing. */
	struct cq_rust_model empty = {0};
	assert_int_equal(cq_rust_scan(&empty, NULL, 0, 1u << 30, on_found, &f), 0);
}

static void test_names(void **st)
{
	(void)st;
	char buf[256];
	struct cq_rust_type t = {.kind = CQ_RUST_STATE_MACHINE, .name = "app::a::{async_fn_env#0}"};
	assert_string_equal(cq_rust_frame_function(&t, buf, sizeof(buf)), "app::a");
	t.name = "app::b::{async_block_env#2}";
	assert_string_equal(cq_rust_frame_function(&t, buf, sizeof(buf)),
	                    "app::b::{async_block#2}");
	t.name = "app::c::{async_fn_env#0}<u32, app::d::{async_fn_env#0}>";
	assert_string_equal(cq_rust_frame_function(&t, buf, sizeof(buf)), "app::c");
	assert_string_equal(cq_rust_resume_function(t.name, buf, sizeof(buf)),
	                    "app::c::{async_fn#0}");
	t.kind = CQ_RUST_LEAF;
	t.name = "tokio::time::Sleep";
	assert_string_equal(cq_rust_frame_function(&t, buf, sizeof(buf)), "tokio::time::Sleep");
	assert_null(cq_rust_resume_function("app::Plain", buf, sizeof(buf)));
	assert_true(cq_rust_is_env_name("{closure_env#3}"));
	assert_false(cq_rust_is_env_name("Pin<&mut u8>"));
}

/* A never-polled wrapper's chain goes on into the future it captured. */
static void test_unresumed_wrapper_decodes_its_capture(void **st)
{
	(void)st;
	mem[40] = 0;               /* the wrapper at BASE: Unresumed (state at +40) */
	put_sm(BASE + 8, 0, 0, 0); /* its captured future: Unresumed */
	struct cq_rust_chain c;
	cq_rust_decode(&target, &model, BASE, T_SPAWN, &c);
	assert_int_equal(c.end, CQ_RUST_END_NO_AWAITEE);
	assert_int_equal(c.nframes, 2);
	assert_int_equal(c.frames[0].variant->line, 137);
	assert_int_equal(c.frames[1].type, T_SM);
	assert_int_equal(c.frames[1].addr, BASE + 8);
	assert_string_equal(c.frames[1].variant->name, "Unresumed");
	assert_int_equal(c.frames[1].variant->line, 10);
}

/* The chain the types imply reads no memory: a running task's is stale. */
static void test_types_chain(void **st)
{
	(void)st;
	struct cq_rust_chain c;
	/* No memory at 0x500000: nothing is read. */
	cq_rust_decode_types(&model, 0x500000, T_SPAWN, &c);
	assert_int_equal(c.end, CQ_RUST_END_LEAF);
	assert_int_equal(c.nframes, 2);
	assert_int_equal(c.frames[0].type, T_SPAWN);
	assert_null(c.frames[0].variant);
	assert_int_equal(c.frames[1].type, T_SM);
	assert_int_equal(c.frames[1].addr, 0x500008);
	assert_null(c.frames[1].variant);
	/* A future that captured itself: the walk ends at the repeat. */
	cq_rust_decode_types(&model, 0x500000, T_SELF_CAPTURE, &c);
	assert_int_equal(c.end, CQ_RUST_END_LOOP);
	assert_int_equal(c.nframes, 1);
	/* A capture behind a pointer: where it is needs memory; the walk stops. */
	cq_rust_decode_types(&model, 0x500000, T_BOX_CAPTURE, &c);
	assert_int_equal(c.end, CQ_RUST_END_LEAF);
	assert_int_equal(c.nframes, 1);
	assert_int_equal(c.frames[0].type, T_BOX_CAPTURE);
	/* A bad type index. */
	cq_rust_decode_types(&model, 0x500000, NTYPES, &c);
	assert_int_equal(c.end, CQ_RUST_END_BAD_TYPE);
	assert_int_equal(c.nframes, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_chain_through_dyn_to_leaf, setup),
	    cmocka_unit_test_setup(test_box_and_second_await, setup),
	    cmocka_unit_test_setup(test_cycle_ends_the_chain, setup),
	    cmocka_unit_test_setup(test_bad_pointers, setup),
	    cmocka_unit_test_setup(test_unknown_vtable_and_state, setup),
	    cmocka_unit_test_setup(test_depth_limit, setup),
	    cmocka_unit_test_setup(test_wrapper_loop_terminates, setup),
	    cmocka_unit_test_setup(test_scan, setup),
	    cmocka_unit_test_setup(test_names, setup),
	    cmocka_unit_test_setup(test_unresumed_wrapper_decodes_its_capture, setup),
	    cmocka_unit_test_setup(test_types_chain, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
