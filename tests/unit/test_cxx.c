/*
 * test_cxx.c - the "cxx" runtime's reading of a module's C++20 coroutines
 * (unwind/async/cxx.c), through the runtime seam's warm hook on a target
 * made here over a corpus executable (its own DWARF, a cache that keeps
 * what is put): gcc's NAME.Frame and clang's __coro_frame_ty frame layouts
 * are read by the one reader.  Oracles, outside coreq: readelf -s (the
 * coroutines: gcc's NAME.Frame.actor functions, clang's NAME.resume ones)
 * and readelf --debug-dump=info (each frame type's byte size and its
 * promise member's offset).  Then the cached blob serves a second warm
 * without DWARF, and a damaged one is rejected and rebuilt.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <elfutils/libdw.h>

#include "libcore/analysis/unwind_target.h"
#include "libcore/base/arch.h"
#include "libcore/model/module.h"
#include "tests/unit/corpus.h"
#include "unwind/async/cxx_types_blob.h"
#include "unwind/async/runtime.h"

struct fake {
	struct cq_module mod;
	Dwarf *dwarf;
	bool no_dwarf; /* the second warm: the cache must serve */
	uint8_t *blob; /* what the cxx runtime put */
	size_t len;
	bool damage; /* serve it with a byte flipped */
	unsigned rejects;
};

static struct Dwarf *fake_dwarf(void *ctx, size_t m)
{
	(void)m;
	struct fake *f = ctx;
	if (f->no_dwarf)
		return NULL;
	if (!f->dwarf)
		f->dwarf = dwarf_begin_elf(f->mod.elf, DWARF_C_READ, NULL);
	return f->dwarf;
}

static bool is_cxx(const struct cq_target_blob *b)
{
	return strcmp(b->runtime, "cxx") == 0 && strcmp(b->name, "types") == 0;
}

static uint8_t *fake_get(void *ctx, size_t m, const struct cq_target_blob *b, size_t *len)
{
	(void)m;
	struct fake *f = ctx;
	if (!is_cxx(b) || b->format != CQ_CXX_TYPES_BLOB_FORMAT || !f->blob)
		return NULL;
	uint8_t *copy = malloc(f->len);
	assert_non_null(copy);
	memcpy(copy, f->blob, f->len);
	if (f->damage)
		copy[f->len / 2] ^= 0x40;
	*len = f->len;
	return copy;
}

static void fake_put(void *ctx, size_t m, const struct cq_target_blob *b, const uint8_t *data,
                     size_t len)
{
	(void)m;
	struct fake *f = ctx;
	if (!is_cxx(b))
		return;
	free(f->blob);
	f->blob = malloc(len);
	assert_non_null(f->blob);
	memcpy(f->blob, data, len);
	f->len = len;
}

static void fake_reject(void *ctx)
{
	((struct fake *)ctx)->rejects++;
}

static const struct cq_unwind_target_ops fake_ops = {
    .dwarf = fake_dwarf, .cache_get = fake_get, .cache_put = fake_put, .cache_reject = fake_reject};

/* cq_async_warm over f's module: the cxx runtime's figures. */
static void warm(struct fake *f, uint64_t *types, bool *cached)
{
	struct cq_target_module view = cq_core_target_module_view(&f->mod);
	view.found = true;
	struct cq_unwind_target t = {
	    .ops = &fake_ops, .ctx = f, .arch = &cq_arch_x86_64, .modules = &view, .nmodules = 1};
	struct cq_stats figures = {0};
	char *text = NULL;
	assert_null(cq_async_warm(&t, 0, &figures, &text));
	const struct cq_stat *n = cq_stats_find(&figures, "cxx_types");
	const struct cq_stat *c = cq_stats_find(&figures, "cxx_cached");
	assert_true(n && c);
	*types = n->u;
	*cached = c->b;
	char want[64];
	snprintf(want, sizeof(want), "C++ coroutines %llu", (unsigned long long)*types);
	if (*types) /* a module without coroutines says nothing */
		assert_non_null(strstr(text, want));
	else
		assert_null(strstr(text, "C++"));
	free(text);
	cq_stats_free(&figures);
}

/* How many FUNC symbols of exe end with suffix (readelf -s). */
static size_t count_functions(const char *exe, const char *suffix)
{
	char cmd[800], line[1024];
	snprintf(cmd, sizeof(cmd), "readelf -sW '%s'", exe);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t n = 0, ls = strlen(suffix);
	while (fgets(line, sizeof(line), p)) {
		char num[32], value[32], size[32], type[32], bind[32], vis[32], ndx[32], name[700];
		if (sscanf(line, "%31s %31s %31s %31s %31s %31s %31s %699s", num, value, size, type,
		           bind, vis, ndx, name) != 8 ||
		    strcmp(type, "FUNC") != 0)
			continue;
		size_t ln = strlen(name);
		n += ln > ls && strcmp(name + ln - ls, suffix) == 0;
	}
	pclose(p);
	return n;
}

