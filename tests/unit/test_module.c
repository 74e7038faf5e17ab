/*
 * test_module.c - the modules of a crashed process (libcore/model/module.h),
 * checked against the dynamic loader's view of this very test program
 * (dl_iterate_phdr: load bias, PT_LOAD range, the GNU build-id note):
 * opening an ELF file outside any core, refusing what is not an executable
 * or shared object, finding modules by address, and discovering the module
 * of a hand-written core (core_writer.h) whose memory holds this program's
 * first PT_LOAD: found when the build-ids agree (the file then fills the
 * mapped bytes the core lacks), the file ignored when they differ, missing
 * when the file is absent.
 */
#include <fcntl.h>
#include <link.h>
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

#include "libcore/model/core.h"
#include "libcore/model/module.h"
#include "tests/unit/core_writer.h"

/* The loader's facts about the main program. */
static struct {
	char path[4096];
	uint64_t bias, link_start, link_end;
	const uint8_t *first_load; /* runtime address of the first PT_LOAD */
	uint64_t first_filesz;
	uint64_t text_start, text_end, text_offset; /* the executable PT_LOAD, page-rounded */
	uint8_t build_id[64];
	size_t build_id_len;
} self;

static char core_path[64];

static int main_program(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	self.bias = info->dlpi_addr;
	self.link_start = UINT64_MAX;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD) {
			if (ph->p_vaddr < self.link_start) {
				self.link_start = ph->p_vaddr;
				self.first_load = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
				self.first_filesz = ph->p_filesz;
			}
			if (ph->p_flags & PF_X) {
				self.text_start = (info->dlpi_addr + ph->p_vaddr) & ~4095ull;
				self.text_end =
				    (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + 4095) & ~4095ull;
				self.text_offset = ph->p_offset & ~4095ull;
			}
			if (ph->p_vaddr + ph->p_memsz > self.link_end)
				self.link_end = ph->p_vaddr + ph->p_memsz;
		}
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		for (size_t off = 0; off + 12 <= ph->p_memsz;) {
			uint32_t namesz, descsz, type;
			memcpy(&namesz, p + off, 4);
			memcpy(&descsz, p + off + 4, 4);
			memcpy(&type, p + off + 8, 4);
			size_t desc = off + 12 + ((namesz + 3) & ~3u);
			if (type == NT_GNU_BUILD_ID && namesz == 4 &&
			    !memcmp(p + off + 12, "GNU", 4) && descsz <= sizeof(self.build_id)) {
				memcpy(self.build_id, p + desc, descsz);
				self.build_id_len = descsz;
			}
			off = desc + ((descsz + 3) & ~3u);
		}
	}
	return 1; /* the first object is the main program */
}

static int setup(void **state)
{
	(void)state;
	ssize_t n = readlink("/proc/self/exe", self.path, sizeof(self.path) - 1);
	if (n <= 0)
		return -1;
	self.path[n] = '\0';
	dl_iterate_phdr(main_program, NULL);
	snprintf(core_path, sizeof(core_path), "/tmp/cq_test_module.%d", (int)getpid());
	return self.build_id_len ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	unlink(core_path);
	return 0;
}

static void test_open_elf_matches_the_loader(void **state)
{
	(void)state;
	struct cq_module mod;
	assert_null(cq_module_open_elf(self.path, &mod));
	assert_int_equal(mod.status, CQ_MODULE_FOUND);
	assert_int_equal(mod.bias, 0);
	assert_int_equal(mod.start, self.link_start);
	assert_int_equal(mod.end, self.link_end);
	assert_int_equal(mod.build_id_len, self.build_id_len);
	assert_memory_equal(mod.build_id, self.build_id, self.build_id_len);
	assert_string_equal(cq_module_basename(&mod), "test_module");
	char hex[2 * 64 + 1], want[2 * 64 + 1];
	for (size_t i = 0; i < self.build_id_len; i++)
		snprintf(want + 2 * i, 3, "%02x", self.build_id[i]);
	cq_module_build_id_hex(&mod, hex, sizeof(hex));
	assert_string_equal(hex, want);
	/* A short buffer holds whole bytes only. */
	cq_module_build_id_hex(&mod, hex, 6);
	assert_int_equal(strlen(hex), 4);
	assert_memory_equal(hex, want, 4);
	cq_module_destroy(&mod);
}

