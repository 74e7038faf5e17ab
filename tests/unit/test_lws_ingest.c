/*
 * test_lws_ingest.c - libwebsockets allocation records named with an ELF's
 * symbols and stored as allocation sites (libcore/pipeline/lws_ingest.h).
 *
 * The log is written by the test: records whose return addresses lie
 * inside functions of a corpus executable (non-PIE abort_deep, so
 * link-time addresses are the addresses; values from readelf -s), encoded
 * with cq_lws_encode_text (whose byte-compatibility with lws test_lws_codec
 * pins) and FACTS.md section 5's own vector, taken verbatim; noise around
 * them and a record that does not decode.  What is stored is read back
 * with SQLite: the log row's counts, one allocation row per (stack, size)
 * with the number of records the test wrote, and each stack's frames named
 * as readelf -s says (each address looked up one byte back, inside its
 * call: a function's first byte is not named as it, and the file's lowest
 * address is outside it), with the link-time offset, kind native and trust
 * log; an address outside the ELF's segments (readelf -l) in no module.
 * The same log again, under another name, is a duplicate that writes
 * nothing; the log with one byte changed, or grown, is a new log.  On a -O2 -g build, an address
 * eu-addr2line -i reports inlined calls at expands to them, inline kinds first.
 */
#include <setjmp.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/formats/lws_codec.h"
#include "libcore/pipeline/lws_ingest.h"
#include "libcore/store/store.h"
#include "tests/unit/addr2line.h"
#include "tests/unit/corpus.h"
#include "tests/unit/corpus_db.h"

/* FACTS.md section 5: this text is lws's encoding of these addresses and size. */
#define FACTS_RECORD "~m#IF0BmUQugNCkgCnkhdAYpQa6wAAV"
static const uint64_t facts_addr[] = {0x406651, 0x406852, 0x406c1b, 0x406294};
#define FACTS_SIZE 7520

struct warned {
	size_t calls;
	uint64_t line[8];
};

static void on_warn(void *ctx, uint64_t line, const char *message)
{
	struct warned *w = ctx;
	assert_non_null(message);
	if (w->calls < 8)
		w->line[w->calls] = line;
	w->calls++;
}

static void encode(const uint64_t *addr, unsigned depth, uint64_t size, char *text)
{
	struct cq_lws_stack s = {.depth = depth, .size = size};
	memcpy(s.addr, addr, depth * sizeof(addr[0]));
	assert_null(cq_lws_encode_text(&s, text, CQ_LWS_MAX_TEXT));
}

static sqlite3 *db_open(const char *path)
{
	sqlite3 *db;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	return db;
}

static long long db_int(sqlite3 *db, const char *sql, long long a)
{
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_bind_parameter_count(st) > 0)
		sqlite3_bind_int64(st, 1, a);
	long long v = -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* One stored frame. */
struct row {
	bool has_module;
	uint64_t offset;
	char kind[16], trust[16], function[256];
	bool has_function;
};

static size_t frames_of(sqlite3 *db, long long stack, struct row *out, size_t cap)
{
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_prepare_v2(db,
	                                    "SELECT module_id, offset, kind, trust, function "
	                                    "FROM frames WHERE stack_id = ? ORDER BY idx",
	                                    -1, &st, NULL),
	                 SQLITE_OK);
	sqlite3_bind_int64(st, 1, stack);
	size_t n = 0;
	while (sqlite3_step(st) == SQLITE_ROW && n < cap) {
		struct row *r = &out[n++];
		memset(r, 0, sizeof(*r));
		r->has_module = sqlite3_column_type(st, 0) != SQLITE_NULL;
		r->offset = (uint64_t)sqlite3_column_int64(st, 1);
		snprintf(r->kind, sizeof(r->kind), "%s", sqlite3_column_text(st, 2));
		snprintf(r->trust, sizeof(r->trust), "%s", sqlite3_column_text(st, 3));
		r->has_function = sqlite3_column_type(st, 4) != SQLITE_NULL;
		if (r->has_function)
			snprintf(r->function, sizeof(r->function), "%s",
			         sqlite3_column_text(st, 4));
	}
	sqlite3_finalize(st);
	return n;
}

