/*
 * test_unwind_target.c - the core as unwind/ sees it
 * (libcore/analysis/unwind_target.h): the one struct cq_unwind_target over
 * a core.
 *
 * Oracles, all outside coreq: elfutils' eu-readelf -l (the core's PT_LOAD
 * segments: their bytes in the core file, their flags, their bounds),
 * eu-readelf -n (each thread's tid, rsp and fs.base, in note order),
 * eu-unstrip -n --core (the modules, their load addresses and files),
 * binutils' readelf -s and -S (a symbol's value and size, .text's bytes in
 * the executable), the expect file (pid, thread count) and what the corpus
 * program threads8.c leaves in its globals at the crash (parked == 8,
 * where[i] == i + 1), and gdb reading glibc's struct pthread with libc's
 * debug info (pthread_getspecific's entries).  The cache tests write blobs
 * the test made and damaged itself.
 */
#include <fcntl.h>
#include <gelf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <elfutils/libdw.h>

#include "libcore/analysis/stacktrace.h"
#include "libcore/analysis/unwind_target.h"
#include "libcore/db/cache.h"
#include "libcore/model/core.h"
#include "libcore/model/module.h"
#include "libcore/symbols/provenance.h"
#include "tests/unit/corpus.h"
#include "unwind/async/rust_index_blob.h"
#include "unwind/cfi_table.h"

#define MAX_LOADS   256
#define MAX_THREADS 64
#define MAX_MODS    32

struct load {
	uint64_t offset, vaddr, filesz, memsz;
	bool exec;
};

struct thread_note {
	long tid;
	uint64_t rsp, fs_base;
};

struct unstrip_mod {
	uint64_t start, size;
	char file[512], name[512];
};

struct oracle {
	struct load load[MAX_LOADS];
	size_t nload;
	struct thread_note thread[MAX_THREADS];
	size_t nthread;
	struct unstrip_mod mod[MAX_MODS];
	size_t nmod;
};

static FILE *run(const char *fmt, const char *arg)
{
	char cmd[800];
	snprintf(cmd, sizeof(cmd), fmt, arg);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	return p;
}

/* "  LOAD 0x009000 0x000055efa9385000 0x0 0x001000 0x001000 R E 0x1000" */
static void read_loads(const char *core, struct oracle *o)
{
	char line[512];
	FILE *p = run("eu-readelf -l '%s'", core);
	while (fgets(line, sizeof(line), p)) {
		char *tok[16];
		size_t n = 0;
		for (char *t = strtok(line, " \t\n"); t && n < 16; t = strtok(NULL, " \t\n"))
			tok[n++] = t;
		if (n < 7 || strcmp(tok[0], "LOAD") != 0 || o->nload == MAX_LOADS)
			continue;
		struct load *l = &o->load[o->nload++];
		l->offset = strtoull(tok[1], NULL, 16);
		l->vaddr = strtoull(tok[2], NULL, 16);
		l->filesz = strtoull(tok[4], NULL, 16);
		l->memsz = strtoull(tok[5], NULL, 16);
		for (size_t i = 6; i + 1 < n; i++) /* flags sit between memsz and align */
			l->exec = l->exec || strchr(tok[i], 'E');
	}
	pclose(p);
	assert_true(o->nload > 0);
}

static uint64_t hex_after(const char *line, const char *key)
{
	const char *at = strstr(line, key);
	return at ? strtoull(at + strlen(key), NULL, 0) : 0;
}

