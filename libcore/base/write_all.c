/*
 * write_all.c - whole writes to a descriptor (see write_all.h).
 */
#include "libcore/base/write_all.h"

#include <errno.h>
#include <unistd.h>

bool cq_write_all(int fd, const void *buf, size_t len, int64_t at)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = at >= 0 ? pwrite(fd, p, len, (off_t)at) : write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			return false;
		}
		p += n;
		len -= (size_t)n;
		if (at >= 0)
			at += n;
	}
	return true;
}
