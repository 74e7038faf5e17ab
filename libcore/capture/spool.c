/*
 * spool.c - keep an incoming core before anything else happens to
 * it: stream it from a pipe into a zstd-compressed file (libarchive's raw
 * format), named as systemd-coredump names its cores, created atomically
 * (temporary file, fsync, rename without replacing) so that a reader of the
 * directory never sees half a core.  See capture.h.  libarchive is loaded
 * when a core is stored (libcore/base/archive_api.h), not at start.
 */
#include "libcore/capture/spool.h"

#include <sys/statvfs.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcore/capture/capture.h"
#include "libcore/base/archive_api.h"
#include "libcore/base/write_all.h"

#define NAME_TRIES 100

static struct cq_error *archive_fail(const struct cq_archive_api *ar, struct archive *a,
                                     const char *what)
{
	const char *why = ar->error_string(a);
	return cq_error_create(CQ_ERR_IO, "%s: %s", what, why ? why : "failed");
}

/*
 * The stored file as libarchive's output.  Writes go out in big blocks, and
 * each WRITEBACK_STEP bytes written are sent to the disk at once (and the one
 * before that waited for and dropped from the page cache): the final fsync
 * then has little left to do, and a big core never piles up as dirty pages
 * that throttle every writer on the host.
 */
#define OUT_BLOCK      (1u << 20)
#define WRITEBACK_STEP (32u << 20)

struct out_file {
	const struct cq_archive_api *ar;
	int fd;
	uint64_t written, sent; /* sent: bytes whose writeback has started */
};

static la_ssize_t out_write(struct archive *a, void *arg, const void *buf, size_t len)
{
	struct out_file *o = arg;
	if (!cq_write_all(o->fd, buf, len, -1)) {
		o->ar->set_error(a, errno, "%s", strerror(errno));
		return -1;
	}
	o->written += len;
	while (o->written - o->sent >= WRITEBACK_STEP) {
		sync_file_range(o->fd, (off_t)o->sent, WRITEBACK_STEP, SYNC_FILE_RANGE_WRITE);
		if (o->sent >= WRITEBACK_STEP) {
			off_t prev = (off_t)(o->sent - WRITEBACK_STEP);
			sync_file_range(o->fd, prev, WRITEBACK_STEP,
			                SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
			                    SYNC_FILE_RANGE_WAIT_AFTER);
			posix_fadvise(o->fd, prev, WRITEBACK_STEP, POSIX_FADV_DONTNEED);
		}
		o->sent += WRITEBACK_STEP;
	}
	return (la_ssize_t)len;
}

/*
 * The reader and the compressor thread share a ring of a few buffers, reused
 * for the whole core: the reader fills a buffer from the input (and writes
 * it into the raw copy, if one is kept), the compressor hands it to zstd.
 * Reading and compressing overlap, the bytes are in the cache when zstd
 * takes them, and neither side maps, faults in or frees memory per byte of
 * core: the raw copy grows through plain writes into the memfd, whose pages
 * are never mapped here, so they cost no page-table work and no RSS.
 */
#define RING_SLOTS 4
#define SLOT_BYTES (4u << 20)

struct ring {
	pthread_mutex_t lock;
	pthread_cond_t moved;
	pthread_t thread;
	const struct cq_archive_api *ar;
	struct archive *a;
	char *slot[RING_SLOTS];
	size_t len[RING_SLOTS];
	uint64_t filled, drained; /* buffers handed over and buffers compressed */
	bool stop;                /* the reader is done: drain and return */
	struct cq_error *err;     /* the compressor's */
};

static void *ring_compress(void *arg)
{
	struct ring *r = arg;
	struct cq_error *err = NULL;
	for (;;) {
		pthread_mutex_lock(&r->lock);
		while (r->drained == r->filled && !r->stop)
			pthread_cond_wait(&r->moved, &r->lock);
		bool empty = r->drained == r->filled;
		size_t i = (size_t)(r->drained % RING_SLOTS);
		pthread_mutex_unlock(&r->lock);
		if (empty)
			break; /* stopped and drained */
		if (r->ar->write_data(r->a, r->slot[i], r->len[i]) != (la_ssize_t)r->len[i])
			err = archive_fail(r->ar, r->a, "cannot write the core");
		pthread_mutex_lock(&r->lock);
		r->drained++;
		r->err = err;
		pthread_cond_broadcast(&r->moved);
		pthread_mutex_unlock(&r->lock);
		if (err)
			break;
	}
	return NULL;
}

