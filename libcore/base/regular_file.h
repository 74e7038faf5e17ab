/*
 * regular_file.h - open a file named by untrusted data (a core's NT_FILE
 * paths, debuginfo links, directory entries) only if it is a regular file.
 *
 * A path a core names can be swapped for a FIFO or a device node after the
 * crash; a plain open() of a FIFO blocks forever and of a device can have
 * side effects.  This opens without blocking and without acquiring a
 * controlling terminal, then refuses anything that is not S_ISREG.
 */
#ifndef CQ_REGULAR_FILE_H
#define CQ_REGULAR_FILE_H

/* A read-only, close-on-exec fd of the regular file at path; -1 with errno set if not. */
int cq_open_regular(const char *path);

#endif
