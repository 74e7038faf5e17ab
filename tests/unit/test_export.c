/*
 * test_export.c - the crash database as NDJSON records (libcore/store/
 * export.h) for a fleet of corpus cores (corpus_db.h): one record per core,
 * thread, stack and bucket, each on its own line with its type; the
 * natural keys (core identity; core, kind, idx; stack hash; bucket hash)
 * are unique and the same when the same database is exported again, so a
 * store that replaces by key (ReplacingMergeTree, schema/clickhouse)
 * loading both ends up with the same rows; the values of a core record are
 * the expect file's; the cursor (after_id, until_id, limit, the window),
 * the type bits, and the placeholders that are not crash records yet.
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

#include "libcore/capture/capture.h"
#include "libcore/store/capture_rows.h"
#include "libcore/store/export.h"
#include "tests/unit/corpus_db.h"

static int setup(void **state)
{
	return fleet_fixture_setup(state, "export");
}

/* The export as one malloc'd string. */
static char *export(struct fleet_fixture *x, const struct cq_export_options *o,
                    struct cq_export_result *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	assert_non_null(out);
	assert_null(cq_store_export(x->d.store, o, out, r));
	assert_int_equal(fclose(out), 0);
	return buf;
}

/* The value of "key" in one JSON line (no escapes in these values), or "". */
static void field(const char *line, const char *key, char *out, size_t cap)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	out[0] = 0;
	const char *p = strstr(line, pat);
	if (!p)
		return;
	p += strlen(pat);
	size_t n;
	if (*p == '"') {
		p++;
		n = strcspn(p, "\"");
	} else
		n = strcspn(p, ",}");
	snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
}

struct records {
	size_t n[5]; /* core, thread, stack, bucket, wait */
	char keys[64][128];
	size_t nkeys;
};

static size_t type_index(const char *type)
{
	static const char *const types[] = {"core", "thread", "stack", "bucket", "wait"};
	for (size_t i = 0; i < 5; i++)
		if (strcmp(type, types[i]) == 0)
			return i;
	fail_msg("unknown record type \"%s\"", type);
	return 0;
}

/* Splits an export into records; every line is an object with a type; keys are unique. */
static void records(char *text, struct records *r)
{
	memset(r, 0, sizeof(*r));
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		assert_true(line[0] == '{' && line[strlen(line) - 1] == '}');
		char type[16], a[64], b[16], c[16];
		field(line, "type", type, sizeof(type));
		size_t t = type_index(type);
		r->n[t]++;
		assert_true(r->nkeys < 64);
		char *key = r->keys[r->nkeys++];
		switch (t) {
		case 0:
			field(line, "identity", a, sizeof(a));
			snprintf(key, 128, "core %s", a);
			break;
		case 1:
			field(line, "core", a, sizeof(a));
			field(line, "kind", b, sizeof(b));
			field(line, "idx", c, sizeof(c));
			snprintf(key, 128, "thread %s %s %s", a, b, c);
			break;
		case 4:
			field(line, "core", a, sizeof(a));
			field(line, "idx", c, sizeof(c));
			snprintf(key, 128, "wait %s %s", a, c);
			break;
		default:
			field(line, "hash", a, sizeof(a));
			assert_int_equal(strlen(a), 16);
			snprintf(key, 128, "%s %s", type, a);
		}
		for (size_t i = 0; i + 1 < r->nkeys; i++)
			if (strcmp(r->keys[i], key) == 0)
				fail_msg("key %s twice", key);
	}
}

static void test_records_and_keys(void **state)
{
	struct fleet_fixture *x = *state;
	NEED_FLEET(x);
	struct cq_export_options o = {.host = "testhost"};
	struct cq_export_result r;
	char *one = export(x, &o, &r);
	/*
	 * 6 cores; threads 1+1+1+9+1+1; stacks: 13 (site g's two cores share one); buckets 4;
	 * waits: threads8's eight workers, each blocked in pthread_cond_wait.
	 */
	assert_int_equal(r.cores, 6);
	assert_int_equal(r.threads, 14);
	assert_int_equal(r.stacks, 13);
	assert_int_equal(r.buckets, 4);
	assert_int_equal(r.waits, 8);
	assert_int_equal(r.last_id, x->f.idg4);
	/* The same database again: the same records, byte for byte, so the same keys. */
	struct cq_export_result r2;
	char *two = export(x, &o, &r2);
	assert_string_equal(one, two);
	struct records rec;
	records(one, &rec);
	assert_int_equal(rec.n[0], 6);
	assert_int_equal(rec.n[1], 14);
	assert_int_equal(rec.n[2], 13);
	assert_int_equal(rec.n[3], 4);
	assert_int_equal(rec.n[4], 8);
	free(one);
	free(two);
}