static void read_threads(const char *core, struct oracle *o)
{
	char line[512];
	FILE *p = run("eu-readelf -n '%s'", core);
	struct thread_note *t = NULL;
	bool want_pid = false;
	while (fgets(line, sizeof(line), p)) {
		if (strstr(line, " PRSTATUS") && o->nthread < MAX_THREADS) {
			t = &o->thread[o->nthread++];
			want_pid = true;
		} else if (strstr(line, " PRPSINFO") || strstr(line, " SIGINFO")) {
			t = NULL;
		} else if (t && want_pid && strncmp(line + strspn(line, " "), "pid:", 4) == 0) {
			t->tid = atol(line + strspn(line, " ") + 4);
			want_pid = false;
		} else if (t && strstr(line, "rsp:")) {
			t->rsp = hex_after(line, "rsp:");
		}
		if (t && strstr(line, "fs.base:"))
			t->fs_base = hex_after(line, "fs.base:");
	}
	pclose(p);
	assert_true(o->nthread > 0);
}

/* "0x55efa9385000+0x5000 ID@0x55efa9385368 FILE DEBUGFILE NAME" */
static void read_modules(const char *core, struct oracle *o)
{
	char line[1600];
	FILE *p = run("eu-unstrip -n --core '%s'", core);
	while (fgets(line, sizeof(line), p) && o->nmod < MAX_MODS) {
		struct unstrip_mod *m = &o->mod[o->nmod];
		char id[300], debug[512];
		unsigned long long start, size;
		if (sscanf(line, "%llx+%llx %299s %511s %511s %511s", &start, &size, id, m->file,
		           debug, m->name) != 6)
			continue;
		m->start = start;
		m->size = size;
		o->nmod++;
	}
	pclose(p);
	assert_true(o->nmod > 0);
}

static struct oracle *oracle_of(const char *core)
{
	static struct oracle o;
	memset(&o, 0, sizeof(o));
	read_loads(core, &o);
	read_threads(core, &o);
	read_modules(core, &o);
	return &o;
}

/* A symbol's value and size as readelf -s prints them; false when absent. */
static bool readelf_symbol(const char *file, const char *name, uint64_t *value, uint64_t *size)
{
	char line[512];
	bool found = false;
	FILE *p = run("readelf -s -W '%s'", file);
	while (fgets(line, sizeof(line), p)) {
		unsigned long long v, s;
		char type[32], bind[32], vis[32], ndx[32], sym[256];
		if (sscanf(line, " %*[0-9]: %llx %llu %31s %31s %31s %31s %255s", &v, &s, type,
		           bind, vis, ndx, sym) == 7 &&
		    strcmp(sym, name) == 0 && strcmp(ndx, "UND") != 0 && !found) {
			*value = v;
			*size = s;
			found = true;
		}
	}
	pclose(p);
	return found;
}

/* .text's address and file offset in file, from readelf -S. */
static void readelf_text(const char *file, uint64_t *addr, uint64_t *offset)
{
	char line[512];
	bool found = false;
	FILE *p = run("readelf -S -W '%s'", file);
	while (fgets(line, sizeof(line), p)) {
		char *b = strchr(line, ']');
		char name[64], type[32];
		unsigned long long a, off;
		if (b && sscanf(b + 1, "%63s %31s %llx %llx", name, type, &a, &off) == 4 &&
		    strcmp(name, ".text") == 0) {
			*addr = a;
			*offset = off;
			found = true;
		}
	}
	pclose(p);
	assert_true(found);
}

