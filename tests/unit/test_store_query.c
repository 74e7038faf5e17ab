/*
 * test_store_query.c - reading the crash database (libcore/store/
 * store_query.h) after the ingest pipeline stored a small fleet of corpus
 * cores (corpus_db.h): each filter of cores, buckets and stacks, the orders
 * the header promises (oldest or newest first, most cores first, most
 * shared first), a core's modules (build-ids as readelf reads them) and
 * threads (the crashed one first, each worker under its own function, as
 * threads8.c parks them), bucket keys; and rows whose text is NULL or of
 * another type, which a database from elsewhere may hold, read without harm.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "libcore/store/store_query.h"
#include "tests/unit/corpus_db.h"

static int setup(void **state)
{
	return fleet_fixture_setup(state, "query");
}

/* ---- cores ---- */

struct cores {
	size_t n;
	int64_t id[16], pid[16], signal[16];
	char bucket[16][20];
};

static void on_core(void *arg, const struct cq_store_core_row *row)
{
	struct cores *c = arg;
	assert_true(c->n < 16);
	c->id[c->n] = row->id;
	c->pid[c->n] = row->pid;
	c->signal[c->n] = row->signal;
	snprintf(c->bucket[c->n], sizeof(c->bucket[0]), "%s",
	         row->bucket_hash ? row->bucket_hash : "");
	c->n++;
}

static struct cores cores(struct fleet_fixture *x, struct cq_store_core_filter fl)
{
	struct cores c = {0};
	assert_null(cq_store_each_core(x->d.store, &fl, on_core, &c));
	return c;
}

static void test_cores(void **state)
{
	struct fleet_fixture *x = *state;
	NEED_FLEET(x);
	struct fleet *f = &x->f;
	int64_t all[6] = {f->ida, f->idb, f->ids, f->idt, f->idg0, f->idg4};
	struct cores c = cores(x, (struct cq_store_core_filter){0});
	assert_int_equal(c.n, 6);
	/* None has a crash time: ingest time orders them, and the row id within a second. */
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(c.id[i], all[i]);
	assert_int_equal(c.pid[0], f->a.pid);
	assert_int_equal(c.signal[2], f->s.signal);
	c = cores(x, (struct cq_store_core_filter){.newest_first = true});
	assert_int_equal(c.n, 6);
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(c.id[i], all[5 - i]);
	/* limit: the newest limit cores, still oldest first. */
	c = cores(x, (struct cq_store_core_filter){.limit = 2});
	assert_int_equal(c.n, 2);
	assert_int_equal(c.id[0], f->idg0);
	assert_int_equal(c.id[1], f->idg4);

	c = cores(x, (struct cq_store_core_filter){.signal = 11});
	assert_int_equal(c.n, 1);
	assert_int_equal(c.id[0], f->ids);
	assert_int_equal(c.pid[0], f->s.pid);
	c = cores(x, (struct cq_store_core_filter){.pid = f->t.pid});
	assert_int_equal(c.n, 1);
	assert_int_equal(c.id[0], f->idt);
	/* exe: a basename matches both builds, a path only its own. */
	c = cores(x, (struct cq_store_core_filter){.exe = "abort_deep"});
	assert_int_equal(c.n, 2);
	assert_int_equal(c.id[0], f->ida);
	assert_int_equal(c.id[1], f->idb);
	c = cores(x, (struct cq_store_core_filter){.exe = f->b.exe});
	assert_int_equal(c.n, 1);
	assert_int_equal(c.id[0], f->idb);
	c = cores(x, (struct cq_store_core_filter){.exe = "no_such_program"});
	assert_int_equal(c.n, 0);
	/* bucket: by hash, and by row id. */
	c = cores(x, (struct cq_store_core_filter){.id = f->ida});
	assert_int_equal(c.n, 1);
	char hash[20];
	snprintf(hash, sizeof(hash), "%s", c.bucket[0]);
	assert_int_equal(strlen(hash), 16);
	c = cores(x, (struct cq_store_core_filter){.bucket = hash});
	assert_int_equal(c.n, 2);
	assert_int_equal(c.id[0], f->ida);
	assert_int_equal(c.id[1], f->idb);
	/* since/until: everything was ingested just now. */
	int64_t now = time(NULL);
	assert_int_equal(cores(x, (struct cq_store_core_filter){.since = now + 3600}).n, 0);
	assert_int_equal(cores(x, (struct cq_store_core_filter){.until = now - 3600}).n, 0);
	assert_int_equal(cores(x, (struct cq_store_core_filter){.since = now - 3600}).n, 6);
	/* One core that is not there, fn NULL: asks whether it exists. */
	struct cq_error *err =
	    cq_store_each_core(x->d.store, &(struct cq_store_core_filter){.id = 99999}, NULL, NULL);
	assert_non_null(err);
	assert_int_equal(err->code, CQ_ERR_NOT_FOUND);
	cq_error_free(err);
	assert_null(cq_store_each_core(x->d.store, &(struct cq_store_core_filter){.id = f->idt},
	                               NULL, NULL));
}

