/*
 * test_bucket.c - crash signatures (libcore/triage/bucket.h): name normalisation
 * on real demangler output, and which frames a signature keeps.  Hang
 * signatures (cq_bucket_wait_signature) on hand-built wait-for graphs: the
 * lock wrappers skipped, the same cycle listed from any thread one text,
 * another lock order another text, a 100,000-thread cycle bounded.
 *
 * Files tested: libcore/triage/bucket.c, libcore/triage/rules.c.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/triage/bucket.h"
#include "libcore/triage/rules.h"
#include "libcore/model/module.h"
#include "libcore/analysis/stacktrace.h"
#include "libcore/analysis/waits.h"
#include "unwind/frames.h"

static void check_name(const char *in, const char *want)
{
	char out[512];
	cq_bucket_normalize_name(in, out, sizeof(out));
	assert_string_equal(out, want);
}

static void test_normalize_c_and_glibc(void **state)
{
	(void)state;
	check_name("level3", "level3");
	check_name("__GI_raise", "raise");
	check_name("pthread_kill@@GLIBC_2.34", "pthread_kill");
	check_name("__assert_fail_base.cold", "__assert_fail_base");
	check_name("compute.isra.0", "compute");
	check_name("compute.constprop.3.cold", "compute");
	check_name("helper.part.0", "helper");
}

static void test_normalize_cxx(void **state)
{
	(void)state;
	check_name("thrower(int)", "thrower");
	check_name("f(int) [clone .cold]", "f");
	check_name("std::vector<int, std::allocator<int> >::push_back(int const&)",
	           "std::vector<T>::push_back");
	check_name("void std::condition_variable::wait<worker_park(int)::{lambda()#1}>"
	           "(std::unique_lock<std::mutex>&, worker_park(int)::{lambda()#1})",
	           "std::condition_variable::wait<T>");
	check_name("std::__invoke_result<void (*)(int), int>::type std::__invoke<void (*)(int), "
	           "int>(void (*&&)(int), int&&)",
	           "std::__invoke<T>");
	check_name("(anonymous namespace)::helper(int)", "{anon}::helper");
	check_name("Widget::operator()(int) const", "Widget::operator()");
	check_name("operator new(unsigned long)", "operator new");
	check_name("<signal handler called>", "<signal handler called>");
}

static void test_normalize_rust(void **state)
{
	(void)state;
	check_name("core::panicking::panic::h0123456789abcdef", "core::panicking::panic");
	check_name("app::server::handle::h00000000000000ff", "app::server::handle");
	check_name("app::handle::hello", "app::handle::hello"); /* not a hash */
}

static struct cq_stack_frame named(const char *fn)
{
	return (struct cq_stack_frame){.function = fn, .trust = CQ_TRUST_CFI};
}

static struct cq_bucket_rules *rules; /* the built-in defaults */

static void check_signature(struct cq_stack_frame *frames, size_t n, int sig, unsigned keep,
                            const char *want)
{
	struct cq_thread_stack ts = {.frames = frames, .nframes = n};
	struct cq_bucket_signature s;
	assert_null(cq_bucket_signature(rules, NULL, &ts, sig, keep, &s));
	assert_string_equal(s.text, want);
	assert_int_equal(strlen(s.hash), 16);
	cq_bucket_signature_free(&s);
}

static void test_abort_machinery_and_startup_dropped(void **state)
{
	(void)state;
	struct cq_stack_frame f[] = {
	    named("__pthread_kill_implementation"),
	    named("__pthread_kill_internal"),
	    named("raise"),
	    named("abort"),
	    named("level3"),
	    named("level2"),
	    named("level1"),
	    named("main"),
	    named("__libc_start_call_main"),
	    named("__libc_start_main"),
	    named("_start"),
	};
	check_signature(f, 11, SIGABRT, 5, "level3 | level2 | level1 | main | SIGABRT");
	check_signature(f, 11, SIGABRT, 2, "level3 | level2 | SIGABRT");
}