/* Each frame type's "SIZE PROMISE_OFFSET", by readelf --debug-dump=info, sorted. */
struct pair {
	uint64_t size, promise;
};

static int cmp_pair(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;
	if (x->size != y->size)
		return (x->size > y->size) - (x->size < y->size);
	return (x->promise > y->promise) - (x->promise < y->promise);
}

static size_t frame_types(const char *exe, struct pair *out, size_t max)
{
	/* Depth from " <N><off>:", the tag from its last field; members one level below a frame
	 * type. */
	static const char prog[] =
	    "function emit() { if (size != \"\" && prom != \"\") print size, prom; ins = 0 }"
	    "/^ *<[0-9]+><[0-9a-f]+>: Abbrev Number/ {"
	    "  d = $1; sub(/^</, \"\", d); sub(/>.*/, \"\", d); d += 0;"
	    "  if (ins && d <= sd) emit(); tag = $NF; cd = d; member = \"\"; next }"
	    "/DW_AT_name/ { nm = $NF;"
	    "  if (tag == \"(DW_TAG_structure_type)\" && (nm ~ /\\.Frame$/ || nm == "
	    "\"__coro_frame_ty\")) {"
	    "    if (ins) emit(); ins = 1; sd = cd; size = \"\"; prom = \"\" }"
	    "  else if (ins && cd == sd + 1 && tag == \"(DW_TAG_member)\") member = nm; next }"
	    "/DW_AT_byte_size/ { if (ins && cd == sd && size == \"\") size = $NF; next }"
	    "/DW_AT_data_member_location/ { if (ins && cd == sd + 1 &&"
	    "  (member == \"_Coro_promise\" || member == \"__promise\")) prom = $NF; next }"
	    "END { if (ins) emit() }";
	char cmd[2048], line[256];
	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=info -W '%s' 2>/dev/null | awk '%s'", exe,
	         prog);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t n = 0;
	unsigned long long s, o;
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, "%llu %llu", &s, &o) == 2 && n < max)
			out[n++] = (struct pair){s, o};
	pclose(p);
	qsort(out, n, sizeof(*out), cmp_pair);
	return n;
}

static void check_case(const char *name, bool clang)
{
	struct corpus_case c;
	CORPUS_CASE(name, &c);
	struct fake f = {0};
	assert_null(cq_module_open_elf(c.exe, &f.mod));
	uint64_t types;
	bool cached;
	warm(&f, &types, &cached);
	assert_false(cached);
	size_t want = count_functions(c.exe, clang ? ".resume" : ".Frame.actor");
	assert_true(want > 0);
	assert_int_equal(types, want);
	/* The layouts read, against readelf's frame types. */
	struct cq_cxx_type_row *rows;
	size_t n;
	bool dwarf;
	assert_non_null(f.blob);
	assert_null(cq_cxx_types_blob_decode(f.blob, f.len, &rows, &n, &dwarf));
	assert_true(dwarf);
	assert_int_equal(n, want);
	struct pair got[256], oracle[256];
	size_t ngot = 0;
	for (size_t i = 0; i < n && ngot < 256; i++) {
		assert_int_equal(rows[i].clang, clang);
		if (!clang || rows[i].layout)
			got[ngot++] = (struct pair){rows[i].size, rows[i].promise_off};
	}
	free(rows);
	qsort(got, ngot, sizeof(*got), cmp_pair);
	size_t noracle = frame_types(c.exe, oracle, 256);
	assert_true(ngot > 0);
	assert_int_equal(ngot, noracle);
	assert_memory_equal(got, oracle, ngot * sizeof(*got));
	/* Again without DWARF: the cache serves the same count. */
	f.no_dwarf = true;
	warm(&f, &types, &cached);
	assert_true(cached);
	assert_int_equal(types, want);
	/*
	 * A damaged blob: rejected once, read again from the module (without
	 * DWARF: gcc's coroutines need their frame type, clang's do not).
	 */
	f.damage = true;
	warm(&f, &types, &cached);
	assert_false(cached);
	assert_int_equal(f.rejects, 1);
	assert_int_equal(types, clang ? want : 0);
	if (f.dwarf)
		dwarf_end(f.dwarf);
	free(f.blob);
	cq_module_destroy(&f.mod);
}

static void test_gcc_frames(void **state)
{
	(void)state;
	check_case("cxx_task.O2g", false);
}

static void test_clang_frames(void **state)
{
	(void)state;
	check_case("cxx_task.clangO2g", true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_gcc_frames),
	    cmocka_unit_test(test_clang_frames),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
