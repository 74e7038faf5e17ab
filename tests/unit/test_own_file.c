/*
 * test_own_file.c - whether a file is the caller's own (libcore/base/own_file.h):
 * a file of the caller's in a directory of the caller's is, and so is one
 * not made yet; one writable by its group or by others, one in a directory
 * others can write (/tmp itself), a -wal beside it that someone else owns,
 * a symbolic link to nothing, and (as root) a file or directory another uid
 * owns are not, each with a message saying why.  The cache refuses such a
 * file before SQLite opens it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "libcore/base/own_file.h"
#include "libcore/db/cache.h"

static char dir[64];

static void path_in(char *out, size_t size, const char *name)
{
	snprintf(out, size, "%s/%s", dir, name);
}

static void touch(const char *path, mode_t mode)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

/* Expects path refused with a message containing what. */
static void refused(const char *path, const char *what)
{
	struct cq_error *err = cq_own_file_check(path, NULL);
	assert_non_null(err);
	if (!strstr(err->message, what))
		fail_msg("\"%s\" does not say \"%s\"", err->message, what);
	cq_error_free(err);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/coreq-test-own-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

static void test_own_files(void **state)
{
	(void)state;
	char path[128], side[160];
	path_in(path, sizeof(path), "mine.db");
	assert_null(cq_own_file_check(path, NULL)); /* not made yet: its directory is mine */
	touch(path, 0644);
	assert_null(cq_own_file_check(path, NULL));
	/* Through a link: the file to open is the one checked, its links resolved. */
	char link[160], *resolved = NULL, want[PATH_MAX];
	snprintf(link, sizeof(link), "%s-link", path);
	assert_int_equal(symlink(path, link), 0);
	assert_null(cq_own_file_check(link, &resolved));
	assert_non_null(realpath(path, want));
	assert_string_equal(resolved, want);
	free(resolved);
	unlink(link);
	snprintf(side, sizeof(side), "%s-wal", path);
	touch(side, 0644);
	assert_null(cq_own_file_check(path, NULL));
	assert_int_equal(chmod(side, 0666), 0);
	refused(path, "its wal is writable by others");
	unlink(side);
	assert_int_equal(chmod(path, 0664), 0);
	refused(path, "it is writable by its group");
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(chmod(dir, 0777), 0);
	refused(path, "its directory");
	refused(path, "is writable by others");
	assert_int_equal(chmod(dir, 0700), 0);
	refused("/tmp/coreq-test-own-never-made.db", "its directory /tmp is writable by others");
	path_in(side, sizeof(side), "dangling.db");
	assert_int_equal(symlink("/nonexistent/x.db", side), 0);
	refused(side, "a symbolic link to nothing");
}

static void test_another_uid(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip(); /* only root can give a file away */
	char path[128], sub[128];
	path_in(path, sizeof(path), "theirs.db");
	touch(path, 0644);
	assert_int_equal(chown(path, 65534, 65534), 0);
	refused(path, "it is owned by uid 65534, not by uid 0 (you) or root");
	/* The cache refuses it before SQLite reads a byte of it. */
	struct cq_cache *cache = NULL;
	struct cq_error *err = cq_cache_open(path, &cache);
	assert_non_null(err);
	assert_null(cache);
	assert_non_null(strstr(err->message, "not your own cache"));
	cq_error_free(err);
	path_in(sub, sizeof(sub), "theirs");
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(chown(sub, 65534, 65534), 0);
	path_in(path, sizeof(path), "theirs/mine.db");
	refused(path, "its directory");
	refused(path, "is owned by uid 65534");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_own_files),
	    cmocka_unit_test(test_another_uid),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
