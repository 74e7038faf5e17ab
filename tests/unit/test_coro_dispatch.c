/*
 * test_coro_dispatch.c - where gcc's coroutine actor resumes, read from its
 * x86-64 code (unwind/async/coro_dispatch.h): the dispatch's target for an
 * index in the shapes g++ 12 emits at -O2 (`cmp $k, %ax; je rel8`) and -O0
 * (`cmp $k, %eax; je rel32`), only after the load of the index's own
 * offset, only inside the actor; the index's store (`mov $k, %ecx` ...
 * `mov %cx, off(%rbx)`, or `movw $k, off(%rax)`); the jump-table dispatch
 * (the resume table told from the destroy table by its distinct even
 * entries) and -O2's even half; and that no truncation
 * of the code or random bytes make either read past the bytes given or
 * answer outside the actor.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "unwind/async/coro_dispatch.h"

#define BASE 0x1000u
#define OFF  0x2cu /* _Coro_resume_index's offset in the frame */

static size_t read_table(void *ctx, uint64_t addr, uint8_t *buf, size_t n);

/* g++ -O2's shape (cxx_task.cc's mid actor, shortened). */
static const uint8_t o2[] = {
    0x53,                         /* 0: push %rbx */
    0x66, 0x83, 0xf8, 0x04,       /* 1: cmp $4,%ax before the load: not the dispatch */
    0x74, 0x20,                   /* 5: je +0x20 (-> 39, inside) */
    0x0f, 0xb7, 0x47, OFF,        /* 7: movzwl 0x2c(%rdi),%eax */
    0xa8, 0x01,                   /* 11: test $1,%al */
    0x74, 0x04,                   /* 13: je +4 */
    0x66, 0x83, 0xf8, 0x05,       /* 15: cmp $5,%ax */
    0x66, 0x83, 0xf8, 0x04,       /* 19: cmp $4,%ax */
    0x74, 0x10,                   /* 23: je +0x10 -> 25 + 16 = 41 */
    0x90, 0x90, 0x90, 0x90, 0x90, /* 25 */
    0xb9, 0x04, 0x00, 0x00, 0x00, /* 30: mov $4,%ecx */
    0x90, 0x90, 0x90,             /* 35 */
    0x66, 0x89, 0x4b, OFF,        /* 38: mov %cx,0x2c(%rbx) */
    0xc3,                         /* 42: ret */
    0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
};

/* g++ -O0's shape: movzwl via %rax, cmp %eax, je rel32, movw $k,off(%rax). */
static const uint8_t o0[] = {
    0x55, 0x48, 0x89, 0xe5,             /* 0: push %rbp; mov %rsp,%rbp */
    0x0f, 0xb7, 0x40, OFF,              /* 4: movzwl 0x2c(%rax),%eax */
    0x83, 0xf8, 0x02,                   /* 8: cmp $2,%eax */
    0x0f, 0x84, 0x02, 0x00, 0x00, 0x00, /* 11: je +2 -> 19 */
    0x83, 0xf8, 0x04,                   /* 17: cmp $4,%eax */
    0x0f, 0x84, 0x08, 0x00, 0x00, 0x00, /* 20: je +8 -> 34 */
    0x90, 0x90,                         /* 26 */
    0x66, 0xc7, 0x40, OFF,  0x04, 0x00, /* 28: movw $4,0x2c(%rax) */
    0x90, 0x90, 0x90, 0x90, 0x90, 0x90, /* 34 */
};

static void o2_shape(void **state)
{
	(void)state;
	size_t load = 0;
	uint64_t end = BASE + sizeof(o2);
	assert_int_equal(cq_coro_dispatch_target(o2, sizeof(o2), BASE, end, OFF, 4, &load),
	                 BASE + 41);
	assert_int_equal(load, 7);
	assert_int_equal(cq_coro_index_store(o2, sizeof(o2), load, OFF, 4), 30);
	/* No compare of 6: no target; no store of 6 either. */
	assert_int_equal(cq_coro_dispatch_target(o2, sizeof(o2), BASE, end, OFF, 6, &load), 0);
	assert_int_equal(cq_coro_index_store(o2, sizeof(o2), 7, OFF, 6), SIZE_MAX);
	/* The load of another offset is no dispatch. */
	assert_int_equal(cq_coro_dispatch_target(o2, sizeof(o2), BASE, end, OFF + 8, 4, &load), 0);
	assert_int_equal(load, sizeof(o2));
	/* The store to another offset is not the index's. */
	assert_int_equal(cq_coro_index_store(o2, sizeof(o2), 7, OFF + 8, 4), SIZE_MAX);
}

