/*
 * spool.c - keep an incoming core before anything else happens to it:
 * stream it from a pipe into a zstd file in zstd's seekable format
 * (libcore/formats/zstd_seek.h: independent frames of 2 MiB and a seek
 * table), named as systemd-coredump names its cores, created atomically
 * (temporary file, fsync, rename without replacing) so that a reader of the
 * directory never sees half a core.  See capture.h.
 *
 * The frames are compressed by libzstd directly, one worker per CPU, each
 * frame on its own: the store compresses at the speed of `zstd -T0`, and
 * every later read (libcore/model/source.c) decompresses only the frames
 * that hold the pages it wants.  `zstd -d` and coredumpctl read the file as
 * any .zst (the seek table is a skippable frame).
 */
#include "libcore/capture/spool.h"

#include <sys/statvfs.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "libcore/capture/capture.h"
#include "libcore/base/write_all.h"
#include "libcore/formats/zstd_seek.h"

#define NAME_TRIES 100
#define LEVEL      3 /* zstd's default, as systemd-coredump and `zstd -T0` use */

/*
 * The stored file.  Each WRITEBACK_STEP bytes written are sent to the disk
 * at once (and the step before that waited for): the final fsync then has
 * little left to do, and a big core never piles up as dirty pages that
 * throttle every writer on the host.  The written pages stay in the page
 * cache, clean and reclaimable: the hook's analysis reads the frames it
 * needs from there right after (libcore/model/source.c), not from the disk.
 */
#define WRITEBACK_STEP (32u << 20)

struct out_file {
	int fd;
	uint64_t written, sent; /* sent: bytes whose writeback has started */
};

static bool out_write(struct out_file *o, const void *buf, size_t len)
{
	if (!cq_write_all(o->fd, buf, len, -1))
		return false;
	o->written += len;
	while (o->written - o->sent >= WRITEBACK_STEP) {
		sync_file_range(o->fd, (off_t)o->sent, WRITEBACK_STEP, SYNC_FILE_RANGE_WRITE);
		if (o->sent >= WRITEBACK_STEP) {
			off_t prev = (off_t)(o->sent - WRITEBACK_STEP);
			sync_file_range(o->fd, prev, WRITEBACK_STEP,
			                SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
			                    SYNC_FILE_RANGE_WAIT_AFTER);
		}
		o->sent += WRITEBACK_STEP;
	}
	return true;
}

/*
 * The reader and the compressors share a ring of frame buffers, reused for
 * the whole core: the reader fills slot k from the input (and writes it into
 * the raw copy, if one is kept); a free worker compresses it into the slot's
 * own output buffer; whichever worker finds the oldest slot compressed
 * writes the finished slots out in order.  Neither side maps, faults in or
 * frees memory per byte of core: the raw copy grows through plain writes
 * into the memfd, whose pages are never mapped here.
 */
#define FRAME      CQ_ZSEEK_WRITE_FRAME
#define MAX_WORKER 16

struct slot {
	char *raw, *comp;
	size_t len, comp_len;
	bool done;
};

struct ring {
	pthread_mutex_t lock;
	pthread_cond_t moved;
	pthread_t thread[MAX_WORKER];
	size_t nworkers, nslots;
	struct slot *slot;
	uint64_t filled, claimed, written; /* frames read, taken by a worker, written out */
	bool writing, stop;
	struct out_file *out;
	uint32_t *comp_size, *raw_size; /* per frame written, for the seek table */
	size_t nframes, cap;
	struct cq_error *err; /* the first failure of a worker */
};

static bool record_frame(struct ring *r, size_t comp, size_t raw)
{
	if (r->nframes == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 1024;
		uint32_t *c = realloc(r->comp_size, cap * sizeof(*c));
		if (c)
			r->comp_size = c;
		uint32_t *w = c ? realloc(r->raw_size, cap * sizeof(*w)) : NULL;
		if (!w)
			return false;
		r->raw_size = w;
		r->cap = cap;
	}
	r->comp_size[r->nframes] = (uint32_t)comp;
	r->raw_size[r->nframes++] = (uint32_t)raw;
	return true;
}

