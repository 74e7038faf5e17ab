/*
 * paths.c - default file locations and directory creation (see paths.h).
 */
#include "libcore/base/paths.h"

#include <unistd.h>

#include "libcore/base/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *cq_path_default(const char *override_env, const char *config_key, const char *xdg_env,
                      const char *home_dir, const char *file)
{
	const char *env = override_env ? getenv(override_env) : NULL;
	if (env && *env)
		return strdup(env);
	const char *conf = cq_config_get(config_key);
	if (conf)
		return strdup(conf);
	char *p = NULL;
	const char *xdg = getenv(xdg_env), *home = getenv("HOME");
	int n = -1;
	if (xdg && *xdg)
		n = asprintf(&p, "%s/coreq/%s", xdg, file);
	else if (geteuid() == 0) /* root (sudo clears XDG_*): the service's and the hook's files */
		n = asprintf(&p, "%s/%s", CQ_SYSTEM_STATE_DIR, file);
	else if (home && *home)
		n = asprintf(&p, "%s/%s/coreq/%s", home, home_dir, file);
	return n < 0 ? NULL : p;
}

struct cq_error *cq_path_make_parent_dirs(const char *path)
{
	char *dir = strdup(path);
	if (!dir)
		return &cq_error_nomem;
	char *slash = strrchr(dir, '/');
	struct cq_error *err = NULL;
	if (slash && slash != dir) {
		*slash = '\0';
		for (char *p = dir + 1; *p && !err; p++) {
			if (*p != '/')
				continue;
			*p = '\0';
			if (mkdir(dir, 0755) < 0 && errno != EEXIST)
				err = cq_error_errno(errno, "cannot create %s", dir);
			*p = '/';
		}
		if (!err && mkdir(dir, 0755) < 0 && errno != EEXIST)
			err = cq_error_errno(errno, "cannot create %s", dir);
	}
	free(dir);
	return err;
}
