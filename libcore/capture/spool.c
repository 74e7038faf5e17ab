/*
 * spool.c - keep an incoming core before anything else happens to
 * it: stream it from a pipe into a zstd-compressed file (libarchive's raw
 * format), named as systemd-coredump names its cores, created atomically
 * (temporary file, fsync, rename without replacing) so that a reader of the
 * directory never sees half a core.  See capture.h.  libarchive is loaded
 * when a core is stored (libcore/base/archive_api.h), not at start.
 */
#include "libcore/capture/capture.h"

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

#include "libcore/base/archive_api.h"

#define COPY_CHUNK (1u << 20)
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
	const char *p = buf;
	for (size_t left = len; left > 0;) {
		ssize_t n = write(o->fd, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			o->ar->set_error(a, errno, "%s", strerror(errno));
			return -1;
		}
		p += n;
		left -= (size_t)n;
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
 * The raw copy between the reader and the compressor thread.  Both go
 * through the memfd in windows mapped in turn: the reader reads the input
 * straight into its window, and the compressor hands its window to zstd, so
 * the raw copy costs no copy beyond the one a plain store makes; and only
 * two windows are ever mapped, so it does not count as this process's RSS.
 */
#define TEE_WINDOW (16u << 20)

struct tee {
	pthread_mutex_t lock;
	pthread_cond_t moved;
	pthread_t thread;
	int fd;
	const struct cq_archive_api *ar;
	struct archive *a;
	uint64_t written, consumed;
	bool stop;            /* the reader is done: take what is left and return */
	struct cq_error *err; /* the compressor's */
	/* the reader's window: TEE_WINDOW bytes of fd at win_at */
	char *win;
	uint64_t win_at;
};

static void *tee_compress(void *arg)
{
	struct tee *t = arg;
	char *win = NULL;
	uint64_t win_at = 0;
	struct cq_error *err = NULL;
	for (;;) {
		pthread_mutex_lock(&t->lock);
		while (t->consumed == t->written && !t->stop)
			pthread_cond_wait(&t->moved, &t->lock);
		uint64_t at = t->consumed, end = t->written;
		pthread_mutex_unlock(&t->lock);
		if (at == end)
			break; /* stopped and drained */
		uint64_t base = at - at % TEE_WINDOW;
		if (!win || win_at != base) {
			if (win)
				munmap(win, TEE_WINDOW);
			win = mmap(NULL, TEE_WINDOW, PROT_READ, MAP_SHARED, t->fd, (off_t)base);
			if (win == MAP_FAILED) {
				win = NULL;
				err = cq_error_errno(errno, "cannot map the raw copy");
				break;
			}
			win_at = base;
		}
		size_t n = (size_t)((end < base + TEE_WINDOW ? end : base + TEE_WINDOW) - at);
		if (t->ar->write_data(t->a, win + (at - base), n) != (la_ssize_t)n) {
			err = archive_fail(t->ar, t->a, "cannot write the core");
			break;
		}
		pthread_mutex_lock(&t->lock);
		t->consumed += n;
		pthread_cond_broadcast(&t->moved);
		pthread_mutex_unlock(&t->lock);
	}
	if (win)
		munmap(win, TEE_WINDOW);
	pthread_mutex_lock(&t->lock);
	t->err = err;
	pthread_cond_broadcast(&t->moved);
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

static struct cq_error *tee_start(struct tee *t, int fd, const struct cq_archive_api *ar,
                                  struct archive *a)
{
	memset(t, 0, sizeof(*t));
	t->fd = fd;
	t->ar = ar;
	t->a = a;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->moved, NULL);
	int rc = pthread_create(&t->thread, NULL, tee_compress, t);
	if (rc) {
		pthread_cond_destroy(&t->moved);
		pthread_mutex_destroy(&t->lock);
		return cq_error_errno(rc, "cannot start the compression thread");
	}
	return NULL;
}

/*
 * Where the reader reads next: up to *room bytes at the returned address, in
 * the window that holds offset written (mapped, with its memory allocated,
 * on the way).  NULL if the raw copy cannot grow (no memory for it).
 */
static char *tee_space(struct tee *t, size_t *room)
{
	uint64_t base = t->written - t->written % TEE_WINDOW;
	if (!t->win || t->win_at != base) {
		if (t->win)
			munmap(t->win, TEE_WINDOW);
		t->win = NULL;
		/* Allocated in one call, not a page fault at a time; it sets the size too. */
		if (fallocate(t->fd, 0, (off_t)base, TEE_WINDOW) != 0 &&
		    (errno != EOPNOTSUPP || ftruncate(t->fd, (off_t)(base + TEE_WINDOW)) != 0))
			return NULL;
		char *w =
		    mmap(NULL, TEE_WINDOW, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, (off_t)base);
		if (w == MAP_FAILED)
			return NULL;
		/* Faulted in as one batch, not a page at a time under read() (Linux 5.14). */
		madvise(w, TEE_WINDOW, MADV_POPULATE_WRITE);
		t->win = w;
		t->win_at = base;
	}
	*room = (size_t)(base + TEE_WINDOW - t->written);
	return t->win + (t->written - base);
}

/* n bytes more are in the raw copy; false if the compressor has failed. */
static bool tee_advance(struct tee *t, size_t n)
{
	pthread_mutex_lock(&t->lock);
	t->written += n;
	bool ok = t->err == NULL;
	pthread_cond_broadcast(&t->moved);
	pthread_mutex_unlock(&t->lock);
	return ok;
}

/* Lets the compressor drain what it has and ends it; its error, if any. */
static struct cq_error *tee_finish(struct tee *t)
{
	pthread_mutex_lock(&t->lock);
	t->stop = true;
	pthread_cond_broadcast(&t->moved);
	pthread_mutex_unlock(&t->lock);
	pthread_join(t->thread, NULL);
	pthread_cond_destroy(&t->moved);
	pthread_mutex_destroy(&t->lock);
	if (t->win)
		munmap(t->win, TEE_WINDOW);
	t->win = NULL;
	return t->err;
}

/*
 * Streams in_fd into fd as zstd, at most limit bytes (0: all); with raw,
 * through the raw copy in memory while it fits (see capture.h).
 */
static struct cq_error *compress(int in_fd, int fd, uint64_t limit, struct cq_capture_raw *raw,
                                 struct cq_capture_stored *out)
{
	const struct cq_archive_api *ar;
	struct cq_error *err = cq_archive_api(&ar);
	if (err)
		return err;
	struct archive *a = ar->write_new();
	struct archive_entry *e = ar->entry_new();
	char *buf = malloc(COPY_CHUNK);
	struct tee tee;
	bool teeing = false;
	struct out_file of = {.ar = ar, .fd = fd};
	if (!a || !e || !buf) {
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
	if (raw && raw->fd >= 0 && raw->budget > 0) {
		if ((err = tee_start(&tee, raw->fd, ar, a)))
			goto out;
		teeing = true;
	}
	for (;;) {
		size_t want = COPY_CHUNK;
		if (limit && limit - out->raw_bytes < want)
			want = (size_t)(limit - out->raw_bytes);
		if (want == 0) {
			/* At the limit: truncated only if the input had more. */
			char more;
			ssize_t m;
			while ((m = read(in_fd, &more, 1)) < 0 && errno == EINTR)
				;
			out->truncated = m > 0;
			break;
		}
		/* Into the raw copy while it has room; beyond, into buf (EOF may be next). */
		char *into = NULL;
		if (teeing && out->raw_bytes < raw->budget) {
			size_t room = 0;
			if ((into = tee_space(&tee, &room))) {
				want = want < room ? want : room;
				if (want > raw->budget - out->raw_bytes)
					want = (size_t)(raw->budget - out->raw_bytes);
			}
		}
		ssize_t n = read(in_fd, into ? into : buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = cq_error_errno(errno, "cannot read the core");
			goto out;
		}
		if (n == 0)
			break;
		out->raw_bytes += (uint64_t)n;
		if (into) {
			if (!tee_advance(&tee, (size_t)n))
				break; /* tee_finish below says why */
			continue;
		}
		if (teeing) {
			/* Too big to keep (or no memory for it): the rest goes straight in. */
			teeing = false;
			if ((err = tee_finish(&tee)))
				goto out;
			int rc = ftruncate(raw->fd, 0); /* gives the memory back */
			(void)rc;
		}
		if (ar->write_data(a, buf, (size_t)n) != n) {
			err = archive_fail(ar, a, "cannot write the core");
			goto out;
		}
	}
	if (teeing) {
		teeing = false;
		int rc = ftruncate(raw->fd, (off_t)out->raw_bytes); /* the core's own size */
		if (rc == 0 && tee_advance(&tee, 0)) {
			raw->kept = true;
			raw->complete(raw->arg, out->raw_bytes);
		}
		if ((err = tee_finish(&tee)))
			goto out;
	}
	if (ar->write_close(a) != ARCHIVE_OK)
		err = archive_fail(ar, a, "cannot finish the core");
out:
	if (teeing) {
		struct cq_error *terr = tee_finish(&tee);
		if (terr && terr != err)
			cq_error_free(terr);
	}
	free(buf);
	ar->entry_free(e);
	if (a)
		ar->write_free(a);
	return err;
}

/* Renames tmp to a free systemd-style name in dir (the timestamp nudged by µs if taken). */
static struct cq_error *place(const char *dir, const char *tmp, const struct cq_capture *c,
                              struct cq_capture_stored *out)
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

struct cq_error *cq_capture_store(int in_fd, const char *dir, const struct cq_capture *c,
                                  uint64_t limit, struct cq_capture_raw *raw,
                                  struct cq_capture_stored *out)
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

uint64_t cq_capture_store_limit(const char *dir, uint64_t max_size, int64_t rlimit,
                                uint64_t keep_free, bool *no_room)
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
