/*
 * test_push.c - pushing to a fleet store (libcore/pipeline/push.h) with a
 * recording sender in place of the HTTP client: the cursor file (missing is
 * 0, anything but one core id is an error, written atomically), the order
 * of a batch's tables (stacks, buckets, threads, cores), batches of the
 * size asked for, the cursor moving only after a whole batch, and retries
 * with exponential backoff.  The database holds hand-written cores
 * (core_writer.h) ingested by the ingest pipeline.
 */
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

#include "libcore/analysis/stacktrace.h"
#include "libcore/model/core.h"
#include "libcore/pipeline/ingest.h"
#include "libcore/pipeline/push.h"
#include "libcore/store/store.h"
#include "libcore/triage/rules.h"
#include "tests/unit/core_writer.h"

#define NCORES 5

struct fixture {
	char dir[64];
	char db[96], cursor[96];
	struct cq_store *store;
};

/* A core of one thread: tid and signal make it a core of its own. */
static void write_core(const char *path, int32_t tid, int sig)
{
	static struct core_writer w;
	memset(&w, 0, sizeof(w));
	cw_prstatus(&w, tid, sig, 0x401000, 0x7ffc0000, 0);
	assert_int_equal(cw_write(&w, path, 0), 0);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/coreq-test-push-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->db, sizeof(f->db), "%s/t.db", f->dir);
	snprintf(f->cursor, sizeof(f->cursor), "%s/cursor", f->dir);
	if (cq_store_open(f->db, &f->store))
		return -1;
	struct cq_bucket_rules *rules;
	if (cq_bucket_rules_load(NULL, &rules))
		return -1;
	struct cq_core_options co = {0};
	struct cq_stack_options so;
	cq_stack_options_default(&so);
	struct cq_ingest_options io = {
	    .core = &co, .stacks = &so, .signature_frames = 5, .rules = rules};
	for (int i = 0; i < NCORES; i++) {
		char path[128];
		snprintf(path, sizeof(path), "%s/core.%d", f->dir, i);
		write_core(path, 100 + i, i % 2 ? 6 : 11);
		struct cq_ingest_result res;
		struct cq_error *err = cq_ingest_core(f->store, path, &io, &res);
		cq_ingest_result_free(&res);
		unlink(path);
		if (err || res.store.duplicate)
			return -1;
	}
	cq_bucket_rules_free(rules);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	cq_store_close(f->store);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/* What the recording sender saw, and when it fails. */
struct recorder {
	char tables[64][16];
	size_t lines[64]; /* records in each body */
	size_t n;
	int fail_call; /* the call (0-based) from which every send fails; -1: none */
	unsigned waits[16];
	size_t nwaits;
};

static struct cq_error *record_send(void *arg, const char *table, const char *body, size_t len)
{
	struct recorder *r = arg;
	assert_true(r->n < 64);
	if (r->fail_call >= 0 && (int)r->n >= r->fail_call) {
		snprintf(r->tables[r->n++], 16, "!%s", table);
		return cq_error_create(CQ_ERR_IO, "%s: refused", table);
	}
	size_t lines = 0;
	for (size_t i = 0; i < len; i++)
		lines += body[i] == '\n';
	r->lines[r->n] = lines;
	snprintf(r->tables[r->n++], 16, "%s", table);
	return NULL;
}

static void record_wait(void *arg, unsigned seconds)
{
	struct recorder *r = arg;
	assert_true(r->nwaits < 16);
	r->waits[r->nwaits++] = seconds;
}

static struct cq_push_options options(struct fixture *f, struct recorder *rec, unsigned batch)
{
	return (struct cq_push_options){.url = "http://unused.invalid",
	                                .cursor_path = f->cursor,
	                                .batch = batch,
	                                .retries = 3,
	                                .timeout = 1,
	                                .host = "testhost",
	                                .send = record_send,
	                                .send_arg = rec,
	                                .wait = record_wait,
	                                .wait_arg = rec};
}

static void put_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(text, fp);
	assert_int_equal(fclose(fp), 0);
}

static char *slurp(const char *path)
{
	static char buf[64];
	FILE *fp = fopen(path, "r");
	assert_non_null(fp);
	size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
	buf[n] = 0;
	fclose(fp);
	return buf;
}

