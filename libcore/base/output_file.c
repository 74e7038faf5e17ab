/*
 * output_file.c - outputs written beside their target and renamed over it
 * (see output_file.h).
 */
#include "libcore/base/output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define CREATE_TRIES 16

/* Refuses a target that exists and is not a regular file (lstat: a link is refused). */
static struct cq_error *check_target(const char *target)
{
	struct stat st;
	if (lstat(target, &st) != 0)
		return errno == ENOENT ? NULL : cq_error_errno(errno, "cannot look at the output");
	if (S_ISREG(st.st_mode))
		return NULL;
	return cq_error_create(CQ_ERR_USAGE, "the output exists and is %s, not a regular file",
	                       S_ISLNK(st.st_mode)                          ? "a symbolic link"
	                       : S_ISDIR(st.st_mode)                        ? "a directory"
	                       : S_ISFIFO(st.st_mode)                       ? "a FIFO"
	                       : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
	                                                                    : "a special file");
}

struct cq_error *cq_output_file_create(const char *target, mode_t mode, struct cq_output_file *out)
{
	memset(out, 0, sizeof(*out));
	out->fd = -1;
	struct cq_error *err = check_target(target);
	if (err)
		return err;
	const char *slash = strrchr(target, '/');
	int dir_len = slash ? (int)(slash - target + 1) : 0;
	const char *base = slash ? slash + 1 : target;
	if (!*base)
		return cq_error_create(CQ_ERR_USAGE, "the output names a directory");
	if (!(out->target = strdup(target)))
		return &cq_error_nomem;
	for (int i = 0; i < CREATE_TRIES; i++) {
		unsigned long long r = 0;
		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
			r ^= (unsigned long long)getpid() << 20 ^ (unsigned long long)i;
		free(out->temp);
		if (asprintf(&out->temp, "%.*s.%s.%016llx.tmp", dir_len, target, base, r) < 0) {
			out->temp = NULL;
			cq_output_file_discard(out);
			return &cq_error_nomem;
		}
		out->fd =
		    open(out->temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (out->fd >= 0)
			return NULL;
		if (errno != EEXIST)
			break;
	}
	err = cq_error_errno(errno, "cannot create a file beside the output");
	free(out->temp);
	out->temp = NULL;
	cq_output_file_discard(out);
	return err;
}

struct cq_error *cq_output_file_commit(struct cq_output_file *f)
{
	struct cq_error *err = NULL;
	if (f->fd >= 0 && close(f->fd) != 0)
		err = cq_error_errno(errno, "cannot write");
	f->fd = -1;
	/* Checked again: a name swapped since is at worst replaced, never written through. */
	if (!err && !(err = check_target(f->target)) && rename(f->temp, f->target) != 0)
		err = cq_error_errno(errno, "cannot put the output in place");
	if (!err) {
		free(f->temp);
		f->temp = NULL;
	}
	cq_output_file_discard(f);
	return err;
}

void cq_output_file_discard(struct cq_output_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	if (f->temp)
		unlink(f->temp);
	free(f->temp);
	free(f->target);
	f->temp = f->target = NULL;
}