/* The stack stored with (size, count) in log, or -1. */
static long long site(sqlite3 *db, long long log, uint64_t size, uint64_t count)
{
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_prepare_v2(db,
	                                    "SELECT stack_id FROM lws_allocations WHERE log_id = ? "
	                                    "AND size = ? AND count = ?",
	                                    -1, &st, NULL),
	                 SQLITE_OK);
	sqlite3_bind_int64(st, 1, log);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)size);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)count);
	long long id = -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		id = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return id;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static struct cq_error *ingest(struct corpus_db *d, struct cq_lws_elf *elf, const char *text,
                               const char *path, struct warned *w, struct cq_lws_ingest_result *r)
{
	FILE *in = fmemopen((void *)text, strlen(text), "r");
	assert_non_null(in);
	struct cq_error *err = cq_lws_ingest_log(d->store, elf, in, path, on_warn, w, r);
	fclose(in);
	return err;
}

/* The lowest PT_LOAD address of file, from readelf -l. */
static uint64_t first_load(const char *file)
{
	char cmd[700], line[512];
	snprintf(cmd, sizeof(cmd), "readelf -l -W '%s'", file);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	uint64_t lowest = UINT64_MAX;
	while (fgets(line, sizeof(line), p)) {
		unsigned long long off, va;
		if (sscanf(line, " LOAD %llx %llx", &off, &va) == 2 && va < lowest)
			lowest = va;
	}
	pclose(p);
	assert_true(lowest != UINT64_MAX && lowest > 0x10);
	return lowest;
}

