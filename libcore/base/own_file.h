/*
 * own_file.h - whether a file is the caller's own: what coreq asks of a
 * file whose contents it takes on trust as its own earlier work (the
 * cache, libcore/db/cache.h).
 *
 * A cache entry is believed as it stands: a symbol row's names are printed,
 * an unwind table steers the walk.  Its key (a file's path, device, inode,
 * size and mtime, and its build-id) is what anyone can stat(), and its
 * checksum anyone can recompute, so a cache written by someone else can
 * name any genuine file's functions as it likes.  Such a file is therefore
 * used only when no one but the caller (or root) could have written it:
 *   - the file, and its -wal and -shm beside it when they exist, are
 *     regular files owned by the caller's effective uid or by root, and
 *     writable by neither group nor others;
 *   - so is the directory it is in (symbolic links resolved first), so no
 *     one else can replace the file or plant a -wal (whose pages SQLite
 *     reads as the database's) beside it: a cache directly in /tmp is
 *     refused.
 * Root is trusted because it owns the host anyway; root itself is held to
 * the rule like anyone (a user's file is not root's own).
 *
 * Layer: base (libcore/base/).
 */
#ifndef CQ_OWN_FILE_H
#define CQ_OWN_FILE_H

#include "libcore/base/error.h"

/*
 * NULL when path (which need not exist yet: then only its directory is
 * checked, and a file made there is the caller's) is the caller's own as
 * above; else an error saying whose it is or who else can write it.
 * *resolved (when not NULL, and only on success; malloc'd): the file's path
 * with every link resolved, the one to open, so that no link on the way
 * can be turned elsewhere after the check (the directory it names is the
 * caller's or root's: no one else can swap the file in it).
 */
struct cq_error *cq_own_file_check(const char *path, char **resolved);

#endif
