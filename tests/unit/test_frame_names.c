/*
 * test_frame_names.c - the names crash signatures give library frames
 * (cq_bucket_alt_name, libcore/triage/frame_names.c; API in bucket.h).
 *
 * The module is a shared object written by hand (elf_writer.h) with an
 * ifunc, plain functions, aliases and a DT_SONAME, so every expected name
 * follows from the rules in frame_names.c's opening comment:
 *   - "__NAME_SUFFIX..." is NAME when the module exports NAME as an ifunc;
 *   - a frame with no name is the exported function covering its offset,
 *     else "[soname]": DT_SONAME, else the soname read from the path;
 *   - the main executable's frames, and frames in no module, keep theirs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "unwind/frames.h"
#include "libcore/model/core.h"
#include "libcore/model/module.h"
#include "libcore/triage/bucket.h"
#include "libcore/triage/frame_names.h"
#include "libcore/triage/rules.h"
#include "tests/unit/elf_writer.h"

static char path[64];

static const struct ew_sym exports[] = {
    {"memset", 0x1100, 0x40, STT_GNU_IFUNC, STB_GLOBAL, false},
    {"strlen", 0x1180, 0x40, STT_FUNC, STB_GLOBAL, false}, /* not an ifunc here */
    {"alpha", 0x2000, 0x100, STT_FUNC, STB_GLOBAL, false},
    {"alpha_alias", 0x2000, 0x100, STT_FUNC, STB_WEAK, false},
    {"hidden_helper", 0x3000, 0x100, STT_FUNC, STB_LOCAL, false},
    {"empty", 0x4000, 0, STT_FUNC, STB_GLOBAL, false},
    {"table", 0x5000, 0x100, STT_OBJECT, STB_GLOBAL, false},
};

/* A one-module core around the object written with spec, named name. */
struct fixture {
	struct cq_module mod;
	char *opened_name;
	struct cq_core core;
	struct cq_bucket_namer *nm;
};

static void fixture_open(struct fixture *fx, const struct ew_spec *spec, const char *name)
{
	memset(fx, 0, sizeof(*fx));
	assert_int_equal(ew_write(spec, path), 0);
	assert_null(cq_module_open_elf(path, &fx->mod));
	fx->mod.is_main = false;
	fx->opened_name = fx->mod.name;
	fx->mod.name = (char *)name; /* the path the core recorded */
	fx->mod.bias = 0x7f1200000000ull;
	fx->core.modules = &fx->mod;
	fx->core.nmodules = 1;
	assert_null(cq_bucket_namer_create(&fx->core, &fx->nm));
}

static void fixture_close(struct fixture *fx)
{
	cq_bucket_namer_destroy(fx->nm);
	fx->mod.name = fx->opened_name;
	cq_module_destroy(&fx->mod);
}

static const char *alt(struct fixture *fx, const char *function, uint64_t offset, char *buf,
                       size_t cap)
{
	struct cq_stack_frame f = {.pc = offset + fx->mod.bias,
	                           .module = &fx->mod,
	                           .offset = offset,
	                           .function = function};
	return cq_bucket_alt_name(fx->nm, &f, buf, cap);
}