static void test_assert_and_throw_start_at_the_caller(void **state)
{
	(void)state;
	struct cq_stack_frame a[] = {
	    named("__pthread_kill_implementation"),
	    named("raise"),
	    named("abort"),
	    named("__assert_fail_base.cold"),
	    named("__assert_fail"),
	    named("check_value"),
	    named("checker"),
	    named("main"),
	};
	check_signature(a, 8, SIGABRT, 5, "check_value | checker | main | SIGABRT");
	/* libstdc++'s unnamed frames inside the terminate path are machinery too. */
	static struct cq_module libstdcxx = {.name = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"};
	struct cq_stack_frame t[] = {
	    named("__pthread_kill_implementation"),
	    named("raise"),
	    named("abort"),
	    {.trust = CQ_TRUST_CFI, .module = &libstdcxx, .offset = 0xa9919},
	    named("std::terminate()"),
	    named("__cxa_throw"),
	    named("thrower(int)"),
	    named("main"),
	};
	check_signature(t, 8, SIGABRT, 5, "thrower | main | SIGABRT");
	/*
	 * An unnamed library frame with no machinery after it is kept, by the
	 * library's soname: an offset would move with every package update.
	 */
	struct cq_stack_frame u[] = {{.trust = CQ_TRUST_CFI, .module = &libstdcxx, .offset = 0x10},
	                             named("main")};
	check_signature(u, 2, SIGSEGV, 5, "[libstdc++.so.6] | main | SIGSEGV");
}

static void test_segv_keeps_top_and_scan_frames_are_dropped(void **state)
{
	(void)state;
	struct cq_stack_frame f[] = {named("store_null"), named("writer"), named("main")};
	f[1].trust = CQ_TRUST_SCAN;
	check_signature(f, 3, SIGSEGV, 5, "store_null | main | SIGSEGV");
	/*
	 * Start-up frames end the signature even below unnamed frames; a pc in
	 * no module is a placeholder, never an address (it moves with ASLR).
	 */
	struct cq_stack_frame g[] = {named("level3"),
	                             {.trust = CQ_TRUST_CFI, .pc = 0x401000},
	                             named("__libc_start_call_main"),
	                             {.trust = CQ_TRUST_CFI}};
	check_signature(g, 4, SIGABRT, 5, "level3 | [??] | SIGABRT");
}

/*
 * A crash handler that reports and ends the process (redis's sigsegvHandler:
 * bugReportEnd re-raises with kill; corpus/sighandler.c aborts) starts the
 * signature below the innermost signal frame; a handler that faults itself
 * (corpus/handler_fault.c) is the signature.
 */
static void test_crash_handlers(void **state)
{
	(void)state;
	struct cq_stack_frame reraise[] = {
	    named("kill"),
	    named("bugReportEnd"),
	    named("sigsegvHandler"),
	    named("<signal handler called>"),
	    named("debugCommand"),
	    named("call"),
	    named("processCommand"),
	    named("main"),
	    named("__libc_start_call_main"),
	};
	check_signature(reraise, 9, SIGSEGV, 5,
	                "debugCommand | call | processCommand | main | SIGSEGV");
	struct cq_stack_frame aborts[] = {
	    named("__pthread_kill_implementation"),
	    named("raise"),
	    named("abort"),
	    named("crash_in_handler"),
	    named("on_segv"),
	    named("__restore_rt"),
	    named("victim"),
	    named("main"),
	};
	check_signature(aborts, 8, SIGABRT, 5, "victim | main | SIGABRT");

	struct cq_stack_frame faults[] = {
	    named("report_fault"), named("on_segv"), named("<signal handler called>"),
	    named("victim"),       named("main"),
	};
	check_signature(
	    faults, 5, SIGSEGV, 5,
	    "report_fault | on_segv | <signal handler called> | victim | main | SIGSEGV");
	/* The trampoline named by its symbol (libc6-dbg) is the same pseudo-frame. */
	faults[2] = named("__restore_rt");
	check_signature(
	    faults, 5, SIGSEGV, 5,
	    "report_fault | on_segv | <signal handler called> | victim | main | SIGSEGV");
	/* A handler that faulted, then a second handler that aborted: the first handler. */
	struct cq_stack_frame nested[] = {
	    named("abort"),        named("on_second"), named("<signal handler called>"),
	    named("report_fault"), named("on_segv"),   named("<signal handler called>"),
	    named("victim"),       named("main"),
	};
	check_signature(nested, 8, SIGABRT, 3,
	                "report_fault | on_segv | <signal handler called> | SIGABRT");
	/* No signal frame: machinery is dropped as always. */
	struct cq_stack_frame plain[] = {named("kill"), named("suicide"), named("main")};
	check_signature(plain, 3, SIGTERM, 5, "suicide | main | SIGTERM");
}

/*
 * Go (issue 48): the frames of corpus/go_crash's crashed threads as gdb and
 * dlv list them (the first signal frame and the second raise are the
 * runtime's re-raised SIGABRT, GOTRACEBACK=crash); the signature starts at
 * the frame the program records as its crash site, past the runtime's
 * hidden frames (runtime.mapassign_faststr), and at the runtime's own site
 * when nothing but the runtime is left (the deadlock's g0 stack).
 */
static void test_go_crashes(void **state)
{
	(void)state;
	check_name("runtime.raise.abi0", "runtime.raise");
	check_name("main.(*server).handle", "main.(*server).handle");
	check_name("main.pick[go.shape.int_0]", "main.pick[...]");
	struct cq_stack_frame nilmap[] = {
	    named("runtime.raise.abi0"),    named("runtime.dieFromSignal"),
	    named("runtime.sigfwdgo"),      named("runtime.sigtrampgo"),
	    named("runtime.sigtramp.abi0"), named("<signal handler called>"),
	    named("runtime.raise.abi0"),    named("runtime.dieFromSignal"),
	    named("runtime.crash"),         named("runtime.fatalpanic"),
	    named("runtime.gopanic"),       named("runtime.mapassign_faststr"),
	    named("main.assignNilMap"),     named("main.main"),
	    named("runtime.main"),          named("runtime.goexit.abi0"),
	};
	check_signature(nilmap, 16, SIGABRT, 5, "main.assignNilMap | main.main | SIGABRT");
	struct cq_stack_frame nilptr[] = {
	    named("runtime.raise.abi0"),  named("runtime.dieFromSignal"),
	    named("runtime.crash"),       named("runtime.fatalpanic"),
	    named("runtime.gopanic"),     named("runtime.panicmem"),
	    named("runtime.sigpanic"),    named("main.derefNil.func1"),
	    named("main.update"),         named("main.(*server).handle"),
	    named("runtime.goexit.abi0"),
	};
	check_signature(nilptr, 11, SIGABRT, 5,
	                "main.derefNil.func1 | main.update | main.(*server).handle | SIGABRT");
	struct cq_stack_frame deadlock[] = {
	    named("runtime.raise.abi0"),    named("runtime.dieFromSignal"),
	    named("runtime.sigfwdgo"),      named("runtime.sigtrampgo"),
	    named("runtime.sigtramp.abi0"), named("<signal handler called>"),
	    named("runtime.raise.abi0"),    named("runtime.dieFromSignal"),
	    named("runtime.crash"),         named("runtime.fatalthrow"),
	    named("runtime.fatal"),         named("runtime.checkdead"),
	    named("runtime.mput"),          named("runtime.stopm"),
	    named("runtime.findRunnable"),  named("runtime.schedule"),
	    named("runtime.park_m"),        named("runtime.mcall"),
	};
	/* the scheduler of an M with nothing to run (mput, stopm...) is skipped: where the check
	 * ran */
	check_signature(deadlock, 18, SIGABRT, 3, "runtime.checkdead | SIGABRT");
	/* An exported runtime function is the program's call (Go's traceback shows it). */
	struct cq_stack_frame exported[] = {named("runtime.gopanic"), named("runtime.Goexit"),
	                                    named("main.worker"), named("runtime.goexit.abi0")};
	check_signature(exported, 4, SIGABRT, 5, "runtime.Goexit | main.worker | SIGABRT");
}

/*
 * A C crash handler that re-raises a signal whose interrupted frames begin
 * with machinery (the program had called abort()): the signature starts
 * below that machinery too, never at it.
 */
static void test_handler_above_machinery(void **state)
{
	(void)state;
	struct cq_stack_frame f[] = {
	    named("raise"), named("on_abrt"), named("<signal handler called>"),
	    named("raise"), named("abort"),   named("victim"),
	    named("main"),
	};
	check_signature(f, 7, SIGABRT, 5, "victim | main | SIGABRT");
}

static void test_rust_panics_start_at_the_app(void **state)
{
	(void)state;
	/* panic = "unwind" with a panic hook that aborts: the hook runs inside the panic path. */
	struct cq_stack_frame h[] = {
	    named("__pthread_kill_implementation"),
	    named("raise"),
	    named("abort"),
	    named("std::sys::pal::unix::abort_internal"),
	    named("std::process::abort"),
	    named("crashsite::main::{{closure}}"),
	    named("<alloc::boxed::Box<F,A> as core::ops::function::Fn<Args>>::call"),
	    named("std::panicking::rust_panic_with_hook"),
	    named("std::panicking::begin_panic_handler::{{closure}}"),
	    named("std::sys::backtrace::__rust_end_short_backtrace"),
	    named("__rustc::rust_begin_unwind"),
	    named("core::panicking::panic_fmt"),
	    named("core::panicking::panic_bounds_check"),
	    named("crashsite::parse::h0123456789abcdef"),
	    named("crashsite::main"),
	    named("core::ops::function::FnOnce::call_once"),
	    named("std::sys::backtrace::__rust_begin_short_backtrace"),
	    named("std::rt::lang_start::{{closure}}"),
	    named("std::rt::lang_start_internal"),
	    named("main"),
	};
	check_signature(h, sizeof(h) / sizeof(h[0]), SIGABRT, 5,
	                "crashsite::parse | crashsite::main | SIGABRT");
	/* A tokio-style catch_unwind at the bottom is start-up, not machinery. */
	struct cq_stack_frame t[] = {named("abort"), named("std::process::abort"),
	                             named("app::handler"), named("std::panicking::try::do_call"),
	                             named("tokio::runtime::task::harness::poll_future")};
	check_signature(t, 5, SIGABRT, 5, "app::handler | SIGABRT");
}

static void test_prefix_skip_recursion_and_in_app(void **state)
{
	(void)state;
	static struct cq_module libc = {.name = "/usr/lib/x86_64-linux-gnu/libc.so.6"};
	static struct cq_module app = {.name = "/opt/app/bin/server", .is_main = true};
	struct cq_stack_frame f[] = {
	    {.function = "memset", .module = &libc, .trust = CQ_TRUST_CONTEXT},
	    {.function = "fill", .module = &app, .trust = CQ_TRUST_CFI},
	    {.function = "walk", .module = &app, .trust = CQ_TRUST_CFI},
	    {.function = "walk", .module = &app, .trust = CQ_TRUST_CFI},
	    {.function = "qsort_r", .module = &libc, .trust = CQ_TRUST_CFI},
	    {.function = "main", .module = &app, .trust = CQ_TRUST_CFI},
	};
	/* memset is a prefix frame: it does not count toward the 2 frames. */
	check_signature(f, 6, SIGSEGV, 2, "memset | fill | walk | SIGSEGV");
	/* Recursion once; library frames below the first in-app frame left out. */
	check_signature(f, 6, SIGSEGV, 5, "memset | fill | walk | main | SIGSEGV");
}

static void test_rules_files(void **state)
{
	(void)state;
	struct cq_bucket_rules *r;
	static const char good[] = "# comment\n\nversion team-7\nskip walk\n  prefix  fill \n";
	assert_null(cq_bucket_rules_parse(good, strlen(good), "t.rules", &r));
	assert_string_equal(r->version, "team-7");
	assert_int_equal(r->nrules, 2);
	assert_true(cq_bucket_rules_match(r, CQ_RULE_PREFIX, "fill"));
	assert_false(cq_bucket_rules_match(r, CQ_RULE_SKIP, "fill"));
	cq_bucket_rules_free(r);
	/* Without a version line, the version is a hash of the text. */
	assert_null(cq_bucket_rules_parse("skip a\n", 7, "u.rules", &r));
	assert_true(strncmp(r->version, "sha:", 4) == 0);
	cq_bucket_rules_free(r);
	static const char *const bad[] = {"frobnicate x\n", "skip\n", "version\n", "skip a\0b\n"};
	static const size_t badlen[] = {13, 5, 8, 9};
	for (size_t i = 0; i < 4; i++) {
		struct cq_error *err = cq_bucket_rules_parse(bad[i], badlen[i], "b.rules", &r);
		assert_non_null(err);
		assert_null(r);
		assert_true(strncmp(err->message, "b.rules:1", 9) == 0);
		cq_error_free(err);
	}
	/* in-app: the last matching rule wins; a module no rule names is in-app. */
	static const char apps[] = "not-in-app /usr/*\nin-app /usr/lib/mine/*\n";
	assert_null(cq_bucket_rules_parse(apps, strlen(apps), "a.rules", &r));
	assert_false(cq_bucket_rules_in_app(r, "/usr/lib/libc.so.6"));
	assert_true(cq_bucket_rules_in_app(r, "/usr/lib/mine/libx.so"));
	assert_true(cq_bucket_rules_in_app(r, "/opt/x"));
	cq_bucket_rules_free(r);
}

static int load_rules(void **state)
{
	(void)state;
	unsetenv("COREQ_RULES");
	return cq_bucket_rules_parse(cq_bucket_default_rules, strlen(cq_bucket_default_rules),
	                             "built-in", &rules) != NULL;
}

static int free_rules(void **state)
{
	(void)state;
	cq_bucket_rules_free(rules);
	return 0;
}

/* ---- hang signatures ---------------------------------------------------------- */

#define MAX_HANG_THREADS 100000

struct hang {
	struct cq_stack_frame (*frames)[6];
	struct cq_thread_stack *ts;
	struct cq_stacks stacks;
	struct cq_waits *w;
	int32_t *tids;
};

/*
 * Thread i (tid 1000 + order[i]) takes a mutex in fn[i] through
 * std::mutex::lock and glibc, and waits for thread (i + 1) % n: one cycle.
 */
static void hang_make(struct hang *h, const char *const *fn, const int *order, size_t n)
{
	h->frames = calloc(n, sizeof(*h->frames));
	h->ts = calloc(n, sizeof(*h->ts));
	h->tids = calloc(n, sizeof(*h->tids));
	h->w = calloc(1, sizeof(*h->w));
	assert_true(h->frames && h->ts && h->tids && h->w);
	h->w->waits = calloc(n, sizeof(*h->w->waits));
	assert_non_null(h->w->waits);
	static const char *const libc[] = {"__lll_lock_wait", "___pthread_mutex_lock",
	                                   "std::mutex::lock()"};
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < 3; k++)
			h->frames[i][k].function = libc[k];
		h->frames[i][3].function = fn[i];
		h->frames[i][4].function = "worker";
		h->frames[i][5].function = "start_thread";
		h->ts[i] = (struct cq_thread_stack){.frames = h->frames[i], .nframes = 6};
		h->tids[i] = 1000 + (order ? order[i] : (int)i);
		struct cq_wait *wt = &h->w->waits[i];
		*wt = (struct cq_wait){
		    .thread = i,
		    .tid = h->tids[i],
		    .kind = CQ_WAIT_MUTEX,
		    .object = 0x5000 + 0x40 * ((i + 1) % n),
		    .function = h->frames[i][0].function,
		    .owner = CQ_OWNER_THREAD,
		    .owner_thread = (i + 1) % n,
		    .owner_tid = 1000 + (order ? order[(i + 1) % n] : (int)((i + 1) % n))};
	}
	h->w->nwaits = n;
	h->w->nthreads = n;
	h->stacks = (struct cq_stacks){.threads = h->ts, .nthreads = n};
	assert_null(cq_waits_graph(h->w, h->tids, n));
	assert_int_equal(h->w->ndeadlocks, 1);
}

