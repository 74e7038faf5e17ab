/*
 * test_hook.c - the hook's whole flow (libcore/pipeline/hook.h): a corpus
 * core handed over on a descriptor is stored, recorded and analysed, with
 * the store, database and cache in a scratch directory.
 *
 * Oracles: the corpus expect file (pid, signal, threads, crash chain), the
 * capture facts the test passes (as the kernel's arguments would), zstd -dc
 * of the stored file against the core's bytes, and the database read with
 * SQLite.  Covered: a core on a pipe (analysed from memory) and as a
 * regular file (analysed in place), the same core again (a duplicate),
 * RLIMIT_CORE 0 (nothing stored, a not_stored row), no analysis slots
 * (stored, left pending), a size limit (stored truncated, said so), and
 * the database found by $COREQ_DB when no path is given.
 * What depends on running as root (the drop to the crashed process's
 * account) is left to tests/e2e/test_hook.py.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "libcore/pipeline/hook.h"
#include "tests/unit/corpus.h"

#define T0 1763700000ll

struct scratch {
	char dir[64], store[128], db[128], cache[128];
};

static void scratch_open(struct scratch *s)
{
	assert_true(scratch_make(s->dir, sizeof(s->dir), "hook"));
	snprintf(s->store, sizeof(s->store), "%s/cores", s->dir);
	snprintf(s->db, sizeof(s->db), "%s/coreq.db", s->dir);
	snprintf(s->cache, sizeof(s->cache), "%s/cache.db", s->dir);
}

static void options(struct cq_hook_options *o, const struct scratch *s, const struct corpus_case *c,
                    int64_t t, const char *comm)
{
	cq_hook_options_init(o);
	o->store_dir = s->store;
	o->db = s->db;
	o->cache = s->cache;
	o->keep_free = 0; /* whatever the scratch file system has */
	o->max_analyses = 1;
	struct cq_capture *cap = &o->cap;
	cap->source = "hook";
	cap->pid = c->pid;
	cap->uid = getuid();
	cap->gid = getgid();
	cap->signal = c->signal;
	cap->timestamp_us = t * 1000000;
	cap->rlimit = -1;
	cap->known = CQ_CAPTURE_PID | CQ_CAPTURE_UID | CQ_CAPTURE_GID | CQ_CAPTURE_SIGNAL |
	             CQ_CAPTURE_TIMESTAMP | CQ_CAPTURE_RLIMIT;
	snprintf(cap->hostname, sizeof(cap->hostname), "testhost");
	snprintf(cap->comm, sizeof(cap->comm), "%s", comm);
}

/*
 * ---- the core on a pipe, written by another process as the kernel writes it ----
 * (not by a thread of this one: the analysis's child would inherit the
 * write end and the hook would never see the end of its input)
 */

struct feeder {
	pid_t pid;
};

