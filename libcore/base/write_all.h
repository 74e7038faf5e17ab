/*
 * write_all.h - a whole buffer written to a descriptor: write(2) and
 * pwrite(2) may write less than asked, or be interrupted by a signal.
 */
#ifndef CQ_WRITE_ALL_H
#define CQ_WRITE_ALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Writes all len bytes of buf to fd, at the file offset at with pwrite
 * (at >= 0) or at the descriptor's position (at < 0).  False with errno
 * set when it could not.
 */
bool cq_write_all(int fd, const void *buf, size_t len, int64_t at);

#endif