/* Called with the lock held: writes every finished slot from the oldest on. */
static void write_finished(struct ring *r)
{
	r->writing = true;
	while (!r->err && r->written < r->claimed && r->slot[r->written % r->nslots].done) {
		struct slot *s = &r->slot[r->written % r->nslots];
		pthread_mutex_unlock(&r->lock);
		struct cq_error *err = NULL;
		if (!out_write(r->out, s->comp, s->comp_len))
			err = cq_error_errno(errno, "cannot write the core");
		else if (!record_frame(r, s->comp_len, s->len))
			err = &cq_error_nomem;
		pthread_mutex_lock(&r->lock);
		if (err && !r->err)
			r->err = err;
		s->done = false;
		r->written++;
		pthread_cond_broadcast(&r->moved);
	}
	r->writing = false;
}

static void *ring_work(void *arg)
{
	struct ring *r = arg;
	/* Each frame carries its checksum: a bit flipped on disk is found, not served. */
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	if (cctx && (ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, LEVEL)) ||
	             ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1)))) {
		ZSTD_freeCCtx(cctx);
		cctx = NULL;
	}
	pthread_mutex_lock(&r->lock);
	if (!cctx && !r->err)
		r->err = &cq_error_nomem;
	for (;;) {
		while (r->claimed == r->filled && !r->stop && !r->err)
			pthread_cond_wait(&r->moved, &r->lock);
		if (r->err || r->claimed == r->filled)
			break; /* failed, or stopped and every frame taken */
		struct slot *s = &r->slot[r->claimed++ % r->nslots];
		pthread_mutex_unlock(&r->lock);
		size_t got =
		    ZSTD_compress2(cctx, s->comp, ZSTD_compressBound(FRAME), s->raw, s->len);
		pthread_mutex_lock(&r->lock);
		if (ZSTD_isError(got)) {
			if (!r->err)
				r->err = cq_error_create(CQ_ERR_IO, "cannot compress the core: %s",
				                         ZSTD_getErrorName(got));
			break;
		}
		s->comp_len = got;
		s->done = true;
		if (!r->writing)
			write_finished(r);
	}
	pthread_cond_broadcast(&r->moved);
	pthread_mutex_unlock(&r->lock);
	ZSTD_freeCCtx(cctx);
	return NULL;
}

static void ring_free_slots(struct ring *r)
{
	for (size_t i = 0; i < r->nslots; i++) {
		free(r->slot[i].raw);
		free(r->slot[i].comp);
	}
	free(r->slot);
}

static struct cq_error *ring_start(struct ring *r, struct out_file *out)
{
	memset(r, 0, sizeof(*r));
	r->out = out;
	/* The CPUs this process may run on (its affinity), not every CPU online. */
	cpu_set_t set;
	long cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
	                                                         : sysconf(_SC_NPROCESSORS_ONLN);
	r->nworkers = cpus > 1 ? (cpus < MAX_WORKER ? (size_t)cpus : MAX_WORKER) : 1;
	r->nslots = 2 * r->nworkers + 2;
	if (!(r->slot = calloc(r->nslots, sizeof(*r->slot))))
		return &cq_error_nomem;
	for (size_t i = 0; i < r->nslots; i++)
		if (!(r->slot[i].raw = malloc(FRAME)) ||
		    !(r->slot[i].comp = malloc(ZSTD_compressBound(FRAME)))) {
			ring_free_slots(r);
			return &cq_error_nomem;
		}
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->moved, NULL);
	size_t started = 0;
	int rc = 0;
	while (started < r->nworkers &&
	       !(rc = pthread_create(&r->thread[started], NULL, ring_work, r)))
		started++;
	if (started == 0) {
		pthread_cond_destroy(&r->moved);
		pthread_mutex_destroy(&r->lock);
		ring_free_slots(r);
		return cq_error_errno(rc, "cannot start the compression threads");
	}
	r->nworkers = started;
	return NULL;
}

