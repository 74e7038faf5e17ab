/*
 * test_cache.c - the per-build-id cache (libcore/db/cache.h): unwind
 * tables and symbol blobs keyed by build-id, the identity of the files they
 * came from, format version and address; a missing key, another format,
 * another build-id or the same build-id from other files finds nothing, and
 * a second open of the same file sees what the first stored.
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

#include "libcore/db/cache.h"

static void test_tables_and_symbols_round_trip(void **state)
{
	(void)state;
	char dir[] = "/tmp/coreq-test-cache-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/cache.db", dir);
	struct cq_cache *c;
	assert_null(cq_cache_open(path, &c));
	static const char genuine[] = "file=/usr/bin/app dev=1 ino=2 size=3 mtime=4.5\n";
	static const char claimant[] = "file=/tmp/app dev=1 ino=9 size=3 mtime=4.5\n";
	const char *hex = "0123456789abcdef0123456789abcdef01234567";
	struct cq_cache_key id = {hex, genuine, sizeof(genuine) - 1, 0};
	struct cq_cache_key other_file = {hex, claimant, sizeof(claimant) - 1, 0};
	struct cq_cache_key other_id = {"ffff", genuine, sizeof(genuine) - 1, 0};
	static const uint8_t table[] = {1, 2, 3, 4, 5};
	size_t len = 99;
	assert_null(cq_cache_get_table(c, &id, 3, &len));
	cq_cache_put_table(c, &id, 3, 7, table, sizeof(table));
	uint8_t *got = cq_cache_get_table(c, &id, 3, &len);
	assert_non_null(got);
	assert_int_equal(len, sizeof(table));
	assert_memory_equal(got, table, sizeof(table));
	free(got);
	assert_null(cq_cache_get_table(c, &id, 4, &len)); /* another format version */
	assert_null(cq_cache_get_table(c, &other_id, 3, &len));
	/* The same build-id claimed by another file: neither sees the other's rows. */
	assert_null(cq_cache_get_table(c, &other_file, 3, &len));
	static const uint8_t forged[] = {6, 6, 6};
	cq_cache_put_table(c, &other_file, 3, 1, forged, sizeof(forged));
	assert_true(other_file.source > 0 && other_file.source != id.source);
	got = cq_cache_get_table(c, &id, 3, &len);
	assert_non_null(got);
	assert_memory_equal(got, table, sizeof(table));
	free(got);

	static const uint8_t sym[] = {9, 8, 7};
	cq_cache_put_symbols(c, &id, 0x1234, 1, 2, sym, sizeof(sym));
	assert_null(cq_cache_get_symbols(c, &id, 0x1234, 0, 2, &len)); /* without debuginfo */
	assert_null(cq_cache_get_symbols(c, &id, 0x1235, 1, 2, &len));
	assert_null(cq_cache_get_symbols(c, &other_file, 0x1234, 1, 2, &len));
	/* stream_hints: a build whose analysis read its heap */
	assert_false(cq_cache_reads_heap(c, hex));
	cq_cache_put_reads_heap(c, hex);
	assert_true(cq_cache_reads_heap(c, hex));
	assert_false(cq_cache_reads_heap(c, "ffff"));
	assert_false(cq_cache_reads_heap(c, ""));
	assert_false(cq_cache_reads_heap(NULL, hex));
	/* scan_notes: what a build's heap scan looked for, replaced by a newer note */
	assert_null(cq_cache_scan_note(c, hex));
	cq_cache_put_scan_note(c, hex, "100 200 /bin/p\n");
	cq_cache_put_scan_note(c, hex, "100 300 /bin/p\n");
	char *note = cq_cache_scan_note(c, hex);
	assert_non_null(note);
	assert_string_equal(note, "100 300 /bin/p\n");
	free(note);
	assert_null(cq_cache_scan_note(c, "ffff"));
	assert_null(cq_cache_scan_note(c, ""));
	assert_null(cq_cache_scan_note(NULL, hex));
	assert_null(cq_cache_close(c));

	assert_null(cq_cache_open(path, &c));
	assert_true(cq_cache_reads_heap(c, hex)); /* kept across handles */
	note = cq_cache_scan_note(c, hex);
	assert_non_null(note);
	free(note);
	id.source = 0; /* a new handle: the sources row is found again */
	got = cq_cache_get_symbols(c, &id, 0x1234, 1, 2, &len);
	assert_non_null(got);
	assert_int_equal(len, sizeof(sym));
	assert_memory_equal(got, sym, sizeof(sym));
	free(got);
	assert_null(cq_cache_close(c));

	char p[160];
	static const char *const files[] = {"cache.db", "cache.db-wal", "cache.db-shm"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
		unlink(p);
	}
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tables_and_symbols_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