static char *hang_text(const char *const *fn, const int *order, size_t n)
{
	struct hang h;
	hang_make(&h, fn, order, n);
	struct cq_bucket_signature sig = {0};
	bool made = false;
	assert_null(cq_bucket_wait_signature(rules, NULL, &h.stacks, h.w, &sig, &made));
	assert_true(made);
	assert_string_equal(cq_bucket_wait_kind(sig.text), "deadlock");
	char hash[CQ_BUCKET_HASH_LEN + 1];
	cq_bucket_hash_of(sig.text, hash);
	assert_string_equal(hash, sig.hash);
	cq_waits_free(h.w);
	free(h.frames);
	free(h.ts);
	free(h.tids);
	return sig.text;
}

static void test_deadlock_signature_lock_takers(void **state)
{
	(void)state;
	const char *fn[] = {"lock_ab", "lock_ba"};
	char *t = hang_text(fn, NULL, 2);
	/* glibc's and libstdc++'s lock frames are not the program's: the taker is. */
	assert_string_equal(t, "deadlock: mutex lock_ab | mutex lock_ba");
	free(t);
}

static void test_deadlock_signature_rotation(void **state)
{
	(void)state;
	/* One ring a -> b -> c; the lowest tid on another thread each time. */
	const char *ring[] = {"take_a", "take_b", "take_c"};
	const char *ring1[] = {"take_b", "take_c", "take_a"};
	const char *ring2[] = {"take_c", "take_a", "take_b"};
	const int tids0[] = {0, 1, 2}, tids1[] = {2, 0, 1}, tids2[] = {1, 2, 0};
	char *a = hang_text(ring, tids0, 3);
	char *b = hang_text(ring1, tids1, 3);
	char *c = hang_text(ring2, tids2, 3);
	char *d = hang_text(ring1, tids0, 3);
	assert_string_equal(a, "deadlock: mutex take_a | mutex take_b | mutex take_c");
	assert_string_equal(a, b);
	assert_string_equal(a, c);
	assert_string_equal(a, d);
	/* The other order a -> c -> b is another bug. */
	const char *other[] = {"take_a", "take_c", "take_b"};
	char *e = hang_text(other, tids0, 3);
	assert_string_not_equal(a, e);
	free(a);
	free(b);
	free(c);
	free(d);
	free(e);
}

