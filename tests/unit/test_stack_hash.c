/*
 * test_stack_hash.c - the stored stack's hash (libcore/store/stack_hash.h),
 * against a FNV-1a written here from the published definition (offset
 * basis 0xcbf29ce484222325, prime 0x100000001b3; FNV-1a("a") is
 * 0xaf63dc4c8601ec8c): a frame folds in its build-id, its offset and its
 * kind; a future's frame also its function, state and line but not its
 * address; the text is 16 lower-case hex digits.  Stored hashes must never
 * change, so the values here are pinned by the independent fold.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/store/stack_hash.h"

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
	const uint8_t *p = data;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* The frame as bytes: build-id, then the offset (8 bytes, little-endian), then the kind. */
static uint64_t fold(uint64_t h, const uint8_t *id, size_t idlen, uint64_t where, uint8_t kind)
{
	uint8_t w[8];
	for (size_t i = 0; i < 8; i++)
		w[i] = (uint8_t)(where >> (8 * i));
	return fnv(fnv(fnv(h, id, idlen), w, 8), &kind, 1);
}

static void test_fnv_basis(void **state)
{
	(void)state;
	assert_true(CQ_STACK_HASH_INIT == 0xcbf29ce484222325ull);
	assert_true(fnv(0xcbf29ce484222325ull, "a", 1) == 0xaf63dc4c8601ec8cull);
	char text[CQ_STACK_HASH_TEXT_LEN + 1];
	cq_stack_hash_text(0xaf63dc4c8601ec8cull, text);
	assert_string_equal(text, "af63dc4c8601ec8c");
	cq_stack_hash_text(0x1, text);
	assert_string_equal(text, "0000000000000001");
}

static void test_native_frames(void **state)
{
	(void)state;
	static const uint8_t id[] = {0x64, 0x8d, 0x1f, 0xb7, 0xcf, 0x01, 0xeb, 0x70};
	struct cq_stack_hash_frame f[2] = {
	    {.build_id = id, .build_id_len = sizeof(id), .where = 0x114c, .kind = 0},
	    {.build_id = NULL, .where = 0x7f0012345678, .kind = 1},
	};
	uint64_t h = CQ_STACK_HASH_INIT;
	for (size_t i = 0; i < 2; i++)
		h = cq_stack_hash_add(h, &f[i]);
	uint64_t want = fold(CQ_STACK_HASH_INIT, id, sizeof(id), 0x114c, 0);
	want = fold(want, NULL, 0, 0x7f0012345678, 1);
	assert_true(h == want);
	/* No build-id and a length-0 one are the same. */
	f[1].build_id = id;
	f[1].build_id_len = 0;
	uint64_t h2 = cq_stack_hash_add(cq_stack_hash_add(CQ_STACK_HASH_INIT, &f[0]), &f[1]);
	assert_true(h2 == h);
	/* A native frame's function does not count: names may come later (resymbolize). */
	f[0].function = "level3";
	assert_true(cq_stack_hash_add(CQ_STACK_HASH_INIT, &f[0]) ==
	            fold(CQ_STACK_HASH_INIT, id, sizeof(id), 0x114c, 0));
	/* Order matters: innermost first. */
	uint64_t swapped = cq_stack_hash_add(cq_stack_hash_add(CQ_STACK_HASH_INIT, &f[1]), &f[0]);
	assert_true(swapped != h);
}

static void test_future_frames(void **state)
{
	(void)state;
	struct cq_stack_hash_frame f = {.where = 0,
	                                .kind = 2,
	                                .future = true,
	                                .function = "app::handler::{async_fn#0}",
	                                .state = "Suspend0",
	                                .line = 42};
	uint64_t want = fold(CQ_STACK_HASH_INIT, NULL, 0, 0, 2);
	want = fnv(want, f.function, strlen(f.function) + 1);
	want = fnv(want, f.state, strlen(f.state) + 1);
	uint8_t line[8] = {42};
	want = fnv(want, line, 8);
	uint64_t h = cq_stack_hash_add(CQ_STACK_HASH_INIT, &f);
	assert_true(h == want);
	/* The state NULL is "". */
	f.state = NULL;
	uint64_t none = cq_stack_hash_add(CQ_STACK_HASH_INIT, &f);
	f.state = "";
	assert_true(cq_stack_hash_add(CQ_STACK_HASH_INIT, &f) == none);
	assert_true(none != h);
	/* Another line, another function: another stack. */
	f.state = "Suspend0";
	f.line = 43;
	assert_true(cq_stack_hash_add(CQ_STACK_HASH_INIT, &f) != h);
	f.line = 42;
	f.function = "app::other::{async_fn#0}";
	assert_true(cq_stack_hash_add(CQ_STACK_HASH_INIT, &f) != h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fnv_basis),
	    cmocka_unit_test(test_native_frames),
	    cmocka_unit_test(test_future_frames),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