static void pread_file(const char *file, uint64_t off, void *buf, size_t len)
{
	int fd = open(file, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

struct fixture {
	struct corpus_case c;
	struct cq_core *core;
	struct cq_stack_options so;
	struct cq_core_target ct;
	const struct cq_unwind_target *t;
	struct oracle *o;
};

static bool open_case(const char *name, struct fixture *f, struct cq_cache *cache)
{
	memset(f, 0, sizeof(*f));
	if (!corpus_case(name, &f->c))
		return false;
	struct cq_core_options co = {0};
	struct cq_error *err = cq_core_open(f->c.core, &co, &f->core);
	if (err)
		fail_msg("open %s: %s", f->c.core, err->message);
	cq_stack_options_default(&f->so);
	f->so.cache = cache;
	assert_null(cq_core_target_init(&f->ct, f->core, &f->so, NULL));
	f->t = &f->ct.target;
	f->o = oracle_of(f->c.core);
	return true;
}

static void close_case(struct fixture *f)
{
	cq_core_target_destroy(&f->ct);
	cq_core_close(f->core);
}

static const struct load *load_at(const struct oracle *o, uint64_t addr)
{
	for (size_t i = 0; i < o->nload; i++)
		if (addr >= o->load[i].vaddr && addr - o->load[i].vaddr < o->load[i].memsz)
			return &o->load[i];
	return NULL;
}

/* The main executable's module index in the target, found by its path. */
static size_t exe_module(const struct fixture *f)
{
	for (size_t i = 0; i < f->t->nmodules; i++)
		if (f->t->modules[i].file_path && strcmp(f->t->modules[i].file_path, f->c.exe) == 0)
			return i;
	fail_msg("no module for %s", f->c.exe);
	return 0;
}

/* Modules and threads as the notes and eu-unstrip give them. */
static void test_views(void **state)
{
	(void)state;
	struct fixture f;
	if (!open_case("threads8.O0", &f, NULL))
		return;
	const struct cq_unwind_target *t = f.t;
	assert_ptr_equal(t->ops, f.ct.target.ops);
	assert_ptr_equal(t->ctx, &f.ct);
	assert_ptr_equal(t->arch, f.core->arch);
	assert_ptr_equal(t->mem, &f.core->mem);
	assert_int_equal(t->return_address_mask, 0); /* x86_64: no pointer authentication */

	/* Threads: the expect file's count and pid first, eu-readelf's tids in note order. */
	assert_int_equal(t->nthreads, f.c.threads);
	assert_int_equal(t->nthreads, f.o->nthread);
	assert_int_equal(t->threads[0].tid, f.c.pid);
	for (size_t i = 0; i < t->nthreads; i++) {
		assert_int_equal(t->threads[i].tid, f.o->thread[i].tid);
		assert_ptr_equal(t->threads[i].handle, &f.core->threads[i]);
		assert_int_equal(t->threads[i].regs->value[f.core->arch->sp_reg],
		                 f.o->thread[i].rsp);
	}

	/* Modules: eu-unstrip's, each at its load address, found on this host. */
	assert_int_equal(t->nmodules, f.core->nmodules);
	for (size_t k = 0; k < f.o->nmod; k++) {
		const struct unstrip_mod *u = &f.o->mod[k];
		ptrdiff_t i = cq_target_module_at(t, u->start);
		assert_true(i >= 0);
		const struct cq_target_module *m = &t->modules[i];
		assert_int_equal(m->start, u->start);
		assert_ptr_equal(m->handle, &f.core->modules[i]);
		if (strstr(u->name, "vdso")) {
			assert_true(m->is_vdso);
		} else {
			assert_false(m->is_vdso);
			assert_true(m->found);
			assert_non_null(m->elf);
			assert_non_null(m->file_path);
			/* eu-unstrip names the file the core mapped (or "." for the main one). */
			if (strcmp(u->file, ".") != 0) {
				char a[4096], b[4096];
				assert_non_null(realpath(u->file, a));
				assert_non_null(realpath(m->file_path, b));
				assert_string_equal(a, b);
			}
		}
	}
	/* The executable: PIE, its first PT_LOAD at 0, so its bias is its start. */
	size_t e = exe_module(&f);
	assert_int_equal(t->modules[e].bias, t->modules[e].start);
	assert_true(t->modules[e].end > t->modules[e].start);
	assert_int_equal(cq_target_module_at(t, t->modules[e].end - 1), (ptrdiff_t)e);
	close_case(&f);
}

/* read, is_code and stack_bounds against the PT_LOAD segments. */
static void test_memory_ops(void **state)
{
	(void)state;
	struct fixture f;
	if (!open_case("threads8.O0", &f, NULL))
		return;
	const struct cq_unwind_target *t = f.t;
	const struct cq_unwind_target_ops *ops = t->ops;
	const struct oracle *o = f.o;

	/* Every dumped segment reads as the core file holds it, word by word
	 * (through the 1 KiB block cache, over more blocks than it holds), and
	 * in one read that crosses a block edge. */
	size_t checked = 0;
	for (size_t i = 0; i < o->nload; i++) {
		const struct load *l = &o->load[i];
		if (l->filesz < 4096)
			continue;
		size_t span = l->filesz < 65536 ? (size_t)l->filesz : 65536;
		uint8_t *want = malloc(span), *got = malloc(span);
		assert_non_null(want);
		assert_non_null(got);
		pread_file(f.c.core, l->offset, want, span);
		for (size_t at = 0; at + 8 <= span; at += 8)
			assert_true(ops->read(t->ctx, l->vaddr + at, got + at, 8));
		assert_memory_equal(got, want, span);
		memset(got, 0, 512);
		assert_true(
		    ops->read(t->ctx, l->vaddr + 2048 + 128, got, 512)); /* inside a block */
		assert_memory_equal(got, want + 2048 + 128, 512);
		memset(got, 0, 64);
		assert_true(ops->read(t->ctx, l->vaddr + 1024 - 20, got, 40));
		assert_memory_equal(got, want + 1024 - 20, 40);
		/* Again: the same bytes from the block cache. */
		assert_true(ops->read(t->ctx, l->vaddr + 1024 - 20, got, 40));
		assert_memory_equal(got, want + 1024 - 20, 40);
		free(want);
		free(got);
		checked++;
	}
	assert_true(checked > 0);

	/* Two dumped segments end to end: one read crosses from one to the next. */
	bool crossed = false;
	for (size_t i = 0; i + 1 < o->nload && !crossed; i++) {
		const struct load *a = &o->load[i], *b = &o->load[i + 1];
		if (a->vaddr + a->memsz != b->vaddr || a->filesz != a->memsz || b->filesz < 8)
			continue;
		uint8_t want[16], got[16];
		pread_file(f.c.core, a->offset + a->filesz - 8, want, 8);
		pread_file(f.c.core, b->offset, want + 8, 8);
		assert_true(ops->read(t->ctx, b->vaddr - 8, got, 16));
		assert_memory_equal(got, want, 16);
		crossed = true;
	}
	assert_true(crossed);

	/* Text the core left out reads from the executable on disk. */
	size_t e = exe_module(&f);
	uint64_t text_addr, text_off;
	readelf_text(f.c.exe, &text_addr, &text_off);
	uint8_t want[64], got[64];
	pread_file(f.c.exe, text_off, want, sizeof(want));
	const struct load *tl = load_at(o, t->modules[e].bias + text_addr);
	assert_non_null(tl);
	assert_int_equal(tl->filesz, 0); /* the default coredump_filter drops it */
	assert_true(tl->exec);
	assert_true(ops->read(t->ctx, t->modules[e].bias + text_addr, got, sizeof(got)));
	assert_memory_equal(got, want, sizeof(got));

	/* Nothing is mapped at 0x1000. */
	assert_null(load_at(o, 0x1000));
	assert_false(ops->read(t->ctx, 0x1000, got, 8));

	/* is_code: the E flag of the segment, at both ends; false outside them all. */
	for (size_t i = 0; i < o->nload; i++) {
		const struct load *l = &o->load[i];
		assert_int_equal(ops->is_code(t->ctx, l->vaddr), l->exec);
		assert_int_equal(ops->is_code(t->ctx, l->vaddr + l->memsz - 1), l->exec);
	}
	assert_false(ops->is_code(t->ctx, 0x1000));

	/* stack_bounds: each thread's rsp lies in the segment it reports. */
	for (size_t i = 0; i < o->nthread; i++) {
		const struct load *l = load_at(o, o->thread[i].rsp);
		assert_non_null(l);
		uint64_t lo = 0, hi = 0;
		assert_true(ops->stack_bounds(t->ctx, o->thread[i].rsp, &lo, &hi));
		assert_int_equal(lo, l->vaddr);
		assert_int_equal(hi, l->vaddr + l->memsz);
	}
	/* And for any address: the whole mapping, dumped or not (guard pages, text). */
	for (size_t i = 0; i < o->nload; i++) {
		uint64_t lo = 0, hi = 0;
		assert_true(ops->stack_bounds(t->ctx, o->load[i].vaddr, &lo, &hi));
		assert_int_equal(lo, o->load[i].vaddr);
		assert_int_equal(hi, o->load[i].vaddr + o->load[i].memsz);
	}
	uint64_t lo = 7, hi = 7;
	assert_false(ops->stack_bounds(t->ctx, 0x1000, &lo, &hi));

	/* cfi_at: the executable's table and bias for a pc in its text; none outside modules. */
	uint64_t bias = 0;
	assert_non_null(ops->cfi_at(t->ctx, t->modules[e].bias + text_addr, &bias));
	assert_int_equal(bias, t->modules[e].bias);
	assert_null(ops->cfi_at(t->ctx, 0x1000, &bias));
	assert_null(cq_core_target_cfi_error(&f.core->modules[e]));
	assert_false(f.ct.out_of_memory);
	close_case(&f);
}

/* Symbols of the executable, at readelf's value plus the bias, and what the program left in them.
 */
static void test_find_symbols(void **state)
{
	(void)state;
	struct fixture f;
	if (!open_case("threads8.O0", &f, NULL))
		return;
	const struct cq_unwind_target *t = f.t;
	size_t e = exe_module(&f);
	uint64_t bias = t->modules[e].bias;
	/* More than one batch of 8, a name no table has, and one found already. */
	const char *names[] = {"parked",      "released",    "where", "crash_main", "worker_main",
	                       "wait_here_0", "wait_here_7", "park",  "lock",       "main"};
	enum { N = sizeof(names) / sizeof(names[0]) };
	struct cq_target_symbol q[N + 2];
	for (size_t i = 0; i < N; i++)
		q[i] = (struct cq_target_symbol){.name = names[i]};
	q[N] = (struct cq_target_symbol){.name = "cq_no_such_symbol"};
	q[N + 1] = (struct cq_target_symbol){
	    .name = "main", .found = true, .addr = 0x1234, .size = 5}; /* left alone */
	assert_int_equal(t->ops->find_symbols(t->ctx, e, q, N + 2), N + 1);
	for (size_t i = 0; i < N; i++) {
		uint64_t value, size;
		assert_true(readelf_symbol(f.c.exe, names[i], &value, &size));
		if (!q[i].found)
			fail_msg("%s not found", names[i]);
		assert_string_equal(q[i].name, names[i]);
		assert_int_equal(q[i].addr, bias + value);
		assert_int_equal(q[i].size, size);
	}
	assert_false(q[N].found);
	assert_true(q[N + 1].found);
	assert_int_equal(q[N + 1].addr, 0x1234);
	assert_int_equal(q[N + 1].size, 5);

	/* threads8.c at its crash: eight workers parked, none released, where[i] == i + 1. */
	int32_t v;
	assert_true(t->ops->read(t->ctx, q[0].addr, &v, sizeof(v)));
	assert_int_equal(v, 8);
	assert_true(t->ops->read(t->ctx, q[1].addr, &v, sizeof(v)));
	assert_int_equal(v, 0);
	for (int32_t i = 0; i < 8; i++) {
		assert_true(t->ops->read(t->ctx, q[2].addr + 4 * (uint64_t)i, &v, sizeof(v)));
		assert_int_equal(v, i + 1);
	}
	close_case(&f);
}

/*
 * The dwarf op: the executable's DWARF (readelf -S lists .debug_info), the
 * same handle on every call, whose compile unit at crash_main (readelf -s's
 * value) is threads8.c's; none for a module past the list or the vdso.
 */
static void test_dwarf(void **state)
{
	(void)state;
	struct fixture f;
	if (!open_case("threads8.O0", &f, NULL))
		return;
	const struct cq_unwind_target *t = f.t;
	size_t e = exe_module(&f);
	char line[512];
	bool has_info = false;
	FILE *p = run("readelf -S -W '%s'", f.c.exe);
	while (fgets(line, sizeof(line), p))
		has_info = has_info || strstr(line, " .debug_info ");
	pclose(p);
	Dwarf *dw = t->ops->dwarf(t->ctx, e);
	if (!has_info) {
		assert_null(dw);
		close_case(&f);
		return;
	}
	assert_non_null(dw);
	assert_ptr_equal(t->ops->dwarf(t->ctx, e), dw);
	uint64_t value, size;
	assert_true(readelf_symbol(f.c.exe, "crash_main", &value, &size));
	Dwarf_Die cu;
	assert_non_null(dwarf_addrdie(dw, value, &cu));
	const char *name = dwarf_diename(&cu);
	assert_non_null(name);
	assert_non_null(strstr(name, "threads8.c"));
	assert_null(t->ops->dwarf(t->ctx, t->nmodules));
	for (size_t m = 0; m < t->nmodules; m++)
		if (t->modules[m].is_vdso)
			assert_null(t->ops->dwarf(t->ctx, m));
	close_case(&f);
}

/* gdb's view of one thread's entry for a key: "tls TID SEQ DATA KEYSEQ". */
struct gdb_tls {
	long tid;
	uint64_t seq, data, key_seq;
};

static size_t gdb_tls(const struct corpus_case *c, const char *key_expr, const char *entry,
                      struct gdb_tls *out, size_t cap)
{
	char cmd[2000], line[512];
	snprintf(cmd, sizeof(cmd),
	         "gdb -batch -nx -ex 'set $k = %s' "
	         "-ex 'thread apply all -q printf \"tls %%d %%lu %%lu %%lu\\n\", "
	         "((struct pthread *)$fs_base)->tid, %s.seq, %s.data, __pthread_keys[$k].seq' "
	         "'%s' '%s' 2>/dev/null",
	         key_expr, entry, entry, c->exe, c->core);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t n = 0;
	while (fgets(line, sizeof(line), p)) {
		unsigned long long seq, data, kseq;
		long tid;
		if (n < cap &&
		    sscanf(line, "tls %ld %llu %llu %llu", &tid, &seq, &data, &kseq) == 4)
			out[n++] =
			    (struct gdb_tls){.tid = tid, .seq = seq, .data = data, .key_seq = kseq};
	}
	pclose(p);
	return n;
}

static size_t thread_of(const struct fixture *f, long tid)
{
	for (size_t i = 0; i < f->t->nthreads; i++)
		if (f->t->threads[i].tid == tid)
			return i;
	fail_msg("no thread %ld", tid);
	return 0;
}

/*
 * pthread_getspecific as glibc keeps it: async_coro's folly key (40, in a
 * second-level block, set by both threads), a dummy key created before it
 * and never set, and a key past PTHREAD_KEYS_MAX.
 */
static void test_tls(void **state)
{
	(void)state;
	struct fixture f;
	if (!open_case("async_coro-cross.O2key32", &f, NULL))
		return;
	const struct cq_unwind_target *t = f.t;
	for (size_t i = 0; i < t->nthreads; i++) {
		assert_true(f.o->thread[i].fs_base != 0);
		assert_true(t->ops->thread_has_tp(t->ctx, i));
	}
	/* The host's libc is the one the core mapped (eu-unstrip found it), so its layout is read.
	 */
	assert_true(t->ops->tls_prepare(t->ctx));
	assert_true(f.ct.tls.from_libc);

	size_t e = exe_module(&f);
	struct cq_target_symbol q = {.name = "folly_async_stack_root_tls_key"};
	assert_int_equal(t->ops->find_symbols(t->ctx, e, &q, 1), 1);
	uint32_t key;
	assert_true(t->ops->read(t->ctx, q.addr, &key, sizeof(key)));
	assert_true(key >= 32); /* DUMMY_KEYS=40 created before it */

	struct gdb_tls g[MAX_THREADS];
	size_t n =
	    gdb_tls(&f.c, "*(unsigned *)&folly_async_stack_root_tls_key",
	            "((struct pthread *)$fs_base)->specific[$k / 32][$k % 32]", g, MAX_THREADS);
	assert_int_equal(n, t->nthreads);
	for (size_t i = 0; i < n; i++) {
		size_t th = thread_of(&f, g[i].tid);
		uint64_t value = 0;
		assert_int_equal(g[i].seq, g[i].key_seq); /* set under the key's current seq */
		assert_true(g[i].data != 0);
		assert_int_equal(t->ops->tls_get(t->ctx, th, key, &value), CQ_TARGET_TLS_VALUE);
		assert_int_equal(value, g[i].data);
	}

	/* Key 3: created (a dummy), never set by any thread. */
	n = gdb_tls(&f.c, "3", "((struct pthread *)$fs_base)->specific_1stblock[3]", g,
	            MAX_THREADS);
	assert_int_equal(n, t->nthreads);
	for (size_t i = 0; i < n; i++) {
		size_t th = thread_of(&f, g[i].tid);
		uint64_t value = 7;
		assert_int_equal(g[i].seq, 0);
		assert_int_equal(g[i].data, 0);
		assert_int_equal(t->ops->tls_get(t->ctx, th, 3, &value), CQ_TARGET_TLS_NONE);
		assert_int_equal(value, 0);
	}
	/* PTHREAD_KEYS_MAX is 1024: key 1024 names no entry. */
	uint64_t value = 7;
	assert_int_equal(t->ops->tls_get(t->ctx, 0, 1024, &value), CQ_TARGET_TLS_UNREADABLE);
	close_case(&f);
}

/* The cached table reader: served, for another register count dropped, damaged rejected. */
static void test_cached_table(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("segv_null.O2", &c);
	char dir[64], path[128];
	assert_true(scratch_make(dir, sizeof(dir), "unwind-target"));
	snprintf(path, sizeof(path), "%s/cache.db", dir);
	struct cq_cache *cache;
	assert_null(cq_cache_open(path, &cache));

	struct cq_module mod;
	assert_null(cq_module_open_elf(c.exe, &mod));
	struct cq_cfi_table *built;
	assert_null(cq_cfi_table_build(mod.elf, NULL, 17, &built)); /* x86_64: 17 registers */
	uint8_t *blob;
	size_t len;
	assert_null(cq_cfi_table_serialize(built, &blob, &len));

	struct cq_cache_key key = {.build_id = "00aa", .identity = "test", .identity_len = 4};
	struct cq_cache_key other = {.build_id = "00bb", .identity = "test", .identity_len = 4};
	assert_null(cq_core_target_cached_table(cache, &key, 17)); /* nothing stored */
	assert_null(cq_core_target_cached_table(NULL, &key, 17));  /* no cache */
	cq_cache_put_table(cache, &key, CQ_CFI_TABLE_VERSION, built->nrows, blob, len);
	struct cq_cfi_table *got = cq_core_target_cached_table(cache, &key, 17);
	assert_non_null(got);
	assert_int_equal(got->nrows, built->nrows);
	assert_int_equal(got->nregs, 17);
	assert_int_equal(got->flags, built->flags);
	cq_cfi_table_free(got);
	assert_null(cq_core_target_cached_table(cache, &other, 17));
	/* A table for another architecture's register count: dropped, not counted as damage. */
	assert_null(cq_core_target_cached_table(cache, &key, 33));
	assert_int_equal(cq_cache_rejected(cache), 0);
	/* A damaged blob: dropped and counted. */
	blob[len / 2] ^= 0xff;
	cq_cache_put_table(cache, &key, CQ_CFI_TABLE_VERSION, built->nrows, blob, len / 2);
	assert_null(cq_core_target_cached_table(cache, &key, 17));
	assert_int_equal(cq_cache_rejected(cache), 1);
	free(blob);
	cq_cfi_table_free(built);
	cq_module_destroy(&mod);
	assert_null(cq_cache_close(cache));
	scratch_remove(dir);
}

/*
 * With a cache: rows compiled for the pcs met are stored back
 * (cq_core_target_store_tables) under the module's provenance, and the
 * runtimes' blobs go through cache_put/cache_get per module.
 */
static void test_with_cache(void **state)
{
	(void)state;
	char dir[64], path[128];
	assert_true(scratch_make(dir, sizeof(dir), "unwind-target"));
	snprintf(path, sizeof(path), "%s/cache.db", dir);
	struct cq_cache *cache;
	assert_null(cq_cache_open(path, &cache));
	struct fixture f;
	if (!open_case("threads8.O0", &f, cache)) {
		assert_null(cq_cache_close(cache));
		scratch_remove(dir);
		return;
	}
	const struct cq_unwind_target *t = f.t;
	size_t e = exe_module(&f);
	uint64_t value, size, bias;
	assert_true(readelf_symbol(f.c.exe, "crash_main", &value, &size));
	assert_non_null(t->ops->cfi_at(t->ctx, t->modules[e].bias + value, &bias));
	cq_core_target_store_tables(&f.ct);
	struct cq_provenance prov;
	cq_provenance_find(&prov, &f.core->modules[e], NULL);
	struct cq_cfi_table *stored =
	    cq_core_target_cached_table(cache, &prov.key, f.core->arch->nregs);
	assert_non_null(stored);
	assert_true(stored->nrows > 0);
	assert_false(stored->flags & CQ_CFI_TABLE_COMPLETE); /* only the rows met */
	assert_non_null(cq_cfi_table_lookup(stored, value));
	cq_cfi_table_free(stored);
	cq_provenance_free(&prov);

	/* A runtime's blob, per module, runtime, name and format. */
	const struct cq_target_blob b = {"some_runtime", "types", 3},
	                            other_name = {"some_runtime", "index", 3},
	                            other_runtime = {"another", "types", 3},
	                            other_format = {"some_runtime", "types", 4};
	size_t len = 0;
	assert_null(t->ops->cache_get(t->ctx, e, &b, &len));
	const uint8_t blob[] = "a runtime's blob";
	t->ops->cache_put(t->ctx, e, &b, blob, sizeof(blob));
	uint8_t *back = t->ops->cache_get(t->ctx, e, &b, &len);
	assert_non_null(back);
	assert_int_equal(len, sizeof(blob));
	assert_memory_equal(back, blob, sizeof(blob));
	free(back);
	assert_null(t->ops->cache_get(t->ctx, e, &other_name, &len));
	assert_null(t->ops->cache_get(t->ctx, e, &other_runtime, &len));
	assert_null(t->ops->cache_get(t->ctx, e, &other_format, &len));
	/* Another module's files do not serve it. */
	for (size_t m = 0; m < t->nmodules; m++)
		if (m != e && t->modules[m].found)
			assert_null(t->ops->cache_get(t->ctx, m, &b, &len));
	t->ops->cache_reject(t->ctx);
	assert_int_equal(cq_cache_rejected(cache), 1);

	/* destroy releases the views; twice is harmless. */
	cq_core_target_destroy(&f.ct);
	assert_null(f.ct.modules);
	assert_null(f.ct.threads);
	assert_null(f.ct.provenance);
	close_case(&f);
	assert_null(cq_cache_close(cache));
	scratch_remove(dir);
}

int main(void)
{
	elf_version(EV_CURRENT);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_views),        cmocka_unit_test(test_memory_ops),
	    cmocka_unit_test(test_find_symbols), cmocka_unit_test(test_tls),
	    cmocka_unit_test(test_dwarf),        cmocka_unit_test(test_cached_table),
	    cmocka_unit_test(test_with_cache),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