/* ---- buckets ---- */

struct buckets {
	size_t n;
	int64_t id[8], count[8];
	char hash[8][20], signature[8][160];
	size_t nexes[8];
	char exes[8][2][256];
};

static void on_bucket(void *arg, const struct cq_store_bucket_row *row)
{
	struct buckets *b = arg;
	assert_true(b->n < 8);
	b->id[b->n] = row->id;
	b->count[b->n] = row->count;
	snprintf(b->hash[b->n], sizeof(b->hash[0]), "%s", row->hash);
	snprintf(b->signature[b->n], sizeof(b->signature[0]), "%s", row->signature);
	for (const char *const *e = row->exes; *e; e++) {
		if (b->nexes[b->n] < 2)
			snprintf(b->exes[b->n][b->nexes[b->n]], 256, "%s", *e);
		b->nexes[b->n]++;
	}
	b->n++;
}

static void test_buckets(void **state)
{
	struct fleet_fixture *x = *state;
	NEED_FLEET(x);
	struct fleet *f = &x->f;
	struct buckets b = {0};
	assert_null(cq_store_each_bucket(x->d.store, NULL, on_bucket, &b));
	/* abort_deep's two builds, site g twice, segv_null, threads8: most cores first. */
	assert_int_equal(b.n, 4);
	assert_int_equal(b.count[0], 2);
	assert_int_equal(b.count[1], 2);
	assert_int_equal(b.count[2], 1);
	assert_int_equal(b.count[3], 1);
	assert_true(b.id[0] < b.id[1]); /* ties by id */
	assert_true(b.id[2] < b.id[3]);
	assert_string_equal(b.signature[0], "level3 | level2 | level1 | main | SIGABRT");
	assert_string_equal(b.signature[1], "crash_in_g | dispatch | main | SIGABRT");
	assert_string_equal(b.signature[2], "store_null | writer | main | SIGSEGV");
	assert_string_equal(b.signature[3], "crash_main | main | SIGABRT");
	/* The two builds' executables, in some order. */
	assert_int_equal(b.nexes[0], 2);
	bool o0 = strcmp(b.exes[0][0], f->a.exe) == 0 || strcmp(b.exes[0][1], f->a.exe) == 0;
	bool o2 = strcmp(b.exes[0][0], f->b.exe) == 0 || strcmp(b.exes[0][1], f->b.exe) == 0;
	assert_true(o0 && o2);
	assert_int_equal(b.nexes[1], 1);

	/* Filtered: counts are of the matching cores only. */
	struct buckets e = {0};
	assert_null(cq_store_each_bucket(
	    x->d.store, &(struct cq_store_bucket_filter){.exe = f->b.exe}, on_bucket, &e));
	assert_int_equal(e.n, 1);
	assert_int_equal(e.count[0], 1);
	assert_string_equal(e.hash[0], b.hash[0]);
	memset(&e, 0, sizeof(e));
	assert_null(cq_store_each_bucket(
	    x->d.store, &(struct cq_store_bucket_filter){.since = time(NULL) + 3600}, on_bucket,
	    &e));
	assert_int_equal(e.n, 0);

	/* Keys: a 16-hex-digit hash or a row id. */
	assert_true(cq_store_bucket_key_valid(b.hash[0]));
	assert_true(cq_store_bucket_key_valid("0123456789ABCDEF"));
	assert_true(cq_store_bucket_key_valid("42"));
	assert_false(cq_store_bucket_key_valid(""));
	assert_false(cq_store_bucket_key_valid("0123456789abcde"));
	assert_false(cq_store_bucket_key_valid("0123456789abcdeg"));
	assert_false(cq_store_bucket_key_valid("-1"));
	assert_false(cq_store_bucket_key_valid("12 "));
}

