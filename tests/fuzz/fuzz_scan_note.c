/*
 * fuzz_scan_note.c - libFuzzer target for the scan keep
 * (libcore/model/scan_keep.c): a scan note from the cache and a core's
 * NT_FILE note, both untrusted, and the words that stream past.
 *
 * The input is a 2-byte length L, then L bytes of NT_FILE descriptor, then
 * a note's text up to a NUL, then the bytes of a writable segment streamed
 * in windows of 4 KiB.  Whatever it holds: no crash; the pages kept are
 * ascending, page-aligned, within the core and within the bound; and when
 * the keep covers the segment for some words, every such word has the
 * bytes around it kept (covered()).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/model/scan_keep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PAGE 4096u

static bool put(void *arg, uint64_t off, const uint8_t *page)
{
	uint64_t *last = arg;
	(void)page;
	if (off % PAGE || (*last != UINT64_MAX && off <= *last))
		abort();
	*last = off;
	return true;
}

/*
 * The promise a scan relies on: when the keep covers a span for words
 * [lo, hi] (the segment's first two words), every word of the span in that
 * range, counted from the span's start, has the bytes CQ_FEED_WORD_REACH
 * around it on kept pages.  A span that starts off the 8-byte grid is
 * never covered.
 */
static void covered(const struct cq_scan_keep *k, const uint8_t *buf, uint64_t seg_len)
{
	if (seg_len < 16)
		return;
	struct cq_feed_words w;
	memcpy(&w.lo, buf + 2 * PAGE, 8);
	memcpy(&w.hi, buf + 2 * PAGE + 8, 8);
	struct cq_feed_span span = {2 * PAGE, seg_len & ~(uint64_t)7, 0},
	                    odd = {2 * PAGE + 4, 8, 0};
	if (cq_scan_keep_covers(k, &odd, 1, &w, 1))
		abort();
	if (!cq_scan_keep_covers(k, &span, 1, &w, 1))
		return;
	const uint64_t *first;
	for (uint64_t o = span.off; o + 8 <= span.off + span.len; o += 8) {
		uint64_t v;
		memcpy(&v, buf + o, 8);
		if (v < w.lo || v > w.hi)
			continue;
		uint64_t a = o - span.off >= CQ_FEED_WORD_REACH ? o - CQ_FEED_WORD_REACH : span.off;
		uint64_t b = o + 8 + CQ_FEED_WORD_REACH < span.off + span.len
		                 ? o + 8 + CQ_FEED_WORD_REACH
		                 : span.off + span.len;
		for (uint64_t at = a; at < b; at++)
			if (cq_scan_keep_pages(k, at, 1, &first) != 1)
				abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t l = (size_t)data[0] | (size_t)data[1] << 8;
	if (l > size - 2)
		return 0;
	const uint8_t *desc = data + 2, *rest = desc + l;
	size_t left = size - 2 - l;
	const uint8_t *nul = memchr(rest, 0, left);
	if (!nul)
		return 0;
	const char *note = (const char *)rest;
	const uint8_t *seg = nul + 1;
	uint64_t seg_len = left - (size_t)(seg - rest);
	uint64_t core = 2 * PAGE + ((seg_len + PAGE - 1) & ~(uint64_t)(PAGE - 1));
	const uint64_t wr[][2] = {{2 * PAGE, 2 * PAGE + seg_len}};
	struct cq_scan_keep *k = cq_scan_keep_create(desc, l, wr, 1, core, PAGE);
	if (!k)
		return 0;
	if (cq_scan_keep_arm(k, note)) {
		uint8_t *buf = calloc(1, core);
		if (!buf)
			abort();
		memcpy(buf + 2 * PAGE, seg, seg_len);
		uint64_t last = UINT64_MAX;
		for (uint64_t at = 0; at < core; at += PAGE)
			cq_scan_keep_window(k, at, buf + at, PAGE, put, &last);
		cq_scan_keep_end(k);
		if (cq_scan_keep_bytes(k) > CQ_SCAN_KEEP_MAX_BYTES)
			abort();
		const uint64_t *first;
		size_t n = cq_scan_keep_pages(k, 0, core, &first);
		for (size_t i = 0; i < n; i++)
			if (first[i] >= core || (i && first[i] <= first[i - 1]))
				abort();
		covered(k, buf, seg_len);
		free(buf);
	}
	cq_scan_keep_free(k);
	return 0;
}
