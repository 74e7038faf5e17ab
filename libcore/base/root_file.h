/*
 * root_file.h - open a file named by untrusted data (a core's module paths,
 * a debuglink) inside a directory taken as its root (--sysroot).
 *
 * The name is resolved as if the directory were "/", as openat2(2)'s
 * RESOLVE_IN_ROOT does (and through it when the kernel has it, Linux 5.6):
 * "..", an absolute name and every symbolic link on the way, absolute or
 * relative, stay inside the root, so no name or link planted in a sysroot
 * reaches a file of this host outside it.  Magic links (/proc/PID/fd/N)
 * are refused.  Without openat2 (ENOSYS, or EPERM from a seccomp filter)
 * the same walk is done one component at a time with O_NOFOLLOW, each link
 * read and followed from the root or the directory it lies in, and ".."
 * going back to the directory the walk came from, never above the root.
 * As cq_open_regular, only a regular file is opened (a FIFO or a device is
 * looked at without being opened for reading).
 */
#ifndef CQ_ROOT_FILE_H
#define CQ_ROOT_FILE_H

/*
 * A read-only, close-on-exec fd of the regular file name names inside the
 * directory root; -1 with errno set if there is none: EISDIR for a
 * directory, EINVAL for anything else that is not a regular file, ELOOP
 * for more than 40 links, ENAMETOOLONG for a walk too deep.  *in_root (when
 * not NULL, and only on success): the file's path from the root, as it was
 * resolved, starting with "/" (malloc'd; on out of memory -1 with ENOMEM).
 */
int cq_open_in_root(const char *root, const char *name, char **in_root);

/*
 * The walk without openat2, on an open directory fd of the root: what
 * cq_open_in_root falls back to.  Declared for its unit test.
 */
int cq_open_in_root_walk(int root_fd, const char *name, char **in_root);

/*
 * name with "." and empty components dropped and ".." going up, never above
 * "/": the path name stands for inside a root when no link is on its way
 * (malloc'd, starting with "/"; NULL when out of memory).
 */
char *cq_root_normalize(const char *name);

#endif
