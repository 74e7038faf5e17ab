/*
 * test_stream_image.c - the keep plan of a one-stream core, and the image
 * read from it (libcore/model/stream_image.c, through cq_source_open).
 *
 * A hand-built core has a heap (anonymous, 8 MiB), a stack (2 MiB, sp in
 * its middle), a small segment and a mapped file's segment (NT_FILE).  The
 * plan must keep the headers and notes and the first MiB, the stack from
 * just below sp to its end, the small and the file-backed segments whole,
 * and the pages around a register's value; and drop the rest of the heap
 * and the stack below sp.  Read through the source, every byte, kept or
 * not, must be the core's own: a dropped page comes back by a second pass
 * (forward: the rolling decoder; backward: the spool).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sched.h>
#include <zstd.h>

#include "core_writer.h"
#include "libcore/base/feed.h"
#include "libcore/model/source.h"
#include "libcore/model/scan_keep.h"
#include "libcore/model/stream_image.h"

#define MIB    (1ull << 20)
#define HEAP   0x10000000ull
#define SMALL  0x20000000ull
#define FILEVA 0x30000000ull
#define STACK  0x7ff000000000ull

struct fixture {
	char dir[64], core[96], zst[96], seek[96], bad[96], big[96];
	uint8_t *heap, *stack, *small, *file;
	uint8_t *raw;
	size_t raw_len;
	uint64_t off[4];       /* file offsets of heap, stack, small, file */
	uint64_t word_page[8]; /* file offsets of the pages a scan note keeps */
	size_t nword_pages;
};

/* The words a scan note of [FILEVA + 0x1000, FILEVA + 0x2000] names: in range, and one not. */
#define WORD_IN  (FILEVA + 0x1800)
#define WORD_OUT (FILEVA + 0x3000)

/*
 * Plants them in the heap (whose file offset is off[0]): the last word of a
 * 1 MiB window of the stream (its reach runs into the next window's first
 * page), the first word of the next window (its reach runs back into the
 * window before), one mid-page, and one out of range.  Sets the pages each
 * keeps.
 */
static void plant(struct fixture *fx)
{
	uint64_t heap = fx->off[0];
	uint64_t b1 = ((heap + 2 * MIB) | (MIB - 1)) + 1, b2 = b1 + MIB;
	uint64_t mid = heap + 7 * MIB + 2048;
	uint64_t in[] = {b1 - 8, b2, mid}, v = WORD_IN, out = WORD_OUT;
	for (size_t i = 0; i < 3; i++)
		memcpy(fx->heap + (in[i] - heap), &v, 8);
	memcpy(fx->heap + (heap + 4 * MIB + 1024 - heap), &out, 8);
	uint64_t pages[] = {b1 - 4096, b1, b2 - 4096, b2, mid & ~4095ull};
	memcpy(fx->word_page, pages, sizeof(pages));
	fx->nword_pages = 5;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + seed + (i >> 12));
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc(*len);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, *len, f), *len);
	fclose(f);
	return b;
}

static void put_le32(FILE *f, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	fwrite(b, 1, 4, f);
}

/*
 * raw as zstd's seekable format (frames of `frame` bytes, each with its checksum;
 * a seek table without), frame `bad` with its checksum flipped (-1: none).
 */