static void test_a_log(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("abort_deep.nopie", &c);
	uint64_t level1 = readelf_function(c.exe, "level1");
	uint64_t level2 = readelf_function(c.exe, "level2");
	uint64_t level3 = readelf_function(c.exe, "level3");
	uint64_t main_at = readelf_function(c.exe, "main");
	assert_true(level1 && level2 && level3 && main_at);
	/* Return addresses 5 bytes in (each function is 16 bytes or more). */
	const uint64_t a[] = {level3 + 5, level2 + 5, level1 + 5};
	/*
	 * b: main; level2's first byte as a return address (its call is in
	 * whatever precedes level2); the file's lowest address, whose byte
	 * before is outside it; 0x10.
	 */
	uint64_t lowest = first_load(c.exe);
	const uint64_t b[] = {main_at + 5, level2, lowest, 0x10};
	char ra[CQ_LWS_MAX_TEXT], ra200[CQ_LWS_MAX_TEXT], rb[CQ_LWS_MAX_TEXT];
	encode(a, 3, 100, ra);
	encode(a, 3, 200, ra200);
	encode(b, 4, 7, rb);
	char log[4096];
	snprintf(log, sizeof(log),
	         "app: alloc %s\n"
	         "noise without records\n"
	         "two: %s and %s (from pool)\n"
	         "bad: ~m#AAAA\n"
	         "%s\n"
	         "big: %s\n"
	         "lws: %s\n",
	         ra, ra, rb, ra, ra200, FACTS_RECORD);

	struct corpus_db d;
	assert_int_equal(corpus_db_open(&d, "lws-ingest"), 0);
	struct cq_lws_elf *elf;
	assert_null(cq_lws_elf_open(c.exe, NULL, NULL, &elf));
	char path[128];
	snprintf(path, sizeof(path), "%s/app.log", d.dir);
	write_file(path, log);
	FILE *in = fopen(path, "r");
	assert_non_null(in);
	struct warned w = {0};
	struct cq_lws_ingest_result r;
	assert_null(cq_lws_ingest_log(d.store, elf, in, path, on_warn, &w, &r));
	fclose(in);
	assert_false(r.duplicate);
	assert_int_equal(r.lines, 7);
	assert_int_equal(r.records, 6); /* a x3, b, a of 200, the FACTS vector */
	assert_int_equal(r.malformed, 1);
	assert_int_equal(w.calls, 1);
	assert_int_equal(w.line[0], 4);
	assert_int_equal(r.sites, 4);
	assert_int_equal(r.stacks, 3);
	assert_int_equal(r.new_stacks, 3);
	assert_true(r.log_id > 0);

	sqlite3 *db = db_open(d.path);
	assert_int_equal(db_int(db, "SELECT count(*) FROM lws_logs", 0), 1);
	assert_int_equal(db_int(db, "SELECT records FROM lws_logs WHERE id = ?", r.log_id), 6);
	assert_int_equal(db_int(db, "SELECT malformed FROM lws_logs WHERE id = ?", r.log_id), 1);
	assert_int_equal(db_int(db, "SELECT lines FROM lws_logs WHERE id = ?", r.log_id), 7);
	assert_int_equal(db_int(db, "SELECT bytes FROM lws_logs WHERE id = ?", r.log_id),
	                 (long long)strlen(log));
	assert_int_equal(
	    db_int(db, "SELECT count(*) FROM lws_allocations WHERE log_id = ?", r.log_id), 4);

	/* a: three records of 100 bytes, one of 200, one stack. */
	long long sa = site(db, r.log_id, 100, 3);
	assert_true(sa > 0);
	assert_int_equal(site(db, r.log_id, 200, 1), sa);
	struct row fr[8];
	const char *want_a[] = {"level3", "level2", "level1"};
	assert_int_equal(frames_of(db, sa, fr, 8), 3);
	for (size_t i = 0; i < 3; i++) {
		assert_true(fr[i].has_function);
		assert_string_equal(fr[i].function, want_a[i]);
		assert_true(fr[i].has_module);
		assert_int_equal(fr[i].offset, a[i]); /* non-PIE: the address itself */
		assert_string_equal(fr[i].kind, "native");
		assert_string_equal(fr[i].trust, "log");
	}
	long long sb = site(db, r.log_id, 7, 1);
	assert_true(sb > 0 && sb != sa);
	assert_int_equal(frames_of(db, sb, fr, 8), 4);
	assert_string_equal(fr[0].function, "main");
	assert_int_equal(fr[0].offset, b[0]);
	assert_true(!fr[1].has_function || strcmp(fr[1].function, "level2") != 0);
	assert_int_equal(fr[1].offset, level2);
	for (size_t i = 2; i < 4; i++) { /* outside the file: no module, no name */
		assert_false(fr[i].has_module);
		assert_false(fr[i].has_function);
		assert_int_equal(fr[i].offset, b[i]);
	}
	/* The FACTS vector: its four addresses (past the file's segments), its size. */
	long long sf = site(db, r.log_id, FACTS_SIZE, 1);
	assert_true(sf > 0);
	assert_int_equal(frames_of(db, sf, fr, 8), 4);
	for (size_t i = 0; i < 4; i++) {
		assert_false(fr[i].has_module);
		assert_int_equal(fr[i].offset, facts_addr[i]);
	}

	/* The same bytes again, from "standard input": a duplicate, nothing written. */
	struct cq_lws_ingest_result again;
	w = (struct warned){0};
	assert_null(ingest(&d, elf, log, "-", &w, &again));
	assert_true(again.duplicate);
	assert_int_equal(again.log_id, r.log_id);
	assert_int_equal(db_int(db, "SELECT count(*) FROM lws_logs", 0), 1);
	assert_int_equal(db_int(db, "SELECT count(*) FROM lws_allocations", 0), 4);
	assert_int_equal(db_int(db, "SELECT sum(count) FROM lws_allocations", 0), 6);

	/* As many bytes, one changed (a letter of the noise): another log. */
	char *same_len = strdup(log);
	assert_non_null(same_len);
	*strstr(same_len, "noise") = 'N';
	struct cq_lws_ingest_result changed;
	assert_null(ingest(&d, elf, same_len, "-", &w, &changed));
	free(same_len);
	assert_false(changed.duplicate);
	assert_true(changed.log_id != r.log_id);
	assert_int_equal(changed.records, 6);
	assert_int_equal(changed.new_stacks, 0);

	/* Grown by one record: a new log, every record of it counted, no new stack. */
	char grown[sizeof(log) + CQ_LWS_MAX_TEXT + 2];
	snprintf(grown, sizeof(grown), "%s%s\n", log, rb);
	struct cq_lws_ingest_result more;
	assert_null(ingest(&d, elf, grown, "-", &w, &more));
	assert_false(more.duplicate);
	assert_true(more.log_id != r.log_id);
	assert_int_equal(more.records, 7);
	assert_int_equal(more.new_stacks, 0);
	assert_int_equal(site(db, more.log_id, 7, 2), sb);
	assert_int_equal(db_int(db, "SELECT count(*) FROM lws_logs", 0), 3);
	sqlite3_close(db);

	cq_lws_elf_close(elf);
	corpus_db_close(&d);
}

