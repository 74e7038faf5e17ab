/*
 * paths.h - where coreq keeps its files: XDG-style default paths with an
 * environment override, and creating their directories.
 */
#ifndef CQ_PATHS_H
#define CQ_PATHS_H

#include "libcore/base/error.h"

/*
 * $override_env if set, else $xdg_env/coreq/file, else $HOME/home_dir/coreq/file.
 * malloc'd; NULL when none of them is known.
 */
char *cq_path_default(const char *override_env, const char *xdg_env, const char *home_dir,
                      const char *file);

/* mkdir -p of the directory part of path. */
struct cq_error *cq_path_make_parent_dirs(const char *path);

#endif
