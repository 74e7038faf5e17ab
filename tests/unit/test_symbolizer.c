/*
 * test_symbolizer.c - addresses to function, file, line and inline frames
 * (libcore/symbols/symbolizer.c), checked on a real core.
 *
 * The group setup forks a child that loads two throw-away copies of libz,
 * deletes one (its module becomes MISSING), then traps inside a chain of
 * two always-inlined functions in a noinline one.  The child dumps core into a
 * temporary directory (core_pattern must be a plain file name; otherwise the
 * tests are skipped).  The parent then overwrites the other copy with a
 * different ELF file (its module becomes MISMATCH), opens the core, and
 * symbolizes addresses it knows: fork() keeps the address space, so the
 * parent's own function addresses are the child's.  Expected lines come
 * from __LINE__ next to the code they describe.
 *
 * Under qemu-user (the aarch64 build's tests) qemu writes the guest's core
 * itself, as qemu_PROG_DATE_PID.core, of every readable page: it ignores
 * coredump_filter, and the ASan shadow alone is 56 GB there.  So the child
 * unmaps the shadow just before it traps (drop_asan_shadow), and the code it
 * runs from then on is built without ASan.  The kernel's core on x86_64 is
 * the same either way: coredump_filter keeps anonymous memory out of it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <ftw.h>
#include <gelf.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "libcore/model/core.h"
#include "libcore/symbols/debuginfo.h"
#include "libcore/model/module.h"
#include "libcore/symbols/symbolizer.h"

#if defined(__SANITIZE_ADDRESS__)
#define CQ_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CQ_TEST_ASAN 1
#endif
#endif
#ifdef CQ_TEST_ASAN
#include <sanitizer/asan_interface.h>
/* Code the child runs once its shadow is gone. */
#define NO_ASAN __attribute__((no_sanitize_address))
#else
#define NO_ASAN
#endif

/* ---- what the child runs ---------------------------------------------------- */

__attribute__((noinline)) int known_function(int x);
__attribute__((noinline)) void crash_in_child(volatile int *armed);

/* clang-format off */
enum { KNOWN_FUNCTION_BRACE_LINE = __LINE__ + 2 };
NO_ASAN __attribute__((noinline)) int known_function(int x)
{
	return x * 3 + 1;
}

enum { HELPER_TRAP_LINE = __LINE__ + 4 };
NO_ASAN static inline __attribute__((always_inline)) void crash_inline_helper(volatile int *armed)
{
	if (*armed)
		__builtin_trap();
}

enum { HELPER_CALL_LINE = __LINE__ + 3 };
NO_ASAN static inline __attribute__((always_inline)) void crash_inline_middle(volatile int *armed)
{
	crash_inline_helper(armed);
}

enum { MIDDLE_CALL_LINE = __LINE__ + 3 };
NO_ASAN __attribute__((noinline)) void crash_in_child(volatile int *armed)
{
	crash_inline_middle(armed);
	*armed = known_function(*armed);
}
/* clang-format on */

struct fixture {
	char dir[64];
	char core_path[PATH_MAX];
	char missing_lib[PATH_MAX];  /* deleted before the crash */
	char mismatch_lib[PATH_MAX]; /* replaced after the crash */
	struct cq_core *core;
	struct cq_symbolizer *sym;
};

/* ---- making the core ---------------------------------------------------------- */

static bool copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	bool ok = in >= 0 && out >= 0;
	char buf[65536];
	ssize_t n = 0;
	while (ok && (n = read(in, buf, sizeof(buf))) > 0)
		ok = write(out, buf, (size_t)n) == n;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return ok && n == 0;
}

static void write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);
	if (fd >= 0) {
		ssize_t n = write(fd, text, strlen(text));
		(void)n;
		close(fd);
	}
}

#ifdef CQ_TEST_ASAN
/*
 * The shadow's mappings: those the ASan mapping sends some address below the
 * highest mapping to (the shadow interval; ASan keeps program memory out of
 * it), without a file.  Read before any is unmapped.
 */