static int setup(void **state)
{
	(void)state;
	snprintf(path, sizeof(path), "/tmp/cq_test_frame_names.%d.so", (int)getpid());
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

static void test_ifunc_variants_take_the_public_name(void **state)
{
	(void)state;
	struct ew_spec spec = {.dynsyms = exports, .ndyn = 7, .soname = "libt.so.1"};
	struct fixture fx;
	fixture_open(&fx, &spec, "/usr/lib/libt.so.1.2");
	char buf[128];
	assert_string_equal(alt(&fx, "__memset_avx2_unaligned_erms", 0x1100, buf, sizeof(buf)),
	                    "memset");
	assert_string_equal(alt(&fx, "__memset_evex", 0x1100, buf, sizeof(buf)), "memset");
	/* strlen is exported, but not as an ifunc. */
	assert_null(alt(&fx, "__strlen_sse2", 0x1180, buf, sizeof(buf)));
	/* Not "__" + NAME + "_" + suffix. */
	assert_null(alt(&fx, "memset", 0x1100, buf, sizeof(buf)));
	assert_null(alt(&fx, "__memset", 0x1100, buf, sizeof(buf)));
	assert_null(alt(&fx, "_memset_avx2", 0x1100, buf, sizeof(buf)));
	assert_null(alt(&fx, "__wmemset_avx2", 0x1100, buf, sizeof(buf)));
	assert_null(alt(&fx, "__", 0x1100, buf, sizeof(buf)));
	/* A named frame keeps its name even where an export covers it. */
	assert_null(alt(&fx, "alpha_impl", 0x2010, buf, sizeof(buf)));
	/* A buffer too small for the name gives no name rather than a cut one. */
	assert_null(alt(&fx, "__memset_avx2_unaligned_erms", 0x1100, buf, 8));
	fixture_close(&fx);
}

static void test_unnamed_frames_take_the_covering_export(void **state)
{
	(void)state;
	struct ew_spec spec = {.dynsyms = exports, .ndyn = 7, .soname = "libt.so.1"};
	struct fixture fx;
	fixture_open(&fx, &spec, "/usr/lib/libt.so.1.2");
	char buf[128];
	assert_string_equal(alt(&fx, NULL, 0x1100, buf, sizeof(buf)), "memset");
	assert_string_equal(alt(&fx, NULL, 0x113f, buf, sizeof(buf)), "memset");
	assert_string_equal(alt(&fx, NULL, 0x1180, buf, sizeof(buf)), "strlen");
	/* Aliases: one of the names of that function. */
	const char *a = alt(&fx, NULL, 0x20ff, buf, sizeof(buf));
	assert_true(strcmp(a, "alpha") == 0 || strcmp(a, "alpha_alias") == 0);
	/* Past an export's end, in a local function, a zero-sized export, a
	 * variable, before everything: the soname. */
	static const uint64_t uncovered[] = {0x11c0, 0x2100, 0x3010, 0x4000, 0x5010, 0x10};
	for (size_t i = 0; i < sizeof(uncovered) / sizeof(uncovered[0]); i++)
		assert_string_equal(alt(&fx, NULL, uncovered[i], buf, sizeof(buf)), "[libt.so.1]");
	fixture_close(&fx);
}

static void test_soname_from_dt_soname_then_path(void **state)
{
	(void)state;
	char buf[128];
	struct fixture fx;
	/* DT_SONAME is the library's own name, whatever file it was loaded from. */
	struct ew_spec spec = {.dynsyms = exports, .ndyn = 2, .soname = "libreal.so.2"};
	fixture_open(&fx, &spec, "/opt/x/libcopy.so.7.1.0");
	assert_string_equal(alt(&fx, NULL, 0x9000, buf, sizeof(buf)), "[libreal.so.2]");
	fixture_close(&fx);
	/* Without one: the path's name up to the major version. */
	spec.soname = NULL;
	fixture_open(&fx, &spec, "/opt/x/libcopy.so.7.1.0");
	assert_string_equal(alt(&fx, NULL, 0x9000, buf, sizeof(buf)), "[libcopy.so.7]");
	fixture_close(&fx);
	spec.no_dynamic = true;
	fixture_open(&fx, &spec, "/opt/x/libplain.so");
	assert_string_equal(alt(&fx, NULL, 0x9000, buf, sizeof(buf)), "[libplain.so]");
	fixture_close(&fx);
}

static void test_frames_that_keep_their_names(void **state)
{
	(void)state;
	struct ew_spec spec = {.dynsyms = exports, .ndyn = 7, .soname = "libt.so.1"};
	struct fixture fx;
	fixture_open(&fx, &spec, "/usr/lib/libt.so.1.2");
	char buf[128];
	/* The main executable: module+offset tells crash sites apart. */
	fx.mod.is_main = true;
	assert_null(alt(&fx, NULL, 0x1100, buf, sizeof(buf)));
	assert_null(alt(&fx, "__memset_avx2", 0x1100, buf, sizeof(buf)));
	fx.mod.is_main = false;
	/* No module. */
	struct cq_stack_frame f = {.pc = 0x1234, .offset = 0x1234};
	assert_null(cq_bucket_alt_name(fx.nm, &f, buf, sizeof(buf)));
	/* Without a namer, exports are not read: named frames stay, unnamed get the soname. */
	f = (struct cq_stack_frame){.module = &fx.mod, .offset = 0x1100, .function = NULL};
	assert_string_equal(cq_bucket_alt_name(NULL, &f, buf, sizeof(buf)), "[libt.so.1]");
	f.function = "__memset_avx2";
	assert_null(cq_bucket_alt_name(NULL, &f, buf, sizeof(buf)));
	/* A module the namer's core does not hold: no exports either. */
	struct cq_module other = fx.mod;
	f = (struct cq_stack_frame){.module = &other, .offset = 0x1100};
	assert_string_equal(cq_bucket_alt_name(fx.nm, &f, buf, sizeof(buf)), "[libt.so.1]");
	fixture_close(&fx);
}

/*
 * The case the two soname rules disagreed on (issue 31): a library loaded
 * from a file whose name is not its DT_SONAME, and a crash in a frame of it
 * that nothing names.  The signature of the live stack, and the signature
 * rebucket computes from the frame as the store keeps it (alt_name as
 * stored, the module path), must be one text, with or without a namer.
 */
static void test_live_and_stored_signatures_agree_on_soname(void **state)
{
	(void)state;
	struct cq_bucket_rules *rules;
	assert_null(cq_bucket_rules_load(NULL, &rules));
	struct ew_spec spec = {.dynsyms = exports, .ndyn = 2, .soname = "libreal.so.2"};
	struct fixture fx;
	fixture_open(&fx, &spec, "/opt/x/libcopy.so.7.1.0");
	for (int with_namer = 0; with_namer < 2; with_namer++) {
		struct cq_bucket_namer *nm = with_namer ? fx.nm : NULL;
		struct cq_stack_frame f = {.pc = fx.mod.bias + 0x9000,
		                           .kind = CQ_FRAME_NATIVE,
		                           .module = &fx.mod,
		                           .offset = 0x9000};
		struct cq_thread_stack ts = {.frames = &f, .nframes = 1};
		struct cq_bucket_signature live, stored;
		assert_null(cq_bucket_signature(rules, nm, &ts, 11, 5, &live));
		char buf[128];
		struct cq_bucket_frame bf = {.alt_name =
		                                 cq_bucket_alt_name(nm, &f, buf, sizeof(buf)),
		                             .module = fx.mod.name,
		                             .offset = 0x9000};
		assert_null(cq_bucket_signature_of(rules, &bf, 1, 11, 5, &stored));
		assert_string_equal(live.text, stored.text);
		assert_non_null(strstr(live.text, "[libreal.so.2]"));
		cq_bucket_signature_free(&live);
		cq_bucket_signature_free(&stored);
	}
	fixture_close(&fx);
	cq_bucket_rules_free(rules);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ifunc_variants_take_the_public_name),
	    cmocka_unit_test(test_unnamed_frames_take_the_covering_export),
	    cmocka_unit_test(test_soname_from_dt_soname_then_path),
	    cmocka_unit_test(test_frames_that_keep_their_names),
	    cmocka_unit_test(test_live_and_stored_signatures_agree_on_soname),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
