/*
 * test_store.c - the crash database's capture rows (libcore/store/
 * capture_rows.h) on a fresh database: a placeholder the hook writes for a
 * stored core, its failure, and what the hook reads back
 * (cq_store_stored_outcome); and the disk-space policy for storing cores
 * (libcore/capture/capture.h, cq_spool_limit).
 *
 * Files tested: libcore/store/store.c, libcore/store/capture_rows.c.
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

#include "libcore/capture/capture.h"
#include "libcore/capture/spool.h"
#include "libcore/store/capture_rows.h"
#include "libcore/store/store.h"

struct fixture {
	char dir[64];
	char db[96];
	struct cq_store *store;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/coreq-test-store-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->db, sizeof(f->db), "%s/t.db", f->dir);
	struct cq_error *err = cq_store_open(f->db, &f->store);
	if (err)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	cq_store_close(f->store);
	char p[128];
	static const char *const files[] = {"t.db", "t.db-wal", "t.db-shm"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", f->dir, files[i]);
		unlink(p);
	}
	rmdir(f->dir);
	free(f);
	return 0;
}

static void test_no_row_for_an_unknown_path(void **state)
{
	struct fixture *f = *state;
	struct cq_store_outcome o;
	memset(&o, 0x55, sizeof(o));
	assert_null(cq_store_stored_outcome(f->store, "/nowhere/core.x.zst", &o));
	assert_int_equal(o.core_id, 0);
	assert_string_equal(o.status, "");
	assert_string_equal(o.bucket, "");
}

static void test_placeholder_then_failure_reads_back(void **state)
{
	struct fixture *f = *state;
	struct cq_capture cap;
	cq_capture_init(&cap);
	cap.source = "hook";
	cap.known = CQ_CAPTURE_PID;
	cap.pid = 4242;
	snprintf(cap.comm, sizeof(cap.comm), "app");
	const char *path = "/var/lib/coreq/cores/core.app.0.b.4242.1.zst";
	int64_t id = 0;
	assert_null(cq_store_placeholder(f->store, &cap, path, 1234, "pending", NULL, &id));
	assert_true(id > 0);

	struct cq_store_outcome o;
	assert_null(cq_store_stored_outcome(f->store, path, &o));
	assert_int_equal(o.core_id, id);
	assert_string_equal(o.status, "pending");
	assert_string_equal(o.message, "");

	int64_t failed = 0;
	assert_null(cq_store_placeholder_failed(f->store, path, "analysis ran out of time", false,
	                                        &failed));
	assert_int_equal(failed, id);
	assert_null(cq_store_stored_outcome(f->store, path, &o));
	assert_string_equal(o.status, "failed");
	assert_string_equal(o.message, "analysis ran out of time");
	/* keep_reason keeps the first, more precise, reason. */
	assert_null(cq_store_placeholder_failed(f->store, path, "exit status 1", true, &failed));
	assert_null(cq_store_stored_outcome(f->store, path, &o));
	assert_string_equal(o.message, "analysis ran out of time");
	/* Another path still has no row. */
	assert_null(cq_store_stored_outcome(f->store, "/other", &o));
	assert_int_equal(o.core_id, 0);
}

static void test_store_limit(void **state)
{
	struct fixture *f = *state;
	bool no_room = true;
	/* No bounds at all. */
	assert_true(cq_spool_limit(f->dir, 0, -1, 0, &no_room) == 0);
	assert_false(no_room);
	/* The smaller of --max-size and RLIMIT_CORE. */
	assert_true(cq_spool_limit(f->dir, 1000, 500, 0, &no_room) == 500);
	assert_true(cq_spool_limit(f->dir, 300, 500, 0, &no_room) == 300);
	assert_true(cq_spool_limit(f->dir, 0, 700, 0, &no_room) == 700);
	/* Asking to keep more free than any disk has: no room at all. */
	assert_true(cq_spool_limit(f->dir, 1000, -1, UINT64_MAX / 2, &no_room) == 0);
	assert_true(no_room);
	/* A small reserve leaves room, bounded by the other limits. */
	assert_true(cq_spool_limit(f->dir, 1000, -1, 1, &no_room) == 1000);
	assert_false(no_room);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_no_row_for_an_unknown_path, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_placeholder_then_failure_reads_back, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_store_limit, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