struct shadow_maps {
	uint64_t start[16], end[16];
	size_t n;
};

static void find_asan_shadow(struct shadow_maps *sm)
{
	size_t scale, offset;
	__asan_get_shadow_mapping(&scale, &offset);
	uint64_t start[512], end[512], top = 0;
	bool named[512];
	size_t n = 0;
	char line[512];
	FILE *fp = fopen("/proc/self/maps", "r");
	while (fp && n < 512 && fgets(line, sizeof(line), fp)) {
		unsigned long long a, b;
		int path = 0;
		if (sscanf(line, "%llx-%llx %*s %*s %*s %*s %n", &a, &b, &path) < 2)
			continue;
		start[n] = a, end[n] = b;
		named[n] = path > 0 && line[path] != '\n' && line[path] != '\0';
		if (b < 1ull << 56 && b > top) /* not x86_64's [vsyscall] */
			top = b;
		n++;
	}
	if (fp)
		fclose(fp);
	uint64_t lo = offset, hi = offset + (top >> scale);
	sm->n = 0;
	for (size_t i = 0; i < n && sm->n < 16; i++)
		if (!named[i] && start[i] < hi && end[i] > lo)
			sm->start[sm->n] = start[i], sm->end[sm->n++] = end[i];
}

/* Unmaps it: only code built without ASan may run after this. */
NO_ASAN static void drop_asan_shadow(const struct shadow_maps *sm)
{
	for (size_t i = 0; i < sm->n; i++)
		syscall(SYS_munmap, (void *)(uintptr_t)sm->start[i],
		        (size_t)(sm->end[i] - sm->start[i]));
}
#endif

enum { CORE_CAP = 256 << 20 };

/* What __builtin_trap raises: ud2 on x86_64, brk on aarch64. */
#if defined(__aarch64__)
#define TRAP_SIGNAL SIGTRAP
#else
#define TRAP_SIGNAL SIGILL
#endif

/* The child: never returns. */
static void crash_child(const struct fixture *f)
{
	signal(TRAP_SIGNAL, SIG_DFL); /* cmocka catches SIGILL */
	/*
	 * A core of a few MB is expected; the cap keeps a mistake (a shadow
	 * left mapped under qemu) from filling the disk.  qemu-user and the
	 * kernel both stop writing at RLIMIT_CORE.
	 */
	struct rlimit lim;
	if (getrlimit(RLIMIT_CORE, &lim) == 0) {
		lim.rlim_cur = lim.rlim_max < CORE_CAP ? lim.rlim_max : CORE_CAP;
		setrlimit(RLIMIT_CORE, &lim);
	}
	/* ELF header pages only: enough for modules and build-ids, and small. */
	write_text("/proc/self/coredump_filter", "0x10");
	if (chdir(f->dir) != 0 || !dlopen(f->missing_lib, RTLD_NOW | RTLD_LOCAL) ||
	    !dlopen(f->mismatch_lib, RTLD_NOW | RTLD_LOCAL) || unlink(f->missing_lib) != 0)
		_exit(3);
	volatile int armed = 1;
#ifdef CQ_TEST_ASAN
	static struct shadow_maps sm;
	find_asan_shadow(&sm);
	drop_asan_shadow(&sm);
#endif
	crash_in_child(&armed);
	_exit(4);
}

/* Whether the kernel writes cores to a plain file in the crashing cwd. */
static bool core_pattern_is_local(void)
{
	char pattern[256] = "";
	FILE *fp = fopen("/proc/sys/kernel/core_pattern", "r");
	if (!fp)
		return false;
	bool ok = fgets(pattern, sizeof(pattern), fp) != NULL;
	fclose(fp);
	return ok && pattern[0] != '|' && !strchr(pattern, '/');
}

/*
 * The kernel's "core*" (core_pattern), or qemu-user's qemu_*.core, which
 * wins: under qemu the kernel may also dump qemu itself, as "core".
 */
