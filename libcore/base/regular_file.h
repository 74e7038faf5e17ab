/*
 * regular_file.h - open a file named by untrusted data (a core's NT_FILE
 * paths, debuginfo links, directory entries) only if it is a regular file.
 *
 * A path a core names can be swapped for a FIFO or a device node after the
 * crash; a plain open() of a FIFO blocks forever and of a device can have
 * side effects.  This opens without blocking and without acquiring a
 * controlling terminal, then refuses anything that is not S_ISREG.  The
 * path is looked at with stat() first, so a device or FIFO is not even
 * opened (opening some devices has an effect of its own).
 */
#ifndef CQ_REGULAR_FILE_H
#define CQ_REGULAR_FILE_H

/*
 * A read-only, close-on-exec fd of the regular file at path (symbolic links
 * followed); -1 with errno set if not: EISDIR for a directory, EINVAL for
 * anything else that is not a regular file.
 */
int cq_open_regular(const char *path);

#endif
