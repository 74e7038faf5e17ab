/*
 * fuzz_scan_note.c - libFuzzer target for the scan keep
 * (libcore/model/scan_keep.c): a scan note from the cache and a core's
 * NT_FILE note, both untrusted, and the words that stream past.
 *
 * The input is a 2-byte length L, then L bytes of NT_FILE descriptor, then
 * a note's text up to a NUL, then the bytes of a writable segment streamed
 * in windows of 4 KiB.  Whatever it holds: no crash, and the pages kept
 * are ascending, page-aligned, within the core and within the bound.
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
		free(buf);
	}
	cq_scan_keep_free(k);
	return 0;
}