static void o0_shape(void **state)
{
	(void)state;
	size_t load = 0;
	uint64_t end = BASE + sizeof(o0);
	assert_int_equal(cq_coro_dispatch_target(o0, sizeof(o0), BASE, end, OFF, 4, &load),
	                 BASE + 34);
	assert_int_equal(load, 4);
	assert_int_equal(cq_coro_dispatch_target(o0, sizeof(o0), BASE, end, OFF, 2, &load),
	                 BASE + 19);
	assert_int_equal(cq_coro_index_store(o0, sizeof(o0), load, OFF, 4), 28);
}

/* A je whose target is outside the actor is no answer. */
static void target_outside(void **state)
{
	(void)state;
	size_t load;
	/* The actor ends before o2's target (41). */
	assert_int_equal(cq_coro_dispatch_target(o2, sizeof(o2), BASE, BASE + 40, OFF, 4, &load),
	                 0);
	uint8_t back[sizeof(o0)];
	memcpy(back, o0, sizeof(back));
	back[22] = 0xe0; /* je -32 from 26: before the actor */
	back[23] = 0xff;
	back[24] = 0xff;
	back[25] = 0xff;
	assert_int_equal(
	    cq_coro_dispatch_target(back, sizeof(back), BASE, BASE + sizeof(back), OFF, 4, &load),
	    0);
}

/* Every prefix of the code: the full answer or none, and only bytes given read (ASan). */
static void truncated(void **state)
{
	(void)state;
	const struct {
		const uint8_t *code;
		size_t len;
		uint64_t target;
		size_t store;
	} shapes[] = {{o2, sizeof(o2), BASE + 41, 30}, {o0, sizeof(o0), BASE + 34, 28}};
	for (size_t s = 0; s < 2; s++) {
		for (size_t n = 0; n <= shapes[s].len; n++) {
			uint8_t *copy = malloc(n ? n : 1); /* exactly n bytes, for ASan */
			assert_non_null(copy);
			memcpy(copy, shapes[s].code, n);
			size_t load;
			uint64_t t = cq_coro_dispatch_target(copy, n, BASE, BASE + shapes[s].len,
			                                     OFF, 4, &load);
			assert_true(t == 0 || t == shapes[s].target);
			assert_true(load <= n);
			size_t st = cq_coro_index_store(copy, n, 0, OFF, 4);
			assert_true(st == SIZE_MAX || st == shapes[s].store);
			free(copy);
		}
	}
}

/*
 * The dispatch's `cmp $4; je` and the even split's `test $1, %al; je` read
 * the one `je` decoder: each form (rel8, rel32) gives the same target after
 * either opener, and the same bytes cut short by one give none, reading
 * only the bytes given (ASan: each buffer is exactly its length).
 */
static void je_forms_alike(void **state)
{
	(void)state;
	const uint8_t cmp[] = {0x83, 0xf8, 0x04}, test1[] = {0xa8, 0x01};
	const uint8_t rel8[] = {0x74, 0x10}, rel32[] = {0x0f, 0x84, 0x20, 0x00, 0x00, 0x00};
	const struct {
		const uint8_t *je;
		size_t len;
		uint64_t past; /* the target, less the opener's length */
	} forms[] = {{rel8, sizeof(rel8), 2 + 0x10}, {rel32, sizeof(rel32), 6 + 0x20}};
	for (size_t f = 0; f < 2; f++) {
		for (int opener = 0; opener < 2; opener++) {
			const uint8_t *op = opener ? test1 : cmp;
			size_t oplen = opener ? sizeof(test1) : sizeof(cmp);
			size_t n = oplen + forms[f].len;
			uint64_t want = BASE + oplen + forms[f].past, end = BASE + 0x100;
			for (size_t cut = 0; cut <= 1; cut++) {
				uint8_t *code = malloc(n - cut);
				assert_non_null(code);
				memcpy(code, op, oplen);
				memcpy(code + oplen, forms[f].je, forms[f].len - cut);
				uint64_t t = opener
				                 ? cq_coro_even_branch(code, n - cut, BASE, end, 0)
				                 : cq_coro_branch_target(code, n - cut, BASE, BASE,
				                                         end, OFF, 0, 4);
				assert_int_equal(t, cut ? 0 : want);
				free(code);
			}
		}
	}
}