/* The read end of a pipe `cat path` writes into. */
static int pipe_of(const char *path, struct feeder *f)
{
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	f->pid = fork();
	assert_true(f->pid >= 0);
	if (f->pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		execlp("cat", "cat", path, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	return fds[0];
}

static void feeder_wait(struct feeder *f)
{
	int status;
	assert_int_equal(waitpid(f->pid, &status, 0), f->pid);
}

/* ---- oracles ---- */

static uint64_t file_size(const char *path)
{
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	return (uint64_t)st.st_size;
}

/* zstd -dc of stored is the first n bytes of core. */
static bool zstd_is_prefix(const char *stored, const char *core, uint64_t n)
{
	char cmd[1200];
	snprintf(cmd, sizeof(cmd),
	         "zstd -dc '%s' | cmp -s -n %llu - '%s' && test $(zstd -dc '%s' | wc -c) = %llu",
	         stored, (unsigned long long)n, core, stored, (unsigned long long)n);
	return system(cmd) == 0;
}

/* Files in the store that are not the hook's hidden slot locks. */
static size_t stored_files(const char *store)
{
	char cmd[300], line[512];
	snprintf(cmd, sizeof(cmd), "ls '%s' 2>/dev/null", store);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t n = 0;
	while (fgets(line, sizeof(line), p))
		n += line[0] != '.';
	pclose(p);
	return n;
}

struct core_row {
	bool found;
	long long pid, uid, signal, timestamp, rlimit, nthreads, id;
	char status[32], source[16], comm[64], hostname[64], stored_path[512], message[512];
	bool has_bucket;
};

static struct core_row core_row(const char *db_path, long long id)
{
	struct core_row r = {0};
	sqlite3 *db;
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(
	    sqlite3_prepare_v2(db,
	                       "SELECT pid, uid, signal, timestamp, rlimit, nthreads, status, "
	                       "source, comm, hostname, coalesce(stored_path, ''), "
	                       "coalesce(message, ''), bucket_id IS NOT NULL, id "
	                       "FROM cores WHERE id = ?",
	                       -1, &st, NULL),
	    SQLITE_OK);
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		r.found = true;
		r.pid = sqlite3_column_int64(st, 0);
		r.uid = sqlite3_column_int64(st, 1);
		r.signal = sqlite3_column_int64(st, 2);
		r.timestamp = sqlite3_column_int64(st, 3);
		r.rlimit = sqlite3_column_int64(st, 4);
		r.nthreads = sqlite3_column_int64(st, 5);
		snprintf(r.status, sizeof(r.status), "%s", sqlite3_column_text(st, 6));
		snprintf(r.source, sizeof(r.source), "%s", sqlite3_column_text(st, 7));
		snprintf(r.comm, sizeof(r.comm), "%s", sqlite3_column_text(st, 8));
		snprintf(r.hostname, sizeof(r.hostname), "%s", sqlite3_column_text(st, 9));
		snprintf(r.stored_path, sizeof(r.stored_path), "%s", sqlite3_column_text(st, 10));
		snprintf(r.message, sizeof(r.message), "%s", sqlite3_column_text(st, 11));
		r.has_bucket = sqlite3_column_int(st, 12);
		r.id = sqlite3_column_int64(st, 13);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return r;
}

static long long count_cores(const char *db_path)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM cores", -1, &st, NULL),
	                 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	long long n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

/* The crashed thread's stored functions hold the expect file's chain, in order. */
static void assert_crash_chain(const char *db_path, long long core_id, const struct corpus_case *c)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
	                                    "SELECT f.function FROM threads t JOIN frames f ON "
	                                    "f.stack_id = t.stack_id WHERE t.core_id = ? AND "
	                                    "t.crashed = 1 ORDER BY f.idx",
	                                    -1, &st, NULL),
	                 SQLITE_OK);
	sqlite3_bind_int64(st, 1, core_id);
	size_t k = 0;
	while (sqlite3_step(st) == SQLITE_ROW && k < c->nchain) {
		const unsigned char *fn = sqlite3_column_text(st, 0);
		if (fn && strcmp((const char *)fn, c->chain[k]) == 0)
			k++;
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	assert_int_equal(k, c->nchain);
}

/* The stored file's name: core.COMM.UID.BOOTID.PID.USEC.zst, in the store. */
static void assert_systemd_name(const char *path, const struct scratch *s, const char *comm,
                                long long pid, long long t)
{
	char store[4096], want[256];
	assert_non_null(realpath(s->store, store));
	size_t n = strlen(store);
	assert_int_equal(strncmp(path, store, n), 0);
	assert_int_equal(path[n], '/');
	const char *name = path + n + 1;
	snprintf(want, sizeof(want), "core.%s.%u.", comm, (unsigned)getuid());
	assert_int_equal(strncmp(name, want, strlen(want)), 0);
	snprintf(want, sizeof(want), ".%lld.%lld.zst", pid, t * 1000000);
	assert_true(strlen(name) > strlen(want));
	assert_string_equal(name + strlen(name) - strlen(want), want);
}

/* ---- tests ---- */

