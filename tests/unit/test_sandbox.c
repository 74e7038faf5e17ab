/*
 * test_sandbox.c - the hook's analysis child (libcore/capture/sandbox.h)
 * with a stand-in analysis: the stored file or the raw copy reaches it
 * (the raw copy on standard input, the stored path after the parent sends
 * it), a core that was not stored is not analysed, the parent learns the
 * account the child ran as, and every failure reaches the outcome with its
 * reason: one the analysis recorded, one it could not record, one before
 * the analysis (prepare), and the time budget: the child's alarm, the
 * parent's own deadline when the alarm cannot fire, and a stopped child
 * killed at once.  As root, the child drops to the crashed process's
 * account.  (The memory budget is not set in the
 * sanitizer build; tests/e2e/test_hook_defaults.py covers it.)
 */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "libcore/capture/capture.h"
#include "libcore/capture/sandbox.h"

static const char core_bytes[] = "not really a core, but the child's input";

/* How the stand-in analysis behaves (set before the fork). */
static struct {
	bool prepare_fails;
	bool analysis_fails, record_fails;
	unsigned sleep_seconds;
	bool alarm_blocked; /* the alarm cannot end the analysis: only the parent can */
	bool stops;         /* the analysis is stopped (SIGSTOP) after leaving a file in TMPDIR */
	char result[128];   /* where the analysis writes what it saw ("" : nowhere) */
} mode;

static struct cq_error *fake_prepare(void *arg)
{
	(void)arg;
	return mode.prepare_fails ? cq_error_create(CQ_ERR_DB, "no database today") : NULL;
}

/* Reads the core as the analysis would, and says what it saw. */
static struct cq_error *fake_analyse(void *arg, const struct cq_sandbox_core *core,
                                     struct cq_error **record_error)
{
	(void)arg;
	if (mode.alarm_blocked) {
		sigset_t alrm;
		sigemptyset(&alrm);
		sigaddset(&alrm, SIGALRM);
		sigprocmask(SIG_BLOCK, &alrm, NULL);
	}
	if (mode.stops) {
		char litter[256];
		snprintf(litter, sizeof(litter), "%s/litter", getenv("TMPDIR"));
		FILE *out = fopen(litter, "w");
		if (out)
			fclose(out);
		raise(SIGSTOP);
	}
	if (mode.sleep_seconds)
		sleep(mode.sleep_seconds);
	char buf[256] = "";
	FILE *in = strcmp(core->path, "-") == 0 ? stdin : fopen(core->path, "r");
	size_t n = in ? fread(buf, 1, sizeof(buf) - 1, in) : 0;
	buf[n] = 0;
	char *stored = core->stored_path ? strdup(core->stored_path) : NULL;
	if (!stored && core->await_stored) {
		struct cq_error *err = core->await_stored(core->await_ctx, &stored);
		if (err)
			return err;
	}
	if (mode.result[0]) {
		FILE *out = fopen(mode.result, "w");
		if (out) {
			fprintf(out, "%s\n%s\n%s\n", strcmp(core->path, "-") == 0 ? "-" : "path",
			        stored ? stored : "(none)", buf);
			fclose(out);
		}
	}
	free(stored);
	if (strcmp(buf, core_bytes) != 0)
		return cq_error_create(CQ_ERR_FORMAT, "not the core that was sent");
	if (mode.analysis_fails) {
		if (mode.record_fails)
			*record_error = cq_error_create(CQ_ERR_DB, "database is locked");
		return cq_error_create(CQ_ERR_FORMAT, "the analysis broke");
	}
	return NULL;
}