/* Random code: answers inside the actor and the bytes, nothing read beyond. */
static void random_bytes(void **state)
{
	(void)state;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (int round = 0; round < 20000; round++) {
		size_t n = (size_t)(x % 300);
		uint8_t *code = malloc(n ? n : 1);
		assert_non_null(code);
		for (size_t i = 0; i < n; i++) {
			x ^= x >> 12;
			x ^= x << 25;
			x ^= x >> 27;
			uint8_t b = (uint8_t)((x * 0x2545f4914f6cdd1dull) >> 56);
			/* Bias towards the opcodes looked for. */
			static const uint8_t hot[] = {0x0f, 0xb7, 0x66, 0x83, 0xf8, 0x74, 0x84,
			                              0xb9, 0x89, 0xc7, OFF,  0x04, 0x00, 0x47};
			code[i] = (b & 1) ? hot[(b >> 1) % sizeof(hot)] : b;
		}
		size_t load;
		uint64_t t = cq_coro_dispatch_target(code, n, BASE, BASE + n, OFF, 4, &load);
		assert_true(t == 0 || (t > BASE && t < BASE + n));
		assert_true(load <= n);
		size_t st = cq_coro_index_store(code, n, load, OFF, 4);
		assert_true(st == SIZE_MAX || st < n);
		t = cq_coro_jump_table_target(code, n, BASE, BASE, BASE + n, OFF, load, 4,
		                              read_table, NULL);
		assert_true(t == 0 || (t > BASE && t < BASE + n));
		t = cq_coro_even_branch(code, n, BASE, BASE + n, load);
		assert_true(t == 0 || (t > BASE && t < BASE + n));
		t = cq_coro_branch_target(code, n, BASE, BASE, BASE + n, OFF, 0, 4);
		assert_true(t == 0 || (t > BASE && t < BASE + n));
		free(code);
		x += 0x632be59bd9b4e019ull;
	}
}

/* A jump-table dispatch: the table lives at TABLE, read through read_table. */
#define TABLE 0x9000u
static int32_t table[10];
static bool table_readable = true;

static size_t read_table(void *ctx, uint64_t addr, uint8_t *buf, size_t n)
{
	(void)ctx;
	if (!table_readable || addr < TABLE || addr - TABLE > sizeof(table) ||
	    n > sizeof(table) - (addr - TABLE))
		return 0;
	memcpy(buf, (const uint8_t *)table + (addr - TABLE), n);
	return n;
}

/* g++'s table dispatch: load; cmp $8,%ax; ja; lea table(%rip),%rdx; movslq; add; jmp *%rax. */
static void table_code(uint8_t *code, size_t n)
{
	memset(code, 0x90, n);
	const uint8_t head[] = {0x0f, 0xb7, 0x47, OFF,  0x66, 0x83, 0xf8, 0x08, 0x77,
	                        0x10, 0x48, 0x8d, 0x15, 0,    0,    0,    0,    0x48,
	                        0x63, 0x04, 0x82, 0x48, 0x01, 0xd0, 0xff, 0xe0};
	memcpy(code, head, sizeof(head));
	int32_t disp = (int32_t)(TABLE - (BASE + 17)); /* rip after the lea */
	memcpy(code + 13, &disp, 4);
}

static void set_table(bool resume)
{
	for (int k = 0; k < 10; k++) /* odd: the default; even: label k */
		table[k] =
		    (int32_t)((resume && k % 2 == 0 ? BASE + 0x40 + 4u * k : BASE + 0x80) - TABLE);
}

static void jump_table(void **state)
{
	(void)state;
	uint8_t code[0x100];
	table_code(code, sizeof(code));
	uint64_t end = BASE + sizeof(code);
	size_t load;
	set_table(true);
	assert_int_equal(cq_coro_dispatch_target(code, sizeof(code), BASE, end, OFF, 6, &load), 0);
	assert_int_equal(load, 0);
	assert_int_equal(cq_coro_jump_table_target(code, sizeof(code), BASE, BASE, end, OFF, load,
	                                           6, read_table, NULL),
	                 BASE + 0x40 + 24);
	/* Past the bound: no answer. */
	assert_int_equal(cq_coro_jump_table_target(code, sizeof(code), BASE, BASE, end, OFF, load,
	                                           10, read_table, NULL),
	                 0);
	/* The destroy table (every even index to one default): not the resume table. */
	set_table(false);
	assert_int_equal(cq_coro_jump_table_target(code, sizeof(code), BASE, BASE, end, OFF, load,
	                                           6, read_table, NULL),
	                 0);
	/* An unreadable table. */
	set_table(true);
	table_readable = false;
	assert_int_equal(cq_coro_jump_table_target(code, sizeof(code), BASE, BASE, end, OFF, load,
	                                           6, read_table, NULL),
	                 0);
	table_readable = true;
	/* Every truncation reads only what it is given. */
	for (size_t n = 0; n <= 40; n++) {
		uint8_t *copy = malloc(n ? n : 1);
		assert_non_null(copy);
		memcpy(copy, code, n);
		uint64_t t = cq_coro_jump_table_target(copy, n, BASE, BASE, end, OFF, 0, 6,
		                                       read_table, NULL);
		assert_true(t == 0 || t == BASE + 0x40 + 24);
		free(copy);
	}
}