static bool find_core_file(struct fixture *f)
{
	DIR *d = opendir(f->dir);
	if (!d)
		return false;
	struct dirent *e;
	bool found = false, qemu = false;
	while (!qemu && (e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		qemu = strncmp(e->d_name, "qemu_", 5) == 0 && len > 10 &&
		       strcmp(e->d_name + len - 5, ".core") == 0;
		if (qemu || (!found && strncmp(e->d_name, "core", 4) == 0)) {
			snprintf(f->core_path, sizeof(f->core_path), "%s/%s", f->dir, e->d_name);
			found = true;
		}
	}
	closedir(d);
	return found;
}

/* Two copies of the libz this test is linked with, in the temporary dir. */
static bool make_lib_copies(struct fixture *f)
{
	Dl_info info;
	if (!dladdr((void *)&crc32, &info) || !info.dli_fname)
		return false;
	snprintf(f->missing_lib, sizeof(f->missing_lib), "%s/libmissing.so", f->dir);
	snprintf(f->mismatch_lib, sizeof(f->mismatch_lib), "%s/libmismatch.so", f->dir);
	return copy_file(info.dli_fname, f->missing_lib) &&
	       copy_file(info.dli_fname, f->mismatch_lib);
}

/* 1: a core; 0: the child trapped but no core was written; -1: it did not trap. */
static int make_core(struct fixture *f)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0)
		crash_child(f);
	int status;
	/*
	 * Under qemu-user WCOREDUMP tells of the kernel's core of qemu itself,
	 * not of the guest's, which qemu writes: the file is the evidence.
	 */
	if (waitpid(pid, &status, 0) != pid || !WIFSIGNALED(status) ||
	    WTERMSIG(status) != TRAP_SIGNAL) {
		fprintf(stderr, "# child did not die of its trap (status %#x)\n", status);
		return -1;
	}
	if (!find_core_file(f))
		return 0;
	/* One that reached the cap is cut short: the shadow was left in it. */
	struct stat st;
	if (stat(f->core_path, &st) != 0 || st.st_size >= CORE_CAP) {
		fprintf(stderr, "# %s: missing or cut short at RLIMIT_CORE\n", f->core_path);
		return -1;
	}
	return 1;
}

static int group_setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	*state = f;
	if (!core_pattern_is_local()) {
		fprintf(stderr, "# core_pattern is not a plain file name: tests skipped\n");
		return 0;
	}
	snprintf(f->dir, sizeof(f->dir), "/tmp/cq-symbolizer-XXXXXX");
	if (!mkdtemp(f->dir) || !make_lib_copies(f))
		return -1;
	int made = make_core(f);
	if (made < 0)
		return -1;
	if (made == 0) {
		fprintf(stderr, "# no core was dumped (RLIMIT_CORE?): tests skipped\n");
		return 0;
	}
	if (!copy_file("/proc/self/exe", f->mismatch_lib))
		return -1;
	struct cq_error *err = cq_core_open(f->core_path, NULL, &f->core);
	if (!err)
		err = cq_symbolizer_create(f->core, NULL, NULL, &f->sym);
	if (err) {
		fprintf(stderr, "# %s\n", err->message);
		cq_error_free(err);
		return -1;
	}
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static int group_teardown(void **state)
{
	struct fixture *f = *state;
	cq_symbolizer_destroy(f->sym);
	if (f->core)
		cq_core_close(f->core);
	if (f->dir[0])
		nftw(f->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

/* ---- helpers ---------------------------------------------------------------------- */

static struct fixture *fixture_or_skip(void **state)
{
	struct fixture *f = *state;
	if (!f->sym)
		skip();
	return f;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = s ? strlen(s) : 0, m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static void check_frame(const struct cq_symbol_frame *frame, const char *function, int line,
                        bool inlined)
{
	if (!frame->function || strcmp(frame->function, function) != 0)
		fail_msg("function %s, expected %s", frame->function ? frame->function : "(null)",
		         function);
	if (!ends_with(frame->file, "/test_symbolizer.c"))
		fail_msg("file %s", frame->file ? frame->file : "(null)");
	assert_int_equal(frame->line, line);
	assert_int_equal(frame->inlined, inlined);
}

static void check_unknown(struct cq_symbolizer *sym, uint64_t pc, bool is_return_address)
{
	const struct cq_symbol_frame *frames;
	assert_int_equal(cq_symbolizer_lookup(sym, pc, is_return_address, &frames), 1);
	assert_null(frames[0].function);
	assert_null(frames[0].file);
	assert_int_equal(frames[0].line, 0);
	assert_false(frames[0].inlined);
}

static const struct cq_module *module_named(const struct cq_core *core, const char *part)
{
	for (size_t i = 0; i < core->nmodules; i++)
		if (strstr(core->modules[i].name, part))
			return &core->modules[i];
	return NULL;
}

/* The runtime address of a .dynsym symbol of mod, or 0. */
static uint64_t dynsym_address(const struct cq_module *mod, const char *name)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(mod->elf, scn)) != NULL) {
		GElf_Shdr shdr;
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_DYNSYM || !shdr.sh_entsize)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < shdr.sh_size / shdr.sh_entsize; i++) {
			GElf_Sym s;
			const char *n = gelf_getsym(data, (int)i, &s)
			                    ? elf_strptr(mod->elf, shdr.sh_link, s.st_name)
			                    : NULL;
			if (n && strcmp(n, name) == 0 && s.st_value)
				return s.st_value + mod->bias;
		}
	}
	return 0;
}

