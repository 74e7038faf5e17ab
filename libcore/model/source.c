/*
 * source.c - open a core from a path, a pipe or a compressed file
 * (see source.h).  libarchive does the decompression: its "raw" format with
 * every filter enabled passes an uncompressed stream through unchanged and
 * decodes zstd/lz4/xz/gzip/bzip2 streams, identified by their magic.  It is
 * loaded only when a core needs it (libcore/base/archive_api.h): an
 * uncompressed core file is mapped as it is and never loads it.
 *
 * Invariants (asserted): a seekable core's chunk bounds are its frames'
 * starts, strictly increasing, then the image's end, so the lazy map asks
 * only for frames that exist; a source holds one reading (mapped, spooled,
 * frames or stream); a feed is of one of them.
 */
#include "libcore/model/source.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <zstd.h>

#include "libcore/base/archive_api.h"
#include "libcore/base/bytes.h"
#include "libcore/base/feed.h"
#include "libcore/base/lazy_map.h"
#include "libcore/base/regular_file.h"
#include "libcore/formats/zstd_seek.h"
#include "libcore/model/stream_image.h"

static const unsigned char elf_magic[4] = {0x7f, 'E', 'L', 'F'};

/* An unlinked, disk-backed temporary file; memfd when the tmp dir refuses. */
static struct cq_error *spool_create(int *out, bool *in_memory)
{
	*in_memory = false;
	const char *dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 && (fd = memfd_create("coreq-spool", MFD_CLOEXEC)) >= 0)
		*in_memory = true;
	if (fd < 0)
		return cq_error_errno(errno, "cannot create a temporary file in %s", dir);
	*out = fd;
	return NULL;
}

static struct cq_error *write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return cq_error_errno(errno, "cannot write temporary file");
		p += n;
		len -= (size_t)n;
	}
	return NULL;
}

/*
 * The cap when none is given: the spool's free space less what is kept
 * free; for a spool in memory (no usable temporary directory), half the RAM.
 */
static struct cq_error *default_cap(int spool, bool in_memory, uint64_t *cap)
{
	struct statvfs vfs;
	uint64_t avail = CQ_SOURCE_DEFAULT_MAX_SPOOL;
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	if (in_memory && pages > 0 && page > 0)
		avail = (uint64_t)pages * (uint64_t)page / 2 + CQ_SOURCE_KEEP_FREE;
	else if (!in_memory && fstatvfs(spool, &vfs) == 0 && vfs.f_frsize)
		avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	if (avail <= CQ_SOURCE_KEEP_FREE)
		return cq_error_create(CQ_ERR_LIMIT,
		                       "no room to decompress: %llu bytes free where it would be "
		                       "spooled, %llu kept free (--max-core-size sets a cap)",
		                       (unsigned long long)avail,
		                       (unsigned long long)CQ_SOURCE_KEEP_FREE);
	avail -= CQ_SOURCE_KEEP_FREE;
	*cap = avail < CQ_SOURCE_DEFAULT_MAX_SPOOL ? avail : CQ_SOURCE_DEFAULT_MAX_SPOOL;
	return NULL;
}

/* Streams everything libarchive decodes from in_fd into a fresh spool file. */
static struct cq_error *spool_through_libarchive(int in_fd, uint64_t max_spool, bool room_too,
                                                 struct cq_source *out)
{
	const struct cq_archive_api *ar;
	struct cq_error *err = cq_archive_api(&ar);
	if (err)
		return err;
	int spool = -1;
	struct archive *a = ar->read_new();
	if (!a)
		return &cq_error_nomem;
	ar->read_support_filter_all(a);
	ar->read_support_format_raw(a);
	ar->read_support_format_empty(a);
	struct archive_entry *entry;
	if (ar->read_open_fd(a, in_fd, 1 << 16) != ARCHIVE_OK ||
	    ar->read_next_header(a, &entry) != ARCHIVE_OK) {
		const char *why = ar->error_string(a);
		err = why ? cq_error_create(CQ_ERR_FORMAT, "corrupt compressed stream: %s", why)
		          : cq_error_create(CQ_ERR_FORMAT, "empty file");
		goto out;
	}
	bool in_memory;
	if ((err = spool_create(&spool, &in_memory)))
		goto out;
	if (max_spool == 0 || room_too) {
		uint64_t room = 0;
		if ((err = default_cap(spool, in_memory, &room)))
			goto out;
		if (max_spool == 0 || room < max_spool)
			max_spool = room;
	}
	uint64_t total = 0;
	char buf[1 << 16];
	for (;;) {
		la_ssize_t n = ar->read_data(a, buf, sizeof(buf));
		if (n == 0)
			break;
		if (n < 0) {
			const char *why = ar->error_string(a);
			err = cq_error_create(CQ_ERR_FORMAT, "corrupt compressed stream: %s",
			                      why ? why : "read error");
			goto out;
		}
		if ((uint64_t)n > max_spool - total) {
			/* A bomb, or a core bigger than the room for it: keep the cap's worth. */
			n = (la_ssize_t)(max_spool - total);
			out->cut_at = max_spool;
		}
		total += (uint64_t)n;
		if ((err = write_all(spool, buf, (size_t)n)))
			goto out;
		if (out->cut_at)
			break;
	}
	out->fd = spool;
	out->size = total;
	out->compression = cq_stream_filter_name(ar->filter_code(a, 0));
	out->spooled = 1;
	spool = -1;
out:
	if (spool >= 0)
		close(spool);
	ar->read_free(a);
	return err;
}