/* ---- stacks ---- */

struct stacks {
	size_t n;
	int64_t threads[32], cores[32];
	size_t nframes[32];
	char hash[32][20];
};

static void on_stack(void *arg, const struct cq_store_stack_row *row)
{
	struct stacks *s = arg;
	assert_true(s->n < 32);
	assert_int_equal(strlen(row->hash), 16);
	assert_true(row->nframes > 0);
	s->threads[s->n] = row->threads;
	s->cores[s->n] = row->cores;
	s->nframes[s->n] = row->nframes;
	snprintf(s->hash[s->n], sizeof(s->hash[0]), "%s", row->hash);
	for (size_t i = 0; i < row->nframes; i++)
		assert_int_equal(row->frames[i].index, i);
	s->n++;
}

static struct stacks stacks(struct fleet_fixture *x, struct cq_store_stack_filter fl)
{
	struct stacks s = {0};
	assert_null(cq_store_each_stack(x->d.store, &fl, on_stack, &s));
	return s;
}

static void test_stacks(void **state)
{
	struct fleet_fixture *x = *state;
	NEED_FLEET(x);
	struct fleet *f = &x->f;
	/* a, b, s: one each; t: 9 (every worker parks under its own function); g: one for two. */
	struct stacks s = stacks(x, (struct cq_store_stack_filter){0});
	assert_int_equal(s.n, 13);
	assert_int_equal(s.threads[0], 2); /* most shared first */
	assert_int_equal(s.cores[0], 2);
	char shared[20];
	snprintf(shared, sizeof(shared), "%s", s.hash[0]);
	for (size_t i = 1; i < s.n; i++) {
		assert_int_equal(s.threads[i], 1);
		assert_int_equal(s.cores[i], 1);
	}
	s = stacks(x, (struct cq_store_stack_filter){.core_id = f->idt});
	assert_int_equal(s.n, f->t.threads);
	s = stacks(x, (struct cq_store_stack_filter){.core_id = f->idg4});
	assert_int_equal(s.n, 1);
	assert_string_equal(s.hash[0], shared);
	s = stacks(x, (struct cq_store_stack_filter){.exe = "abort_deep"});
	assert_int_equal(s.n, 2);
	s = stacks(x, (struct cq_store_stack_filter){.limit = 3});
	assert_int_equal(s.n, 3);
	struct cores c = cores(x, (struct cq_store_core_filter){.id = f->ids});
	s = stacks(x, (struct cq_store_stack_filter){.bucket = c.bucket[0]});
	assert_int_equal(s.n, 1);
	s = stacks(x, (struct cq_store_stack_filter){.bucket = "ffffffffffffffff"});
	assert_int_equal(s.n, 0);
}

/* ---- one core's modules and threads ---- */

struct modules {
	size_t n;
	uint64_t last_start;
	bool exe_found;
	const char *exe;
	char want_id[80];
};

static void on_module(void *arg, const struct cq_store_module_row *row)
{
	struct modules *m = arg;
	assert_true(row->start < row->end);
	assert_true(m->n == 0 || row->start > m->last_start); /* ordered by start */
	m->last_start = row->start;
	if (cq_store_text_is(row->path, m->exe)) {
		m->exe_found = true;
		assert_string_equal(row->build_id, m->want_id);
		assert_string_equal(row->status, "found");
	}
	m->n++;
}

static void test_modules(void **state)
{
	struct fleet_fixture *x = *state;
	NEED_FLEET(x);
	struct modules m = {.exe = x->f.a.exe};
	readelf_build_id(x->f.a.exe, m.want_id, sizeof(m.want_id));
	if (!m.want_id[0])
		fail_msg("readelf -n %s gave no build-id", x->f.a.exe);
	assert_null(cq_store_each_module(x->d.store, x->f.ida, on_module, &m));
	assert_true(m.exe_found);
	assert_true(m.n >= 3); /* the program, libc, the loader at least */
}

struct threads {
	size_t n;
	bool crashed_first, chain_found;
	unsigned workers; /* bit k: a thread parked in park <- wait_here_k <- worker_main */
	const struct corpus_case *c;
};