/* -O2's split on the low bit: the even half far away, its target anywhere in the actor. */
static void even_half(void **state)
{
	(void)state;
	const uint8_t code[] = {0x0f, 0xb7, 0x47, OFF,  /* 0: movzwl */
	                        0xa8, 0x01,             /* 4: test $1,%al */
	                        0x0f, 0x84, 0x00, 0x02, /* 6: je +0x200 -> 0x20c */
	                        0x00, 0x00, 0x90, 0x90, 0x90, 0x90};
	uint64_t end = BASE + 0x400;
	assert_int_equal(cq_coro_even_branch(code, sizeof(code), BASE, end, 0), BASE + 0x20c);
	assert_int_equal(cq_coro_even_branch(code, sizeof(code), BASE, BASE + 0x20c, 0), 0);
	/* The half: cmp $4,%ax; je -0x100 (back before the half, inside the actor). */
	const uint8_t half[] = {0x66, 0x83, 0xf8, 0x04, 0x0f, 0x84, 0x00, 0xff, 0xff, 0xff};
	uint64_t h = BASE + 0x20c;
	assert_int_equal(cq_coro_branch_target(half, sizeof(half), h, BASE, end, OFF, 0, 4),
	                 h + sizeof(half) - 0x100);
	/* Before the actor: none. */
	assert_int_equal(cq_coro_branch_target(half, sizeof(half), h, h - 0x10, end, OFF, 0, 4), 0);
}

/* clang's byte store of its index: disp8, REX, SIB, disp32; others refused. */
static void byte_store(void **state)
{
	(void)state;
	const uint8_t clang_o0[] = {0x90, 0xc6, 0x40, 0x30, 0x01};  /* movb $1,0x30(%rax) */
	const uint8_t clang_o2[] = {0xc6, 0x43, 0x74, 0x02};        /* movb $2,0x74(%rbx) */
	const uint8_t rex[] = {0x41, 0xc6, 0x46, 0x30, 0x01};       /* movb $1,0x30(%r14) */
	const uint8_t sib[] = {0xc6, 0x44, 0x24, 0x30, 0x01};       /* movb $1,0x30(%rsp) */
	const uint8_t d32[] = {0xc6, 0x83, 0x00, 0x01, 0, 0, 0x01}; /* movb $1,0x100(%rbx) */
	const uint8_t other[] = {0xc6, 0x43, 0x74, 0x01, 0xc6, 0x03, 0x01, 0xc6, 0x4b, 0x74, 0x01};
	assert_int_equal(cq_coro_byte_store(clang_o0, sizeof(clang_o0), 0x30, 1), 1);
	assert_int_equal(cq_coro_byte_store(clang_o0, sizeof(clang_o0), 0x30, 2), SIZE_MAX);
	assert_int_equal(cq_coro_byte_store(clang_o0, sizeof(clang_o0), 0x31, 1), SIZE_MAX);
	assert_int_equal(cq_coro_byte_store(clang_o2, sizeof(clang_o2), 0x74, 2), 0);
	assert_int_equal(cq_coro_byte_store(rex, sizeof(rex), 0x30, 1), 0);
	assert_int_equal(cq_coro_byte_store(sib, sizeof(sib), 0x30, 1), 0);
	assert_int_equal(cq_coro_byte_store(d32, sizeof(d32), 0x100, 1), 0);
	/* Another index, no displacement (mod 0), another opcode extension (reg 1). */
	assert_int_equal(cq_coro_byte_store(other, sizeof(other), 0x74, 2), SIZE_MAX);
	assert_int_equal(cq_coro_byte_store(clang_o2, sizeof(clang_o2), 0x74, 0x100), SIZE_MAX);
	/* Every truncation reads only what it is given. */
	for (size_t n = 0; n < sizeof(d32); n++) {
		uint8_t *copy = malloc(n ? n : 1);
		assert_non_null(copy);
		memcpy(copy, d32, n);
		assert_int_equal(cq_coro_byte_store(copy, n, 0x100, 1), SIZE_MAX);
		free(copy);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(o2_shape),       cmocka_unit_test(o0_shape),
	    cmocka_unit_test(target_outside), cmocka_unit_test(truncated),
	    cmocka_unit_test(je_forms_alike), cmocka_unit_test(random_bytes),
	    cmocka_unit_test(jump_table),     cmocka_unit_test(even_half),
	    cmocka_unit_test(byte_store),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