static void test_open_elf_refuses_other_files(void **state)
{
	(void)state;
	struct cq_module mod;
	struct cq_error *err = cq_module_open_elf("/proc/self/status", &mod);
	assert_non_null(err);
	cq_error_free(err);
	err = cq_module_open_elf("/", &mod); /* a directory is never opened */
	assert_non_null(err);
	cq_error_free(err);
	err = cq_module_open_elf("/nonexistent/libx.so", &mod);
	assert_non_null(err);
	cq_error_free(err);
	/* An ELF core is not an executable or shared object. */
	static struct core_writer w;
	memset(&w, 0, sizeof(w));
	cw_prstatus(&w, 1, 11, 0, 0, 0);
	assert_int_equal(cw_write(&w, core_path, 0), 0);
	err = cq_module_open_elf(core_path, &mod);
	assert_non_null(err);
	assert_non_null(strstr(err->message, "ELF type 4"));
	cq_error_free(err);
}

static void test_find_by_address(void **state)
{
	(void)state;
	struct cq_module m[3] = {
	    {.start = 0x1000, .end = 0x2000},
	    {.start = 0x2000, .end = 0x3000},
	    {.start = 0x5000, .end = 0x6000},
	};
	assert_null(cq_module_find(m, 3, 0xfff));
	assert_ptr_equal(cq_module_find(m, 3, 0x1000), &m[0]);
	assert_ptr_equal(cq_module_find(m, 3, 0x1fff), &m[0]);
	assert_ptr_equal(cq_module_find(m, 3, 0x2000), &m[1]);
	assert_null(cq_module_find(m, 3, 0x3000)); /* end is exclusive */
	assert_null(cq_module_find(m, 3, 0x4fff));
	assert_ptr_equal(cq_module_find(m, 3, 0x5fff), &m[2]);
	assert_null(cq_module_find(m, 3, 0x6000));
	assert_null(cq_module_find(m, 0, 0x1000));
	assert_string_equal(cq_module_status_name(CQ_MODULE_MISMATCH), "mismatch");
}

/*
 * A core whose memory holds this program's first PT_LOAD at its runtime
 * address, and whose NT_FILE maps file_name there (offset 0) one page
 * further than the core holds.  id_flip changes one byte of the build-id in
 * the core's copy; descsz (unless -1) becomes its build-id note's size there.
 */
static struct cq_core *core_of_self_note(const char *file_name, bool id_flip, int64_t descsz)
{
	static struct core_writer w;
	static uint8_t copy[1 << 16];
	memset(&w, 0, sizeof(w));
	uint64_t len = self.first_filesz < sizeof(copy) ? self.first_filesz : sizeof(copy);
	memcpy(copy, self.first_load, len);
	if (id_flip) {
		uint8_t *p = memmem(copy, len, self.build_id, self.build_id_len);
		assert_non_null(p);
		p[0] ^= 0xff;
	}
	if (descsz >= 0) {
		uint8_t *p = memmem(copy, len, self.build_id, self.build_id_len);
		assert_non_null(p);
		assert_true(p - copy >= 16 && !memcmp(p - 4, "GNU", 4));
		cw_put(p - 12, (uint64_t)descsz, 4);
	}
	uint64_t start = (uint64_t)(uintptr_t)self.first_load;
	uint64_t end = ((start + len + 4095) & ~4095ull) + 4096;
	/* A core of this program's architecture: its own file is the module's. */
#if defined(__aarch64__)
	w.machine = EM_AARCH64;
	cw_prstatus_aarch64(&w, 1, 11, start, 0);
#else
	cw_prstatus(&w, 1, 11, start, 0, 0);
#endif
	uint8_t av[48] = {0};
	cw_put(av, AT_PAGESZ, 8);
	cw_put(av + 8, 4096, 8);
	cw_put(av + 16, AT_PHDR, 8);
	cw_put(av + 24, start + 64, 8); /* the program headers follow the ELF header */
	cw_note(&w, "CORE", NT_AUXV, av, sizeof(av));
	uint8_t fn[16 + 24 + 4096] = {0};
	cw_put(fn, 1, 8);
	cw_put(fn + 8, 4096, 8);
	cw_put(fn + 16, start, 8);
	cw_put(fn + 24, end, 8);
	size_t name_len = strlen(file_name) + 1;
	memcpy(fn + 40, file_name, name_len);
	cw_note(&w, "CORE", NT_FILE, fn, 40 + name_len);
	cw_load(&w, start, copy, len, PF_R);
	assert_int_equal(cw_write(&w, core_path, 0), 0);
	struct cq_core *core;
	struct cq_error *err = cq_core_open(core_path, NULL, &core);
	if (err)
		fail_msg("%s", err->message);
	return core;
}