/* ---- a seekable zstd core: frames decompressed on touch ---- */

struct cq_source_frames {
	int fd;        /* the compressed file */
	uint8_t *comp; /* one compressed frame, read from fd */
	uint8_t *tail; /* the last frame whole, when the image ends inside it (a cap) */
	struct cq_zseek table;
	ZSTD_DCtx *dctx;
	struct cq_lazy_map *map;
};

/*
 * Frame i of f whole into dst (room for its raw size), through dctx and
 * comp (room for its compressed size); false unless it gives exactly that.
 * Read, not mapped: the compressed file then costs no resident memory.
 */
static bool frame_decode(const struct cq_source_frames *f, size_t i, ZSTD_DCtx *dctx, uint8_t *comp,
                         uint8_t *dst)
{
	const struct cq_zseek_frame *fr = &f->table.frame[i];
	if (pread(f->fd, comp, fr->comp_size, (off_t)fr->comp_off) != (ssize_t)fr->comp_size)
		return false;
	size_t got = ZSTD_decompressDCtx(dctx, dst, fr->raw_size, comp, fr->comp_size);
	return !ZSTD_isError(got) && got == fr->raw_size;
}

static bool frame_fill(void *arg, size_t i, uint8_t *dst, size_t len)
{
	struct cq_source_frames *f = arg;
	assert(i < f->table.n && len > 0);
	if (len == f->table.frame[i].raw_size)
		return frame_decode(f, i, f->dctx, f->comp, dst);
	/* The image was cut inside this frame: all of it, then the part kept. */
	if (len > f->table.frame[i].raw_size || !frame_decode(f, i, f->dctx, f->comp, f->tail))
		return false;
	memcpy(dst, f->tail, len);
	return true;
}

static void frames_free(struct cq_source_frames *f)
{
	if (!f)
		return;
	cq_lazy_map_destroy(f->map);
	ZSTD_freeDCtx(f->dctx);
	cq_zseek_free(&f->table);
	if (f->fd >= 0)
		close(f->fd);
	free(f->comp);
	free(f->tail);
	free(f);
}

/*
 * The seek table at the end of fd (size bytes), when there is one.  Returns
 * NULL and leaves out->n 0 when the file has no seekable footer; an error
 * when it has one that lies.
 */
static struct cq_error *read_seek_table(int fd, uint64_t size, struct cq_zseek *out)
{
	memset(out, 0, sizeof(*out));
	uint8_t foot[CQ_ZSEEK_FOOTER];
	if (size < CQ_ZSEEK_FOOTER ||
	    pread(fd, foot, sizeof(foot), (off_t)(size - sizeof(foot))) != (ssize_t)sizeof(foot) ||
	    !cq_zseek_has_footer(foot, sizeof(foot)))
		return NULL;
	uint64_t tsize = cq_zseek_table_size(foot, size);
	if (tsize == 0)
		return cq_error_create(
		    CQ_ERR_FORMAT, "seek table: its footer claims more frames than the file holds");
	uint8_t *t = malloc((size_t)tsize);
	if (!t)
		return &cq_error_nomem;
	struct cq_error *err = NULL;
	ssize_t got = pread(fd, t, (size_t)tsize, (off_t)(size - tsize));
	if (got < 0)
		err = cq_error_errno(errno, "cannot read the seek table");
	else if (got != (ssize_t)tsize)
		err = cq_error_create(CQ_ERR_FORMAT, "the seek table is cut short");
	else
		err = cq_zseek_parse(t, (size_t)tsize, size, 0, out);
	free(t);
	return err;
}