struct fixture {
	char dir[64];
	char stored[128];
	struct cq_capture cap;
	struct cq_sandbox_config cfg;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/coreq-test-sandbox-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	chmod(f->dir, 0755);
	snprintf(f->stored, sizeof(f->stored), "%s/core.zst", f->dir);
	FILE *out = fopen(f->stored, "w");
	if (!out)
		return -1;
	fputs(core_bytes, out);
	fclose(out);
	chmod(f->stored, 0644);
	cq_capture_init(&f->cap);
	f->cap.uid = 0; /* no drop unless a test says so */
	f->cfg = (struct cq_sandbox_config){
	    .work_dir = f->dir,
	    .timeout = 30,
	    .cap = &f->cap,
	    .work = {.prepare = fake_prepare, .analyse = fake_analyse},
	};
	memset(&mode, 0, sizeof(mode));
	snprintf(mode.result, sizeof(mode.result), "%s/result", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/* The result file's three lines: how the core was read, the stored path, the bytes. */
static bool read_result(struct fixture *f, char how[8], char stored[128], char bytes[128])
{
	FILE *in = fopen(mode.result, "r");
	if (!in)
		return false;
	bool ok = fgets(how, 8, in) && fgets(stored, 128, in) && fgets(bytes, 128, in);
	fclose(in);
	(void)f;
	how[strcspn(how, "\n")] = 0;
	stored[strcspn(stored, "\n")] = 0;
	bytes[strcspn(bytes, "\n")] = 0;
	return ok;
}

static void run(struct fixture *f, bool raw, bool store, struct cq_sandbox_outcome *out)
{
	struct cq_sandbox sb;
	assert_null(cq_sandbox_start(&f->cfg, raw ? 1 << 20 : 0, -1, &sb));
	if (raw) {
		assert_true(sb.memfd >= 0);
		assert_int_equal(write(sb.memfd, core_bytes, strlen(core_bytes)),
		                 (ssize_t)strlen(core_bytes));
		cq_sandbox_raw_complete(&sb, strlen(core_bytes));
		assert_true(sb.from_memory);
	}
	cq_sandbox_stored(&sb, store ? f->stored : NULL);
	assert_null(cq_sandbox_finish(&sb, store, out));
}

static void test_stored_file(void **state)
{
	struct fixture *f = *state;
	struct cq_sandbox_outcome out;
	run(f, false, true, &out);
	assert_false(out.failed);
	assert_int_equal(out.uid, (int64_t)geteuid());
	char how[8], stored[128], bytes[128];
	assert_true(read_result(f, how, stored, bytes));
	assert_string_equal(how, "path");
	assert_string_equal(bytes, core_bytes);
}

static void test_raw_copy(void **state)
{
	struct fixture *f = *state;
	struct cq_sandbox_outcome out;
	run(f, true, true, &out);
	assert_false(out.failed);
	char how[8], stored[128], bytes[128];
	assert_true(read_result(f, how, stored, bytes));
	assert_string_equal(how, "-");
	assert_string_equal(stored, f->stored); /* sent after the raw copy */
	assert_string_equal(bytes, core_bytes);
}

static void test_not_stored(void **state)
{
	struct fixture *f = *state;
	struct cq_sandbox_outcome out;
	run(f, false, false, &out);
	assert_false(out.failed);
	assert_int_equal(out.uid, -1);
	assert_int_equal(access(mode.result, F_OK), -1); /* never analysed */

	/* The raw copy analysed, then the core could not be stored: nothing written. */
	run(f, true, false, &out);
	assert_false(out.failed);
}

static void test_failure_recorded_by_the_analysis(void **state)
{
	struct fixture *f = *state;
	mode.analysis_fails = true;
	struct cq_sandbox_outcome out;
	run(f, false, true, &out);
	assert_true(out.failed);
	assert_true(out.recorded);
	assert_non_null(strstr(out.reason, "exit status 1"));
}

static void test_failure_the_analysis_could_not_record(void **state)
{
	struct fixture *f = *state;
	mode.analysis_fails = mode.record_fails = true;
	struct cq_sandbox_outcome out;
	run(f, true, true, &out);
	assert_true(out.failed);
	assert_false(out.recorded);
	assert_non_null(strstr(out.reason, "the analysis broke"));
	assert_non_null(strstr(out.reason, "database is locked"));
}

static void test_prepare_fails(void **state)
{
	struct fixture *f = *state;
	mode.prepare_fails = true;
	struct cq_sandbox_outcome out;
	run(f, true, true, &out);
	assert_true(out.failed);
	assert_false(out.recorded);
	assert_string_equal(out.reason, "no database today");
	assert_int_equal(out.uid, -1);
}

static void test_time_budget(void **state)
{
	struct fixture *f = *state;
	f->cfg.timeout = 1;
	mode.sleep_seconds = 5;
	struct cq_sandbox_outcome out;
	run(f, false, true, &out);
	assert_true(out.failed);
	assert_false(out.recorded);
	assert_string_equal(out.reason, "analysis exceeded its time budget of 1 s");
}

/* Whether a .spool-* directory is left in dir. */
static bool spool_left(const char *dir)
{
	DIR *d = opendir(dir);
	bool left = false;
	for (struct dirent *e; d && (e = readdir(d));)
		left |= strncmp(e->d_name, ".spool-", 7) == 0;
	if (d)
		closedir(d);
	return left;
}

/*
 * The analysis stopped (its account may SIGSTOP it once dropped): it never
 * takes its alarm, so the parent sees it stopped, kills it and says so, and
 * removes its spool directory with what it left there.
 */
static void test_stopped_analysis(void **state)
{
	struct fixture *f = *state;
	if (geteuid() == 0) {
		f->cap.uid = 4242; /* a drop, and a spool directory of its own */
		f->cap.gid = 4242;
		mode.result[0] = 0;
	}
	mode.stops = true;
	struct cq_sandbox_outcome out;
	run(f, false, true, &out);
	assert_true(out.failed);
	assert_false(out.recorded);
	assert_string_equal(out.reason,
	                    "analysis stopped by the hook: its process was stopped by a signal");
	assert_false(spool_left(f->dir));
}

/* An analysis its alarm cannot end: the parent's own deadline does. */
static void test_parent_deadline(void **state)
{
	struct fixture *f = *state;
	f->cfg.timeout = 1;
	mode.alarm_blocked = true;
	mode.sleep_seconds = 60;
	struct cq_sandbox_outcome out;
	run(f, false, true, &out);
	assert_true(out.failed);
	assert_false(out.recorded);
	assert_string_equal(
	    out.reason, "analysis stopped by the hook: still running after its time budget of 1 s");
}

static void test_drops_to_the_crashed_account(void **state)
{
	struct fixture *f = *state;
	if (geteuid() != 0) {
		skip();
		return;
	}
	f->cap.uid = 4242;
	f->cap.gid = 4242;
	mode.result[0] = 0; /* the account may not write in the test's directory */
	struct cq_sandbox_outcome out;
	run(f, false, true, &out);
	assert_false(out.failed); /* the stored file reached it, opened before the drop */
	assert_int_equal(out.uid, 4242);
	/* An id the kernel cannot pass drops to nobody, never stays root. */
	f->cap.uid = 4294967295LL;
	run(f, true, true, &out);
	assert_false(out.failed);
	assert_int_equal(out.uid, 65534);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_stored_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_raw_copy, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_not_stored, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_failure_recorded_by_the_analysis, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_failure_the_analysis_could_not_record, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_prepare_fails, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_time_budget, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stopped_analysis, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_parent_deadline, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_drops_to_the_crashed_account, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
