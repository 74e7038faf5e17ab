/*
 * test_debuginfo.c - finding a module's separate debuginfo
 * (libcore/symbols/debuginfo.c).
 *
 * The test's own executable (linked with a GNU build-id and built with -g)
 * plays both the module and its debuginfo.  Each test builds a temporary
 * tree: build-id trees under --debug-dir roots, and a stripped copy with a
 * .gnu_debuglink (made with objcopy; skipped without it).  The modules are
 * struct cq_module values filled in by hand.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <ftw.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcore/symbols/debuginfo.h"
#include "libcore/model/module.h"

struct fixture {
	char root[64];      /* temporary directory */
	char exe[PATH_MAX]; /* this test's executable */
	uint8_t build_id[CQ_BUILD_ID_MAX];
	size_t build_id_len;
	char hex[2 * CQ_BUILD_ID_MAX + 1];
};

/* ---- helpers ---------------------------------------------------------------- */

static void make_dirs(const char *path)
{
	char buf[PATH_MAX];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(buf, 0755);
		*p = '/';
	}
	mkdir(buf, 0755);
}

static void copy_file(const char *from, const char *to)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", to);
	char *slash = strrchr(dir, '/');
	assert_non_null(slash);
	*slash = '\0';
	make_dirs(dir);
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(in >= 0 && out >= 0);
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	assert_int_equal(n, 0);
	close(in);
	close(out);
}

static void append_byte(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
}

/* root/<sub>/.build-id/xx/rest.debug for the given hex build-id. */
static void build_id_file(const struct fixture *f, const char *sub, const char *hex, char *out,
                          size_t cap)
{
	snprintf(out, cap, "%s/%s/.build-id/%.2s/%s.debug", f->root, sub, hex, hex + 2);
}

static void module_for(const struct fixture *f, struct cq_module *mod)
{
	memset(mod, 0, sizeof(*mod));
	mod->name = (char *)"/opt/app/bin/prog";
	mod->fd = -1;
	mod->status = CQ_MODULE_FOUND;
	memcpy(mod->build_id, f->build_id, f->build_id_len);
	mod->build_id_len = f->build_id_len;
}

static Elf *open_elf(const char *path, int *fd)
{
	*fd = open(path, O_RDONLY);
	assert_true(*fd >= 0);
	Elf *elf = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	assert_non_null(elf);
	return elf;
}

static void check_found(const struct cq_module *mod, const char *const *dirs, const char *want)
{
	char *got = cq_debuginfo_find(mod, dirs);
	if (!got)
		fail_msg("no debuginfo found, expected %s", want);
	assert_string_equal(got, want);
	free(got);
}

static void check_none(const struct cq_module *mod, const char *const *dirs)
{
	char *got = cq_debuginfo_find(mod, dirs);
	if (got)
		fail_msg("unexpected debuginfo %s", got);
}

/*
 * The objcopy for this test's own architecture: an aarch64 build run under
 * qemu on another host needs the cross one, which Debian names by triplet
 * (as it does the native one on an aarch64 host).
 */
#if defined(__aarch64__)
#define OBJCOPY "aarch64-linux-gnu-objcopy"
#else
#define OBJCOPY "objcopy"
#endif

/* Writes a stripped copy of the executable to path with a debuglink to link. */
static bool make_stripped_copy(const struct fixture *f, const char *path, const char *link)
{
	if (system("command -v " OBJCOPY " >/dev/null 2>&1") != 0)
		return false;
	char cmd[3 * PATH_MAX + 64];
	snprintf(cmd, sizeof(cmd), OBJCOPY " --strip-debug --add-gnu-debuglink='%s' '%s' '%s'",
	         link, f->exe, path);
	assert_int_equal(system(cmd), 0);
	return true;
}

