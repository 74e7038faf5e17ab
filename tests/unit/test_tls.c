/*
 * test_tls.c - a thread's pthread_getspecific value read from core memory
 * (libcore/model/tls.h) on a synthetic address space: glibc's two-level
 * specific[] table at struct pthread + 1296 (FACTS.md section 3), keys in
 * the first and a later block, a never-set key, a thread without a thread
 * pointer, and an architecture whose fallback layout is unknown.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/base/arch.h"
#include "libcore/model/core.h"
#include "libcore/model/tls.h"

#define TP     0x10000u /* struct pthread (x86_64: at fs_base) */
#define BLOCK0 0x20000u /* specific[0]'s entries */
#define BLOCK1 0x21000u /* specific[1]'s entries: keys 32..63 */

static uint8_t thread_area[4096], blocks[8192];

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A core with one thread, the given arch, and the memory above. */
static void make_core(struct cq_core *core, struct cq_core_thread *th, const struct cq_arch *arch)
{
	memset(core, 0, sizeof(*core));
	memset(th, 0, sizeof(*th));
	memset(thread_area, 0, sizeof(thread_area));
	memset(blocks, 0, sizeof(blocks));
	put64(thread_area + 1296, BLOCK0);       /* specific[0] */
	put64(thread_area + 1296 + 8, BLOCK1);   /* specific[1] */
	put64(blocks + 16 * 5, 3);               /* key 5: seq 3 */
	put64(blocks + 16 * 5 + 8, 0xfeedface);  /* key 5: data */
	put64(blocks + 4096 + 16 * 2, 1);        /* key 34 */
	put64(blocks + 4096 + 16 * 2 + 8, 0x77); /* key 34: data */
	core->arch = arch;
	core->threads = th;
	core->nthreads = 1;
	th->tp = TP;
	th->has_tp = true;
	cq_mem_init(&core->mem);
	assert_null(cq_mem_add(&core->mem, CQ_MEM_LAYER_CORE, TP, TP + sizeof(thread_area),
	                       thread_area, sizeof(thread_area), CQ_MEM_READ | CQ_MEM_WRITE));
	assert_null(cq_mem_add(&core->mem, CQ_MEM_LAYER_CORE, BLOCK0, BLOCK0 + sizeof(blocks),
	                       blocks, sizeof(blocks), CQ_MEM_READ | CQ_MEM_WRITE));
	cq_mem_finish(&core->mem);
}

static void test_values_through_the_fallback_layout(void **state)
{
	(void)state;
	struct cq_core core;
	struct cq_core_thread th;
	make_core(&core, &th, &cq_arch_x86_64);
	struct cq_tls_layout l;
	cq_tls_layout_load(&core, &l); /* no modules: the arch table's glibc 2.36 values */
	assert_false(l.from_libc);
	assert_int_equal(l.specific_offset, 1296);
	assert_int_equal(l.sizeof_pthread, 2368);
	uint64_t v = 1;
	assert_int_equal(cq_tls_get_specific(&core, &l, &th, 5, &v), CQ_TLS_VALUE);
	assert_true(v == 0xfeedface);
	assert_int_equal(cq_tls_get_specific(&core, &l, &th, 34, &v), CQ_TLS_VALUE);
	assert_true(v == 0x77);
	assert_int_equal(cq_tls_get_specific(&core, &l, &th, 6, &v), CQ_TLS_NONE);
	assert_int_equal(v, 0);
	/* Block 2 (keys 64..95) was never allocated. */
	assert_int_equal(cq_tls_get_specific(&core, &l, &th, 70, &v), CQ_TLS_NONE);
	/* Past the key table, and a thread without a thread pointer. */
	assert_int_equal(cq_tls_get_specific(&core, &l, &th, 5000, &v), CQ_TLS_UNREADABLE);
	th.has_tp = false;
	assert_int_equal(cq_tls_get_specific(&core, &l, &th, 5, &v), CQ_TLS_UNREADABLE);
	cq_mem_destroy(&core.mem);
}

static void test_unknown_layout_reads_nothing(void **state)
{
	(void)state;
	struct cq_core core;
	struct cq_core_thread th;
	make_core(&core, &th, &cq_arch_aarch64);
	struct cq_tls_layout l;
	cq_tls_layout_load(&core, &l);
	assert_false(l.from_libc);
	uint64_t v = 1;
	assert_int_equal(cq_tls_get_specific(&core, &l, &th, 5, &v), CQ_TLS_UNREADABLE);
	assert_int_equal(v, 0);
	cq_mem_destroy(&core.mem);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_values_through_the_fallback_layout),
	    cmocka_unit_test(test_unknown_layout_reads_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
