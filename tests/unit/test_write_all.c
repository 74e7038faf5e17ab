/*
 * test_write_all.c - whole writes to a descriptor (libcore/base/write_all.h).
 *
 * write(2) on a pipe returns early when a signal arrives mid-write; here a
 * timer without SA_RESTART interrupts a writer that a slow reader keeps
 * blocked, and every byte must still arrive, once and in order.  Then
 * pwrite at an offset (the file position untouched) and the failures:
 * a bad descriptor, a read-only one and a pipe with no reader.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "libcore/base/write_all.h"

#define BIG (4u << 20)

static volatile sig_atomic_t ticks;

static void on_alarm(int sig)
{
	(void)sig;
	ticks++;
}

struct reader {
	int fd;
	uint8_t *got;
	size_t len;
};

static void *read_slowly(void *arg)
{
	struct reader *r = arg;
	for (;;) {
		ssize_t n =
		    read(r->fd, r->got + r->len, r->len + 4096 <= BIG ? 4096 : BIG - r->len);
		if (n <= 0)
			break;
		r->len += (size_t)n;
		if (r->len % (256 * 1024) < 4096)
			usleep(1000); /* let the pipe fill and the writer block */
	}
	return NULL;
}

static void test_interrupted_writes_are_finished(void **state)
{
	(void)state;
	uint8_t *data = malloc(BIG);
	struct reader r = {.got = calloc(1, BIG)};
	assert_non_null(data);
	assert_non_null(r.got);
	for (size_t i = 0; i < BIG; i++)
		data[i] = (uint8_t)(i * 2654435761u >> 13);
	int p[2];
	assert_int_equal(pipe(p), 0);
	r.fd = p[0];
	/* Only this thread takes the timer's signal. */
	sigset_t alrm, old;
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &alrm, &old);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, read_slowly, &r), 0);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	struct sigaction sa = {.sa_handler = on_alarm}, old_sa; /* no SA_RESTART */
	sigaction(SIGALRM, &sa, &old_sa);
	struct itimerval every = {{0, 200}, {0, 200}}, off = {{0, 0}, {0, 0}};
	ticks = 0;
	setitimer(ITIMER_REAL, &every, NULL);
	bool ok = cq_write_all(p[1], data, BIG, -1);
	setitimer(ITIMER_REAL, &off, NULL);
	sigaction(SIGALRM, &old_sa, NULL);
	close(p[1]);
	pthread_join(t, NULL);
	close(p[0]);
	assert_true(ok);
	assert_true(ticks > 0); /* the write was under fire */
	assert_int_equal(r.len, BIG);
	assert_memory_equal(r.got, data, BIG);
	free(data);
	free(r.got);
}

static void test_positioned_and_plain_writes(void **state)
{
	(void)state;
	char path[] = "/tmp/cq_test_write_all.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	assert_true(cq_write_all(fd, "hello", 5, -1));
	assert_true(cq_write_all(fd, "XY", 2, 1));
	/* pwrite leaves the position where write left it. */
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 5);
	assert_true(cq_write_all(fd, "!", 1, -1));
	/* Past the end: a hole of zeros. */
	assert_true(cq_write_all(fd, "Z", 1, 8));
	char buf[16] = {0};
	assert_int_equal(pread(fd, buf, sizeof(buf), 0), 9);
	assert_memory_equal(buf, "hXYlo!\0\0Z", 9);
	assert_true(cq_write_all(fd, "", 0, -1)); /* nothing to write */
	close(fd);
}

static void test_failures_set_errno(void **state)
{
	(void)state;
	errno = 0;
	assert_false(cq_write_all(-1, "x", 1, -1));
	assert_int_equal(errno, EBADF);
	int ro = open("/proc/self/exe", O_RDONLY);
	assert_true(ro >= 0);
	errno = 0;
	assert_false(cq_write_all(ro, "x", 1, 0));
	assert_int_equal(errno, EBADF);
	close(ro);
	int p[2];
	assert_int_equal(pipe(p), 0);
	close(p[0]);
	void (*old)(int) = signal(SIGPIPE, SIG_IGN);
	errno = 0;
	assert_false(cq_write_all(p[1], "x", 1, -1));
	assert_int_equal(errno, EPIPE);
	signal(SIGPIPE, old);
	close(p[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_interrupted_writes_are_finished),
	    cmocka_unit_test(test_positioned_and_plain_writes),
	    cmocka_unit_test(test_failures_set_errno),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