/* The next free buffer, waiting for one; NULL once a worker has failed. */
static char *ring_take(struct ring *r)
{
	pthread_mutex_lock(&r->lock);
	while (r->filled - r->written == r->nslots && !r->err)
		pthread_cond_wait(&r->moved, &r->lock);
	char *buf = r->err ? NULL : r->slot[r->filled % r->nslots].raw;
	pthread_mutex_unlock(&r->lock);
	return buf;
}

/* Hands the buffer ring_take gave, now holding len bytes, to the workers. */
static void ring_give(struct ring *r, size_t len)
{
	pthread_mutex_lock(&r->lock);
	r->slot[r->filled % r->nslots].len = len;
	r->filled++;
	pthread_cond_broadcast(&r->moved);
	pthread_mutex_unlock(&r->lock);
}

/*
 * Lets the workers compress and write what they have, ends them, and
 * appends the seek table; the first error, if any.
 */
static struct cq_error *ring_finish(struct ring *r, bool table)
{
	pthread_mutex_lock(&r->lock);
	r->stop = true;
	pthread_cond_broadcast(&r->moved);
	pthread_mutex_unlock(&r->lock);
	for (size_t i = 0; i < r->nworkers; i++)
		pthread_join(r->thread[i], NULL);
	pthread_mutex_lock(&r->lock);
	if (!r->err && r->written < r->claimed)
		write_finished(r);
	pthread_mutex_unlock(&r->lock);
	pthread_cond_destroy(&r->moved);
	pthread_mutex_destroy(&r->lock);
	struct cq_error *err = r->err;
	if (!err && table && r->nframes == 0) {
		/* An empty core still makes a valid, empty zstd file: one empty frame. */
		struct slot *s = &r->slot[0];
		size_t got = ZSTD_compress(s->comp, ZSTD_compressBound(FRAME), "", 0, LEVEL);
		if (ZSTD_isError(got) || !out_write(r->out, s->comp, got))
			err = cq_error_create(CQ_ERR_IO, "cannot write the core");
	} else if (!err && table) {
		size_t size = cq_zseek_encoded_size(r->nframes);
		uint8_t *buf = malloc(size);
		if (!buf)
			err = &cq_error_nomem;
		else {
			cq_zseek_encode(r->comp_size, r->raw_size, r->nframes, buf);
			if (!out_write(r->out, buf, size))
				err = cq_error_errno(errno, "cannot write the seek table");
			free(buf);
		}
	}
	ring_free_slots(r);
	free(r->comp_size);
	free(r->raw_size);
	return err;
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
 * Streams in_fd into fd as seekable zstd, at most limit bytes (0: all); with
 * raw, keeping the raw copy in raw->fd while it fits (see capture.h).
 */
static struct cq_error *compress(int in_fd, int fd, uint64_t limit, struct cq_spool_raw *raw,
                                 struct cq_spool_result *out)
{
	struct out_file of = {.fd = fd};
	struct ring ring;
	struct cq_error *err = ring_start(&ring, &of);
	if (err)
		return err;
	/* Fewer, bigger reads from the kernel's pipe (a regular file just refuses). */
	fcntl(in_fd, F_SETPIPE_SZ, 1 << 20);
	bool teeing = raw && raw->fd >= 0 && raw->budget > 0;
	for (;;) {
		size_t want = FRAME;
		if (limit && limit - out->raw_bytes < want)
			want = (size_t)(limit - out->raw_bytes);
		if (want == 0) {
			/* At the limit: truncated only if the input had more. */
			out->truncated = input_has_more(in_fd);
			break;
		}
		char *buf = ring_take(&ring);
		if (!buf) {
			teeing = false; /* a worker failed; ring_finish below says why */
			break;
		}
		ssize_t n = read_full(in_fd, buf, want);
		if (n < 0) {
			err = cq_error_errno(errno, "cannot read the core");
			break;
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
	if (teeing && !err) {
		raw->kept = true;
		raw->complete(raw->arg, out->raw_bytes);
	}
	struct cq_error *rerr = ring_finish(&ring, err == NULL);
	if (err) {
		if (rerr && rerr != err)
			cq_error_free(rerr);
		return err;
	}
	return rerr;
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