static struct cq_core *core_of_self(const char *file_name, bool id_flip)
{
	return core_of_self_note(file_name, id_flip, -1);
}

static void test_core_module_found(void **state)
{
	(void)state;
	struct cq_core *core = core_of_self(self.path, false);
	assert_int_equal(core->nmodules, 1);
	struct cq_module *mod = &core->modules[0];
	assert_int_equal(mod->status, CQ_MODULE_FOUND);
	assert_true(mod->is_main);
	assert_true(mod->build_id_from_core);
	assert_int_equal(mod->bias, self.bias);
	assert_memory_equal(mod->build_id, self.build_id, self.build_id_len);
	assert_string_equal(mod->file_path, self.path);
	assert_ptr_equal(cq_core_main_module(core), mod);
	assert_ptr_equal(cq_core_module_at(core, (uint64_t)(uintptr_t)self.first_load + 8), mod);
	/* The last mapped byte, which the core lacks, is read from the file. */
	uint8_t b, want;
	uint64_t last = mod->end - 1;
	int fd = open(self.path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &want, 1, (off_t)(last - mod->start)), 1);
	close(fd);
	assert_true(cq_mem_read(&core->mem, last, &b, 1));
	assert_int_equal(b, want);
	cq_core_close(core);
}

/*
 * A core as gdb's gcore writes it: no segment at all for the text mapping
 * (NT_FILE names it), only the first page's.  The text reads from the file
 * and is code by the file's PT_LOAD flags; the first page is not code.
 */
static void test_text_without_a_segment_is_code(void **state)
{
	(void)state;
	static struct core_writer w;
	memset(&w, 0, sizeof(w));
	uint64_t start = (uint64_t)(uintptr_t)self.first_load;
	assert_true(self.text_start > start);
#if defined(__aarch64__)
	w.machine = EM_AARCH64;
	cw_prstatus_aarch64(&w, 1, 0, self.text_start, 0);
#else
	cw_prstatus(&w, 1, 0, self.text_start, 0, 0);
#endif
	uint8_t av[48] = {0};
	cw_put(av, AT_PAGESZ, 8);
	cw_put(av + 8, 4096, 8);
	cw_put(av + 16, AT_PHDR, 8);
	cw_put(av + 24, start + 64, 8);
	cw_note(&w, "CORE", NT_AUXV, av, sizeof(av));
	uint8_t fn[16 + 48 + 2 * 4096] = {0};
	cw_put(fn, 2, 8);
	cw_put(fn + 8, 4096, 8);
	const uint64_t e[2][3] = {{start, start + 4096, 0},
	                          {self.text_start, self.text_end, self.text_offset / 4096}};
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++)
			cw_put(fn + 16 + 24 * i + 8 * j, e[i][j], 8);
	size_t name_len = strlen(self.path) + 1, at = 16 + 48;
	memcpy(fn + at, self.path, name_len);
	memcpy(fn + at + name_len, self.path, name_len);
	cw_note(&w, "CORE", NT_FILE, fn, at + 2 * name_len);
	cw_load(&w, start, self.first_load, 4096, PF_R);
	assert_int_equal(cw_write(&w, core_path, 0), 0);
	struct cq_core *core;
	struct cq_error *err = cq_core_open(core_path, NULL, &core);
	if (err)
		fail_msg("%s", err->message);
	assert_int_equal(core->nmodules, 1);
	assert_int_equal(core->modules[0].status, CQ_MODULE_FOUND);
	const struct cq_mem_segment *text = cq_mem_find(&core->mem, self.text_start + 16);
	assert_non_null(text);
	assert_true(text->flags & CQ_MEM_EXEC);
	uint8_t b;
	assert_true(cq_mem_read(&core->mem, self.text_start + 16, &b, 1));
	assert_int_equal(b, ((const uint8_t *)(uintptr_t)self.text_start)[16]);
	const struct cq_mem_segment *head = cq_mem_find(&core->mem, start + 8);
	assert_non_null(head);
	assert_false(head->flags & CQ_MEM_EXEC);
	cq_core_close(core);
}