static void test_pipe_then_file_then_duplicate(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("segv_null.O2", &c);
	struct scratch s;
	scratch_open(&s);
	uint64_t size = file_size(c.core);

	/* On a pipe, with room for a raw copy: stored whole, analysed from the copy in memory. */
	struct cq_hook_options o;
	options(&o, &s, &c, T0, "segv_null");
	o.raw_memory = 1ull << 30;
	struct feeder f;
	o.input_fd = pipe_of(c.core, &f);
	struct cq_hook_result r;
	struct cq_error *err = cq_hook_run(&o, &r);
	feeder_wait(&f);
	if (err)
		fail_msg("hook: %s", err->message);
	assert_non_null(r.stored.path);
	assert_systemd_name(r.stored.path, &s, "segv_null", c.pid, T0);
	assert_int_equal(r.stored.raw_bytes, size);
	assert_false(r.stored.truncated);
	assert_true(r.stored.file_bytes > 0 && r.stored.file_bytes == file_size(r.stored.path));
	assert_true(zstd_is_prefix(r.stored.path, c.core, size));
	assert_string_equal(r.outcome.status, "ok");
	assert_true(r.outcome.core_id > 0);
	assert_true(r.outcome.bucket[0]);
	assert_int_equal(r.analysed_as, getuid());
	assert_non_null(r.analysed_from);
	assert_string_equal(r.analysed_from, "memory");
	/* The input was given up: /dev/null in its place, or closed. */
	char b;
	assert_true(read(o.input_fd, &b, 1) <= 0);

	struct core_row row = core_row(s.db, r.outcome.core_id);
	assert_true(row.found);
	assert_string_equal(row.status, "ok");
	assert_int_equal(row.pid, c.pid);
	assert_int_equal(row.uid, getuid());
	assert_int_equal(row.signal, c.signal);
	assert_int_equal(row.timestamp, T0);
	assert_int_equal(row.rlimit, -1);
	assert_int_equal(row.nthreads, c.threads);
	assert_string_equal(row.source, "hook");
	assert_string_equal(row.hostname, "testhost");
	assert_string_equal(row.stored_path, r.stored.path);
	assert_true(row.has_bucket);
	assert_crash_chain(s.db, r.outcome.core_id, &c);
	cq_hook_result_free(&r);
	assert_null(r.stored.path);

	/*
	 * The same core again, as a regular file, a second later: stored, found
	 * a duplicate, and its copy, which no row names, removed.
	 */
	options(&o, &s, &c, T0 + 1, "segv_null");
	o.input_fd = open(c.core, O_RDONLY);
	assert_true(o.input_fd >= 0);
	err = cq_hook_run(&o, &r);
	if (err)
		fail_msg("hook: %s", err->message);
	assert_non_null(r.stored.path);
	assert_systemd_name(r.stored.path, &s, "segv_null", c.pid, T0 + 1);
	assert_string_equal(r.analysed_from, "input file");
	assert_string_equal(r.outcome.status, "duplicate");
	assert_int_equal(r.outcome.core_id, 0);
	assert_int_equal(count_cores(s.db), 1);
	assert_true(access(r.stored.path, F_OK) != 0 && errno == ENOENT);
	assert_int_equal(stored_files(s.store), 1);
	cq_hook_result_free(&r);
	scratch_remove(s.dir);
}

static void test_rlimit_zero_stores_nothing(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("segv_null.O2", &c);
	struct scratch s;
	scratch_open(&s);
	struct cq_hook_options o;
	options(&o, &s, &c, T0, "nocore");
	o.cap.rlimit = 0;
	struct feeder f;
	o.input_fd = pipe_of(c.core, &f);
	struct cq_hook_result r;
	struct cq_error *err = cq_hook_run(&o, &r);
	feeder_wait(&f);
	if (err)
		fail_msg("hook: %s", err->message);
	assert_null(r.stored.path);
	assert_int_equal(stored_files(s.store), 0);
	assert_int_equal(r.analysed_as, -1);
	assert_null(r.analysed_from);
	assert_non_null(strstr(r.outcome.message, "RLIMIT_CORE"));
	assert_true(r.outcome.core_id > 0);
	struct core_row row = core_row(s.db, r.outcome.core_id);
	assert_true(row.found);
	assert_string_equal(row.status, "not_stored");
	assert_int_equal(row.pid, c.pid);
	assert_int_equal(row.rlimit, 0);
	assert_string_equal(row.comm, "nocore");
	assert_non_null(strstr(row.message, "RLIMIT_CORE"));
	assert_int_equal(count_cores(s.db), 1);
	cq_hook_result_free(&r);
	scratch_remove(s.dir);
}