/* ---- fixture -------------------------------------------------------------------- */

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	elf_version(EV_CURRENT);
	snprintf(f->root, sizeof(f->root), "/tmp/cq-debuginfo-XXXXXX");
	ssize_t n = readlink("/proc/self/exe", f->exe, sizeof(f->exe) - 1);
	if (!mkdtemp(f->root) || n <= 0)
		return -1;
	f->exe[n] = '\0';
	int fd;
	Elf *elf = open_elf(f->exe, &fd);
	const void *id;
	ssize_t len = dwelf_elf_gnu_build_id(elf, &id);
	if (len >= 2 && len <= CQ_BUILD_ID_MAX) {
		memcpy(f->build_id, id, (size_t)len);
		f->build_id_len = (size_t)len;
	}
	elf_end(elf);
	close(fd);
	struct cq_module tmp = {.build_id_len = f->build_id_len};
	memcpy(tmp.build_id, f->build_id, f->build_id_len);
	cq_module_build_id_hex(&tmp, f->hex, sizeof(f->hex));
	*state = f;
	return f->build_id_len ? 0 : -1;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	nftw(f->root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

/* ---- tests ---------------------------------------------------------------------- */

static void test_build_id_tree(void **state)
{
	struct fixture *f = *state;
	char want[PATH_MAX], dir[PATH_MAX];
	build_id_file(f, "d1", f->hex, want, sizeof(want));
	copy_file(f->exe, want);
	snprintf(dir, sizeof(dir), "%s/d1", f->root);
	const char *dirs[] = {"/nonexistent", dir, NULL};
	struct cq_module mod;
	module_for(f, &mod);
	check_found(&mod, dirs, want);
}

static void test_first_debug_dir_wins(void **state)
{
	struct fixture *f = *state;
	char first[PATH_MAX], second[PATH_MAX], d1[PATH_MAX], d2[PATH_MAX];
	build_id_file(f, "a", f->hex, first, sizeof(first));
	build_id_file(f, "b", f->hex, second, sizeof(second));
	copy_file(f->exe, first);
	copy_file(f->exe, second);
	snprintf(d1, sizeof(d1), "%s/a", f->root);
	snprintf(d2, sizeof(d2), "%s/b", f->root);
	const char *dirs[] = {d1, d2, NULL};
	struct cq_module mod;
	module_for(f, &mod);
	check_found(&mod, dirs, first);
}

/* A file at the right path whose own build-id differs is rejected. */
static void test_build_id_mismatch_rejected(void **state)
{
	struct fixture *f = *state;
	struct cq_module mod;
	module_for(f, &mod);
	mod.build_id[mod.build_id_len - 1] ^= 0xff;
	char hex[2 * CQ_BUILD_ID_MAX + 1], wrong[PATH_MAX], right[PATH_MAX], d1[PATH_MAX],
	    d2[PATH_MAX];
	cq_module_build_id_hex(&mod, hex, sizeof(hex));
	build_id_file(f, "m1", hex, wrong, sizeof(wrong));
	copy_file(f->exe, wrong);
	snprintf(d1, sizeof(d1), "%s/m1", f->root);
	const char *dirs[] = {d1, NULL};
	check_none(&mod, dirs);

	/* The real file under the module's id in a later root is still found. */
	mod.build_id[mod.build_id_len - 1] ^= 0xff;
	build_id_file(f, "m2", f->hex, right, sizeof(right));
	copy_file(f->exe, right);
	copy_file(f->exe, wrong);
	snprintf(d2, sizeof(d2), "%s/m2", f->root);
	const char *both[] = {d1, d2, NULL};
	check_found(&mod, both, right);
}

/*
 * A build-id given as text (from a database) finds the tree's file only
 * when valid and carried by it; a traversal never reaches a planted file
 * (root/evil.debug, where "D/.build-id/xx/rest.debug" would lead).
 */
static void test_by_build_id_text(void **state)
{
	struct fixture *f = *state;
	char want[PATH_MAX], dir[PATH_MAX], evil[PATH_MAX], upper[2 * CQ_BUILD_ID_MAX + 1];
	build_id_file(f, "t/d", f->hex, want, sizeof(want));
	copy_file(f->exe, want);
	snprintf(dir, sizeof(dir), "%s/t/d", f->root);
	snprintf(evil, sizeof(evil), "%s/evil.debug", f->root);
	copy_file(f->exe, evil);
	const char *dirs[] = {dir, NULL};
	char *got = cq_debuginfo_find_by_build_id(f->hex, dirs);
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
	assert_true(cq_debuginfo_has_build_id(want, f->hex));

	static const char *const bad[] = {"../../../evil", "..", "", "zz", "abc",
	                                  "ab/../../evil", NULL};
	for (size_t i = 0; bad[i]; i++)
		assert_null(cq_debuginfo_find_by_build_id(bad[i], dirs));
	/* The evil file's path for "../../../evil" exists; only the id check stops it. */
	char traversal[2 * PATH_MAX];
	snprintf(traversal, sizeof(traversal), "%s/.build-id/%.2s/%s.debug", dir, "../../../evil",
	         "../../../evil" + 2);
	assert_int_equal(access(traversal, R_OK), 0);

	/* A valid id whose file carries another build-id is not taken. */
	snprintf(upper, sizeof(upper), "%s", f->hex);
	upper[0] = upper[0] == '0' ? '1' : '0';
	char other[PATH_MAX];
	build_id_file(f, "t/d", upper, other, sizeof(other));
	copy_file(f->exe, other);
	assert_null(cq_debuginfo_find_by_build_id(upper, dirs));
	assert_false(cq_debuginfo_has_build_id(other, upper));
}

static void test_no_build_id_no_debuglink(void **state)
{
	struct fixture *f = *state;
	struct cq_module mod;
	module_for(f, &mod);
	mod.build_id_len = 0;
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/d1", f->root);
	const char *dirs[] = {dir, NULL};
	check_none(&mod, dirs);
	mod.build_id_len = 1; /* too short to name a build-id path */
	check_none(&mod, dirs);
}

static void test_own_debug_info(void **state)
{
	struct fixture *f = *state;
	struct cq_module mod;
	module_for(f, &mod);
	int fd;
	mod.file_path = f->exe;
	mod.elf = open_elf(f->exe, &fd);
	check_found(&mod, NULL, f->exe);
	elf_end(mod.elf);
	close(fd);
}

static void test_vdso_has_none(void **state)
{
	struct fixture *f = *state;
	struct cq_module mod;
	module_for(f, &mod);
	mod.is_vdso = true;
	mod.name = (char *)"[vdso]";
	char want[PATH_MAX], dir[PATH_MAX];
	build_id_file(f, "v", f->hex, want, sizeof(want));
	copy_file(f->exe, want);
	snprintf(dir, sizeof(dir), "%s/v", f->root);
	const char *dirs[] = {dir, NULL};
	check_none(&mod, dirs);
}

/* .gnu_debuglink next to the file, then in its .debug/ directory. */
static void test_debuglink(void **state)
{
	struct fixture *f = *state;
	char bin[PATH_MAX], debug[PATH_MAX], hidden[PATH_MAX];
	snprintf(bin, sizeof(bin), "%s/bin/prog", f->root);
	snprintf(debug, sizeof(debug), "%s/bin/prog.debug", f->root);
	snprintf(hidden, sizeof(hidden), "%s/bin/.debug/prog.debug", f->root);
	copy_file(f->exe, debug);
	if (!make_stripped_copy(f, bin, debug))
		skip();
	struct cq_module mod;
	module_for(f, &mod);
	int fd;
	mod.file_path = bin;
	mod.elf = open_elf(bin, &fd);
	check_found(&mod, NULL, debug);

	copy_file(debug, hidden);
	assert_int_equal(unlink(debug), 0);
	check_found(&mod, NULL, hidden);

	mod.build_id[0] ^= 0xff; /* the module is not what the debug file was split from */
	check_none(&mod, NULL);
	elf_end(mod.elf);
	close(fd);
}

/* Without a build-id, a debuglink candidate must match the recorded CRC. */
static void test_debuglink_crc(void **state)
{
	struct fixture *f = *state;
	char bin[PATH_MAX], debug[PATH_MAX];
	snprintf(bin, sizeof(bin), "%s/crc/prog", f->root);
	snprintf(debug, sizeof(debug), "%s/crc/prog.debug", f->root);
	copy_file(f->exe, debug);
	if (!make_stripped_copy(f, bin, debug))
		skip();
	struct cq_module mod;
	module_for(f, &mod);
	mod.build_id_len = 0;
	int fd;
	mod.file_path = bin;
	mod.elf = open_elf(bin, &fd);
	check_found(&mod, NULL, debug);

	append_byte(debug);
	check_none(&mod, NULL);
	elf_end(mod.elf);
	close(fd);
}

/* A debuglink that names the module's own file is not its debuginfo. */
static void test_debuglink_to_itself_ignored(void **state)
{
	struct fixture *f = *state;
	char bin[PATH_MAX], tmp[PATH_MAX];
	snprintf(bin, sizeof(bin), "%s/self/prog", f->root);
	snprintf(tmp, sizeof(tmp), "%s/self/prog.tmp", f->root);
	copy_file(f->exe, bin);
	if (!make_stripped_copy(f, tmp, bin))
		skip();
	assert_int_equal(rename(tmp, bin), 0);
	struct cq_module mod;
	module_for(f, &mod);
	int fd;
	mod.file_path = bin;
	mod.elf = open_elf(bin, &fd);
	check_none(&mod, NULL);
	elf_end(mod.elf);
	close(fd);
}

/*
 * A module found under --sysroot: its debuglink is looked for inside the
 * sysroot (next to the file, in .debug/, in the sysroot's /usr/lib/debug),
 * never through a link that leaves it for the host's copy.
 */
static void test_debuglink_inside_sysroot(void **state)
{
	struct fixture *f = *state;
	char root[PATH_MAX / 2], bin[PATH_MAX], outside[PATH_MAX], link[PATH_MAX],
	    cmd[3 * PATH_MAX];
	snprintf(root, sizeof(root), "%s/sysroot", f->root);
	snprintf(bin, sizeof(bin), "%s/bin/prog", root);
	snprintf(outside, sizeof(outside), "%s/outside/prog.debug", f->root);
	snprintf(link, sizeof(link), "%s/bin/prog.debug", root);
	snprintf(cmd, sizeof(cmd),
	         "mkdir -p '%s/bin/.debug' '%s/outside' '%s/usr/lib/debug/opt/app/bin'", root,
	         f->root, root);
	assert_int_equal(system(cmd), 0);
	copy_file(f->exe, outside);
	if (!make_stripped_copy(f, bin, outside))
		skip();
	struct cq_module mod;
	module_for(f, &mod);
	mod.file_path = bin;
	mod.root = root;
	mod.file_in_root = (char *)"/bin/prog";
	mod.elf = open_elf(bin, &mod.fd);

	assert_int_equal(symlink(outside, link), 0); /* the host's copy, by an absolute link */
	check_none(&mod, NULL);
	assert_int_equal(unlink(link), 0);
	assert_int_equal(symlink("../../../../../../../../outside/prog.debug", link), 0);
	check_none(&mod, NULL);
	assert_int_equal(unlink(link), 0);

	char want[PATH_MAX];
	snprintf(want, sizeof(want), "%s/usr/lib/debug/opt/app/bin/prog.debug", root);
	copy_file(outside, want);
	check_found(&mod, NULL, want);
	snprintf(want, sizeof(want), "%s/bin/.debug/prog.debug", root);
	copy_file(outside, want);
	check_found(&mod, NULL, want);
	elf_end(mod.elf);
	close(mod.fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_build_id_tree, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_first_debug_dir_wins, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_build_id_mismatch_rejected, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_by_build_id_text, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_build_id_no_debuglink, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_own_debug_info, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_vdso_has_none, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_debuglink, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_debuglink_crc, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_debuglink_to_itself_ignored, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_debuglink_inside_sysroot, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