static int write_seekable(const char *path, const uint8_t *raw, size_t len, size_t frame, long bad)
{
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
	size_t nframes = (len + frame - 1) / frame, bound = ZSTD_compressBound(frame);
	uint32_t *sizes = calloc(nframes, sizeof(*sizes));
	uint8_t *z = malloc(bound);
	FILE *f = fopen(path, "wb");
	if (!sizes || !z || !f)
		return -1;
	for (size_t i = 0; i < nframes; i++) {
		size_t n = len - i * frame < frame ? len - i * frame : frame;
		size_t zn = ZSTD_compress2(cctx, z, bound, raw + i * frame, n);
		if (ZSTD_isError(zn))
			return -1;
		if ((long)i == bad)
			z[zn - 1] ^= 0xff;
		fwrite(z, 1, zn, f);
		sizes[i] = (uint32_t)zn;
	}
	put_le32(f, 0x184D2A5Eu);
	put_le32(f, (uint32_t)(nframes * 8 + 9));
	for (size_t i = 0; i < nframes; i++) {
		put_le32(f, sizes[i]);
		put_le32(f, (uint32_t)(len - i * frame < frame ? len - i * frame : frame));
	}
	put_le32(f, (uint32_t)nframes);
	fputc(0, f);
	put_le32(f, 0x8F92EAB1u);
	fclose(f);
	free(z);
	free(sizes);
	ZSTD_freeCCtx(cctx);
	return 0;
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/coreq-stream-XXXXXX");
	if (!mkdtemp(fx->dir))
		return -1;
	snprintf(fx->core, sizeof(fx->core), "%s/core", fx->dir);
	snprintf(fx->zst, sizeof(fx->zst), "%s/core.zst", fx->dir);
	fx->heap = malloc(8 * MIB);
	fx->stack = malloc(2 * MIB);
	fx->small = malloc(64 << 10);
	fx->file = malloc(4 * MIB);
	fill(fx->heap, 8 * MIB, 1);
	fill(fx->stack, 2 * MIB, 2);
	fill(fx->small, 64 << 10, 3);
	fill(fx->file, 4 * MIB, 4);
	struct core_writer *w = calloc(1, sizeof(*w));
	/* rsp in the stack's middle, fs_base 6 MiB into the heap */
	cw_prstatus(w, 100, 11, FILEVA + 16, STACK + MIB, HEAP + 6 * MIB);
	uint8_t nt[16 + 24 + 8] = {0};
	cw_put(nt, 1, 8);
	cw_put(nt + 8, 4096, 8);
	cw_put(nt + 16, FILEVA, 8);
	cw_put(nt + 24, FILEVA + 4 * MIB, 8);
	memcpy(nt + 40, "/lib/x", 7);
	cw_note(w, "CORE", 0x46494c45, nt, sizeof(nt));
	cw_load(w, HEAP, fx->heap, 8 * MIB, PF_R | PF_W);
	cw_load(w, SMALL, fx->small, 64 << 10, PF_R | PF_W);
	cw_load(w, FILEVA, fx->file, 4 * MIB, PF_R | PF_W);
	cw_load(w, STACK, fx->stack, 2 * MIB, PF_R | PF_W);
	if (cw_write(w, fx->core, 0) != 0)
		return -1;
	fx->raw = slurp(fx->core, &fx->raw_len);
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(fx->raw + sizeof(Elf64_Ehdr));
	fx->off[0] = ph[1].p_offset, fx->off[1] = ph[4].p_offset;
	fx->off[2] = ph[2].p_offset, fx->off[3] = ph[3].p_offset;
	/* The heap's words that a scan note names, planted and the core written again. */
	plant(fx);
	free(fx->raw);
	if (cw_write(w, fx->core, 0) != 0)
		return -1;
	free(w);
	fx->raw = slurp(fx->core, &fx->raw_len);
	size_t bound = ZSTD_compressBound(fx->raw_len);
	uint8_t *z = malloc(bound);
	size_t zn = ZSTD_compress(z, bound, fx->raw, fx->raw_len, 1);
	if (ZSTD_isError(zn))
		return -1;
	FILE *f = fopen(fx->zst, "wb");
	fwrite(z, 1, zn, f);
	fclose(f);
	free(z);
	snprintf(fx->seek, sizeof(fx->seek), "%s/core.seek.zst", fx->dir);
	snprintf(fx->bad, sizeof(fx->bad), "%s/core.bad.zst", fx->dir);
	snprintf(fx->big, sizeof(fx->big), "%s/core.big.zst", fx->dir);
	if (write_seekable(fx->seek, fx->raw, fx->raw_len, MIB, -1) != 0 ||
	    write_seekable(fx->bad, fx->raw, fx->raw_len, MIB, 10) != 0 ||
	    write_seekable(fx->big, fx->raw, fx->raw_len, 16 * MIB, -1) != 0)
		return -1;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	unlink(fx->core);
	unlink(fx->zst);
	unlink(fx->seek);
	unlink(fx->bad);
	unlink(fx->big);
	rmdir(fx->dir);
	free(fx->heap);
	free(fx->stack);
	free(fx->small);
	free(fx->file);
	free(fx->raw);
	free(fx);
	return 0;
}