/* ---- tests ------------------------------------------------------------------------ */

static void test_function_entry(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	const struct cq_symbol_frame *frames;
	uint64_t pc = (uint64_t)(uintptr_t)&known_function;
	assert_int_equal(cq_symbolizer_lookup(f->sym, pc, false, &frames), 1);
	check_frame(&frames[0], "known_function", KNOWN_FUNCTION_BRACE_LINE, false);
}

/* A return address is looked up one byte back; the cache serves the repeat. */
static void test_return_address_and_cache(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	const struct cq_symbol_frame *first, *again;
	uint64_t pc = (uint64_t)(uintptr_t)&known_function;
	assert_int_equal(cq_symbolizer_lookup(f->sym, pc, false, &first), 1);
	assert_int_equal(cq_symbolizer_lookup(f->sym, pc + 1, true, &again), 1);
	assert_ptr_equal(first, again);
}

/*
 * The trap sits in crash_inline_helper, inlined into crash_inline_middle,
 * inlined into crash_in_child: two inline frames, each outer one at the
 * line of the call it made.
 */
static void test_inline_frames_at_crash(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	const struct cq_core_thread *t = cq_core_crashed_thread(f->core);
	assert_non_null(t);
	uint64_t pc = t->regs.value[f->core->arch->pc_reg];
	assert_true(pc >= (uint64_t)(uintptr_t)&crash_in_child);
	const struct cq_symbol_frame *frames;
	size_t n = cq_symbolizer_lookup(f->sym, pc, false, &frames);
	assert_int_equal(n, 3);
	check_frame(&frames[0], "crash_inline_helper", HELPER_TRAP_LINE, true);
	check_frame(&frames[1], "crash_inline_middle", HELPER_CALL_LINE, true);
	check_frame(&frames[2], "crash_in_child", MIDDLE_CALL_LINE, false);
}

static void test_libc_function(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	uint64_t pc = (uint64_t)(uintptr_t)&abort;
	const struct cq_module *libc = cq_core_module_at(f->core, pc);
	assert_non_null(libc);
	assert_non_null(strstr(libc->name, "/libc.so"));
	const struct cq_symbol_frame *frames;
	size_t n = cq_symbolizer_lookup(f->sym, pc, false, &frames);
	assert_true(n >= 1);
	char *debug = cq_debuginfo_find(libc, NULL);
	if (debug) {
		/* libc6-dbg is installed: DWARF names the function as gdb does, by
		 * its linkage name (glibc's alias macros make it __GI_abort), keeps
		 * the symbol table's name beside it, and names the source too. */
		assert_string_equal(frames[n - 1].function, "__GI_abort");
		assert_string_equal(frames[n - 1].symbol, "abort");
		assert_true(ends_with(frames[n - 1].file, "/abort.c"));
		assert_true(frames[n - 1].line > 0);
	} else {
		assert_string_equal(frames[n - 1].function, "abort");
		assert_null(frames[n - 1].symbol);
	}
	free(debug);
}

