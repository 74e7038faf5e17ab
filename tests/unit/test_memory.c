/*
 * test_memory.c - the layered memory reader (libcore/base/memory.h): reads
 * within and across segments, the file layer filling what the core lacks,
 * absent tails of segments, overlaps, and address-space wraparound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/base/memory.h"

static uint8_t core_a[64], core_b[64], file_bytes[256];

static void fill(void)
{
	for (int i = 0; i < 64; i++) {
		core_a[i] = (uint8_t)i;
		core_b[i] = (uint8_t)(0x80 + i);
	}
	for (int i = 0; i < 256; i++)
		file_bytes[i] = (uint8_t)(0xff - i);
}

/* core: [0x1000,0x1040) all present; [0x1040,0x1080) only 16 bytes present.
 * file: [0x1000,0x1100) backing everything. */
static void setup_mem(struct cq_mem *mem)
{
	fill();
	cq_mem_init(mem);
	assert_null(cq_mem_add(mem, CQ_MEM_LAYER_CORE, 0x1000, 0x1040, core_a, 64, CQ_MEM_READ));
	assert_null(cq_mem_add(mem, CQ_MEM_LAYER_CORE, 0x1040, 0x1080, core_b, 16,
	                       CQ_MEM_READ | CQ_MEM_WRITE));
	assert_null(
	    cq_mem_add(mem, CQ_MEM_LAYER_FILE, 0x1000, 0x1100, file_bytes, 256, CQ_MEM_READ));
	cq_mem_finish(mem);
}

static void test_read_within_and_across_segments(void **state)
{
	(void)state;
	struct cq_mem mem;
	setup_mem(&mem);
	uint8_t buf[32];
	assert_true(cq_mem_read(&mem, 0x1008, buf, 8));
	assert_memory_equal(buf, core_a + 8, 8);
	/* 0x1038..0x1048 spans both core segments. */
	assert_true(cq_mem_read(&mem, 0x1038, buf, 16));
	assert_memory_equal(buf, core_a + 56, 8);
	assert_memory_equal(buf + 8, core_b, 8);
	cq_mem_destroy(&mem);
}

static void test_file_layer_fills_absent_core_bytes(void **state)
{
	(void)state;
	struct cq_mem mem;
	setup_mem(&mem);
	uint8_t buf[32];
	/* 0x1050 is past core_b's 16 present bytes: the file layer answers. */
	assert_true(cq_mem_read(&mem, 0x1050, buf, 8));
	assert_memory_equal(buf, file_bytes + 0x50, 8);
	/* A read that starts in core bytes and continues into file bytes. */
	assert_true(cq_mem_read(&mem, 0x104c, buf, 8));
	assert_memory_equal(buf, core_b + 12, 4);
	assert_memory_equal(buf + 4, file_bytes + 0x50, 4);
	/* Only the file holds [0x1080, 0x1100). */
	assert_true(cq_mem_read(&mem, 0x10f8, buf, 8));
	assert_memory_equal(buf, file_bytes + 0xf8, 8);
	cq_mem_destroy(&mem);
}

static void test_absent_memory_fails_cleanly(void **state)
{
	(void)state;
	struct cq_mem mem;
	setup_mem(&mem);
	uint8_t buf[16];
	uint64_t v;
	assert_false(cq_mem_read(&mem, 0x10fc, buf, 8)); /* runs off the end */
	assert_int_equal(cq_mem_read_partial(&mem, 0x10fc, buf, 8), 4);
	assert_false(cq_mem_read(&mem, 0x0, buf, 1));
	assert_false(cq_mem_read_u64(&mem, 0xfff, &v));
	assert_false(cq_mem_read_u64(&mem, UINT64_MAX - 3, &v)); /* would wrap */
	assert_null(cq_mem_find(&mem, 0x2000));
	cq_mem_destroy(&mem);
}

static void test_core_layer_flags_win(void **state)
{
	(void)state;
	struct cq_mem mem;
	setup_mem(&mem);
	const struct cq_mem_segment *s = cq_mem_find(&mem, 0x1050);
	assert_non_null(s);
	assert_int_equal(s->flags, CQ_MEM_READ | CQ_MEM_WRITE);
	s = cq_mem_find(&mem, 0x10a0);
	assert_non_null(s);
	assert_int_equal(s->start, 0x1000); /* the file segment */
	cq_mem_destroy(&mem);
}

static void test_only_file_layer_without_core(void **state)
{
	(void)state;
	struct cq_mem mem;
	fill();
	cq_mem_init(&mem);
	assert_null(
	    cq_mem_add(&mem, CQ_MEM_LAYER_FILE, 0x5000, 0x5100, file_bytes, 256, CQ_MEM_READ));
	cq_mem_finish(&mem);
	uint32_t v;
	assert_true(cq_mem_read_u32(&mem, 0x5000, &v));
	assert_int_equal(v, 0xfcfdfeffu);
	cq_mem_destroy(&mem);
}

static void test_overlapping_segments_are_trimmed(void **state)
{
	(void)state;
	struct cq_mem mem;
	fill();
	cq_mem_init(&mem);
	assert_null(cq_mem_add(&mem, CQ_MEM_LAYER_CORE, 0x1000, 0x1040, core_a, 64, CQ_MEM_READ));
	assert_null(cq_mem_add(&mem, CQ_MEM_LAYER_CORE, 0x1020, 0x1060, core_b, 64, CQ_MEM_READ));
	cq_mem_finish(&mem);
	uint8_t buf[8];
	assert_true(cq_mem_read(&mem, 0x1030, buf, 8));
	assert_memory_equal(buf, core_a + 0x30, 8); /* the first segment keeps its bytes */
	assert_true(cq_mem_read(&mem, 0x1048, buf, 8));
	assert_memory_equal(buf, core_b + 0x28, 8); /* the second, trimmed, keeps its offsets */
	cq_mem_destroy(&mem);
}

static void test_strings(void **state)
{
	(void)state;
	struct cq_mem mem;
	static uint8_t text[16] = "hello\0world";
	static uint8_t unterminated[4] = {'a', 'b', 'c', 'd'};
	cq_mem_init(&mem);
	assert_null(cq_mem_add(&mem, CQ_MEM_LAYER_CORE, 0x100, 0x110, text, 16, CQ_MEM_READ));
	assert_null(
	    cq_mem_add(&mem, CQ_MEM_LAYER_CORE, 0x200, 0x204, unterminated, 4, CQ_MEM_READ));
	cq_mem_finish(&mem);
	char buf[32];
	assert_true(cq_mem_read_string(&mem, 0x100, buf, sizeof(buf)));
	assert_string_equal(buf, "hello");
	assert_false(cq_mem_read_string(&mem, 0x200, buf, sizeof(buf))); /* runs into absence */
	assert_true(cq_mem_read_string(&mem, 0x200, buf, 3));            /* truncated to fit */
	assert_string_equal(buf, "ab");
	cq_mem_destroy(&mem);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_read_within_and_across_segments),
	    cmocka_unit_test(test_file_layer_fills_absent_core_bytes),
	    cmocka_unit_test(test_absent_memory_fails_cleanly),
	    cmocka_unit_test(test_core_layer_flags_win),
	    cmocka_unit_test(test_only_file_layer_without_core),
	    cmocka_unit_test(test_overlapping_segments_are_trimmed),
	    cmocka_unit_test(test_strings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
