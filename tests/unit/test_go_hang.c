/*
 * test_go_hang.c - a Go core killed from outside is told from a Go crash
 * (libcore/triage/go_hang.h), on hand-built stacks named as the Go runtime's
 * frames are (src/runtime/signal_unix.go: sighandler, crash, dieFromSignal,
 * raise; panic.go: gopanic, throw; sigpanic for a fault).
 *
 * Files tested: libcore/triage/go_hang.c.
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
#include "libcore/triage/go_hang.h"
#include "libcore/triage/rules.h"
#include "unwind/frames.h"

static struct cq_stack_frame named(const char *fn)
{
	return (struct cq_stack_frame){.function = fn, .trust = CQ_TRUST_CFI};
}

/* The crashed thread of GOTRACEBACK=crash after a SIGABRT from outside. */
static struct cq_stack_frame handler[] = {
    {.function = "runtime.raise", .trust = CQ_TRUST_CONTEXT},
    {.function = "runtime.dieFromSignal", .trust = CQ_TRUST_CFI},
    {.function = "runtime.crash", .trust = CQ_TRUST_CFI},
    {.function = "runtime.sighandler", .trust = CQ_TRUST_CFI},
    {.function = "runtime.sigtrampgo", .trust = CQ_TRUST_CFI},
    {.function = "runtime.sigtramp", .trust = CQ_TRUST_CFI},
    {.function = "main.readForever", .trust = CQ_TRUST_CFI},
    {.function = "main.serve.func1", .trust = CQ_TRUST_CFI},
    {.function = "runtime.goexit", .trust = CQ_TRUST_CFI},
};

static void test_signalled(void **state)
{
	(void)state;
	struct cq_thread_stack ts = {.frames = handler, .nframes = 9};
	assert_true(cq_bucket_go_signalled(&ts));
	assert_false(cq_bucket_go_signalled(NULL));
	ts.nframes = 3; /* no runtime.sighandler: not the handler's death */
	assert_false(cq_bucket_go_signalled(&ts));
}

static void test_panics_are_crashes(void **state)
{
	(void)state;
	const char *death[] = {"runtime.gopanic", "runtime.throw", "runtime.fatalpanic",
	                       "runtime.sigpanic"};
	for (size_t d = 0; d < sizeof(death) / sizeof(death[0]); d++) {
		struct cq_stack_frame f[] = {
		    named("runtime.raise"),      named("runtime.dieFromSignal"),
		    named("runtime.sighandler"), named(death[d]),
		    named("main.crashNilMap"),   named("main.main")};
		struct cq_thread_stack ts = {.frames = f, .nframes = 6};
		assert_false(cq_bucket_go_signalled(&ts));
	}
}

static void test_hang_signature(void **state)
{
	(void)state;
	struct cq_bucket_rules *rules;
	assert_null(cq_bucket_rules_parse(cq_bucket_default_rules, strlen(cq_bucket_default_rules),
	                                  "built-in", &rules));
	struct cq_stack_frame idle[] = {named("runtime.futex"),        named("runtime.futexsleep"),
	                                named("runtime.notesleep"),    named("runtime.stopm"),
	                                named("runtime.findRunnable"), named("runtime.schedule"),
	                                named("runtime.mstart1"),      named("runtime.mstart")};
	struct cq_thread_stack threads[] = {{.frames = handler, .nframes = 9},
	                                    {.frames = idle, .nframes = 8}};
	struct cq_stacks stacks = {.threads = threads, .nthreads = 2};
	struct cq_bucket_signature s = {0}; /* replaced: a signature made before, or none */
	assert_null(cq_bucket_go_hang_signature(rules, NULL, &stacks, &s));
	/* the program's frames the signal found, never the runtime's handler or scheduler */
	assert_non_null(strstr(s.text, "main.readForever"));
	assert_null(strstr(s.text, "sighandler"));
	assert_null(strstr(s.text, "runtime.futex"));
	assert_int_equal(strncmp(s.text, "hang: ", 6), 0);
	cq_bucket_signature_free(&s);
	cq_bucket_rules_free(rules);
}

/* Every goroutine parked, no thread in the program: the parked goroutines name the hang. */
static void test_hang_of_parked_goroutines(void **state)
{
	(void)state;
	struct cq_bucket_rules *rules;
	assert_null(cq_bucket_rules_parse(cq_bucket_default_rules, strlen(cq_bucket_default_rules),
	                                  "built-in", &rules));
	struct cq_stack_frame sig[] = {named("runtime.raise"),      named("runtime.dieFromSignal"),
	                               named("runtime.crash"),      named("runtime.sighandler"),
	                               named("runtime.sigtrampgo"), named("runtime.sigtramp"),
	                               named("runtime.futex"),      named("runtime.mstart")};
	struct cq_stack_frame g1[] = {named("runtime.gopark"), named("runtime.chanrecv"),
	                              named("main.chanReceiver"), named("main.spawn.func1"),
	                              named("runtime.goexit")};
	struct cq_stack_frame g2[] = {named("runtime.gopark"), named("sync.runtime_Semacquire"),
	                              named("sync.(*WaitGroup).Wait"), named("main.groupWaiter"),
	                              named("runtime.goexit")};
	struct cq_thread_stack threads[] = {{.frames = sig, .nframes = 8}};
	struct cq_suspended_stack parked[] = {
	    {.kind = "go", .frames = g2, .nframes = 5, .has_task = true, .task_id = 7},
	    {.kind = "go", .frames = g1, .nframes = 5, .has_task = true, .task_id = 6}};
	struct cq_stacks stacks = {
	    .threads = threads, .nthreads = 1, .suspended = parked, .nsuspended = 2};
	assert_true(cq_bucket_go_signalled(&threads[0]));
	struct cq_bucket_signature s = {0};
	assert_null(cq_bucket_go_hang_signature(rules, NULL, &stacks, &s));
	assert_string_equal(s.text,
	                    "hang: main.chanReceiver < main.spawn.func1 | main.groupWaiter");
	cq_bucket_signature_free(&s);
	cq_bucket_rules_free(rules);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_signalled),
	    cmocka_unit_test(test_panics_are_crashes),
	    cmocka_unit_test(test_hang_signature),
	    cmocka_unit_test(test_hang_of_parked_goroutines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