/* glibc's .symtab spells versions into names; frames keep the bare name. */
static void test_symbol_version_dropped(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	uint64_t pc = (uint64_t)(uintptr_t)&pthread_kill + 1;
	const struct cq_module *libc = cq_core_module_at(f->core, pc);
	if (!libc || !strstr(libc->name, "/libc.so"))
		skip(); /* a sanitizer runtime may interpose it */
	const struct cq_symbol_frame *frames;
	size_t n = cq_symbolizer_lookup(f->sym, pc, false, &frames);
	const struct cq_symbol_frame *outer = &frames[n - 1];
	assert_string_equal(outer->symbol ? outer->symbol : outer->function, "pthread_kill");
}

/* The vdso has no file; it is symbolized from the core's copy of it. */
static void test_vdso_function(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	const struct cq_module *vdso = module_named(f->core, "[vdso]");
	if (!vdso || vdso->status != CQ_MODULE_FOUND)
		skip();
	uint64_t pc = dynsym_address(vdso, "__vdso_clock_gettime");
	assert_true(pc >= vdso->start && pc < vdso->end);
	const struct cq_symbol_frame *frames;
	assert_int_equal(cq_symbolizer_lookup(f->sym, pc, false, &frames), 1);
	assert_non_null(frames[0].function);
	assert_non_null(strstr(frames[0].function, "clock_gettime"));
}

static void test_unmapped_address(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	check_unknown(f->sym, 0x10, false);
	check_unknown(f->sym, 0, true);
	check_unknown(f->sym, UINT64_MAX - 15, false);
}

/* Modules whose file is gone or differs give no names, never wrong ones. */
static void test_missing_and_mismatched_modules(void **state)
{
	struct fixture *f = fixture_or_skip(state);
	const struct cq_module *missing = module_named(f->core, "libmissing.so");
	const struct cq_module *mismatch = module_named(f->core, "libmismatch.so");
	if (f->core->mappings_from_link_map) {
		/*
		 * qemu-user's core: no NT_FILE, and none of a read-only mapping
		 * that starts with an ELF header, so modules come from the
		 * loader's list and their headers from the files.  The deleted
		 * library cannot be placed at all; the replaced one cannot be
		 * told from the file now at its path (no build-id in the core).
		 */
		assert_null(missing);
		assert_non_null(mismatch);
		fprintf(stderr, "# core without NT_FILE: a replaced library is not detected\n");
		skip();
	}
	assert_non_null(missing);
	assert_non_null(mismatch);
	assert_int_equal(missing->status, CQ_MODULE_MISSING);
	assert_int_equal(mismatch->status, CQ_MODULE_MISMATCH);
	uint64_t step = (missing->end - missing->start) / 8;
	for (uint64_t pc = missing->start; pc < missing->end; pc += step)
		check_unknown(f->sym, pc, false);
	step = (mismatch->end - mismatch->start) / 8;
	for (uint64_t pc = mismatch->start; pc < mismatch->end; pc += step)
		check_unknown(f->sym, pc, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_function_entry),
	    cmocka_unit_test(test_return_address_and_cache),
	    cmocka_unit_test(test_inline_frames_at_crash),
	    cmocka_unit_test(test_libc_function),
	    cmocka_unit_test(test_symbol_version_dropped),
	    cmocka_unit_test(test_vdso_function),
	    cmocka_unit_test(test_unmapped_address),
	    cmocka_unit_test(test_missing_and_mismatched_modules),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