static void test_deadlock_signature_huge_cycle(void **state)
{
	(void)state;
	const char **fn = malloc(MAX_HANG_THREADS * sizeof(*fn));
	assert_non_null(fn);
	for (size_t i = 0; i < MAX_HANG_THREADS; i++)
		fn[i] = i % 2 ? "odd" : "even";
	char *t = hang_text(fn, NULL, MAX_HANG_THREADS);
	assert_true(strlen(t) < 2000);
	assert_non_null(strstr(t, "(100000 threads)"));
	assert_int_equal(strncmp(t, "deadlock: mutex even | mutex odd | mutex even", 45), 0);
	free(t);
	free(fn);
}

static void test_no_wait_no_hang_signature(void **state)
{
	(void)state;
	struct cq_bucket_signature sig = {0};
	bool made = true;
	struct cq_stacks stacks = {0};
	assert_null(cq_bucket_wait_signature(rules, NULL, &stacks, NULL, &sig, &made));
	assert_false(made);
	assert_null(sig.text);
	assert_null(cq_bucket_wait_kind("f | main | SIGABRT"));
	assert_string_equal(cq_bucket_wait_kind("hang: read | f"), "hang");
	/* A cycle that rests on inferred owners (issue 45). */
	assert_string_equal(cq_bucket_wait_kind("deadlock (inferred, confirmed): semaphore f"),
	                    "deadlock");
	assert_string_equal(cq_bucket_wait_kind("possible deadlock: mutex f | mutex g"),
	                    "possible-deadlock");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_normalize_c_and_glibc),
	    cmocka_unit_test(test_normalize_cxx),
	    cmocka_unit_test(test_normalize_rust),
	    cmocka_unit_test(test_abort_machinery_and_startup_dropped),
	    cmocka_unit_test(test_assert_and_throw_start_at_the_caller),
	    cmocka_unit_test(test_segv_keeps_top_and_scan_frames_are_dropped),
	    cmocka_unit_test(test_rust_panics_start_at_the_app),
	    cmocka_unit_test(test_crash_handlers),
	    cmocka_unit_test(test_go_crashes),
	    cmocka_unit_test(test_handler_above_machinery),
	    cmocka_unit_test(test_prefix_skip_recursion_and_in_app),
	    cmocka_unit_test(test_rules_files),
	    cmocka_unit_test(test_deadlock_signature_lock_takers),
	    cmocka_unit_test(test_deadlock_signature_rotation),
	    cmocka_unit_test(test_deadlock_signature_huge_cycle),
	    cmocka_unit_test(test_no_wait_no_hang_signature),
	};
	return cmocka_run_group_tests(tests, load_rules, free_rules);
}