/*
 * Serves a seekable zstd file (fd, size bytes) through a lazy map.  *done is
 * false (and nothing is set) when the file is not one this path reads: no
 * seek table, frames not cut on pages, or no userfaultfd here; the caller
 * then spools it.
 */
static struct cq_error *open_frames(int fd, uint64_t size, uint64_t max_raw, struct cq_source *out,
                                    bool *done)
{
	*done = false;
	struct cq_source_frames *f = calloc(1, sizeof(*f));
	if (!f)
		return &cq_error_nomem;
	f->fd = -1;
	uint64_t *bound = NULL;
	struct cq_error *err = read_seek_table(fd, size, &f->table);
	if (err || f->table.n == 0) {
		/* A table that lies is no index: the frames are streamed like any zstd. */
		cq_error_free(err);
		err = NULL;
		goto out;
	}
	/* Each frame's own header must give the size its entry gives, where it gives one. */
	for (size_t i = 0; i < f->table.n; i++) {
		const struct cq_zseek_frame *fr = &f->table.frame[i];
		uint8_t head[18]; /* the largest zstd frame header (magic and 14 bytes) */
		size_t want = fr->comp_size < sizeof(head) ? fr->comp_size : sizeof(head);
		unsigned long long content =
		    pread(fd, head, want, (off_t)fr->comp_off) == (ssize_t)want
		        ? ZSTD_getFrameContentSize(head, want)
		        : ZSTD_CONTENTSIZE_ERROR;
		if (content == ZSTD_CONTENTSIZE_ERROR ||
		    (content != ZSTD_CONTENTSIZE_UNKNOWN && content != fr->raw_size))
			goto out; /* the table lies about this frame: streamed instead */
	}
	/* A table promising more than the cap is cut there, as a stream would be. */
	size_t n = f->table.n;
	uint64_t end = f->table.raw_size;
	if (max_raw && end > max_raw) {
		n = cq_zseek_find(&f->table, max_raw - 1) + 1;
		end = max_raw;
		out->cut_at = max_raw;
		if (!(f->tail = malloc(f->table.frame[n - 1].raw_size))) {
			err = &cq_error_nomem;
			goto out;
		}
	}
	if (!(bound = malloc((n + 1) * sizeof(*bound)))) {
		err = &cq_error_nomem;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		bound[i] = f->table.frame[i].raw_off;
	bound[n] = end;
	for (size_t i = 0; i < n; i++)
		assert(bound[i] < bound[i + 1]);
	size_t most = 0;
	for (size_t i = 0; i < n; i++)
		if (f->table.frame[i].comp_size > most)
			most = f->table.frame[i].comp_size;
	if (!(f->comp = malloc(most))) {
		err = &cq_error_nomem;
		goto out;
	}
	if ((f->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
		err = cq_error_errno(errno, "cannot keep the compressed core open");
		goto out;
	}
	if (!(f->dctx = ZSTD_createDCtx())) {
		err = &cq_error_nomem;
		goto out;
	}
	err =
	    cq_lazy_map_create(bound[n], bound, n, CQ_SOURCE_FRAME_BUDGET, frame_fill, f, &f->map);
	if (err && err->code == CQ_ERR_UNSUPPORTED) {
		cq_error_free(err);
		err = NULL;
		out->cut_at = 0;
		goto out;
	}
	if (err)
		goto out;
	out->image = cq_lazy_map_data(f->map);
	out->size = bound[n];
	out->frames = f;
	out->compression = "zstd";
	f = NULL;
	*done = true;
out:
	free(bound);
	frames_free(f);
	return err;
}

/*
 * A feed of a seekable core (libcore/base/feed.h): each worker decompresses
 * the frames of its span straight into the feed's buffer, and a frame the
 * span only partly covers into a frame buffer of its own (kept, as the next
 * span a worker takes often starts in it).
 */
struct frame_worker {
	ZSTD_DCtx *dctx;
	uint8_t *comp, *raw;
	size_t raw_frame; /* the frame raw holds, SIZE_MAX: none */
};

/*
 * Frames larger than this are not read ahead: each worker holds one whole
 * (and its compressed bytes), so 4 workers stay within the lazy image's
 * budget (CQ_SOURCE_FRAME_BUDGET).  coreq's store writes 2 MiB frames.
 */
#define FEED_MAX_FRAME (8u << 20)

struct frames_feed {
	struct cq_source_frames *f;
	uint64_t size; /* of the image: the frames beyond it are cut there */
	struct frame_worker w[4];
	unsigned nworkers;
	uint64_t buffer_bytes; /* the workers' frame buffers */
	struct cq_feed *feed;
};

static bool frames_feed_fill(void *arg, unsigned worker, const struct cq_feed_span *span,
                             uint8_t *dst)
{
	struct frames_feed *ff = arg;
	struct cq_source_frames *f = ff->f;
	struct frame_worker *w = &ff->w[worker];
	uint64_t lo = span->off, hi = span->off + span->len;
	if (hi > ff->size || hi < lo)
		return false;
	for (size_t i = cq_zseek_find(&f->table, lo); lo < hi; i++) {
		const struct cq_zseek_frame *fr = &f->table.frame[i];
		uint64_t end = fr->raw_off + fr->raw_size;
		if (fr->raw_off >= lo && end <= hi && end <= ff->size) {
			if (!frame_decode(f, i, w->dctx, w->comp, dst + (fr->raw_off - span->off)))
				return false;
		} else {
			if (w->raw_frame != i) {
				w->raw_frame = SIZE_MAX; /* until it holds frame i whole */
				if (!frame_decode(f, i, w->dctx, w->comp, w->raw))
					return false;
				w->raw_frame = i;
			}
			uint64_t upto = end < hi ? end : hi;
			memcpy(dst + (lo - span->off), w->raw + (lo - fr->raw_off), upto - lo);
		}
		lo = end;
	}
	return true;
}

static void frames_feed_free(struct frames_feed *ff)
{
	cq_feed_stop(ff->feed);
	for (unsigned i = 0; i < ff->nworkers; i++) {
		ZSTD_freeDCtx(ff->w[i].dctx);
		free(ff->w[i].comp);
		free(ff->w[i].raw);
	}
	free(ff);
}

static struct cq_error *frames_feed_start(const struct cq_source *src,
                                          const struct cq_feed_span *spans, size_t n,
                                          struct frames_feed **out)
{
	struct cq_source_frames *f = src->frames;
	size_t comp = 1, raw = 1;
	for (size_t i = 0; i < f->table.n; i++) {
		comp = f->table.frame[i].comp_size > comp ? f->table.frame[i].comp_size : comp;
		raw = f->table.frame[i].raw_size > raw ? f->table.frame[i].raw_size : raw;
	}
	/* Big frames would cost each worker more than the lazy image's budget allows. */
	if (raw > FEED_MAX_FRAME)
		return cq_error_create(CQ_ERR_UNSUPPORTED, "frames too big to read ahead");
	struct frames_feed *ff = calloc(1, sizeof(*ff));
	if (!ff)
		return &cq_error_nomem;
	ff->f = f;
	ff->size = src->size;
	ff->nworkers = cq_feed_workers();
	ff->buffer_bytes = (uint64_t)ff->nworkers * (comp + raw);
	struct cq_error *err = NULL;
	for (unsigned i = 0; i < ff->nworkers && !err; i++) {
		struct frame_worker *w = &ff->w[i];
		w->raw_frame = SIZE_MAX;
		if (!(w->dctx = ZSTD_createDCtx()) || !(w->comp = malloc(comp)) ||
		    !(w->raw = malloc(raw)))
			err = &cq_error_nomem;
	}
	if (!err)
		err = cq_feed_start(spans, n, ff->nworkers, frames_feed_fill, ff, &ff->feed);
	if (err) {
		frames_feed_free(ff);
		return err;
	}
	*out = ff;
	return NULL;
}

/* ---- a one-stream core: read once, the pages the analysis reads kept ---- */

struct cq_source_spool_args {
	uint64_t max_spool;
	bool room_too;
};

/* The stream image's second pass: the whole core into a spool, as a pipe is. */
static struct cq_error *second_pass(void *arg, int in_fd, uint64_t cap, int *fd, uint64_t *size)
{
	const struct cq_source_spool_args *a = arg;
	struct cq_source tmp = {.fd = -1};
	(void)cap;
	struct cq_error *err = spool_through_libarchive(in_fd, a->max_spool, a->room_too, &tmp);
	if (err)
		return err;
	*fd = tmp.fd;
	*size = tmp.size;
	return NULL;
}

struct cq_source_frame_stats cq_source_frame_stats(const struct cq_source *src)
{
	struct cq_source_frame_stats s = {0};
	if (!src->frames)
		return s;
	struct cq_lazy_map_stats m = cq_lazy_map_stats(src->frames->map);
	s.frames = src->frames->table.n;
	s.fills = m.fills;
	s.bad = m.bad_chunks;
	s.peak_bytes = m.peak_bytes;
	return s;
}

struct cq_error *cq_source_open(const char *path, uint64_t max_spool, bool regular_only,
                                bool want_fd, const struct cq_stream_hint *hint,
                                struct cq_source *out)
{
	assert(path && out);
	memset(out, 0, sizeof(*out));
	out->fd = -1;

	int from_stdin = !regular_only && strcmp(path, "-") == 0;
	int fd = from_stdin     ? STDIN_FILENO
	         : regular_only ? cq_open_regular(path)
	                        : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return regular_only && errno == EINVAL
		           ? cq_error_create(CQ_ERR_FORMAT, "not a regular file")
		           : cq_error_errno(errno, "cannot open");
	struct stat st;
	if (fstat(fd, &st) < 0) {
		struct cq_error *err = cq_error_errno(errno, "cannot stat");
		if (!from_stdin)
			close(fd);
		return err;
	}
	if (S_ISDIR(st.st_mode)) {
		if (!from_stdin)
			close(fd);
		return cq_error_create(CQ_ERR_USAGE, "is a directory");
	}
	if (S_ISREG(st.st_mode)) {
		unsigned char magic[4];
		ssize_t n = pread(fd, magic, sizeof(magic), 0);
		if (n == 0) {
			if (!from_stdin)
				close(fd);
			return cq_error_create(CQ_ERR_FORMAT, "empty file");
		}
		if (n == (ssize_t)sizeof(magic) && memcmp(magic, elf_magic, 4) == 0) {
			out->fd = from_stdin ? dup(fd) : fd;
			if (out->fd < 0)
				return cq_error_errno(errno, "cannot dup stdin");
			out->size = (uint64_t)st.st_size;
			out->compression = "none";
			return NULL;
		}
		if (!want_fd && n == (ssize_t)sizeof(magic) &&
		    cq_load_u32(magic) == ZSTD_MAGICNUMBER) {
			bool done;
			struct cq_error *err = open_frames(
			    fd, (uint64_t)st.st_size,
			    max_spool ? max_spool : CQ_SOURCE_DEFAULT_MAX_SPOOL, out, &done);
			if (err || done) {
				if (!from_stdin)
					close(fd);
				return err;
			}
		}
	}
	struct cq_error *err = NULL;
	if (S_ISREG(st.st_mode) && !from_stdin && !want_fd) {
		out->stream_args = malloc(sizeof(*out->stream_args));
		if (!out->stream_args) {
			close(fd);
			return &cq_error_nomem;
		}
		*out->stream_args = (struct cq_source_spool_args){max_spool, regular_only};
		err = cq_stream_image_open(fd, max_spool ? max_spool : CQ_SOURCE_DEFAULT_MAX_SPOOL,
		                           second_pass, out->stream_args, hint, &out->heap_hint,
		                           &out->stream);
		if (!err && out->stream) {
			close(fd);
			out->image = cq_stream_image_data(out->stream);
			out->size = cq_stream_image_size(out->stream);
			out->compression = cq_stream_image_compression(out->stream);
			return NULL;
		}
		free(out->stream_args);
		out->stream_args = NULL;
	}
	if (!err)
		err = spool_through_libarchive(fd, max_spool, regular_only, out);
	if (!from_stdin)
		close(fd);
	if (!err && out->size == 0) {
		cq_source_close(out);
		return cq_error_create(CQ_ERR_FORMAT, "empty file");
	}
	return err;
}

struct cq_source_read cq_source_read(const struct cq_source *src)
{
	assert(!(src->stream && src->frames));
	struct cq_source_read r = {.compression = src->compression, .size = src->size};
	if (src->stream) {
		struct cq_stream_image_stats st = cq_stream_image_stats(src->stream);
		r.how = "stream";
		r.held = st.kept_bytes + st.peak_bytes + st.spool_bytes + src->feed_bytes;
		r.second_pass = st.second_pass;
		r.bad_chunks = st.bad_chunks;
		r.exe_build_id = cq_stream_image_exe_build_id(src->stream);
		r.heap_hint = src->heap_hint;
		r.scan_hint = st.scan_armed;
		r.scan_kept_bytes = st.scan_kept_bytes;
		r.scan_gave_up = st.scan_gave_up;
		r.kept_feed = st.kept_feed;
		r.scan_note = st.scan_note;
	} else if (src->frames) {
		r.how = "seekable frames";
		r.held = cq_source_frame_stats(src).peak_bytes + src->feed_bytes;
	} else if (src->spooled) {
		r.how = "spooled";
		r.held = src->size;
		r.heap_hint = src->heap_hint;
	} else
		r.how = "mapped";
	return r;
}

struct cq_source_feed {
	struct frames_feed *frames;
	struct cq_stream_feed *stream;
	struct cq_feed *feed; /* the one of them */
};

struct cq_error *cq_source_feed_start(struct cq_source *src, const struct cq_feed_span *spans,
                                      size_t n, const struct cq_feed_words *words, size_t nwords,
                                      struct cq_source_feed **out)
{
	assert(src && (spans || n == 0) && (words || nwords == 0) && out);
	*out = NULL;
	if (!src->frames && !(src->stream && cq_stream_image_dropped(src->stream)))
		return NULL;
	struct cq_source_feed *sf = calloc(1, sizeof(*sf));
	if (!sf)
		return &cq_error_nomem;
	struct cq_error *err = src->frames
	                           ? frames_feed_start(src, spans, n, &sf->frames)
	                           : cq_stream_image_feed_start(src->stream, spans, n, words,
	                                                        nwords, &sf->stream, &sf->feed);
	if (err) {
		free(sf);
		if (err->code != CQ_ERR_IO && err->code != CQ_ERR_UNSUPPORTED)
			return err;
		cq_error_free(err); /* no feed: the image is read as it is */
		return NULL;
	}
	uint64_t held;
	if (sf->frames) {
		sf->feed = sf->frames->feed;
		held = cq_feed_ring_bytes(sf->feed) + sf->frames->buffer_bytes;
	} else
		held = (sf->feed ? cq_feed_ring_bytes(sf->feed) : 0) +
		       cq_stream_image_feed_bytes(sf->stream);
	src->feed_bytes = held > src->feed_bytes ? held : src->feed_bytes;
	*out = sf;
	return NULL;
}

const uint8_t *cq_source_feed_next(struct cq_source_feed *sf, bool *none)
{
	assert(sf && none && (sf->feed || sf->stream));
	*none = false;
	return sf->feed ? cq_feed_next(sf->feed) : cq_stream_image_feed_kept_next(sf->stream, none);
}

void cq_source_feed_stop(struct cq_source_feed *sf)
{
	if (!sf)
		return;
	if (sf->frames)
		frames_feed_free(sf->frames);
	else
		cq_stream_image_feed_stop(sf->stream);
	free(sf);
}

void cq_source_close(struct cq_source *src)
{
	if (src->fd >= 0)
		close(src->fd);
	src->fd = -1;
	frames_free(src->frames);
	src->frames = NULL;
	cq_stream_image_destroy(src->stream);
	src->stream = NULL;
	free(src->stream_args);
	src->stream_args = NULL;
	src->image = NULL;
}

bool cq_source_looks_like_core(const unsigned char *b, size_t n)
{
	if (n >= CQ_SOURCE_SNIFF_BYTES && memcmp(b, elf_magic, 4) == 0)
		return b[16] == 4 && b[17] == 0; /* ET_CORE, little-endian */
	static const struct {
		const char *magic;
		size_t len;
	} compressed[] = {
	    {"\x28\xb5\x2f\xfd", 4}, /* zstd */
	    {"\xfd"
	     "7zXZ\0",
	     6},                     /* xz */
	    {"\x04\x22\x4d\x18", 4}, /* lz4 */
	    {"\x1f\x8b", 2},         /* gzip */
	    {"BZh", 3},              /* bzip2 */
	};
	for (size_t i = 0; i < sizeof(compressed) / sizeof(compressed[0]); i++)
		if (n >= compressed[i].len &&
		    memcmp(b, compressed[i].magic, compressed[i].len) == 0)
			return true;
	return false;
}
