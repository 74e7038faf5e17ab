/*
 * test_frame_list.c - unwound frames to named frames, inline chains
 * expanded (libcore/analysis/frame_list.h).
 *
 * The corpus's async_coro built -O2 -g (the O2fp variant) inlines small
 * helpers into their callers.  The oracle is elfutils' eu-addr2line -i
 * (what `eu-stack -i` shows): the test scans the executable's functions,
 * as readelf -s lists them, for an address eu-addr2line reports inlined
 * calls at, and checks that the frame list holds one frame per level it
 * prints, innermost first, the same functions and lines, inline kinds for
 * all but the last, which carries the kind asked for.  The module and
 * link-time offset come from eu-unstrip's load address.  Without a
 * symbolizer one unnamed frame is added.  On a non-PIE build (abort_deep,
 * readelf -h: EXEC) the offset is the pc, and a return address at a
 * function's first byte is looked up in the byte before it (not named as
 * that function).  A signal frame whose pc has no
 * name is called "<signal handler called>" (a named one keeps its name);
 * the list grows past its first allocation keeping what it held.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/analysis/frame_list.h"
#include "libcore/model/core.h"
#include "libcore/model/module.h"
#include "libcore/symbols/symbolizer.h"
#include "tests/unit/addr2line.h"
#include "tests/unit/corpus.h"
#include "unwind/frames.h"
#include "unwind/unwind.h"

/* The load address of exe in core, from eu-unstrip -n --core. */
static uint64_t unstrip_start(const char *core, const char *exe)
{
	char cmd[700], line[2048];
	snprintf(cmd, sizeof(cmd), "eu-unstrip -n --core '%s'", core);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	uint64_t start = 0;
	while (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = 0;
		size_t n = strlen(line), e = strlen(exe);
		if (n > e && strcmp(line + n - e, exe) == 0)
			start = strtoull(line, NULL, 16);
	}
	pclose(p);
	assert_true(start != 0);
	return start;
}

struct fixture {
	struct corpus_case c;
	struct cq_core *core;
	struct cq_symbolizer *sym;
	const struct cq_module *exe;
	uint64_t bias;
};

static bool open_case(const char *name, struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	if (!corpus_case(name, &f->c))
		return false;
	struct cq_core_options co = {0};
	assert_null(cq_core_open(f->c.core, &co, &f->core));
	assert_null(cq_symbolizer_create(f->core, NULL, NULL, &f->sym));
	f->exe = cq_core_main_module(f->core);
	assert_non_null(f->exe);
	f->bias = unstrip_start(f->c.core, f->c.exe); /* PIE: its first PT_LOAD is at 0 */
	return true;
}

static void close_case(struct fixture *f)
{
	cq_symbolizer_destroy(f->sym);
	cq_core_close(f->core);
}

static void test_inline_chain(void **state)
{
	(void)state;
	struct fixture f;
	if (!open_case("async_coro-same.O2fp", &f))
		return;
	struct a2l want;
	assert_true(find_inlined(f.c.exe, &want));
	assert_true(want.n > 1);
	fprintf(stderr, "# 0x%llx: %s inlined (%zu levels) in %s\n", (unsigned long long)want.addr,
	        want.function[0], want.n, want.function[want.n - 1]);
	for (int ra = 0; ra < 2; ra++) {
		/* The same place as a pc and as the return address after it. */
		struct cq_unwind_frame uf = {.pc = f.bias + want.addr + (uint64_t)ra,
		                             .is_return_address = ra,
		                             .trust = CQ_TRUST_CFI};
		struct cq_frame_list fl = {0};
		assert_null(cq_frame_list_add(&fl, f.core, f.sym, &uf, CQ_FRAME_ASYNC));
		if (fl.n != want.n)
			fail_msg("0x%llx: %zu frames, eu-addr2line %zu",
			         (unsigned long long)want.addr, fl.n, want.n);
		for (size_t i = 0; i < fl.n; i++) {
			const struct cq_stack_frame *fr = &fl.frames[i];
			char got[256];
			assert_non_null(fr->function);
			snprintf(got, sizeof(got), "%s", fr->function);
			short_name(got);
			assert_string_equal(got, want.function[i]);
			assert_int_equal(fr->line, want.line[i]);
			assert_non_null(fr->file);
			assert_int_equal(fr->kind, i + 1 < fl.n ? CQ_FRAME_INLINE : CQ_FRAME_ASYNC);
			assert_int_equal(want.inlined[i], i + 1 < fl.n);
			assert_int_equal(fr->pc, uf.pc);
			assert_int_equal(fr->trust, CQ_TRUST_CFI);
			assert_ptr_equal(fr->module, f.exe);
			assert_int_equal(fr->offset, want.addr + (uint64_t)ra);
		}
		free(fl.frames);
	}
	close_case(&f);
}

