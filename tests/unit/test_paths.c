/*
 * test_paths.c - where coreq keeps its files (libcore/base/paths.h): the
 * precedence override variable > configuration file > $XDG_* > root's
 * /var/lib/coreq > $HOME, each case set up in the environment (the
 * non-root cases in a child that drops to uid 65534 when the test runs as
 * root), and mkdir -p of a path's directory.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "libcore/base/paths.h"

static char dir[64], conf[96];

static void expect(const char *got, const char *want)
{
	if (!want)
		assert_null(got);
	else
		assert_string_equal(got, want);
	free((void *)got);
}

/* cq_path_default("T_OVERRIDE", key, "T_XDG", ".local/state", "f.db"). */
static char *lookup(const char *key)
{
	return cq_path_default("T_OVERRIDE", key, "T_XDG", ".local/state", "f.db");
}

static void test_override_config_then_xdg(void **state)
{
	(void)state;
	setenv("T_OVERRIDE", "/o/db", 1);
	setenv("T_XDG", "/xdg", 1);
	expect(lookup("db"), "/o/db");
	setenv("T_OVERRIDE", "", 1); /* empty is unset */
	expect(lookup("db"), "/from/config.db");
	unsetenv("T_OVERRIDE");
	expect(lookup("db"), "/from/config.db");
	/* A key the file does not set falls through to $XDG_.../coreq/file. */
	expect(lookup("cache"), "/xdg/coreq/f.db");
	setenv("T_XDG", "", 1);
	if (geteuid() == 0)
		expect(lookup("cache"), CQ_SYSTEM_STATE_DIR "/f.db");
	unsetenv("T_XDG");
}

/* The lookup of "cache" as uid 65534 with HOME set to home (NULL: unset). */
static void lookup_as_nobody(const char *home, char *out, size_t cap)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		if (geteuid() == 0 && setuid(65534) != 0)
			_exit(2);
		if (home)
			setenv("HOME", home, 1);
		else
			unsetenv("HOME");
		char *got = lookup("cache");
		const char *s = got ? got : "(null)";
		ssize_t n = write(p[1], s, strlen(s));
		_exit(n == (ssize_t)strlen(s) ? 0 : 3);
	}
	close(p[1]);
	ssize_t n = read(p[0], out, cap - 1);
	close(p[0]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	out[n > 0 ? n : 0] = '\0';
}

static void test_home_for_other_users(void **state)
{
	(void)state;
	char got[256];
	lookup_as_nobody("/home/u", got, sizeof(got));
	assert_string_equal(got, "/home/u/.local/state/coreq/f.db");
	lookup_as_nobody("", got, sizeof(got));
	assert_string_equal(got, "(null)");
	lookup_as_nobody(NULL, got, sizeof(got));
	assert_string_equal(got, "(null)");
}

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void test_make_parent_dirs(void **state)
{
	(void)state;
	char path[256], sub[256];
	snprintf(path, sizeof(path), "%s/a/b/c/file.db", dir);
	assert_null(cq_path_make_parent_dirs(path));
	snprintf(sub, sizeof(sub), "%s/a/b/c", dir);
	assert_true(is_dir(sub));
	snprintf(sub, sizeof(sub), "%s/a/b/c/file.db", dir);
	assert_int_equal(access(sub, F_OK), -1);     /* the file itself is not made */
	assert_null(cq_path_make_parent_dirs(path)); /* again: all there */
	/* Doubled and trailing slashes. */
	snprintf(path, sizeof(path), "%s//d//e/", dir);
	assert_null(cq_path_make_parent_dirs(path));
	snprintf(sub, sizeof(sub), "%s/d/e", dir);
	assert_true(is_dir(sub));
	/* No directory part. */
	assert_null(cq_path_make_parent_dirs("file.db"));
	assert_null(cq_path_make_parent_dirs("/file.db"));
	/* A file where a directory should be. */
	snprintf(sub, sizeof(sub), "%s/plain", dir);
	FILE *f = fopen(sub, "w");
	assert_non_null(f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/plain/x/y.db", dir);
	struct cq_error *err = cq_path_make_parent_dirs(path);
	assert_non_null(err);
	assert_int_equal(err->code, CQ_ERR_IO);
	assert_non_null(strstr(err->message, "/plain/x"));
	cq_error_free(err);
	/* Cleanup. */
	static const char *const made[] = {"a/b/c", "a/b", "a", "d/e", "d"};
	for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
		snprintf(sub, sizeof(sub), "%s/%s", dir, made[i]);
		assert_int_equal(rmdir(sub), 0);
	}
	snprintf(sub, sizeof(sub), "%s/plain", dir);
	unlink(sub);
}

int main(void)
{
	/* The configuration file is read once per process: name ours first. */
	snprintf(dir, sizeof(dir), "/tmp/cq_test_paths.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	chmod(dir, 0755);
	snprintf(conf, sizeof(conf), "%s/coreq.conf", dir);
	FILE *f = fopen(conf, "w");
	if (!f)
		return 1;
	fputs("db = /from/config.db\n", f);
	fclose(f);
	setenv("COREQ_CONFIG", conf, 1);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_override_config_then_xdg),
	    cmocka_unit_test(test_home_for_other_users),
	    cmocka_unit_test(test_make_parent_dirs),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(conf);
	rmdir(dir);
	return failed;
}
