/*
 * test_regular_file.c - opening only regular files
 * (libcore/base/regular_file.h): a file, and a symlink to one, open
 * read-only and close-on-exec; a directory, a FIFO (without blocking, with
 * no writer), a character device and a symlink to a FIFO are refused with
 * the errno the header implies.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "libcore/base/regular_file.h"

static char dir[64];

static char *in_dir(const char *name)
{
	static char path[128];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/cq_test_regular.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	FILE *f = fopen(in_dir("file"), "w");
	if (!f)
		return -1;
	fputs("contents", f);
	fclose(f);
	if (mkfifo(in_dir("fifo"), 0600) != 0)
		return -1;
	char target[128];
	snprintf(target, sizeof(target), "%s", in_dir("file"));
	if (symlink(target, in_dir("to-file")) != 0)
		return -1;
	snprintf(target, sizeof(target), "%s", in_dir("fifo"));
	if (symlink(target, in_dir("to-fifo")) != 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	static const char *const names[] = {"file", "fifo", "to-file", "to-fifo"};
	for (size_t i = 0; i < 4; i++)
		unlink(in_dir(names[i]));
	rmdir(dir);
	return 0;
}

static void test_regular_file_opens(void **state)
{
	(void)state;
	static const char *const names[] = {"file", "to-file"};
	for (size_t i = 0; i < 2; i++) {
		int fd = cq_open_regular(in_dir(names[i]));
		assert_true(fd >= 0);
		char buf[16] = {0};
		assert_int_equal(read(fd, buf, sizeof(buf)), 8);
		assert_string_equal(buf, "contents");
		assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
		assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
		close(fd);
	}
}

static void refused(const char *path, int want_errno)
{
	errno = 0;
	assert_int_equal(cq_open_regular(path), -1);
	assert_int_equal(errno, want_errno);
}

static void test_other_files_are_refused(void **state)
{
	(void)state;
	alarm(10); /* a FIFO opened the plain way would block here forever */
	refused(in_dir("fifo"), EINVAL);
	refused(in_dir("to-fifo"), EINVAL);
	refused("/dev/null", EINVAL);
	refused(dir, EISDIR);
	refused("/", EISDIR);
	refused(in_dir("absent"), ENOENT);
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_regular_file_opens),
	    cmocka_unit_test(test_other_files_are_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
