/*
 * test_lazy_map.c - memory filled chunk by chunk on first touch
 * (libcore/base/lazy_map.c): every byte reads as the fill function wrote it,
 * chunks are filled once until the budget drops them and again after, a read
 * across two chunks and reads from several threads at once are served, a
 * failed fill reads as zeros and is counted, bounds not on pages are
 * refused, and a forked child cannot read the region (it would read zeros).
 * Skipped where the kernel refuses userfaultfd.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "libcore/base/lazy_map.h"

#define PAGE    4096u
#define NCHUNKS 10

/* The byte the fill function writes at offset off. */
static uint8_t expected(uint64_t off)
{
	return (uint8_t)(off * 2654435761u >> 13);
}

struct filler {
	const uint64_t *bound;
	size_t bad; /* this chunk fails (NCHUNKS: none) */
	unsigned calls[NCHUNKS];
};

static bool fill(void *arg, size_t i, uint8_t *dst, size_t len)
{
	struct filler *f = arg;
	f->calls[i]++;
	if (i == f->bad)
		return false;
	for (size_t k = 0; k < len; k++)
		dst[k] = expected(f->bound[i] + k);
	return true;
}

static uint64_t bound[NCHUNKS + 1];

static struct cq_lazy_map *make(struct filler *f, uint64_t budget, size_t bad)
{
	for (size_t i = 0; i <= NCHUNKS; i++)
		bound[i] = (uint64_t)i * 3 * PAGE;
	bound[NCHUNKS] -= 100; /* the last chunk ends inside a page */
	memset(f, 0, sizeof(*f));
	f->bound = bound;
	f->bad = bad;
	struct cq_lazy_map *m = NULL;
	struct cq_error *err =
	    cq_lazy_map_create(bound[NCHUNKS], bound, NCHUNKS, budget, fill, f, &m);
	if (err && err->code == CQ_ERR_UNSUPPORTED) {
		cq_error_free(err);
		return NULL;
	}
	assert_null(err);
	return m;
}

static void test_every_byte_once(void **state)
{
	(void)state;
	struct filler f;
	struct cq_lazy_map *m = make(&f, 1 << 30, NCHUNKS);
	if (!m)
		skip();
	const uint8_t *p = cq_lazy_map_data(m);
	for (uint64_t off = 0; off < bound[NCHUNKS]; off++)
		if (p[off] != expected(off))
			fail_msg("byte %llu reads %u", (unsigned long long)off, p[off]);
	for (size_t i = 0; i < NCHUNKS; i++)
		assert_int_equal(f.calls[i], 1);
	struct cq_lazy_map_stats s = cq_lazy_map_stats(m);
	assert_int_equal(s.fills, NCHUNKS);
	assert_int_equal(s.drops, 0);
	assert_int_equal(s.bad_chunks, 0);
	cq_lazy_map_destroy(m);
}

static void test_budget_drops_and_refills(void **state)
{
	(void)state;
	struct filler f;
	/* a budget of one chunk is raised to four */
	struct cq_lazy_map *m = make(&f, PAGE, NCHUNKS);
	if (!m)
		skip();
	const uint8_t *p = cq_lazy_map_data(m);
	for (size_t i = 0; i < NCHUNKS; i++)
		assert_int_equal(p[bound[i] + 5], expected(bound[i] + 5));
	assert_int_equal(p[bound[0] + 7], expected(bound[0] + 7)); /* chunk 0 was dropped */
	assert_int_equal(f.calls[0], 2);
	struct cq_lazy_map_stats s = cq_lazy_map_stats(m);
	assert_true(s.drops >= NCHUNKS - 4);
	assert_true(s.peak_bytes <= 4 * 3 * PAGE);
	/* a read across two chunks is whole */
	uint8_t buf[64];
	memcpy(buf, p + bound[6] - 32, sizeof(buf));
	for (size_t k = 0; k < sizeof(buf); k++)
		assert_int_equal(buf[k], expected(bound[6] - 32 + k));
	cq_lazy_map_destroy(m);
}

struct reader {
	const uint8_t *p;
	unsigned seed;
	int wrong;
};

static void *read_randomly(void *arg)
{
	struct reader *r = arg;
	for (int k = 0; k < 20000; k++) {
		uint64_t off = (uint64_t)rand_r(&r->seed) % bound[NCHUNKS];
		r->wrong += r->p[off] != expected(off);
	}
	return NULL;
}

static void test_threads_at_once(void **state)
{
	(void)state;
	struct filler f;
	struct cq_lazy_map *m = make(&f, 5 * 3 * PAGE, NCHUNKS);
	if (!m)
		skip();
	pthread_t t[4];
	struct reader r[4];
	for (unsigned i = 0; i < 4; i++) {
		r[i] = (struct reader){.p = cq_lazy_map_data(m), .seed = i + 1};
		assert_int_equal(pthread_create(&t[i], NULL, read_randomly, &r[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(r[i].wrong, 0);
	}
	cq_lazy_map_destroy(m);
}

static void test_failed_fill_reads_zero(void **state)
{
	(void)state;
	struct filler f;
	struct cq_lazy_map *m = make(&f, 1 << 30, 3);
	if (!m)
		skip();
	const uint8_t *p = cq_lazy_map_data(m);
	for (uint64_t off = bound[3]; off < bound[4]; off++)
		assert_int_equal(p[off], 0);
	assert_int_equal(p[bound[4]], expected(bound[4]));
	assert_int_equal(cq_lazy_map_stats(m).bad_chunks, 1);
	cq_lazy_map_destroy(m);
}

static void test_bounds_off_pages_refused(void **state)
{
	(void)state;
	uint64_t b[3] = {0, PAGE + 1, 3 * PAGE};
	struct filler f = {.bound = b, .bad = NCHUNKS};
	struct cq_lazy_map *m = NULL;
	struct cq_error *err = cq_lazy_map_create(b[2], b, 2, 1 << 20, fill, &f, &m);
	assert_non_null(err);
	assert_null(m);
	cq_error_free(err);
	uint64_t c[2] = {0, 0};
	err = cq_lazy_map_create(0, c, 1, 1 << 20, fill, &f, &m);
	assert_non_null(err);
	cq_error_free(err);
}

static void test_fork_child_cannot_read(void **state)
{
	(void)state;
	struct filler f;
	struct cq_lazy_map *m = make(&f, 1 << 30, NCHUNKS);
	if (!m)
		skip();
	const volatile uint8_t *p = cq_lazy_map_data(m);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);
		uint8_t v = p[bound[2] + 1]; /* not inherited: faults, never reads 0 */
		_exit(v == expected(bound[2] + 1) ? 2 : 3);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(p[bound[2] + 1], expected(bound[2] + 1)); /* the parent still reads */
	cq_lazy_map_destroy(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_byte_once),
	    cmocka_unit_test(test_budget_drops_and_refills),
	    cmocka_unit_test(test_threads_at_once),
	    cmocka_unit_test(test_failed_fill_reads_zero),
	    cmocka_unit_test(test_bounds_off_pages_refused),
	    cmocka_unit_test(test_fork_child_cannot_read),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