/* On a -O2 -g build, a return address inside inlined calls expands to them. */
static void test_inlined_calls(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("async_coro-same.O2fp", &c);
	struct a2l want;
	assert_true(find_inlined(c.exe, &want));
	/* A PIE logged at link-time addresses; a return address is looked up a byte back. */
	const uint64_t addr[] = {want.addr + 1};
	char rec[CQ_LWS_MAX_TEXT], log[CQ_LWS_MAX_TEXT + 8];
	encode(addr, 1, 64, rec);
	snprintf(log, sizeof(log), "%s\n", rec);

	struct cq_lws_elf *elf;
	assert_null(cq_lws_elf_open(c.exe, NULL, NULL, &elf));
	struct cq_lws_stack s;
	assert_null(cq_lws_decode_text(rec, strlen(rec), &s));
	struct cq_stack_frame frames[CQ_LWS_MAX_FRAMES];
	size_t n = cq_lws_elf_frames(elf, &s, frames, CQ_LWS_MAX_FRAMES);
	assert_int_equal(n, want.n);
	for (size_t i = 0; i < n; i++) {
		char got[256];
		assert_non_null(frames[i].function);
		snprintf(got, sizeof(got), "%s", frames[i].function);
		short_name(got);
		assert_string_equal(got, want.function[i]);
		assert_int_equal(frames[i].line, want.line[i]);
		assert_int_equal(frames[i].kind, i + 1 < n ? CQ_FRAME_INLINE : CQ_FRAME_NATIVE);
		assert_int_equal(frames[i].trust, CQ_TRUST_LOG);
		assert_int_equal(frames[i].offset, want.addr + 1);
		assert_non_null(frames[i].module);
	}
	/* Without an ELF: one unnamed frame per address. */
	assert_int_equal(cq_lws_elf_frames(NULL, &s, frames, CQ_LWS_MAX_FRAMES), 1);
	assert_null(frames[0].function);
	assert_null(frames[0].module);
	assert_int_equal(frames[0].offset, want.addr + 1);
	/* A short buffer is filled and not overrun. */
	assert_int_equal(cq_lws_elf_frames(elf, &s, frames, 1), 1);

	/* Stored: the inline frames in the stack, kind inline. */
	struct corpus_db d;
	assert_int_equal(corpus_db_open(&d, "lws-ingest"), 0);
	struct cq_lws_ingest_result r;
	struct warned w = {0};
	assert_null(ingest(&d, elf, log, "inl.log", &w, &r));
	assert_int_equal(r.records, 1);
	sqlite3 *db = db_open(d.path);
	long long st = site(db, r.log_id, 64, 1);
	struct row fr[MAX_LEVELS];
	assert_int_equal(frames_of(db, st, fr, MAX_LEVELS), want.n);
	for (size_t i = 0; i < want.n; i++)
		assert_string_equal(fr[i].kind, i + 1 < want.n ? "inline" : "native");
	sqlite3_close(db);
	corpus_db_close(&d);
	cq_lws_elf_close(elf);
}

static void test_not_an_elf(void **state)
{
	(void)state;
	char dir[64], path[128];
	assert_true(scratch_make(dir, sizeof(dir), "lws-ingest"));
	snprintf(path, sizeof(path), "%s/not-elf", dir);
	write_file(path, "not an ELF file\n");
	struct cq_lws_elf *elf = (void *)1;
	struct cq_error *err = cq_lws_elf_open(path, NULL, NULL, &elf);
	assert_non_null(err);
	assert_null(elf);
	cq_error_free(err);
	cq_lws_elf_close(NULL);
	scratch_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_log),
	    cmocka_unit_test(test_inlined_calls),
	    cmocka_unit_test(test_not_an_elf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