static void test_core_module_mismatch_ignores_the_file(void **state)
{
	(void)state;
	struct cq_core *core = core_of_self(self.path, true);
	assert_int_equal(core->nmodules, 1);
	struct cq_module *mod = &core->modules[0];
	assert_int_equal(mod->status, CQ_MODULE_MISMATCH);
	assert_null(mod->file_path);
	assert_null(mod->elf);
	assert_true(mod->build_id_from_core);
	assert_int_equal(mod->build_id[0] ^ 0xff, self.build_id[0]);
	/* Mapped bytes the core lacks are not filled from the rejected file. */
	uint8_t b;
	assert_false(cq_mem_read(&core->mem, mod->end - 1, &b, 1));
	assert_true(cq_mem_read(&core->mem, mod->start, &b, 1)); /* the core's own copy */
	cq_core_close(core);
}

static void test_core_module_missing_file(void **state)
{
	(void)state;
	struct cq_core *core = core_of_self("/nonexistent/crashy", false);
	assert_int_equal(core->nmodules, 1);
	struct cq_module *mod = &core->modules[0];
	assert_int_equal(mod->status, CQ_MODULE_MISSING);
	assert_string_equal(cq_module_basename(mod), "crashy");
	/* The build-id still comes from the core's copy of the header page. */
	assert_memory_equal(mod->build_id, self.build_id, self.build_id_len);
	cq_core_close(core);
}

/*
 * A build-id note of no bytes or of more than CQ_BUILD_ID_MAX (or more than
 * the page holds) in the core's copy is refused where it is read: the
 * module's build-id is then the file's own, never a zero-length or cut one.
 */
static void test_core_build_id_note_of_odd_size(void **state)
{
	(void)state;
	static const int64_t sizes[] = {0, CQ_BUILD_ID_MAX + 1, 4096, 0xffffffff};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct cq_core *core = core_of_self_note(self.path, false, sizes[i]);
		struct cq_module *mod = &core->modules[0];
		assert_false(mod->build_id_from_core);
		assert_int_equal(mod->status, CQ_MODULE_FOUND);
		assert_int_equal(mod->build_id_len, self.build_id_len);
		assert_memory_equal(mod->build_id, self.build_id, self.build_id_len);
		cq_core_close(core);
	}
	/* Two bytes: taken as the core says, and the file then does not match. */
	struct cq_core *core = core_of_self_note(self.path, false, 2);
	struct cq_module *mod = &core->modules[0];
	assert_true(mod->build_id_from_core);
	assert_int_equal(mod->build_id_len, 2);
	assert_int_equal(mod->status, CQ_MODULE_MISMATCH);
	cq_core_close(core);
}

/*
 * The file opened for name ("-" when none) and its path for output, as
 * "path" or "path in_root".
 */
