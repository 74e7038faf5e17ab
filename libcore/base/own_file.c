/*
 * own_file.c - whether a file and its directory are the caller's own
 * (see own_file.h).
 */
#include "libcore/base/own_file.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Why st (of what, named in messages) is not the caller's own, or NULL. */
static struct cq_error *own(const struct stat *st, const char *what, const char *name)
{
	uid_t me = geteuid();
	if (st->st_uid != me && st->st_uid != 0)
		return cq_error_create(CQ_ERR_UNSUPPORTED,
		                       "%s%s is owned by uid %u, not by uid %u (you) or root", what,
		                       name, (unsigned)st->st_uid, (unsigned)me);
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return cq_error_create(CQ_ERR_UNSUPPORTED, "%s%s is writable by %s", what, name,
		                       st->st_mode & S_IWOTH ? "others" : "its group");
	return NULL;
}

/* The -wal or -shm beside the database real: the caller's own when it exists. */
static struct cq_error *side_file(const char *real, const char *suffix)
{
	char side[PATH_MAX + 8];
	snprintf(side, sizeof(side), "%s%s", real, suffix);
	struct stat st;
	if (lstat(side, &st) != 0)
		return errno == ENOENT ? NULL : cq_error_errno(errno, "cannot look at %s", side);
	if (!S_ISREG(st.st_mode))
		return cq_error_create(CQ_ERR_UNSUPPORTED, "its %s is not a regular file",
		                       suffix + 1);
	char name[16];
	snprintf(name, sizeof(name), " %s", suffix + 1);
	return own(&st, "its", name);
}

struct cq_error *cq_own_file_check(const char *path, char **resolved)
{
	char real[PATH_MAX], file[PATH_MAX + 1];
	struct stat st;
	struct cq_error *err = NULL;
	bool exists = realpath(path, real) != NULL;
	if (resolved)
		*resolved = NULL;
	if (!exists) {
		if (errno != ENOENT)
			return cq_error_errno(errno, "cannot resolve");
		if (lstat(path, &st) == 0)
			return cq_error_create(CQ_ERR_UNSUPPORTED, "a symbolic link to nothing");
		/* Not made yet: it will be the caller's, in its directory. */
		char *copy = strdup(path), *base = strdup(path);
		bool found = copy && base && realpath(dirname(copy), real) != NULL;
		int e = errno;
		if (found)
			snprintf(file, sizeof(file), "%s/%s", strcmp(real, "/") ? real : "",
			         basename(base));
		free(copy);
		free(base);
		if (!found)
			return e == ENOMEM ? &cq_error_nomem
			                   : cq_error_errno(e, "cannot resolve its directory");
	} else {
		snprintf(file, sizeof(file), "%s", real);
		if (stat(real, &st) != 0)
			return cq_error_errno(errno, "cannot look at it");
		if (!S_ISREG(st.st_mode))
			return cq_error_create(CQ_ERR_UNSUPPORTED, "not a regular file");
		if ((err = own(&st, "it", "")) || (err = side_file(real, "-wal")) ||
		    (err = side_file(real, "-shm")))
			return err;
		char *slash = strrchr(real, '/');
		if (slash == real)
			slash[1] = '\0'; /* a file in / */
		else if (slash)
			*slash = '\0';
	}
	if (stat(real, &st) != 0)
		return cq_error_errno(errno, "cannot look at its directory %s", real);
	if ((err = own(&st, "its directory ", real)))
		return err;
	if (resolved && !(*resolved = strdup(file)))
		return &cq_error_nomem;
	return NULL;
}
