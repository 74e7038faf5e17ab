/*
 * test_ingest.c - the ingest pipeline (libcore/pipeline/ingest.h) on corpus
 * cores and a fresh database: a core is stored once with the process,
 * signal and threads its expect file names and the signature its crash
 * chain makes; ingesting it again is a duplicate that writes nothing; a
 * file that is no core is an error that writes nothing, unless the hook
 * left a placeholder for it, which is then marked failed with the error;
 * the opened callback sees the core; open_cache is asked only when a core's
 * analysis needs the cache.
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
#include <sqlite3.h>

#include "libcore/analysis/stacktrace.h"
#include "libcore/capture/capture.h"
#include "libcore/db/cache.h"
#include "libcore/model/core.h"
#include "libcore/pipeline/ingest.h"
#include "libcore/store/capture_rows.h"
#include "libcore/store/store.h"
#include "libcore/store/store_query.h"
#include "libcore/triage/rules.h"
#include "tests/unit/corpus.h"

struct fixture {
	char dir[64];
	struct cq_store *store;
	struct cq_bucket_rules *rules;
	struct cq_core_options co;
	struct cq_stack_options so;
	struct cq_ingest_options io;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char db[128];
	if (!scratch_make(f->dir, sizeof(f->dir), "ingest1"))
		return -1;
	snprintf(db, sizeof(db), "%s/t.db", f->dir);
	if (cq_store_open(db, &f->store) || cq_bucket_rules_load(NULL, &f->rules))
		return -1;
	cq_stack_options_default(&f->so);
	f->io = (struct cq_ingest_options){
	    .core = &f->co, .stacks = &f->so, .signature_frames = 5, .rules = f->rules};
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	cq_store_close(f->store);
	cq_bucket_rules_free(f->rules);
	scratch_remove(f->dir);
	free(f);
	return 0;
}

struct core_seen {
	size_t n;
	int64_t pid, signal, nthreads, id;
	char status[16], bucket[32];
};

static void on_core(void *arg, const struct cq_store_core_row *row)
{
	struct core_seen *s = arg;
	s->n++;
	s->id = row->id;
	s->pid = row->pid;
	s->signal = row->signal;
	s->nthreads = row->nthreads;
	snprintf(s->status, sizeof(s->status), "%s", row->status ? row->status : "");
	snprintf(s->bucket, sizeof(s->bucket), "%s", row->bucket_hash ? row->bucket_hash : "");
}

struct thread_seen {
	size_t n, crashed_at;
	bool chain_found;
	const struct corpus_case *c;
};

/* The crashed thread's frames hold the expect file's chain, in order, with nothing between. */
static void on_thread(void *arg, const struct cq_store_thread_row *row)
{
	struct thread_seen *s = arg;
	if (row->crashed) {
		s->crashed_at = s->n;
		for (size_t i = 0; i < row->nframes && !s->chain_found; i++) {
			size_t k = 0;
			while (k < s->c->nchain && i + k < row->nframes &&
			       cq_store_text_is(row->frames[i + k].function, s->c->chain[k]))
				k++;
			s->chain_found = k == s->c->nchain;
		}
	}
	s->n++;
}

static size_t opened_calls;

static void on_opened(void *arg, const char *path, const struct cq_core *core)
{
	const struct corpus_case *c = arg;
	assert_string_equal(path, c->core);
	assert_int_equal(core->pid, c->pid);
	opened_calls++;
}

static void test_core_stored_once(void **state)
{
	struct fixture *f = *state;
	struct corpus_case c;
	CORPUS_CASE("abort_deep.O0", &c);
	opened_calls = 0;
	f->io.opened = on_opened;
	f->io.opened_arg = &c;
	struct cq_ingest_result r;
	assert_null(cq_ingest_core(f->store, c.core, &f->io, &r));
	assert_int_equal(opened_calls, 1);
	assert_true(r.store.core_id > 0);
	assert_false(r.store.duplicate);
	assert_int_equal(r.store.threads, c.threads);
	assert_int_equal(r.failed_row, 0);
	/* The signature: the chain's first five names and the signal (test_buckets.py's rule). */
	char want[512] = "";
	for (size_t i = 0; i < c.nchain && i < 5; i++)
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s | ", c.chain[i]);
	snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s",
	         cq_core_signal_name((int)c.signal));
	assert_non_null(r.signature.text);
	assert_string_equal(r.signature.text, want);
	assert_int_equal(strlen(r.signature.hash), 16);
	int64_t id = r.store.core_id;
	char hash[32];
	snprintf(hash, sizeof(hash), "%s", r.signature.hash);
	cq_ingest_result_free(&r);

	struct core_seen cs = {0};
	assert_null(cq_store_each_core(f->store, &(struct cq_store_core_filter){0}, on_core, &cs));
	assert_int_equal(cs.n, 1);
	assert_int_equal(cs.id, id);
	assert_int_equal(cs.pid, c.pid);
	assert_int_equal(cs.signal, c.signal);
	assert_int_equal(cs.nthreads, c.threads);
	assert_string_equal(cs.status, "ok");
	assert_string_equal(cs.bucket, hash);
	struct thread_seen ts = {.c = &c};
	assert_null(cq_store_each_thread(f->store, id, on_thread, &ts));
	assert_int_equal(ts.n, c.threads);
	assert_int_equal(ts.crashed_at, 0);
	assert_true(ts.chain_found);

	/* Again: a duplicate, same row, nothing written. */
	f->io.opened = NULL;
	assert_null(cq_ingest_core(f->store, c.core, &f->io, &r));
	assert_true(r.store.duplicate);
	assert_int_equal(r.store.core_id, id);
	assert_null(r.signature.text);
	cq_ingest_result_free(&r);
	memset(&cs, 0, sizeof(cs));
	assert_null(cq_store_each_core(f->store, &(struct cq_store_core_filter){0}, on_core, &cs));
	assert_int_equal(cs.n, 1);
}