static bool kept(const struct cq_stream_plan *p, uint64_t off)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].lo <= off && off < p->v[i].hi)
			return true;
	return false;
}

static void test_plan(void **state)
{
	struct fixture *fx = *state;
	struct cq_stream_plan p;
	assert_true(cq_stream_plan_make(fx->raw, fx->raw_len, 0, &p));
	assert_int_equal(p.size, fx->raw_len);
	assert_true(kept(&p, 0) && kept(&p, p.head_len - 1) && kept(&p, MIB - 1));
	uint64_t heap = fx->off[0], stack = fx->off[1], small = fx->off[2], file = fx->off[3];
	/* the heap: dropped, but for the pages around fs_base */
	assert_false(kept(&p, heap + 3 * MIB));
	assert_false(kept(&p, heap + 5 * MIB));
	assert_true(kept(&p, heap + 6 * MIB));
	assert_true(kept(&p, heap + 6 * MIB - (60 << 10)));
	assert_true(kept(&p, heap + 6 * MIB + (60 << 10)));
	assert_false(kept(&p, heap + 6 * MIB + (80 << 10)));
	/* the stack: from just below sp to its end */
	assert_false(kept(&p, stack + 512 * 1024));
	assert_true(kept(&p, stack + MIB - (60 << 10)));
	assert_true(kept(&p, stack + MIB));
	assert_true(kept(&p, stack + 2 * MIB - 1));
	/* small and file-backed segments: whole */
	for (uint64_t at = 0; at < (64 << 10); at += 4096)
		assert_true(kept(&p, small + at));
	for (uint64_t at = 0; at < 4 * MIB; at += 4096)
		assert_true(kept(&p, file + at));
	for (size_t i = 1; i < p.n; i++)
		assert_true(p.v[i - 1].hi < p.v[i].lo);
	cq_stream_plan_free(&p);
	/* small enough: kept whole */
	assert_true(cq_stream_plan_make(fx->raw, fx->raw_len, UINT64_MAX, &p));
	assert_int_equal(p.n, 1);
	assert_true(p.v[0].lo == 0 && p.v[0].hi >= fx->raw_len);
	cq_stream_plan_free(&p);
	/* not a core, or its notes cut off: no plan */
	assert_false(cq_stream_plan_make(fx->raw, 100, 0, &p));
	uint8_t *bad = malloc(fx->raw_len);
	memcpy(bad, fx->raw, fx->raw_len);
	bad[16] = ET_EXEC;
	assert_false(cq_stream_plan_make(bad, fx->raw_len, 0, &p));
	free(bad);
}

static void expect_bytes(const struct fixture *fx, const struct cq_source *src, uint64_t off,
                         size_t n)
{
	assert_true(off + n <= src->size);
	assert_memory_equal(src->image + off, fx->raw + off, n);
}

