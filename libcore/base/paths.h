/*
 * paths.h - where coreq keeps its files: XDG-style default paths with an
 * environment override, and creating their directories.
 */
#ifndef CQ_PATHS_H
#define CQ_PATHS_H

#include "libcore/base/error.h"

/* Where the service, the hook and root keep coreq's files. */
#define CQ_SYSTEM_STATE_DIR "/var/lib/coreq"

/*
 * $override_env if set (override_env may be NULL: none), else config_key in the configuration file
 * (config.h), else $xdg_env/coreq/file when it is set, else for root
 * CQ_SYSTEM_STATE_DIR/file (what the service and the hook use; sudo clears
 * XDG_*), else $HOME/home_dir/coreq/file.  malloc'd; NULL when
 * none of them is known.
 */
char *cq_path_default(const char *override_env, const char *config_key, const char *xdg_env,
                      const char *home_dir, const char *file);

/* mkdir -p of the directory part of path. */
struct cq_error *cq_path_make_parent_dirs(const char *path);

#endif