static struct cq_error *ring_start(struct ring *r, const struct cq_archive_api *ar,
                                   struct archive *a)
{
	memset(r, 0, sizeof(*r));
	r->ar = ar;
	r->a = a;
	for (size_t i = 0; i < RING_SLOTS; i++)
		if (!(r->slot[i] = malloc(SLOT_BYTES))) {
			while (i > 0)
				free(r->slot[--i]);
			return &cq_error_nomem;
		}
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->moved, NULL);
	int rc = pthread_create(&r->thread, NULL, ring_compress, r);
	if (rc) {
		pthread_cond_destroy(&r->moved);
		pthread_mutex_destroy(&r->lock);
		for (size_t i = 0; i < RING_SLOTS; i++)
			free(r->slot[i]);
		return cq_error_errno(rc, "cannot start the compression thread");
	}
	return NULL;
}

/* The next free buffer, waiting for one; NULL once the compressor has failed. */
static char *ring_take(struct ring *r)
{
	pthread_mutex_lock(&r->lock);
	while (r->filled - r->drained == RING_SLOTS && !r->err)
		pthread_cond_wait(&r->moved, &r->lock);
	char *slot = r->err ? NULL : r->slot[r->filled % RING_SLOTS];
	pthread_mutex_unlock(&r->lock);
	return slot;
}

/* Hands the buffer ring_take gave, now holding len bytes, to the compressor. */
static void ring_give(struct ring *r, size_t len)
{
	pthread_mutex_lock(&r->lock);
	r->len[r->filled % RING_SLOTS] = len;
	r->filled++;
	pthread_cond_broadcast(&r->moved);
	pthread_mutex_unlock(&r->lock);
}

/* Lets the compressor drain what it has and ends it; its error, if any. */
static struct cq_error *ring_finish(struct ring *r)
{
	pthread_mutex_lock(&r->lock);
	r->stop = true;
	pthread_cond_broadcast(&r->moved);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->thread, NULL);
	pthread_cond_destroy(&r->moved);
	pthread_mutex_destroy(&r->lock);
	for (size_t i = 0; i < RING_SLOTS; i++)
		free(r->slot[i]);
	return r->err;
}

/* Reads up to len bytes (fewer only at end of input); -1 with errno on error. */
static ssize_t read_full(int fd, char *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* Whether the input has a byte more (it is then lost: the core is cut there). */
static bool input_has_more(int fd)
{
	char more;
	ssize_t m;
	while ((m = read(fd, &more, 1)) < 0 && errno == EINTR)
		;
	return m > 0;
}

/*
 * Streams in_fd into fd as zstd, at most limit bytes (0: all); with raw,
 * keeping the raw copy in raw->fd while it fits (see capture.h).
 */
static struct cq_error *compress(int in_fd, int fd, uint64_t limit, struct cq_spool_raw *raw,
                                 struct cq_spool_result *out)
{
	const struct cq_archive_api *ar;
	struct cq_error *err = cq_archive_api(&ar);
	if (err)
		return err;
	struct archive *a = ar->write_new();
	struct archive_entry *e = ar->entry_new();
	struct ring ring;
	bool running = false;
	struct out_file of = {.ar = ar, .fd = fd};
	if (!a || !e) {
		err = &cq_error_nomem;
		goto out;
	}
	/* libzstd's own workers, one per CPU: a big core compresses at disk speed */
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	char threads[16];
	snprintf(threads, sizeof(threads), "%ld", cpus > 1 ? (cpus < 64 ? cpus : 64) : 1);
	if (ar->write_add_filter_zstd(a) != ARCHIVE_OK ||
	    ar->write_set_filter_option(a, "zstd", "threads", threads) != ARCHIVE_OK ||
	    ar->write_set_format_raw(a) != ARCHIVE_OK ||
	    ar->write_set_bytes_per_block(a, OUT_BLOCK) != ARCHIVE_OK ||
	    ar->write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
	    ar->write_open2(a, &of, NULL, out_write, NULL, NULL) != ARCHIVE_OK) {
		err = archive_fail(ar, a, "cannot start zstd stream");
		goto out;
	}
	ar->entry_set_pathname(e, "core");
	ar->entry_set_filetype(e, AE_IFREG);
	ar->entry_set_perm(e, 0600);
	if (ar->write_header(a, e) != ARCHIVE_OK) {
		err = archive_fail(ar, a, "cannot start zstd stream");
		goto out;
	}
	if ((err = ring_start(&ring, ar, a)))
		goto out;
	running = true;
	/* Fewer, bigger reads from the kernel's pipe (a regular file just refuses). */
	fcntl(in_fd, F_SETPIPE_SZ, 1 << 20);
	bool teeing = raw && raw->fd >= 0 && raw->budget > 0;
	for (;;) {
		size_t want = SLOT_BYTES;
		if (limit && limit - out->raw_bytes < want)
			want = (size_t)(limit - out->raw_bytes);
		if (want == 0) {
			/* At the limit: truncated only if the input had more. */
			out->truncated = input_has_more(in_fd);
			break;
		}
		char *buf = ring_take(&ring);
		if (!buf) {
			teeing = false; /* the compressor failed; ring_finish below says why */
			break;
		}
		ssize_t n = read_full(in_fd, buf, want);
		if (n < 0) {
			err = cq_error_errno(errno, "cannot read the core");
			goto out;
		}
		if (n == 0)
			break;
		if (teeing && (out->raw_bytes + (uint64_t)n > raw->budget ||
		               !cq_write_all(raw->fd, buf, (size_t)n, (int64_t)out->raw_bytes))) {
			/* Too big to keep (or no memory for it): the rest is only compressed. */
			teeing = false;
			int rc = ftruncate(raw->fd, 0); /* gives the memory back */
			(void)rc;
		}
		out->raw_bytes += (uint64_t)n;
		ring_give(&ring, (size_t)n);
		if ((size_t)n < want)
			break; /* end of input */
	}
	if (teeing) {
		raw->kept = true;
		raw->complete(raw->arg, out->raw_bytes);
	}
	running = false;
	if ((err = ring_finish(&ring)))
		goto out;
	if (ar->write_close(a) != ARCHIVE_OK)
		err = archive_fail(ar, a, "cannot finish the core");
out:
	if (running) {
		struct cq_error *rerr = ring_finish(&ring);
		if (rerr && rerr != err)
			cq_error_free(rerr);
	}
	ar->entry_free(e);
	if (a)
		ar->write_free(a);
	return err;
}

/* Renames tmp to a free systemd-style name in dir (the timestamp nudged by µs if taken). */
static struct cq_error *place(const char *dir, const char *tmp, const struct cq_capture *c,
                              struct cq_spool_result *out)
{
	char name[512];
	for (unsigned serial = 0; serial < NAME_TRIES; serial++) {
		struct cq_error *err =
		    cq_capture_systemd_name(c, serial, name, sizeof(name), ".zst");
		if (err)
			return err;
		char *path;
		if (asprintf(&path, "%s/%s", dir, name) < 0)
			return &cq_error_nomem;
		if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0) {
			out->path = path;
			return NULL;
		}
		int e = errno;
		free(path);
		if (e != EEXIST)
			return cq_error_errno(e, "cannot rename the stored core into place");
	}
	return cq_error_create(CQ_ERR_LIMIT, "no free file name for the core");
}

