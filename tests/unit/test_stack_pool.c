/*
 * test_stack_pool.c - identical thread stacks stored once (libcore/
 * analysis/stack_pool.h): equal frame arrays intern to one pooled array,
 * a stack differing in any field (pc, kind, trust, line, length) is a
 * distinct one, an empty stack is fine, and ten thousand copies of a few
 * stacks keep only those few (memory grows with the distinct stacks).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/analysis/stack_pool.h"

static const char *const names[] = {"level3", "level2", "main"};

static struct cq_stack_frame *stack(size_t n, uint64_t pc0)
{
	struct cq_stack_frame *f = calloc(n ? n : 1, sizeof(*f));
	for (size_t i = 0; i < n; i++) {
		f[i].pc = pc0 + 16 * i;
		f[i].offset = 0x1000 + 16 * i;
		f[i].kind = CQ_FRAME_NATIVE;
		f[i].function = names[i % 3];
		f[i].line = (int)(10 + i);
	}
	return f;
}

static const struct cq_stack_frame *intern(struct cq_stack_pool *p, struct cq_stack_frame *f,
                                           size_t n)
{
	const struct cq_stack_frame *out = NULL;
	assert_null(cq_stack_pool_intern(p, f, n, &out));
	return out;
}

static void test_equal_stacks_once(void **state)
{
	(void)state;
	struct cq_stack_pool p = {0};
	const struct cq_stack_frame *a = intern(&p, stack(3, 0x400000), 3);
	const struct cq_stack_frame *a2 = intern(&p, stack(3, 0x400000), 3);
	assert_ptr_equal(a, a2);
	assert_int_equal(p.n, 1);
	assert_int_equal(a[2].pc, 0x400020);
	assert_string_equal(a[1].function, "level2");

	/* Any field different: another stack. */
	const struct cq_stack_frame *b = intern(&p, stack(3, 0x500000), 3);
	assert_ptr_not_equal(a, b);
	struct cq_stack_frame *f = stack(3, 0x400000);
	f[1].line = 99;
	const struct cq_stack_frame *c = intern(&p, f, 3);
	f = stack(3, 0x400000);
	f[2].kind = CQ_FRAME_INLINE;
	const struct cq_stack_frame *d = intern(&p, f, 3);
	f = stack(3, 0x400000);
	f[0].trust = 3;
	const struct cq_stack_frame *e = intern(&p, f, 3);
	const struct cq_stack_frame *g = intern(&p, stack(2, 0x400000), 2); /* a prefix */
	const struct cq_stack_frame *all[] = {a, b, c, d, e, g};
	for (size_t i = 0; i < 6; i++)
		for (size_t j = i + 1; j < 6; j++)
			assert_ptr_not_equal(all[i], all[j]);
	assert_int_equal(p.n, 6);
	/* and each of them again is found. */
	f = stack(3, 0x400000);
	f[1].line = 99;
	assert_ptr_equal(intern(&p, f, 3), c);
	assert_ptr_equal(intern(&p, stack(2, 0x400000), 2), g);
	assert_int_equal(p.n, 6);
	cq_stack_pool_free(&p);
}

static void test_empty_and_many(void **state)
{
	(void)state;
	struct cq_stack_pool p = {0};
	const struct cq_stack_frame *none = NULL;
	assert_null(cq_stack_pool_intern(&p, NULL, 0, &none));
	assert_null(cq_stack_pool_intern(&p, NULL, 0, &none));
	assert_true(p.n <= 1);
	size_t base = p.n;
	const struct cq_stack_frame *first[7] = {0};
	for (size_t i = 0; i < 10000; i++) {
		size_t k = i % 7;
		const struct cq_stack_frame *s = intern(&p, stack(3 + k, 0x400000 + k), 3 + k);
		if (!first[k])
			first[k] = s;
		assert_ptr_equal(s, first[k]);
	}
	assert_int_equal(p.n, base + 7);
	cq_stack_pool_free(&p);
	cq_stack_pool_free(&p); /* freed twice: harmless */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_equal_stacks_once),
	    cmocka_unit_test(test_empty_and_many),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
