/*
 * test_scan_keep.c - the scan keep (libcore/model/scan_keep.c) on its own:
 * notes that arm it and notes that must not (damaged, another file, ends
 * outside the file's mapping, too many ranges); a note made on one core
 * rebased on another that maps the file elsewhere; the words that keep
 * pages and the bound past which it gives up; what cq_scan_keep_covers
 * accepts; a window that ends inside a word.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "libcore/model/scan_keep.h"

#define PAGE 4096ull

/* NT_FILE for /bin/p at base (two mappings, 0x3000 bytes) and /lib/q at 0x7f0000000000. */
static size_t nt_file(uint8_t *d, uint64_t base)
{
	uint64_t head[] = {3, PAGE};
	uint64_t maps[] = {base,           base + 0x1000,  0, base + 0x1000, base + 0x3000, 1,
	                   0x7f0000000000, 0x7f0000010000, 0};
	memcpy(d, head, sizeof(head));
	memcpy(d + 16, maps, sizeof(maps));
	const char names[] = "/bin/p\0/bin/p\0/lib/q";
	memcpy(d + 16 + sizeof(maps), names, sizeof(names));
	return 16 + sizeof(maps) + sizeof(names);
}

static const uint64_t writable[][2] = {{0x10000, 0x10000 + 64 * PAGE}};

static struct cq_scan_keep *keep_at(uint64_t base)
{
	uint8_t d[256];
	size_t n = nt_file(d, base);
	struct cq_scan_keep *k = cq_scan_keep_create(d, n, writable, 1, 0x10000 + 64 * PAGE, PAGE);
	assert_non_null(k);
	return k;
}

