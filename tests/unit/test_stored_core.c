/*
 * test_stored_core.c - a stored core read back by its row
 * (libcore/store/stored_core.h), on a hand-written core (core_writer.h)
 * ingested into a fresh database whose row is then edited the way a
 * hostile or stale database would have it: the hook's copy preferred when
 * readable, a missing id, a gone file, no recorded size, a FIFO, a file
 * larger than the recorded size, each blamed on the right name; the bytes
 * written to a descriptor and to a fresh 0600 file, a FIFO output refused
 * and left alone, nothing created when the row is bad; and the descriptor
 * and executable a debugger is handed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "libcore/analysis/stacktrace.h"
#include "libcore/model/core.h"
#include "libcore/pipeline/ingest.h"
#include "libcore/store/store.h"
#include "libcore/store/stored_core.h"
#include "libcore/triage/rules.h"
#include "tests/unit/core_writer.h"

struct fixture {
	char dir[64];
	char db[96], core[96], copy[96];
	int64_t id;   /* the core's row */
	off_t size;   /* of the core file */
	uint8_t *raw; /* its bytes */
	struct cq_store *store;
};

static void sql(const struct fixture *f, const char *fmt, ...)
{
	char stmt[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(stmt, sizeof(stmt), fmt, ap);
	va_end(ap);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, stmt, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

static uint8_t *slurp(const char *path, off_t *size)
{
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	uint8_t *buf = malloc((size_t)st.st_size);
	FILE *in = fopen(path, "rb");
	assert_non_null(in);
	assert_int_equal(fread(buf, 1, (size_t)st.st_size, in), (size_t)st.st_size);
	fclose(in);
	*size = st.st_size;
	return buf;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/coreq-test-stored-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->db, sizeof(f->db), "%s/t.db", f->dir);
	snprintf(f->core, sizeof(f->core), "%s/a.core", f->dir);
	snprintf(f->copy, sizeof(f->copy), "%s/copy.core", f->dir);
	static struct core_writer w;
	memset(&w, 0, sizeof(w));
	static const uint8_t stack[256] = {1, 2, 3};
	cw_prstatus(&w, 4242, 11, 0x401000, 0x7ffc0000, 0);
	cw_load(&w, 0x7ffc0000, stack, sizeof(stack), PF_R | PF_W);
	if (cw_write(&w, f->core, 0) || cq_store_open(f->db, &f->store))
		return -1;
	struct cq_bucket_rules *rules;
	if (cq_bucket_rules_load(NULL, &rules))
		return -1;
	struct cq_core_options co = {0};
	struct cq_stack_options so;
	cq_stack_options_default(&so);
	struct cq_ingest_options io = {
	    .core = &co, .stacks = &so, .signature_frames = 5, .rules = rules};
	struct cq_ingest_result res;
	struct cq_error *err = cq_ingest_core(f->store, f->core, &io, &res);
	f->id = res.store.core_id;
	cq_ingest_result_free(&res);
	cq_bucket_rules_free(rules);
	if (err || f->id <= 0)
		return -1;
	f->raw = slurp(f->core, &f->size);
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
	free(f->raw);
	free(f);
	return 0;
}

/* Sets the row's path, stored_path (NULL: none) and size. */
static void set_row(const struct fixture *f, const char *path, const char *stored, int64_t size)
{
	char stored_sql[128];
	snprintf(stored_sql, sizeof(stored_sql), stored ? "'%s'" : "NULL", stored);
	sql(f, "UPDATE cores SET path='%s', stored_path=%s, size=%lld WHERE id=%lld", path,
	    stored_sql, (long long)size, (long long)f->id);
}

static void test_open_reads_the_row(void **state)
{
	struct fixture *f = *state;
	set_row(f, f->core, NULL, f->size);
	struct cq_stored_core s;
	struct cq_error *err = cq_stored_core_open(f->store, f->id, NULL, &s);
	assert_null(err);
	assert_string_equal(s.path, f->core);
	assert_int_equal(s.size, f->size);
	assert_non_null(s.core);
	assert_int_equal(s.core->source.size, (uint64_t)f->size);
	assert_int_equal(cq_core_crashed_thread(s.core)->tid, 4242);
	cq_stored_core_close(&s);
	assert_null(s.core);
	assert_null(s.path);
}

static void test_stored_copy_preferred_when_readable(void **state)
{
	struct fixture *f = *state;
	FILE *out = fopen(f->copy, "wb");
	assert_int_equal(fwrite(f->raw, 1, (size_t)f->size, out), (size_t)f->size);
	fclose(out);
	set_row(f, "/nonexistent/original.core", f->copy, f->size);
	struct cq_stored_core s;
	assert_null(cq_stored_core_open(f->store, f->id, NULL, &s));
	assert_string_equal(s.path, f->copy);
	cq_stored_core_close(&s);
	/* An unreadable copy: the original is read. */
	set_row(f, f->core, "/nonexistent/copy.core", f->size);
	assert_null(cq_stored_core_open(f->store, f->id, NULL, &s));
	assert_string_equal(s.path, f->core);
	cq_stored_core_close(&s);
	unlink(f->copy);
}

/* Opens row id expecting an error of code, blamed on blame, whose message holds text. */
static void expect_refused(struct fixture *f, int64_t id, enum cq_error_code code,
                           enum cq_stored_core_blame blame, const char *text)
{
	struct cq_stored_core s;
	struct cq_error *err = cq_stored_core_open(f->store, id, NULL, &s);
	assert_non_null(err);
	assert_int_equal(err->code, code);
	assert_int_equal(s.blame, blame);
	if (!strstr(err->message, text))
		fail_msg("'%s' does not say '%s'", err->message, text);
	assert_null(s.core);
	cq_error_free(err);
	cq_stored_core_close(&s);
}

static void test_bad_rows_refused(void **state)
{
	struct fixture *f = *state;
	expect_refused(f, f->id + 100, CQ_ERR_NOT_FOUND, CQ_STORED_CORE_ROW, "no core with id");
	set_row(f, "/nonexistent/gone.core", NULL, f->size);
	expect_refused(f, f->id, CQ_ERR_NOT_FOUND, CQ_STORED_CORE_ROW,
	               "its file /nonexistent/gone.core is gone");
	set_row(f, f->core, NULL, 0);
	expect_refused(f, f->id, CQ_ERR_FORMAT, CQ_STORED_CORE_ROW, "records no size");
	/* Recorded smaller than the file: one byte too few is too few. */
	set_row(f, f->core, NULL, f->size - 1);
	char text[96];
	snprintf(text, sizeof(text), "holds more than the %lld bytes", (long long)f->size - 1);
	expect_refused(f, f->id, CQ_ERR_FORMAT, CQ_STORED_CORE_FILE, text);
	/* A FIFO (nobody writes it: opening it for reading would block) and a device. */
	char fifo[128];
	snprintf(fifo, sizeof(fifo), "%s/fifo", f->dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	set_row(f, fifo, NULL, f->size);
	expect_refused(f, f->id, CQ_ERR_FORMAT, CQ_STORED_CORE_FILE, "not a regular file");
	set_row(f, "/dev/zero", NULL, f->size);
	expect_refused(f, f->id, CQ_ERR_FORMAT, CQ_STORED_CORE_FILE, "not a regular file");
	unlink(fifo);
}

static void test_write_to_fd_and_file(void **state)
{
	struct fixture *f = *state;
	set_row(f, f->core, NULL, f->size);
	char to[128];
	snprintf(to, sizeof(to), "%s/out.fd", f->dir);
	int fd = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	struct cq_stored_core s;
	assert_null(cq_stored_core_write(f->store, f->id, NULL, fd, &s));
	cq_stored_core_close(&s);
	close(fd);
	off_t n;
	uint8_t *got = slurp(to, &n);
	assert_int_equal(n, f->size);
	assert_memory_equal(got, f->raw, (size_t)n);
	free(got);
	/* A target that exists with mode 0666 is replaced by a fresh 0600 file. */
	snprintf(to, sizeof(to), "%s/out.file", f->dir);
	FILE *old = fopen(to, "w");
	fputs("old", old);
	fclose(old);
	chmod(to, 0666);
	assert_null(cq_stored_core_write(f->store, f->id, to, -1, &s));
	cq_stored_core_close(&s);
	struct stat st;
	assert_int_equal(stat(to, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	got = slurp(to, &n);
	assert_int_equal(n, f->size);
	assert_memory_equal(got, f->raw, (size_t)n);
	free(got);
}

static void test_write_refusals(void **state)
{
	struct fixture *f = *state;
	set_row(f, f->core, NULL, f->size);
	char fifo[128], to[128];
	snprintf(fifo, sizeof(fifo), "%s/out.fifo", f->dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	struct cq_stored_core s;
	struct cq_error *err = cq_stored_core_write(f->store, f->id, fifo, -1, &s);
	assert_non_null(err);
	assert_int_equal(s.blame, CQ_STORED_CORE_OUTPUT);
	cq_error_free(err);
	cq_stored_core_close(&s);
	struct stat st;
	assert_int_equal(lstat(fifo, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	/* A bad row: blamed on the row, and no output created. */
	snprintf(to, sizeof(to), "%s/never", f->dir);
	set_row(f, f->core, NULL, 0);
	err = cq_stored_core_write(f->store, f->id, to, -1, &s);
	assert_non_null(err);
	assert_int_equal(s.blame, CQ_STORED_CORE_ROW);
	cq_error_free(err);
	cq_stored_core_close(&s);
	assert_int_not_equal(access(to, F_OK), 0);
	unlink(fifo);
}

/* The handed-over descriptor: open without FD_CLOEXEC, holding the core's bytes. */
static void check_fd(const struct fixture *f, int fd)
{
	assert_true(fd >= 0);
	int flags = fcntl(fd, F_GETFD);
	assert_true(flags >= 0);
	assert_false(flags & FD_CLOEXEC);
	uint8_t head[64];
	assert_int_equal(pread(fd, head, sizeof(head), 0), (ssize_t)sizeof(head));
	assert_memory_equal(head, f->raw, sizeof(head));
}

static void test_handoff(void **state)
{
	struct fixture *f = *state;
	set_row(f, f->core, NULL, f->size);
	sql(f, "UPDATE cores SET exe='/row/exe' WHERE id=%lld", (long long)f->id);
	struct cq_stored_core_handoff h;
	/* The core names no executable (no NT_FILE, no psinfo): the row's. */
	assert_null(cq_stored_core_for_debugger(f->store, f->id, NULL, &h));
	check_fd(f, h.fd);
	assert_string_equal(h.exe, "/row/exe");
	assert_string_equal(h.path, f->core);
	cq_stored_core_handoff_free(&h);
	assert_int_equal(h.fd, -1);
	assert_null(cq_stored_core_for_debugger(f->store, f->id, "/asked/exe", &h));
	assert_string_equal(h.exe, "/asked/exe");
	cq_stored_core_handoff_free(&h);
	/* A bad row: blamed on the row, nothing handed over. */
	set_row(f, f->core, NULL, 0);
	struct cq_error *err = cq_stored_core_for_debugger(f->store, f->id, NULL, &h);
	assert_non_null(err);
	assert_int_equal(h.blame, CQ_STORED_CORE_ROW);
	assert_int_equal(h.fd, -1);
	cq_error_free(err);
	cq_stored_core_handoff_free(&h);
	/* A core file by path: no row, so no executable unless asked. */
	assert_null(cq_stored_core_file_for_debugger(f->core, NULL, &h));
	check_fd(f, h.fd);
	assert_null(h.exe);
	assert_string_equal(h.path, f->core);
	cq_stored_core_handoff_free(&h);
	err = cq_stored_core_file_for_debugger("/nonexistent/x.core", NULL, &h);
	assert_non_null(err);
	assert_int_equal(h.blame, CQ_STORED_CORE_FILE);
	assert_string_equal(h.path, "/nonexistent/x.core");
	cq_error_free(err);
	cq_stored_core_handoff_free(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_open_reads_the_row, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stored_copy_preferred_when_readable, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_bad_rows_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_write_to_fd_and_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_write_refusals, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_handoff, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
