/*
 * test_root_file.c - opening a file inside a directory taken as its root
 * (libcore/base/root_file.h), through openat2 and through the walk done
 * without it, on one tree: "..", absolute and relative links that would
 * leave the root land inside it (on a decoy there, or on nothing); a link
 * to a directory, a link loop, a FIFO, a directory, a name too long; and
 * the path from the root each open reports.
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

#include "libcore/base/root_file.h"

static char dir[64];
static char root[96];

static char *at(const char *name)
{
	static char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

static void put(const char *name, const char *text)
{
	FILE *f = fopen(at(name), "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/cq_test_root.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(root, sizeof(root), "%s/root", dir);
	char host_secret[160];
	snprintf(host_secret, sizeof(host_secret), "%s/outside/secret", dir);
	int bad = mkdir(at("outside"), 0755) | mkdir(at("root"), 0755) |
	          mkdir(at("root/lib"), 0755) | mkdir(at("root/outside"), 0755);
	put("outside/secret", "host");
	put("root/outside/secret", "decoy");
	put("root/lib/real.so", "inside");
	bad |= symlink("/lib/real.so", at("root/lib/abs")) |
	       symlink(host_secret, at("root/lib/abs_host")) |
	       symlink("../../../../../../../../../../outside/secret", at("root/lib/rel_escape")) |
	       symlink("/lib", at("root/dirlink")) | symlink("loop", at("root/loop")) |
	       symlink("/proc/self/root/etc/passwd", at("root/magic")) |
	       mkfifo(at("root/fifo"), 0644);
	return bad ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Opens name in the root both ways; each gives the same file, or errno. */
static int open_both(const char *name, char *text, size_t cap, char **in_root)
{
	char *walked = NULL;
	int root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(root_fd >= 0);
	int a = cq_open_in_root(root, name, in_root);
	int ea = errno;
	int b = cq_open_in_root_walk(root_fd, name, &walked);
	int eb = errno;
	close(root_fd);
	assert_int_equal(a >= 0, b >= 0);
	if (a < 0) {
		assert_int_equal(ea, eb);
		free(walked);
		errno = ea;
		return -1;
	}
	char other[64] = "";
	ssize_t n = pread(a, text, cap - 1, 0), m = pread(b, other, sizeof(other) - 1, 0);
	assert_true(n >= 0 && m >= 0);
	text[n] = '\0';
	other[m] = '\0';
	assert_string_equal(text, other);
	assert_string_equal(*in_root, walked);
	assert_true(fcntl(a, F_GETFD) & FD_CLOEXEC);
	assert_true(fcntl(b, F_GETFD) & FD_CLOEXEC);
	free(walked);
	close(b);
	return a;
}

static void expect_file(const char *name, const char *want_text, const char *want_path)
{
	char text[64], *in_root = NULL;
	int fd = open_both(name, text, sizeof(text), &in_root);
	if (fd < 0)
		fail_msg("%s: %s", name, strerror(errno));
	assert_string_equal(text, want_text);
	assert_string_equal(in_root, want_path);
	free(in_root);
	close(fd);
}

static void expect_errno(const char *name, int want)
{
	char text[64], *in_root = NULL;
	int fd = open_both(name, text, sizeof(text), &in_root);
	if (fd >= 0)
		fail_msg("%s: opened (%s, %s), not refused", name, text, in_root);
	assert_int_equal(errno, want);
}

/* Every way out of the root lands inside it. */
static void test_escapes_stay_inside(void **state)
{
	(void)state;
	expect_file("/lib/real.so", "inside", "/lib/real.so");
	expect_file("lib/./real.so", "inside", "/lib/real.so");
	expect_file("/../outside/secret", "decoy", "/outside/secret");
	expect_file("/../../../../../outside/secret", "decoy", "/outside/secret");
	expect_file("/lib/abs", "inside", "/lib/real.so");
	expect_file("/lib/rel_escape", "decoy", "/outside/secret");
	expect_file("/dirlink/real.so", "inside", "/lib/real.so");
	expect_file("/dirlink/../outside/secret", "decoy", "/outside/secret");
	expect_errno("/lib/abs_host", ENOENT); /* the host path, looked for inside */
	expect_errno("/magic", ENOENT);
}

/* What is not a regular file inside the root is refused, without blocking. */
static void test_refusals(void **state)
{
	(void)state;
	expect_errno("/fifo", EINVAL);
	expect_errno("/lib", EISDIR);
	expect_errno("/", EISDIR);
	expect_errno("/loop", ELOOP);
	expect_errno("/lib/real.so/x", ENOTDIR);
	expect_errno("/nothing", ENOENT);
	expect_errno("", ENOENT);
	char *in_root = NULL;
	assert_int_equal(cq_open_in_root(at("nowhere"), "/lib/real.so", &in_root), -1);
	assert_int_equal(errno, ENOENT);
}

static void test_normalize(void **state)
{
	(void)state;
	static const char *const cases[][2] = {
	    {"/a/./b//../c", "/a/c"}, {"../../x", "/x"}, {"", "/"},       {"/..", "/"},
	    {"a/b/", "/a/b"},         {"/a/b/..", "/a"}, {"//a//", "/a"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = cq_root_normalize(cases[i][0]);
		assert_non_null(got);
		assert_string_equal(got, cases[i][1]);
		free(got);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_escapes_stay_inside),
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_normalize),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
