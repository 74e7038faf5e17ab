/*
 * regular_file.c - open only regular files (see regular_file.h).
 */
#include "libcore/base/regular_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static int not_regular(const struct stat *st)
{
	errno = S_ISDIR(st->st_mode) ? EISDIR : EINVAL;
	return -1;
}

int cq_open_regular(const char *path)
{
	/* Looked at first, so that a device or a FIFO is never opened at all. */
	struct stat before, st;
	if (stat(path, &before) != 0)
		return -1;
	if (!S_ISREG(before.st_mode))
		return not_regular(&before);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	if (!S_ISREG(st.st_mode)) { /* swapped between the two looks */
		close(fd);
		return not_regular(&st);
	}
	return fd;
}