struct cq_error *cq_spool_store(int in_fd, const char *dir, const struct cq_capture *c,
                                uint64_t limit, struct cq_spool_raw *raw,
                                struct cq_spool_result *out)
{
	memset(out, 0, sizeof(*out));
	if (raw)
		raw->kept = false;
	char *tmp;
	if (asprintf(&tmp, "%s/.incoming.XXXXXX", dir) < 0)
		return &cq_error_nomem;
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		struct cq_error *err = cq_error_errno(errno, "cannot create a file in %s", dir);
		free(tmp);
		return err;
	}
	struct cq_error *err = compress(in_fd, fd, limit, raw, out);
	struct stat st;
	if (!err && fstat(fd, &st) == 0)
		out->file_bytes = (uint64_t)st.st_size;
	if (!err) {
		struct cq_error *xerr = cq_capture_write_xattrs(fd, c);
		out->xattrs = xerr == NULL;
		cq_error_free(xerr);
	}
	if (!err && fsync(fd) != 0)
		err = cq_error_errno(errno, "cannot sync the stored core");
	close(fd);
	if (!err)
		err = place(dir, tmp, c, out);
	if (err) {
		unlink(tmp);
	} else {
		int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dirfd >= 0) {
			fsync(dirfd);
			close(dirfd);
		}
	}
	free(tmp);
	return err;
}

uint64_t cq_spool_limit(const char *dir, uint64_t max_size, int64_t rlimit, uint64_t keep_free,
                        bool *no_room)
{
	uint64_t limit = max_size;
	if (rlimit > 0 && (limit == 0 || (uint64_t)rlimit < limit))
		limit = (uint64_t)rlimit;
	*no_room = false;
	struct statvfs vfs;
	if (keep_free && statvfs(dir, &vfs) == 0) {
		uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
		/* Raw bytes bound the compressed file from above. */
		uint64_t room = avail > keep_free ? avail - keep_free : 0;
		*no_room = room == 0;
		if (limit == 0 || room < limit)
			limit = room;
	}
	return limit;
}