static void on_thread(void *arg, const struct cq_store_thread_row *row)
{
	struct threads *t = arg;
	if (t->n == 0)
		t->crashed_first = row->crashed;
	else
		assert_false(row->crashed);
	for (size_t i = 0; i + 2 < row->nframes; i++) {
		const char *w = row->frames[i + 1].function;
		if (cq_store_text_is(row->frames[i].function, "park") && w &&
		    strncmp(w, "wait_here_", 10) == 0 &&
		    cq_store_text_is(row->frames[i + 2].function, "worker_main"))
			t->workers |= 1u << (w[10] - '0');
	}
	for (size_t i = 0; row->crashed && i < row->nframes; i++) {
		size_t k = 0;
		while (k < t->c->nchain && i + k < row->nframes &&
		       cq_store_text_is(row->frames[i + k].function, t->c->chain[k]))
			k++;
		if (k == t->c->nchain)
			t->chain_found = true;
	}
	t->n++;
}

static void test_threads(void **state)
{
	struct fleet_fixture *x = *state;
	NEED_FLEET(x);
	struct threads t = {.c = &x->f.t};
	assert_null(cq_store_each_thread(x->d.store, x->f.idt, on_thread, &t));
	assert_int_equal(t.n, x->f.t.threads);
	assert_true(t.crashed_first);
	assert_true(t.chain_found);
	assert_int_equal(t.workers, 0xff);
	/* No async runtime in these programs: no suspended chains. */
	size_t n = 0;
	assert_null(cq_store_each_suspended(x->d.store, x->f.idt, NULL, &n));
}

/* ---- rows from elsewhere ---- */

static void on_any_stack(void *arg, const struct cq_store_stack_row *row)
{
	size_t *n = arg;
	for (size_t i = 0; i < row->nframes; i++) {
		/* kind and trust as stored: anything, compared only through cq_store_text_is */
		assert_false(cq_store_text_is(row->frames[i].kind, "native"));
	}
	(*n)++;
}

static void on_any_core(void *arg, const struct cq_store_core_row *row)
{
	size_t *n = arg;
	assert_null(row->exe);
	assert_null(row->hostname);
	(*n)++;
}

static void on_any_thread(void *arg, const struct cq_store_thread_row *row)
{
	size_t *n = arg;
	for (size_t i = 0; i < row->nframes; i++)
		assert_null(row->frames[i].function);
	(*n)++;
}

static void on_any_bucket(void *arg, const struct cq_store_bucket_row *row)
{
	(void)row;
	(*(size_t *)arg)++;
}

static void test_null_and_odd_text(void **state)
{
	struct fleet_fixture *x = *state;
	NEED_FLEET(x);
	cq_store_close(x->d.store);
	x->d.store = NULL;
	sqlite3 *db;
	assert_int_equal(sqlite3_open(x->d.path, &db), SQLITE_OK);
	char *msg = NULL;
	int rc =
	    sqlite3_exec(db,
	                 "UPDATE frames SET function = NULL, file = NULL, kind = 7, trust = "
	                 "x'00ff'; UPDATE cores SET exe = NULL, hostname = NULL, cmdline = NULL, "
	                 "signal_name = NULL; UPDATE threads SET name = NULL; "
	                 "UPDATE buckets SET signature = 5",
	                 NULL, NULL, &msg);
	if (rc != SQLITE_OK)
		fail_msg("%s", msg);
	sqlite3_close(db);
	assert_null(cq_store_open(x->d.path, &x->d.store));
	size_t n = 0;
	assert_null(
	    cq_store_each_stack(x->d.store, &(struct cq_store_stack_filter){0}, on_any_stack, &n));
	assert_int_equal(n, 13);
	n = 0;
	assert_null(
	    cq_store_each_core(x->d.store, &(struct cq_store_core_filter){0}, on_any_core, &n));
	assert_int_equal(n, 6);
	n = 0;
	assert_null(cq_store_each_thread(x->d.store, x->f.idt, on_any_thread, &n));
	assert_int_equal(n, 9);
	n = 0;
	assert_null(cq_store_each_bucket(x->d.store, NULL, on_any_bucket, &n));
	assert_int_equal(n, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cores),   cmocka_unit_test(test_buckets),
	    cmocka_unit_test(test_stacks),  cmocka_unit_test(test_modules),
	    cmocka_unit_test(test_threads), cmocka_unit_test(test_null_and_odd_text),
	};
	return cmocka_run_group_tests(tests, setup, corpus_fixture_teardown);
}
