/*
 * spool.c - keep an incoming core before anything else happens to
 * it: stream it from a pipe into a zstd-compressed file (libarchive's raw
 * format), named as systemd-coredump names its cores, created atomically
 * (temporary file, fsync, rename without replacing) so that a reader of the
 * directory never sees half a core.  See capture.h.
 */
#include "libcore/capture/capture.h"

#include <sys/statvfs.h>
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COPY_CHUNK (1u << 20)
#define NAME_TRIES 100

static struct cq_error *archive_fail(struct archive *a, const char *what)
{
	return cq_error_create(CQ_ERR_IO, "%s: %s", what,
	                       archive_error_string(a) ? archive_error_string(a) : "failed");
}

/* Streams in_fd into fd as zstd, at most limit bytes (0: all). */
static struct cq_error *compress(int in_fd, int fd, uint64_t limit, struct cq_capture_stored *out)
{
	struct archive *a = archive_write_new();
	struct archive_entry *e = archive_entry_new();
	char *buf = malloc(COPY_CHUNK);
	struct cq_error *err = NULL;
	if (!a || !e || !buf) {
		err = &cq_error_nomem;
		goto out;
	}
	/* libzstd's own workers, one per CPU: a big core compresses at disk speed */
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	char threads[16];
	snprintf(threads, sizeof(threads), "%ld", cpus > 1 ? (cpus < 64 ? cpus : 64) : 1);
	if (archive_write_add_filter_zstd(a) != ARCHIVE_OK ||
	    archive_write_set_filter_option(a, "zstd", "threads", threads) != ARCHIVE_OK ||
	    archive_write_set_format_raw(a) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
	    archive_write_open_fd(a, fd) != ARCHIVE_OK) {
		err = archive_fail(a, "cannot start zstd stream");
		goto out;
	}
	archive_entry_set_pathname(e, "core");
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0600);
	if (archive_write_header(a, e) != ARCHIVE_OK) {
		err = archive_fail(a, "cannot start zstd stream");
		goto out;
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
		ssize_t n = read(in_fd, buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = cq_error_errno(errno, "cannot read the core");
			goto out;
		}
		if (n == 0)
			break;
		if (archive_write_data(a, buf, (size_t)n) != n) {
			err = archive_fail(a, "cannot write the core");
			goto out;
		}
		out->raw_bytes += (uint64_t)n;
	}
	if (archive_write_close(a) != ARCHIVE_OK)
		err = archive_fail(a, "cannot finish the core");
out:
	free(buf);
	archive_entry_free(e);
	if (a)
		archive_write_free(a);
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
                                  uint64_t limit, struct cq_capture_stored *out)
{
	memset(out, 0, sizeof(*out));
	char *tmp;
	if (asprintf(&tmp, "%s/.incoming.XXXXXX", dir) < 0)
		return &cq_error_nomem;
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		struct cq_error *err = cq_error_errno(errno, "cannot create a file in %s", dir);
		free(tmp);
		return err;
	}
	struct cq_error *err = compress(in_fd, fd, limit, out);
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