static void test_image(void **state)
{
	struct fixture *fx = *state;
	setenv("COREQ_STREAM_KEEP_ALL_BELOW", "0", 1);
	struct cq_source src;
	struct cq_error *err = cq_source_open(fx->zst, 0, false, false, NULL, &src);
	unsetenv("COREQ_STREAM_KEEP_ALL_BELOW");
	assert_null(err);
	assert_non_null(src.image);
	assert_int_equal(src.size, fx->raw_len);
	struct cq_source_read rd = cq_source_read(&src);
	assert_string_equal(rd.how, "stream");
	assert_string_equal(rd.compression, "zstd");
	assert_true(rd.held < fx->raw_len / 2);
	assert_false(rd.second_pass);
	/* kept pages: no second pass */
	expect_bytes(fx, &src, 0, 4096);
	expect_bytes(fx, &src, fx->off[1] + MIB, 4096);
	expect_bytes(fx, &src, fx->off[3], 4 * MIB);
	assert_false(cq_source_read(&src).second_pass);
	/* a dropped page ahead: the rolling decoder; one behind it: the spool */
	expect_bytes(fx, &src, fx->off[0] + 5 * MIB, 8192);
	assert_true(cq_source_read(&src).second_pass);
	expect_bytes(fx, &src, fx->off[0] + 3 * MIB, 8192);
	expect_bytes(fx, &src, fx->off[1] + 4096, 4096);
	expect_bytes(fx, &src, 0, fx->raw_len);
	cq_source_close(&src);
}

/* The next span of a feed that was given no words: never `none`. */
static const uint8_t *next(struct cq_source_feed *feed)
{
	bool none = true;
	const uint8_t *b = cq_source_feed_next(feed, &none);
	assert_false(none);
	return b;
}

/*
 * Spans read through a feed: the heap's dropped pages in chunks that
 * overlap by 8 bytes (as the scan's do: the feed copies that lead from
 * the chunk before), a jump over the small segment,
 * the stack, and the file's last bytes; each must be the core's own, with
 * no page installed (no second pass), and a span behind the feed's
 * position comes back NULL (the reader reads it from the image).
 */
static void expect_fed(const struct fixture *fx, struct cq_source *src, bool stream)
{
	uint64_t heap = fx->off[0], stack = fx->off[1];
	struct cq_feed_span spans[] = {
	    {heap, 3 * MIB, 0},
	    {heap + 3 * MIB - 8, 3 * MIB + 8, 8},
	    {heap + 6 * MIB - 8, 2 * MIB + 8, 8},
	    {stack + 4096, MIB, 0},
	    {fx->raw_len - 100, 100, 0},
	    {heap, 4096, 0}, /* behind: a stream gives NULL, frames give it */
	};
	size_t n = sizeof(spans) / sizeof(spans[0]);
	struct cq_source_feed *feed;
	assert_null(cq_source_feed_start(src, spans, n, NULL, 0, &feed));
	assert_non_null(feed);
	for (size_t i = 0; i < n; i++) {
		const uint8_t *b = next(feed);
		if (i == n - 1 && stream) {
			assert_null(b);
			continue;
		}
		assert_non_null(b);
		assert_memory_equal(b, fx->raw + spans[i].off, spans[i].len);
	}
	assert_null(next(feed));
	cq_source_feed_stop(feed);
	/* stopped before its spans are read: the workers end */
	assert_null(cq_source_feed_start(src, spans, n, NULL, 0, &feed));
	assert_non_null(next(feed));
	cq_source_feed_stop(feed);
}