static void test_arm(void **state)
{
	(void)state;
	struct cq_scan_keep *k = keep_at(0x555500000000);
	assert_true(cq_scan_keep_arm(k, "100 2fff /bin/p\n"));
	assert_true(cq_scan_keep_arm(k, "0 ff /lib/q\n100 200 /bin/p\n"));
	const char *bad[] = {
	    "",                             /* nothing */
	    "100 200 /bin/p",               /* no newline */
	    "100 200 /bin/x\n",             /* not mapped */
	    "200 100 /bin/p\n",             /* hi below lo */
	    "100 3000 /bin/p\n",            /* hi past the mapping */
	    "100 200\n",                    /* no path */
	    "1g0 200 /bin/p\n",             /* not hex */
	    "10000000000000000 1 /bin/p\n", /* 17 digits */
	    "100  200 /bin/p\n",            /* two spaces */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(cq_scan_keep_arm(k, bad[i]));
	assert_false(cq_scan_keep_armed(k));
	char many[40 * (CQ_SCAN_KEEP_MAX_RANGES + 1) + 1] = "";
	for (int i = 0; i <= CQ_SCAN_KEEP_MAX_RANGES; i++)
		strcat(many, "100 200 /bin/p\n");
	assert_false(cq_scan_keep_arm(k, many));
	cq_scan_keep_free(k);
}

/* A note made where /bin/p is at one base names the same words where it is at another. */
static void test_note_rebased(void **state)
{
	(void)state;
	struct cq_scan_keep *a = keep_at(0x555500000000), *b = keep_at(0x560000000000);
	struct cq_feed_words w[] = {{0x555500000100, 0x555500002000},
	                            {0x7f0000000010, 0x7f0000000020}};
	char *note = cq_scan_keep_note(a, w, 2);
	assert_non_null(note);
	assert_string_equal(note, "100 2000 /bin/p\n10 20 /lib/q\n");
	assert_true(cq_scan_keep_arm(b, note));
	struct cq_feed_span span = {0x10000, PAGE, 0};
	struct cq_feed_words moved[] = {{0x560000000100, 0x560000002000}};
	cq_scan_keep_end(b); /* nothing streamed: it gives up */
	assert_false(cq_scan_keep_covers(b, &span, 1, moved, 1));
	free(note);
	/* a range across two files, or outside any: no note */
	struct cq_feed_words across = {0x555500000100, 0x7f0000000020};
	assert_null(cq_scan_keep_note(a, &across, 1));
	struct cq_feed_words outside = {0x1000, 0x2000};
	assert_null(cq_scan_keep_note(a, &outside, 1));
	cq_scan_keep_free(a);
	cq_scan_keep_free(b);
}

struct puts {
	uint64_t off[64];
	size_t n;
};

static bool put(void *arg, uint64_t off, const uint8_t *page)
{
	(void)page;
	struct puts *p = arg;
	if (p->n < 64)
		p->off[p->n++] = off;
	return true;
}

/* Streams [0, size) of core in windows of win bytes. */
static void stream(struct cq_scan_keep *k, const uint8_t *core, uint64_t size, uint64_t win,
                   struct puts *p)
{
	for (uint64_t at = 0; at < size; at += win) {
		uint64_t n = size - at < win ? size - at : win;
		cq_scan_keep_window(k, at, core + at, n, put, p);
	}
	cq_scan_keep_end(k);
}

static void test_window(void **state)
{
	(void)state;
	uint64_t size = 0x10000 + 64 * PAGE;
	uint8_t *core = calloc(1, size + PAGE);
	uint64_t v = 0x555500000180, out = 0x555500002800;
	memcpy(core + 0x10000 + 5 * PAGE + 64, &v, 8); /* one page */
	memcpy(core + 0x10000 + 9 * PAGE - 8, &v, 8);  /* two: its reach crosses */
	memcpy(core + 0x10000 + 20 * PAGE, &out, 8);   /* out of the note's range */
	memcpy(core + 0x8000, &v, 8);                  /* not in a writable segment */
	struct cq_scan_keep *k = keep_at(0x555500000000);
	assert_true(cq_scan_keep_arm(k, "100 200 /bin/p\n"));
	struct puts p = {0};
	stream(k, core, size, 8 * PAGE, &p);
	assert_false(cq_scan_keep_gave_up(k));
	assert_int_equal(p.n, 3);
	assert_int_equal(p.off[0], 0x10000 + 5 * PAGE);
	assert_int_equal(p.off[1], 0x10000 + 8 * PAGE);
	assert_int_equal(p.off[2], 0x10000 + 9 * PAGE);
	assert_int_equal(cq_scan_keep_bytes(k), 3 * PAGE);
	const uint64_t *first;
	assert_int_equal(cq_scan_keep_pages(k, 0x10000 + 8 * PAGE + 100, 2 * PAGE, &first), 2);
	assert_int_equal(first[0], 0x10000 + 8 * PAGE);
	assert_int_equal(cq_scan_keep_pages(k, 0x10000 + 30 * PAGE, PAGE, &first), 0);
	/* covers: within the note's words, spans in writable segments */
	struct cq_feed_span in = {0x10000, 8 * PAGE, 0}, ro = {0x8000, PAGE, 0};
	struct cq_feed_words w = {0x555500000100, 0x555500000200};
	struct cq_feed_words wide = {0x555500000100, 0x555500000201};
	assert_true(cq_scan_keep_covers(k, &in, 1, &w, 1));
	assert_false(cq_scan_keep_covers(k, &in, 1, &wide, 1));
	assert_false(cq_scan_keep_covers(k, &ro, 1, &w, 1));
	/* a span off the 8-byte grid counts other words than those looked at */
	struct cq_feed_span odd = {0x10004, 8, 0};
	assert_false(cq_scan_keep_covers(k, &odd, 1, &w, 1));
	assert_false(cq_scan_keep_covers(k, &in, 1, NULL, 0));
	cq_scan_keep_free(k);

	/* a window that ends inside a writable word: it gives up */
	k = keep_at(0x555500000000);
	assert_true(cq_scan_keep_arm(k, "100 200 /bin/p\n"));
	p.n = 0;
	cq_scan_keep_window(k, 0, core, 0x10000 + 12, put, &p);
	assert_true(cq_scan_keep_gave_up(k));
	cq_scan_keep_free(k);

	/* a stream cut short: what it did not see was not looked at */
	k = keep_at(0x555500000000);
	assert_true(cq_scan_keep_arm(k, "100 200 /bin/p\n"));
	cq_scan_keep_window(k, 0, core, 0x10000, put, &p);
	cq_scan_keep_end(k);
	assert_false(cq_scan_keep_covers(k, &in, 1, &w, 1));
	cq_scan_keep_free(k);
	free(core);
}

/* Words on more pages than the bound: it gives up. */
static void test_bound(void **state)
{
	(void)state;
	uint64_t pages = CQ_SCAN_KEEP_MAX_BYTES / PAGE + 8, size = pages * PAGE;
	uint8_t *core = calloc(1, size);
	uint64_t v = 0x555500000180;
	for (uint64_t i = 0; i < pages; i++)
		memcpy(core + i * PAGE + 2048, &v, 8);
	uint8_t d[256];
	size_t n = nt_file(d, 0x555500000000);
	const uint64_t all[][2] = {{0, size}};
	struct cq_scan_keep *k = cq_scan_keep_create(d, n, all, 1, size, PAGE);
	assert_true(cq_scan_keep_arm(k, "100 200 /bin/p\n"));
	struct puts p = {0};
	stream(k, core, size, 256 * PAGE, &p);
	assert_true(cq_scan_keep_gave_up(k));
	assert_true(cq_scan_keep_bytes(k) <= CQ_SCAN_KEEP_MAX_BYTES);
	cq_scan_keep_free(k);
	free(core);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_arm),
	    cmocka_unit_test(test_note_rebased),
	    cmocka_unit_test(test_window),
	    cmocka_unit_test(test_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