static void test_cursor_file(void **state)
{
	struct fixture *f = *state;
	int64_t c = -1;
	assert_null(cq_push_cursor_read(f->cursor, &c)); /* no file yet */
	assert_int_equal(c, 0);
	static const struct {
		const char *text;
		int64_t value; /* -1: an error */
	} cases[] = {
	    {"42\n", 42},
	    {"42", 42},
	    {"0\n", 0},
	    {"9223372036854775807\n", INT64_MAX},
	    {"", -1},
	    {"\n", -1},
	    {"garbage\n", -1},
	    {"-1\n", -1},
	    {" 42\n", -1},
	    {"42\n43\n", -1},
	    {"9223372036854775808\n", -1},
	    {"123456789012345678901234567890123456789\n", -1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		put_file(f->cursor, cases[i].text);
		c = 7;
		struct cq_error *err = cq_push_cursor_read(f->cursor, &c);
		if (cases[i].value < 0) {
			assert_non_null(err);
			assert_non_null(strstr(err->message, f->cursor));
			cq_error_free(err);
		} else {
			assert_null(err);
			assert_int_equal(c, cases[i].value);
		}
	}
	/* A directory is no cursor either. */
	unlink(f->cursor);
	assert_int_equal(mkdir(f->cursor, 0700), 0);
	struct cq_error *err = cq_push_cursor_read(f->cursor, &c);
	assert_non_null(err);
	cq_error_free(err);
	rmdir(f->cursor);
	/* Written, then read back; a cursor in a missing directory is an error. */
	assert_null(cq_push_cursor_write(f->cursor, 1234));
	assert_string_equal(slurp(f->cursor), "1234\n");
	assert_null(cq_push_cursor_read(f->cursor, &c));
	assert_int_equal(c, 1234);
	char bad[128];
	snprintf(bad, sizeof(bad), "%s/no/such/cursor", f->dir);
	err = cq_push_cursor_write(bad, 1);
	assert_non_null(err);
	cq_error_free(err);
}

/* Every batch sends its tables in the order stacks, buckets, threads, cores. */
static void test_batches_in_order(void **state)
{
	struct fixture *f = *state;
	struct recorder rec = {.fail_call = -1};
	struct cq_push_options o = options(f, &rec, 2);
	struct cq_push_result r;
	assert_null(cq_push(f->store, &o, &r));
	assert_true(r.started);
	assert_int_equal(r.cores, NCORES);
	assert_int_equal(r.batches, (NCORES + 1) / 2);
	assert_int_equal(r.cursor_before, 0);
	assert_true(r.cursor >= NCORES);
	static const char *const order[] = {"stacks", "buckets", "threads", "cores"};
	size_t rank = 0, cores_sent = 0, batches = 0;
	for (size_t i = 0; i < rec.n; i++) {
		size_t k = 0;
		while (k < 4 && strcmp(rec.tables[i], order[k]) != 0)
			k++;
		assert_true(k < 4);
		if (k < rank) /* a new batch starts */
			rank = 0;
		assert_true(k >= rank);
		rank = k;
		if (k == 3) {
			/* the cores go last, at most a batch of them */
			assert_true(rec.lines[i] >= 1 && rec.lines[i] <= 2);
			cores_sent += rec.lines[i];
			batches++;
			rank = 4;
		}
	}
	assert_int_equal(cores_sent, NCORES);
	assert_int_equal(batches, (NCORES + 1) / 2);
	assert_int_equal(rec.nwaits, 0);
	int64_t c;
	assert_null(cq_push_cursor_read(f->cursor, &c));
	assert_int_equal(c, r.cursor);

	/* Nothing new: nothing sent, the cursor stays. */
	struct recorder again = {.fail_call = -1};
	o = options(f, &again, 2);
	assert_null(cq_push(f->store, &o, &r));
	assert_int_equal(again.n, 0);
	assert_int_equal(r.cores, 0);
	assert_int_equal(r.cursor, c);
	assert_int_equal(r.cursor_before, c);
}

/* A send that keeps failing: retried with backoff, the cursor stays at the last whole batch. */
static void test_failure_keeps_the_cursor(void **state)
{
	struct fixture *f = *state;
	struct recorder first = {.fail_call = -1};
	struct cq_push_options o = options(f, &first, 2);
	o.max_batches = 1;
	struct cq_push_result r;
	assert_null(cq_push(f->store, &o, &r));
	assert_int_equal(r.batches, 1);
	assert_int_equal(r.cores, 2);
	int64_t after_one = r.cursor;
	assert_true(after_one > 0);

	struct recorder rec = {.fail_call = 1}; /* the second table of the next batch */
	o = options(f, &rec, 2);
	struct cq_error *err = cq_push(f->store, &o, &r);
	assert_non_null(err);
	cq_error_free(err);
	assert_true(r.started);
	assert_int_equal(r.batches, 0);
	assert_int_equal(r.cursor, after_one);
	int64_t c;
	assert_null(cq_push_cursor_read(f->cursor, &c));
	assert_int_equal(c, after_one);
	/* one good send, then --retries attempts of the failing one, waiting 1 then 2 s */
	assert_int_equal(rec.n, 1 + 3);
	assert_int_equal(rec.nwaits, 2);
	assert_int_equal(rec.waits[0], 1);
	assert_int_equal(rec.waits[1], 2);
	for (size_t i = 1; i < rec.n; i++)
		assert_string_equal(rec.tables[i], rec.tables[1]);
}

/* A cursor that holds no core id stops the push before anything is sent. */
static void test_bad_cursor_sends_nothing(void **state)
{
	struct fixture *f = *state;
	put_file(f->cursor, "not a number\n");
	struct recorder rec = {.fail_call = -1};
	struct cq_push_options o = options(f, &rec, 2);
	struct cq_push_result r;
	struct cq_error *err = cq_push(f->store, &o, &r);
	assert_non_null(err);
	cq_error_free(err);
	assert_false(r.started);
	assert_int_equal(rec.n, 0);
	assert_string_equal(slurp(f->cursor), "not a number\n");
}

int main(void)
{
	/* No configuration file names another database or rules. */
	unsetenv("COREQ_RULES");
	setenv("COREQ_CONFIG", "/nonexistent/coreq.conf", 1);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_cursor_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_batches_in_order, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_failure_keeps_the_cursor, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_cursor_sends_nothing, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