static void test_feed(void **state)
{
	struct fixture *fx = *state;
	setenv("COREQ_STREAM_KEEP_ALL_BELOW", "0", 1);
	struct cq_source src;
	struct cq_error *err = cq_source_open(fx->zst, 0, false, false, NULL, &src);
	assert_null(err);
	expect_fed(fx, &src, true);
	assert_false(cq_source_read(&src).second_pass);
	/* what it held counts the feed's ring: three spans of 3 MiB at least */
	assert_true(cq_source_read(&src).held >= 9 * MIB);
	cq_source_close(&src);
	assert_null(cq_source_open(fx->seek, 0, false, false, NULL, &src));
	assert_string_equal(cq_source_read(&src).how, "seekable frames");
	expect_fed(fx, &src, false);
	assert_int_equal(cq_source_frame_stats(&src).fills, 0);
	assert_true(cq_source_read(&src).held >= 9 * MIB);
	cq_source_close(&src);
	/* kept whole (small), or raw: no feed, the image is read as it is */
	unsetenv("COREQ_STREAM_KEEP_ALL_BELOW");
	struct cq_source_feed *feed;
	struct cq_feed_span one = {0, 4096, 0};
	assert_null(cq_source_open(fx->zst, 0, false, false, NULL, &src));
	assert_null(cq_source_feed_start(&src, &one, 1, NULL, 0, &feed));
	assert_null(feed);
	cq_source_close(&src);
	assert_null(cq_source_open(fx->core, 0, false, false, NULL, &src));
	assert_null(cq_source_feed_start(&src, &one, 1, NULL, 0, &feed));
	assert_null(feed);
	cq_source_close(&src);
	/* frames bigger than a worker may hold (8 MiB): no feed, the image is read */
	assert_null(cq_source_open(fx->big, 0, false, false, NULL, &src));
	assert_string_equal(cq_source_read(&src).how, "seekable frames");
	assert_null(cq_source_feed_start(&src, &one, 1, NULL, 0, &feed));
	assert_null(feed);
	cq_source_close(&src);
}

/*
 * A frame that fails (its checksum) leaves a worker's frame buffer holding
 * neither it nor the frame it held before: a later span in that earlier
 * frame must get its own bytes, not the failed frame's.  One worker, so
 * that the same buffer serves all three spans; frame 10 lies in another
 * segment than frame 0, so its bytes differ where the last span reads.
 */
static void test_feed_bad_frame(void **state)
{
	struct fixture *fx = *state;
	cpu_set_t saved, one;
	assert_int_equal(sched_getaffinity(0, sizeof(saved), &saved), 0);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	struct cq_source src;
	assert_null(cq_source_open(fx->bad, 0, false, false, NULL, &src));
	assert_string_equal(cq_source_read(&src).how, "seekable frames");
	struct cq_feed_span spans[] = {
	    {4096, 4096, 0}, {10 * MIB + 4096, 4096, 0}, {8192, 4096, 0}};
	struct cq_source_feed *feed;
	assert_null(cq_source_feed_start(&src, spans, 3, NULL, 0, &feed));
	sched_setaffinity(0, sizeof(saved), &saved);
	assert_non_null(feed);
	const uint8_t *b = next(feed);
	assert_non_null(b);
	assert_memory_equal(b, fx->raw + 4096, 4096);
	assert_null(next(feed)); /* frame 10 does not decompress */
	b = next(feed);
	assert_non_null(b);
	assert_memory_equal(b, fx->raw + 8192, 4096);
	/* frame 10 (the mapped file's segment) differs from frame 0 where the span reads */
	assert_memory_not_equal(fx->raw + 8192, fx->raw + 10 * MIB + 8192, 4096);
	cq_source_feed_stop(feed);
	cq_source_close(&src);
}

/* A hint whose scan note is arg's text (strdup'd, as a cache's would be). */
static char *note_of(void *arg, const char *exe_build_id)
{
	(void)exe_build_id;
	return arg ? strdup(arg) : NULL;
}

/* A probe of the head that finds probe_hi's words (0: none), and counts how often it was asked. */
static int probes;
static uint64_t probe_hi = 0x2000;
static size_t probe(void *arg, const uint8_t *head, uint64_t len, struct cq_feed_words *out,
                    size_t max)
{
	(void)arg, (void)head, (void)len;
	probes++;
	assert_true(max >= 1);
	out[0] = (struct cq_feed_words){FILEVA + 0x1000, FILEVA + probe_hi};
	return probe_hi ? 1 : 0;
}

static bool no_heap(void *arg, const char *exe_build_id)
{
	(void)arg, (void)exe_build_id;
	return false;
}

static bool word_page(const struct fixture *fx, uint64_t page)
{
	for (size_t i = 0; i < fx->nword_pages; i++)
		if (fx->word_page[i] == page)
			return true;
	return false;
}