static void test_core_record_values(void **state)
{
	struct fleet_fixture *x = *state;
	NEED_FLEET(x);
	struct cq_export_options o = {
	    .after_id = x->f.ids - 1, .limit = 1, .types = CQ_EXPORT_CORES, .host = "testhost"};
	struct cq_export_result r;
	char *text = export(x, &o, &r);
	assert_int_equal(r.cores, 1);
	assert_int_equal(r.threads + r.stacks + r.buckets, 0);
	assert_int_equal(r.last_id, x->f.ids);
	char v[256], want[64];
	field(text, "type", v, sizeof(v));
	assert_string_equal(v, "core");
	field(text, "local_id", v, sizeof(v));
	snprintf(want, sizeof(want), "%lld", (long long)x->f.ids);
	assert_string_equal(v, want);
	field(text, "pid", v, sizeof(v));
	snprintf(want, sizeof(want), "%ld", x->f.s.pid);
	assert_string_equal(v, want);
	field(text, "signal", v, sizeof(v));
	snprintf(want, sizeof(want), "%ld", x->f.s.signal);
	assert_string_equal(v, want);
	field(text, "signal_name", v, sizeof(v));
	assert_string_equal(v, "SIGSEGV");
	field(text, "nthreads", v, sizeof(v));
	snprintf(want, sizeof(want), "%ld", x->f.s.threads);
	assert_string_equal(v, want);
	field(text, "exe", v, sizeof(v));
	assert_string_equal(v, x->f.s.exe);
	field(text, "host", v, sizeof(v)); /* the core records none: the one given */
	assert_string_equal(v, "testhost");
	field(text, "status", v, sizeof(v));
	assert_string_equal(v, "ok");
	field(text, "bucket", v, sizeof(v));
	assert_int_equal(strlen(v), 16);
	free(text);
}

static void test_cursor_window_and_types(void **state)
{
	struct fleet_fixture *x = *state;
	NEED_FLEET(x);
	struct cq_export_result r;
	/* Nothing after the last core: no records, the cursor stays. */
	char *text = export(x, &(struct cq_export_options){.after_id = x->f.idg4}, &r);
	assert_string_equal(text, "");
	assert_int_equal(r.cores + r.threads + r.stacks + r.buckets, 0);
	assert_int_equal(r.last_id, x->f.idg4);
	free(text);
	/* after a, at most b..t: the window of three exports the same cores for each type. */
	int64_t until = 0;
	assert_null(cq_store_export_window(x->d.store, x->f.ida, 3, &until));
	assert_int_equal(until, x->f.idt);
	text = export(x,
	              &(struct cq_export_options){
	                  .after_id = x->f.ida, .until_id = until, .types = CQ_EXPORT_THREADS},
	              &r);
	assert_int_equal(r.cores, 0);
	assert_int_equal(r.threads, 1 + 1 + 9);
	assert_int_equal(r.last_id, until);
	free(text);
	text = export(x,
	              &(struct cq_export_options){.after_id = x->f.ida,
	                                          .until_id = until,
	                                          .types = CQ_EXPORT_STACKS | CQ_EXPORT_BUCKETS},
	              &r);
	assert_int_equal(r.stacks, 11);
	assert_int_equal(r.buckets, 3); /* abort_deep's, segv_null's, threads8's */
	free(text);
	/* since: everything was ingested now. */
	text = export(x, &(struct cq_export_options){.since = time(NULL) + 3600}, &r);
	assert_int_equal(r.cores, 0);
	free(text);
	int64_t none = -1;
	assert_null(cq_store_export_window(x->d.store, x->f.idg4, 10, &none));
	assert_int_equal(none, x->f.idg4);
}

static void test_placeholders_are_not_exported(void **state)
{
	struct fleet_fixture *x = *state;
	NEED_FLEET(x);
	struct cq_capture cap;
	cq_capture_init(&cap);
	int64_t id = 0;
	assert_null(cq_store_placeholder(x->d.store, &cap, "/var/lib/coreq/cores/core.x.zst", 10,
	                                 "pending", NULL, &id));
	assert_true(id > x->f.idg4);
	struct cq_export_result r;
	char *text = export(x, &(struct cq_export_options){.after_id = x->f.idg4}, &r);
	assert_string_equal(text, "");
	assert_int_equal(r.cores, 0);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_records_and_keys),
	    cmocka_unit_test(test_core_record_values),
	    cmocka_unit_test(test_cursor_window_and_types),
	    cmocka_unit_test(test_placeholders_are_not_exported),
	};
	return cmocka_run_group_tests(tests, setup, corpus_fixture_teardown);
}
