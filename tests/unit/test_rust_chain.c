/*
 * test_rust_chain.c - a decoded Rust await chain as the frames of a
 * suspended stack (unwind/async/rust_chain.h): frames come innermost first
 * from a chain given outermost first; each is an async frame (trust async)
 * whose object is the future's address, whose state, file and line are its
 * await point's variant (none for a leaf), whose module is the handle of
 * the module that described its type (none when that index is out of the
 * target's range), and whose function is the type's name as
 * rust_decode.h's cq_rust_frame_function says (an async fn's path without
 * its env component, an async block's with `{async_block#N}`, a leaf's type
 * name); the names live in the caller's pool.  And how a chain's end reads
 * as a stack's end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "unwind/async/rust_chain.h"
#include "unwind/target.h"

static const int handle_a, handle_b;

static const struct cq_rust_variant suspend = {
    .discr = 3, .name = "Suspend0", .file = "/src/app.rs", .line = 42, .awaitee = 1};
static const struct cq_rust_variant suspend_block = {
    .discr = 4, .name = "Suspend1", .file = "/src/block.rs", .line = 9, .awaitee = 2};

static const struct cq_rust_type types[] = {
    {.name = "app::serve::{async_fn_env#0}", .kind = CQ_RUST_STATE_MACHINE, .origin = 0},
    {.name = "app::serve::{async_block_env#1}", .kind = CQ_RUST_STATE_MACHINE, .origin = 1},
    {.name = "tokio::time::sleep::Sleep", .kind = CQ_RUST_LEAF, .origin = 7},
    {.name = NULL, .kind = CQ_RUST_LEAF, .origin = 0},
};

static const struct cq_target_module modules[] = {
    {.handle = (const struct cq_module *)(const void *)&handle_a, .start = 0x1000, .end = 0x2000},
    {.handle = (const struct cq_module *)(const void *)&handle_b, .start = 0x3000, .end = 0x4000},
};

static void test_frames_innermost_first(void **state)
{
	(void)state;
	struct cq_unwind_target t = {.modules = modules, .nmodules = 2};
	struct cq_rust_model m = {.types = types, .ntypes = 4};
	/* outermost first: the async fn, the block it awaits, the Sleep the block awaits */
	const struct cq_rust_frame chain[] = {
	    {.addr = 0x100, .type = 0, .variant = &suspend, .state = 3},
	    {.addr = 0x140, .type = 1, .variant = &suspend_block, .state = 4},
	    {.addr = 0x180, .type = 2},
	};
	struct cq_rust_names names = {0};
	struct cq_stack_frame *f;
	assert_null(cq_rust_chain_frames(&t, &m, chain, 3, &names, &f));
	assert_non_null(f);

	assert_string_equal(f[0].function, "tokio::time::sleep::Sleep");
	assert_int_equal(f[0].object, 0x180);
	assert_null(f[0].state);
	assert_null(f[0].file);
	assert_int_equal(f[0].line, 0);
	assert_null(f[0].module); /* origin 7: no such module */

	assert_string_equal(f[1].function, "app::serve::{async_block#1}");
	assert_int_equal(f[1].object, 0x140);
	assert_string_equal(f[1].state, "Suspend1");
	assert_string_equal(f[1].file, "/src/block.rs");
	assert_int_equal(f[1].line, 9);
	assert_ptr_equal(f[1].module, &handle_b);

	assert_string_equal(f[2].function, "app::serve");
	assert_int_equal(f[2].object, 0x100);
	assert_string_equal(f[2].state, "Suspend0");
	assert_int_equal(f[2].line, 42);
	assert_ptr_equal(f[2].module, &handle_a);

	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(f[i].kind, CQ_FRAME_ASYNC);
		assert_int_equal(f[i].trust, CQ_TRUST_ASYNC);
		assert_int_equal(f[i].pc, 0);
		assert_null(f[i].joined);
		assert_int_equal(f[i].thread_switch, 0);
	}
	/* the names are the pool's: they outlive the chain's buffers */
	assert_int_equal(names.n, 3);
	for (size_t i = 0; i < 3; i++) {
		bool pooled = false;
		for (size_t k = 0; k < names.n; k++)
			pooled |= names.v[k] == f[i].function;
		assert_true(pooled);
	}
	free(f);
	cq_rust_names_free(&names);
	assert_int_equal(names.n, 0);
	assert_null(names.v);
}

static void test_unnamed_type_and_empty_chain(void **state)
{
	(void)state;
	struct cq_unwind_target t = {.modules = modules, .nmodules = 2};
	struct cq_rust_model m = {.types = types, .ntypes = 4};
	const struct cq_rust_frame chain[] = {{.addr = 0x200, .type = 3}};
	struct cq_rust_names names = {0};
	struct cq_stack_frame *f;
	assert_null(cq_rust_chain_frames(&t, &m, chain, 1, &names, &f));
	assert_null(f[0].function);
	assert_int_equal(f[0].object, 0x200);
	assert_ptr_equal(f[0].module, &handle_a);
	assert_int_equal(names.n, 0);
	free(f);

	/* No frame: still an array the caller frees, and no name made. */
	assert_null(cq_rust_chain_frames(&t, &m, chain, 0, &names, &f));
	assert_non_null(f);
	free(f);
	assert_int_equal(names.n, 0);
	cq_rust_names_free(&names);
}

/* Names accumulate across chains until the pool is freed. */
static void test_pool_grows_across_chains(void **state)
{
	(void)state;
	struct cq_unwind_target t = {.modules = modules, .nmodules = 2};
	struct cq_rust_model m = {.types = types, .ntypes = 4};
	const struct cq_rust_frame chain[] = {{.addr = 0x100, .type = 0, .variant = &suspend}};
	struct cq_rust_names names = {0};
	struct cq_stack_frame *f[5];
	for (size_t i = 0; i < 5; i++)
		assert_null(cq_rust_chain_frames(&t, &m, chain, 1, &names, &f[i]));
	assert_int_equal(names.n, 5);
	for (size_t i = 0; i < 5; i++) {
		assert_string_equal(f[i][0].function, "app::serve");
		free(f[i]);
	}
	cq_rust_names_free(&names);
}

static void test_chain_end(void **state)
{
	(void)state;
	assert_int_equal(cq_rust_chain_end(CQ_RUST_END_LEAF), CQ_END_OUTERMOST);
	assert_int_equal(cq_rust_chain_end(CQ_RUST_END_NO_AWAITEE), CQ_END_OUTERMOST);
	assert_int_equal(cq_rust_chain_end(CQ_RUST_END_MAX_DEPTH), CQ_END_MAX_FRAMES);
	assert_int_equal(cq_rust_chain_end(CQ_RUST_END_LOOP), CQ_END_LOOP);
	assert_int_equal(cq_rust_chain_end(CQ_RUST_END_BAD_MEMORY), CQ_END_BAD_MEMORY);
	assert_int_equal(cq_rust_chain_end(CQ_RUST_END_BAD_STATE), CQ_END_BAD_MEMORY);
	assert_int_equal(cq_rust_chain_end(CQ_RUST_END_UNKNOWN_VTABLE), CQ_END_BAD_MEMORY);
	assert_int_equal(cq_rust_chain_end(CQ_RUST_END_BAD_TYPE), CQ_END_BAD_MEMORY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_frames_innermost_first),
	    cmocka_unit_test(test_unnamed_type_and_empty_chain),
	    cmocka_unit_test(test_pool_grows_across_chains),
	    cmocka_unit_test(test_chain_end),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
