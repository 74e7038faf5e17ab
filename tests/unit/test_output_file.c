/*
 * test_output_file.c - files written by a name a command was given
 * (libcore/base/output_file.h) and files opened only if regular
 * (libcore/base/regular_file.h), in a scratch directory.
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

#include "libcore/base/output_file.h"
#include "libcore/base/regular_file.h"

static char dir[64];

static int make_dir(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/coreq-output-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static char *in_dir(const char *name)
{
	static char buf[4][128];
	static unsigned next;
	char *p = buf[next++ % 4];
	snprintf(p, 128, "%s/%s", dir, name);
	return p;
}

static void put(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	chmod(path, mode);
}

static size_t entries(void)
{
	size_t n = 0;
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", dir);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	assert_int_equal(fscanf(p, "%zu", &n), 1);
	pclose(p);
	return n;
}

static struct cq_error *write_text(const char *path, mode_t mode, const char *text)
{
	struct cq_output_file f;
	struct cq_error *err = cq_output_file_create(path, mode, &f);
	if (err)
		return err;
	assert_int_equal(write(f.fd, text, strlen(text)), (ssize_t)strlen(text));
	return cq_output_file_commit(&f);
}

static void test_replaces_a_loose_file_with_a_fresh_one(void **state)
{
	(void)state;
	char *target = in_dir("loose");
	put(target, "old\n", 0666);
	struct stat before, after;
	assert_int_equal(stat(target, &before), 0);
	assert_null(write_text(target, 0600, "new\n"));
	assert_int_equal(stat(target, &after), 0);
	assert_int_equal(after.st_mode & 0777, 0600);
	assert_true(after.st_ino != before.st_ino);
	char buf[8] = {0};
	int fd = open(target, O_RDONLY);
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), 4);
	close(fd);
	assert_string_equal(buf, "new\n");
	assert_int_equal(entries(), 1); /* no temporary file beside it */
	unlink(target);
}

static void test_refuses_a_link_a_fifo_and_a_directory(void **state)
{
	(void)state;
	char *victim = in_dir("victim"), *link = in_dir("link"), *fifo = in_dir("fifo");
	char *sub = in_dir("sub");
	put(victim, "precious\n", 0644);
	assert_int_equal(symlink(victim, link), 0);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(mkdir(sub, 0700), 0);
	const char *targets[] = {link, fifo, sub};
	for (size_t i = 0; i < 3; i++) {
		struct cq_error *err = write_text(targets[i], 0600, "x");
		assert_non_null(err);
		assert_int_equal(err->code, CQ_ERR_USAGE);
		cq_error_free(err);
	}
	struct stat st;
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(stat(victim, &st), 0);
	assert_int_equal(st.st_size, 9);
	assert_int_equal(lstat(fifo, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(entries(), 4); /* nothing was left behind */
	unlink(victim);
	unlink(link);
	unlink(fifo);
	rmdir(sub);
}

static void test_discard_leaves_the_target(void **state)
{
	(void)state;
	char *target = in_dir("kept");
	put(target, "kept\n", 0644);
	struct cq_output_file f;
	assert_null(cq_output_file_create(target, 0600, &f));
	assert_int_equal(write(f.fd, "half", 4), 4);
	cq_output_file_discard(&f);
	struct stat st;
	assert_int_equal(stat(target, &st), 0);
	assert_int_equal(st.st_size, 5);
	assert_int_equal(entries(), 1);
	unlink(target);
}

static void test_open_regular_refuses_a_fifo_and_a_device_without_blocking(void **state)
{
	(void)state;
	char *fifo = in_dir("fifo"), *file = in_dir("file"), *link = in_dir("zero");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(symlink("/dev/zero", link), 0);
	put(file, "x", 0644);
	errno = 0;
	assert_int_equal(cq_open_regular(fifo), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(cq_open_regular("/dev/zero"), -1);
	assert_int_equal(cq_open_regular(link), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(cq_open_regular(dir), -1);
	assert_int_equal(errno, EISDIR);
	int fd = cq_open_regular(file);
	assert_true(fd >= 0);
	close(fd);
	unlink(fifo);
	unlink(file);
	unlink(link);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_replaces_a_loose_file_with_a_fresh_one),
	    cmocka_unit_test(test_refuses_a_link_a_fifo_and_a_directory),
	    cmocka_unit_test(test_discard_leaves_the_target),
	    cmocka_unit_test(test_open_regular_refuses_a_fifo_and_a_device_without_blocking),
	};
	return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