static void write_text(const char *path)
{
	FILE *out = fopen(path, "w");
	assert_non_null(out);
	fputs("this is text, not an ELF core\n", out);
	assert_int_equal(fclose(out), 0);
}

/* Without a placeholder for the file (ingest.h: "the failed row recorded (0: none)"). */
static void test_not_a_core_is_an_error(void **state)
{
	struct fixture *f = *state;
	char path[128];
	snprintf(path, sizeof(path), "%s/not-a-core", f->dir);
	write_text(path);
	struct cq_ingest_result r;
	struct cq_error *err = cq_ingest_core(f->store, path, &f->io, &r);
	assert_non_null(err);
	assert_int_equal(r.failed_row, 0);
	assert_null(r.record_error);
	cq_error_free(err);
	cq_ingest_result_free(&r);
	struct core_seen cs = {0};
	assert_null(cq_store_each_core(f->store, &(struct cq_store_core_filter){0}, on_core, &cs));
	assert_int_equal(cs.n, 0);

	/* A path that does not exist: an error, no row. */
	snprintf(path, sizeof(path), "%s/missing", f->dir);
	err = cq_ingest_core(f->store, path, &f->io, &r);
	assert_non_null(err);
	assert_int_equal(r.failed_row, 0);
	cq_error_free(err);
	cq_ingest_result_free(&r);
}

/* A stored core the hook left a placeholder for: its failure is recorded under its path. */
static void test_stored_copy_that_fails_is_recorded(void **state)
{
	struct fixture *f = *state;
	char path[128];
	snprintf(path, sizeof(path), "%s/core.app.zst", f->dir);
	write_text(path);
	char *abs = realpath(path, NULL);
	assert_non_null(abs);
	struct cq_capture cap;
	cq_capture_init(&cap);
	int64_t placeholder = 0;
	assert_null(cq_store_placeholder(f->store, &cap, abs, 30, "pending", NULL, &placeholder));
	struct cq_ingest_result r;
	struct cq_error *err = cq_ingest_core(f->store, path, &f->io, &r);
	assert_non_null(err);
	assert_int_equal(r.failed_row, placeholder);
	assert_null(r.record_error);
	struct cq_store_outcome o;
	assert_null(cq_store_stored_outcome(f->store, abs, &o));
	assert_int_equal(o.core_id, placeholder);
	assert_string_equal(o.status, "failed");
	assert_string_equal(o.message, err->message);
	free(abs);
	cq_error_free(err);
	cq_ingest_result_free(&r);
}

/* What open_cache saw: how often it was asked, and the cache it hands out (kept by the test). */
struct lazy_seen {
	size_t asked;
	struct cq_cache *cache;
};

static struct cq_cache *open_counted(void *arg)
{
	struct lazy_seen *s = arg;
	s->asked++;
	return s->cache;
}

/*
 * open_cache (ingest.h): not asked for a file that is not a core nor for a
 * core already stored; asked once for a core to analyse, whose unwind
 * tables then reach the cache; the cache stays the caller's (open after
 * the ingest, closed once by the test).
 */
static void test_open_cache_lazily(void **state)
{
	struct fixture *f = *state;
	char path[128];
	snprintf(path, sizeof(path), "%s/cache.db", f->dir);
	struct lazy_seen seen = {0};
	assert_null(cq_cache_open(path, &seen.cache));
	f->io.open_cache = open_counted;
	f->io.open_cache_arg = &seen;
	snprintf(path, sizeof(path), "%s/not-a-core", f->dir);
	write_text(path);
	struct cq_ingest_result r;
	struct cq_error *err = cq_ingest_core(f->store, path, &f->io, &r);
	assert_non_null(err);
	cq_error_free(err);
	cq_ingest_result_free(&r);
	assert_int_equal(seen.asked, 0);

	struct corpus_case c;
	CORPUS_CASE("abort_deep.O0", &c);
	assert_null(cq_ingest_core(f->store, c.core, &f->io, &r));
	assert_false(r.store.duplicate);
	cq_ingest_result_free(&r);
	assert_int_equal(seen.asked, 1);
	assert_null(cq_ingest_core(f->store, c.core, &f->io, &r));
	assert_true(r.store.duplicate);
	cq_ingest_result_free(&r);
	assert_int_equal(seen.asked, 1); /* a stored core needs no stacks, so no cache */
	assert_null(cq_cache_close(seen.cache));
	snprintf(path, sizeof(path), "%s/cache.db", f->dir);
	sqlite3 *db;
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(
	    sqlite3_prepare_v2(db, "SELECT count(*) FROM unwind_tables", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	sqlite3_int64 rows = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	assert_true(rows > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_core_stored_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_not_a_core_is_an_error, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_open_cache_lazily, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stored_copy_that_fails_is_recorded, setup,
	                                    teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