static void test_without_symbolizer(void **state)
{
	(void)state;
	struct fixture f;
	if (!open_case("async_coro-same.O2fp", &f))
		return;
	struct a2l want;
	assert_true(find_inlined(f.c.exe, &want));
	struct cq_unwind_frame uf = {
	    .pc = f.bias + want.addr, .is_signal_frame = true, .trust = CQ_TRUST_SCAN};
	struct cq_frame_list fl = {0};
	assert_null(cq_frame_list_add(&fl, f.core, NULL, &uf, CQ_FRAME_NATIVE));
	assert_int_equal(fl.n, 1);
	assert_null(fl.frames[0].function); /* no names at all, not even the signal rule's */
	assert_null(fl.frames[0].file);
	assert_int_equal(fl.frames[0].line, 0);
	assert_int_equal(fl.frames[0].kind, CQ_FRAME_NATIVE);
	assert_int_equal(fl.frames[0].trust, CQ_TRUST_SCAN);
	assert_ptr_equal(fl.frames[0].module, f.exe);
	assert_int_equal(fl.frames[0].offset, want.addr);
	free(fl.frames);
	close_case(&f);
}

static void test_signal_frame_names(void **state)
{
	(void)state;
	struct fixture f;
	if (!open_case("async_coro-same.O2fp", &f))
		return;
	/* 0x1000 is in no module (eu-unstrip's modules are far above it). */
	assert_null(cq_core_module_at(f.core, 0x1000));
	struct cq_unwind_frame sig = {.pc = 0x1000, .is_signal_frame = true};
	struct cq_unwind_frame plain = {.pc = 0x1000};
	struct cq_frame_list fl = {0};
	assert_null(cq_frame_list_add(&fl, f.core, f.sym, &sig, CQ_FRAME_NATIVE));
	assert_null(cq_frame_list_add(&fl, f.core, f.sym, &plain, CQ_FRAME_NATIVE));
	assert_int_equal(fl.n, 2);
	assert_string_equal(fl.frames[0].function, "<signal handler called>");
	assert_null(fl.frames[0].module);
	assert_int_equal(fl.frames[0].offset, 0);
	assert_null(fl.frames[1].function);

	/* A signal frame whose pc has a name keeps it (main, from readelf -s). */
	uint64_t main_at = readelf_function(f.c.exe, "main");
	assert_true(main_at != 0);
	struct cq_unwind_frame named = {.pc = f.bias + main_at, .is_signal_frame = true};
	assert_null(cq_frame_list_add(&fl, f.core, f.sym, &named, CQ_FRAME_NATIVE));
	assert_string_equal(fl.frames[fl.n - 1].function, "main");
	free(fl.frames);
	close_case(&f);
}

/*
 * A non-PIE executable (readelf -h: EXEC) is loaded at its link-time
 * addresses: the offset is the pc.  A return address is looked up one byte
 * back: at the first byte of level2 it names level2 as a pc, and not as a
 * return address (the byte before belongs to whatever precedes level2).
 */
static void test_return_address_and_offset(void **state)
{
	(void)state;
	struct fixture f;
	memset(&f, 0, sizeof(f));
	if (!corpus_case("abort_deep.nopie", &f.c))
		return;
	struct cq_core_options co = {0};
	assert_null(cq_core_open(f.c.core, &co, &f.core));
	assert_null(cq_symbolizer_create(f.core, NULL, NULL, &f.sym));
	f.exe = cq_core_main_module(f.core);
	uint64_t level2 = readelf_function(f.c.exe, "level2");
	assert_true(level2 != 0);
	struct cq_unwind_frame as_pc = {.pc = level2};
	struct cq_unwind_frame as_ra = {.pc = level2, .is_return_address = true};
	struct cq_frame_list fl = {0};
	assert_null(cq_frame_list_add(&fl, f.core, f.sym, &as_pc, CQ_FRAME_NATIVE));
	assert_int_equal(fl.n, 1);
	assert_non_null(fl.frames[0].function);
	assert_string_equal(fl.frames[0].function, "level2");
	assert_ptr_equal(fl.frames[0].module, f.exe);
	assert_int_equal(fl.frames[0].offset, level2);
	assert_null(cq_frame_list_add(&fl, f.core, f.sym, &as_ra, CQ_FRAME_NATIVE));
	assert_int_equal(fl.n, 2);
	assert_true(!fl.frames[1].function || strcmp(fl.frames[1].function, "level2") != 0);
	assert_int_equal(fl.frames[1].pc, level2);
	assert_int_equal(fl.frames[1].offset, level2);
	free(fl.frames);
	close_case(&f);
}

static void test_grows(void **state)
{
	(void)state;
	struct fixture f;
	if (!open_case("async_coro-same.O2fp", &f))
		return;
	struct a2l want;
	assert_true(find_inlined(f.c.exe, &want));
	struct cq_frame_list fl = {0};
	size_t per = want.n, rounds = 40;
	for (size_t r = 0; r < rounds; r++) {
		struct cq_unwind_frame uf = {.pc = r % 2 ? 0x1000 + r : f.bias + want.addr};
		assert_null(cq_frame_list_add(&fl, f.core, f.sym, &uf, CQ_FRAME_NATIVE));
	}
	assert_int_equal(fl.n, rounds / 2 * per + rounds / 2);
	assert_true(fl.cap >= fl.n);
	size_t at = 0;
	for (size_t r = 0; r < rounds; r++) {
		size_t k = r % 2 ? 1 : per;
		for (size_t i = 0; i < k; i++, at++)
			assert_int_equal(fl.frames[at].pc, r % 2 ? 0x1000 + r : f.bias + want.addr);
	}
	free(fl.frames);
	close_case(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_inline_chain),
	    cmocka_unit_test(test_without_symbolizer),
	    cmocka_unit_test(test_signal_frame_names),
	    cmocka_unit_test(test_return_address_and_offset),
	    cmocka_unit_test(test_grows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