/* The heap in the scan's chunks: 2 MiB, each after the first with the 8 bytes before it. */
static size_t heap_spans(const struct fixture *fx, struct cq_feed_span *spans)
{
	size_t n = 0;
	for (uint64_t at = 0; at < 8 * MIB; at += 2 * MIB, n++)
		spans[n] = at ? (struct cq_feed_span){fx->off[0] + at - 8, 2 * MIB + 8, 8}
		              : (struct cq_feed_span){fx->off[0], 2 * MIB, 0};
	return n;
}

/*
 * One open of the one-stream core with a scan note: the pages around the
 * words it names are kept as the stream passes (and read back with no
 * second pass); a feed for words within the note's gives those pages alone
 * (zeros elsewhere, `none` for a chunk without one), and one for words
 * beyond it decompresses again and gives every byte.  The note of the
 * words asked is made relative to /lib/x's mapping.
 */
static void scan_keep_once(struct fixture *fx)
{
	setenv("COREQ_STREAM_KEEP_ALL_BELOW", "0", 1);
	char note[] = "1000 2000 /lib/x\n";
	struct cq_stream_hint hint = {no_heap, note, note_of, NULL};
	struct cq_source src;
	assert_null(cq_source_open(fx->zst, 0, false, false, &hint, &src));
	struct cq_source_read rd = cq_source_read(&src);
	assert_string_equal(rd.how, "stream");
	assert_true(rd.scan_hint);
	assert_false(rd.scan_gave_up);
	assert_int_equal(rd.scan_kept_bytes, fx->nword_pages * 4096);
	for (size_t i = 0; i < fx->nword_pages; i++)
		expect_bytes(fx, &src, fx->word_page[i], 4096);
	assert_false(cq_source_read(&src).second_pass);

	struct cq_feed_span spans[4];
	size_t n = heap_spans(fx, spans);
	struct cq_feed_words within = {FILEVA + 0x1000, FILEVA + 0x1900};
	struct cq_source_feed *feed;
	assert_null(cq_source_feed_start(&src, spans, n, &within, 1, &feed));
	assert_non_null(feed);
	uint8_t *want = malloc(2 * MIB + 8);
	for (size_t i = 0; i < n; i++) {
		bool none, any = false;
		memset(want, 0, spans[i].len);
		for (uint64_t pg = spans[i].off & ~4095ull; pg < spans[i].off + spans[i].len;
		     pg += 4096) {
			if (!word_page(fx, pg))
				continue;
			uint64_t lo = pg > spans[i].off ? pg : spans[i].off;
			uint64_t hi = pg + 4096 < spans[i].off + spans[i].len
			                  ? pg + 4096
			                  : spans[i].off + spans[i].len;
			memcpy(want + (lo - spans[i].off), fx->raw + lo, hi - lo);
			any = true;
		}
		const uint8_t *b = cq_source_feed_next(feed, &none);
		assert_int_equal(none, !any);
		if (any) {
			assert_non_null(b);
			assert_memory_equal(b, want, spans[i].len);
		} else
			assert_null(b);
	}
	free(want);
	cq_source_feed_stop(feed);
	assert_false(cq_source_read(&src).second_pass);
	assert_true(cq_source_read(&src).kept_feed);
	/* the words asked, relative to /lib/x: new, so the cache would be told */
	assert_non_null(cq_source_read(&src).scan_note);
	assert_string_equal(cq_source_read(&src).scan_note, "1000 1900 /lib/x\n");

	/* words beyond the note's: a second decompression, every byte */
	struct cq_feed_words beyond = {FILEVA + 0x1000, FILEVA + 0x3000};
	assert_null(cq_source_feed_start(&src, spans, n, &beyond, 1, &feed));
	assert_non_null(feed);
	for (size_t i = 0; i < n; i++) {
		const uint8_t *b = next(feed);
		assert_non_null(b);
		assert_memory_equal(b, fx->raw + spans[i].off, spans[i].len);
	}
	cq_source_feed_stop(feed);
	cq_source_close(&src);

	/* a note that names a file the core does not map: not armed, nothing kept */
	char other[] = "1000 2000 /lib/y\n";
	hint.arg = other;
	assert_null(cq_source_open(fx->zst, 0, false, false, &hint, &src));
	assert_false(cq_source_read(&src).scan_hint);
	assert_int_equal(cq_source_read(&src).scan_kept_bytes, 0);
	assert_null(cq_source_feed_start(&src, spans, n, &within, 1, &feed));
	assert_non_null(next(feed));
	cq_source_feed_stop(feed);
	cq_source_close(&src);

	/* no note that arms: the probe of the head is asked, and its words are kept */
	hint.scan_probe = probe;
	probes = 0;
	assert_null(cq_source_open(fx->zst, 0, false, false, &hint, &src));
	assert_int_equal(probes, 1);
	assert_true(cq_source_read(&src).scan_hint);
	assert_int_equal(cq_source_read(&src).scan_kept_bytes, fx->nword_pages * 4096);
	assert_null(cq_source_feed_start(&src, spans, n, &within, 1, &feed));
	assert_true(cq_source_read(&src).kept_feed);
	cq_source_feed_stop(feed);
	/* its note is new, for the cache */
	assert_non_null(cq_source_read(&src).scan_note);
	cq_source_close(&src);
	/* a probe whose words do not cover the scan's: decompressed again, every byte */
	probe_hi = 0x1100;
	assert_null(cq_source_open(fx->zst, 0, false, false, &hint, &src));
	assert_true(cq_source_read(&src).scan_hint);
	assert_null(cq_source_feed_start(&src, spans, n, &within, 1, &feed));
	assert_false(cq_source_read(&src).kept_feed);
	for (size_t i = 0; i < n; i++)
		assert_memory_equal(next(feed), fx->raw + spans[i].off, spans[i].len);
	cq_source_feed_stop(feed);
	cq_source_close(&src);
	/* a probe that finds nothing: an empty note, which spares the next core the probe */
	probe_hi = 0;
	assert_null(cq_source_open(fx->zst, 0, false, false, &hint, &src));
	assert_false(cq_source_read(&src).scan_hint);
	assert_non_null(cq_source_read(&src).scan_note);
	assert_string_equal(cq_source_read(&src).scan_note, "");
	cq_source_close(&src);
	char empty[] = "";
	hint.arg = empty;
	probes = 0;
	assert_null(cq_source_open(fx->zst, 0, false, false, &hint, &src));
	assert_int_equal(probes, 0);
	assert_null(cq_source_read(&src).scan_note);
	cq_source_close(&src);
	probe_hi = 0x2000;
	/* a note that arms: no probe */
	hint.arg = note;
	probes = 0;
	assert_null(cq_source_open(fx->zst, 0, false, false, &hint, &src));
	assert_int_equal(probes, 0);
	cq_source_close(&src);
	/* a core the plan keeps whole needs no probe */
	unsetenv("COREQ_STREAM_KEEP_ALL_BELOW");
	hint.arg = NULL;
	assert_null(cq_source_open(fx->zst, 0, false, false, &hint, &src));
	assert_int_equal(probes, 0);
	cq_source_close(&src);
	unsetenv("COREQ_STREAM_KEEP_ALL_BELOW");
}

/* With a second CPU the words are looked at on a thread of their own; with one, inline. */
static void test_scan_keep(void **state)
{
	struct fixture *fx = *state;
	scan_keep_once(fx);
	cpu_set_t saved, one;
	assert_int_equal(sched_getaffinity(0, sizeof(saved), &saved), 0);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	scan_keep_once(fx);
	sched_setaffinity(0, sizeof(saved), &saved);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plan),      cmocka_unit_test(test_image),
	    cmocka_unit_test(test_feed),      cmocka_unit_test(test_feed_bad_frame),
	    cmocka_unit_test(test_scan_keep),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