static void host_file(const struct cq_core_options *o, const char *name, bool is_main, char *out,
                      size_t cap)
{
	struct cq_core core = {.options = *o};
	char *path, *in_root;
	int fd;
	assert_null(cq_module_open_host_file(&core, name, is_main, &fd, &path, &in_root));
	if (fd < 0) {
		assert_null(path);
		assert_null(in_root);
		snprintf(out, cap, "-");
		return;
	}
	snprintf(out, cap, "%s%s%s", path, in_root ? " " : "", in_root ? in_root : "");
	close(fd);
	free(path);
	free(in_root);
}

/*
 * The file tried for a module: --exe alone for the executable; inside
 * --sysroot (never the recorded path, not even for the executable: --exe
 * names it); without --sysroot the recorded path.
 */
static void test_host_file(void **state)
{
	(void)state;
	char dir[] = "/tmp/cq_test_host_file.XXXXXX", root[64], app[96], exe[96], want[256];
	char got[512];
	assert_non_null(mkdtemp(dir));
	snprintf(root, sizeof(root), "%s/r", dir);
	snprintf(app, sizeof(app), "%s/app", dir); /* at its recorded path, outside the root */
	snprintf(exe, sizeof(exe), "%s/exe", dir); /* named by --exe */
	char lib_dir[128], lib[160], sys_app[160];
	snprintf(lib_dir, sizeof(lib_dir), "%s/r/lib", dir);
	snprintf(lib, sizeof(lib), "%s/libc.so.6", lib_dir);
	snprintf(sys_app, sizeof(sys_app), "%s/r%s", dir, app); /* app's copy in the root */
	assert_int_equal(mkdir(root, 0755), 0);
	assert_int_equal(mkdir(lib_dir, 0755), 0);
	const char *files[] = {app, exe, lib};
	for (size_t i = 0; i < 3; i++) {
		int fd = open(files[i], O_WRONLY | O_CREAT | O_EXCL, 0644);
		assert_true(fd >= 0);
		close(fd);
	}
	struct cq_core_options none = {0}, in = {.sysroot = root},
	                       both = {.sysroot = root, .exe = exe};

	host_file(&none, app, true, got, sizeof(got));
	assert_string_equal(got, app);
	host_file(&in, app, true, got, sizeof(got)); /* not in the root: not looked for outside */
	assert_string_equal(got, "-");
	host_file(&in, "/lib/libc.so.6", false, got, sizeof(got));
	snprintf(want, sizeof(want), "%s/lib/libc.so.6 /lib/libc.so.6", root);
	assert_string_equal(got, want);
	host_file(&in, "/lib/../../lib/./libc.so.6", false, got, sizeof(got));
	assert_string_equal(got, want);
	host_file(&in, "lib/libc.so.6", false, got, sizeof(got)); /* relative: from the root too */
	assert_string_equal(got, want);
	host_file(&both, app, true, got, sizeof(got));
	assert_string_equal(got, exe);
	host_file(&both, "/lib/libc.so.6", false, got, sizeof(got));
	assert_string_equal(got, want);

	/* The executable's copy inside the root is found there. */
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\" && cp '%s' '%s'", sys_app, app,
	         sys_app);
	assert_int_equal(system(cmd), 0);
	host_file(&in, app, true, got, sizeof(got));
	snprintf(want, sizeof(want), "%s %s", sys_app, app);
	assert_string_equal(got, want);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_open_elf_matches_the_loader),
	    cmocka_unit_test(test_open_elf_refuses_other_files),
	    cmocka_unit_test(test_find_by_address),
	    cmocka_unit_test(test_core_module_found),
	    cmocka_unit_test(test_text_without_a_segment_is_code),
	    cmocka_unit_test(test_core_module_mismatch_ignores_the_file),
	    cmocka_unit_test(test_core_module_missing_file),
	    cmocka_unit_test(test_core_build_id_note_of_odd_size),
	    cmocka_unit_test(test_host_file),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