static void test_no_analysis_slots_leaves_it_pending(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("segv_null.O2", &c);
	struct scratch s;
	scratch_open(&s);
	struct cq_hook_options o;
	options(&o, &s, &c, T0, "segv_null");
	o.max_analyses = 0;
	o.input_fd = open(c.core, O_RDONLY);
	assert_true(o.input_fd >= 0);
	struct cq_hook_result r;
	struct cq_error *err = cq_hook_run(&o, &r);
	if (err)
		fail_msg("hook: %s", err->message);
	assert_non_null(r.stored.path);
	assert_true(zstd_is_prefix(r.stored.path, c.core, file_size(c.core)));
	assert_int_equal(r.analysed_as, -1);
	assert_null(r.analysed_from);
	assert_string_equal(r.outcome.status, "pending");
	assert_non_null(strstr(r.outcome.message, "deferred"));
	struct core_row row = core_row(s.db, r.outcome.core_id);
	assert_true(row.found);
	assert_string_equal(row.status, "pending");
	assert_string_equal(row.stored_path, r.stored.path);
	cq_hook_result_free(&r);
	scratch_remove(s.dir);
}

static void test_size_limit_truncates(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("segv_null.O2", &c);
	struct scratch s;
	scratch_open(&s);
	struct cq_hook_options o;
	options(&o, &s, &c, T0, "segv_null");
	o.max_size = 64 * 1024;
	o.max_analyses = 0; /* what an analysis of a cut core says is the ingest's business */
	struct feeder f;
	o.input_fd = pipe_of(c.core, &f);
	struct cq_hook_result r;
	struct cq_error *err = cq_hook_run(&o, &r);
	feeder_wait(&f);
	if (err)
		fail_msg("hook: %s", err->message);
	assert_non_null(r.stored.path);
	assert_true(r.stored.truncated);
	assert_int_equal(r.stored.raw_bytes, 64 * 1024);
	assert_true(zstd_is_prefix(r.stored.path, c.core, 64 * 1024));
	struct core_row row = core_row(s.db, r.outcome.core_id);
	assert_true(row.found);
	assert_non_null(strstr(row.message, "truncated"));
	cq_hook_result_free(&r);
	scratch_remove(s.dir);
}

/* The paths left NULL follow every command's rule: $COREQ_DB and $COREQ_CACHE. */
static void test_default_paths_from_the_environment(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("segv_null.O2", &c);
	struct scratch s;
	scratch_open(&s);
	struct cq_hook_options o;
	options(&o, &s, &c, T0, "segv_null");
	o.db = NULL;
	o.cache = NULL;
	o.max_analyses = 0;
	setenv("COREQ_DB", s.db, 1);
	setenv("COREQ_CACHE", s.cache, 1);
	o.input_fd = open(c.core, O_RDONLY);
	assert_true(o.input_fd >= 0);
	struct cq_hook_result r;
	struct cq_error *err = cq_hook_run(&o, &r);
	unsetenv("COREQ_DB");
	unsetenv("COREQ_CACHE");
	if (err)
		fail_msg("hook: %s", err->message);
	struct core_row row = core_row(s.db, r.outcome.core_id);
	assert_true(row.found);
	assert_string_equal(row.stored_path, r.stored.path);
	cq_hook_result_free(&r);
	scratch_remove(s.dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pipe_then_file_then_duplicate),
	    cmocka_unit_test(test_rlimit_zero_stores_nothing),
	    cmocka_unit_test(test_no_analysis_slots_leaves_it_pending),
	    cmocka_unit_test(test_size_limit_truncates),
	    cmocka_unit_test(test_default_paths_from_the_environment),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
