/*
 * debuginfod_client.c - debuginfo from debuginfod servers (see
 * debuginfod_client.h).
 *
 * elfutils' limits are not enough on their own: $DEBUGINFOD_MAXSIZE is only
 * compared with a length the server announces, and $DEBUGINFOD_MAXTIME
 * holds for one attempt of several.  The progress callback, which the
 * client calls at least once a second while it waits, therefore cuts a
 * lookup when the bytes received pass the cap or the clock passes `until`;
 * which of the two it was is remembered, since the client then reports
 * the lookup as merely failed.
 */
#include "libcore/symbols/debuginfod_client.h"

#include <ctype.h>
#include <elfutils/debuginfod.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcore/base/build_id.h"
#include "libcore/base/clock.h"
#include "libcore/base/dynlib.h"
#include "libcore/symbols/debuginfo.h"

/* libdebuginfod, loaded on first use (libcore/base/dynlib.h). */
static struct {
	debuginfod_client *(*begin)(void);
	void (*end)(debuginfod_client *);
	int (*find_debuginfo)(debuginfod_client *, const unsigned char *, int, char **);
	void (*set_progressfn)(debuginfod_client *, debuginfod_progressfn_t);
	void (*set_user_data)(debuginfod_client *, void *);
	void *(*get_user_data)(debuginfod_client *);
	void (*set_verbose_fd)(debuginfod_client *, int);
} api;

static struct cq_error *load_api(void)
{
	const struct cq_dynlib_sym syms[] = {
	    {"debuginfod_begin", (void **)&api.begin},
	    {"debuginfod_end", (void **)&api.end},
	    {"debuginfod_find_debuginfo", (void **)&api.find_debuginfo},
	    {"debuginfod_set_progressfn", (void **)&api.set_progressfn},
	    {"debuginfod_set_user_data", (void **)&api.set_user_data},
	    {"debuginfod_get_user_data", (void **)&api.get_user_data},
	    {"debuginfod_set_verbose_fd", (void **)&api.set_verbose_fd},
	};
	return cq_dynlib_load("libdebuginfod.so.1", syms, sizeof(syms) / sizeof(syms[0]));
}

/* Why the progress callback cut the lookup under way. */
enum cut { CUT_NONE, CUT_SIZE, CUT_TIME };

struct cq_debuginfod {
	debuginfod_client *client;
	uint64_t max_size; /* 0: no cap */
	int quiet_fd;      /* /dev/null as the client's verbose output, or -1 */
	double until;      /* of the lookup under way */
	enum cut cut;
};

/*
 * The client's progress callback: a is the bytes received once a server
 * answers (before that, a count of its waits of at most a second, far below
 * any cap within a time limit), b the length announced (0 or -1 when
 * unknown).  Nonzero stops the lookup.
 */
static int progress(debuginfod_client *client, long a, long b)
{
	struct cq_debuginfod *d = api.get_user_data(client);
	if (cq_clock_seconds() >= d->until) {
		d->cut = CUT_TIME;
		return 1;
	}
	if (d->max_size &&
	    ((a > 0 && (uint64_t)a > d->max_size) || (b > 0 && (uint64_t)b > d->max_size))) {
		d->cut = CUT_SIZE;
		return 1;
	}
	return 0;
}

struct cq_error *cq_debuginfod_open(const char *urls, uint64_t max_size, struct cq_debuginfod **out)
{
	*out = NULL;
	/* The client reads the server list from the environment on every query. */
	if (urls && setenv("DEBUGINFOD_URLS", urls, 1) != 0)
		return &cq_error_nomem;
	if (!getenv("DEBUGINFOD_URLS") || !*getenv("DEBUGINFOD_URLS"))
		return cq_error_create(CQ_ERR_USAGE,
		                       "no debuginfod server: give --debuginfod URL or set "
		                       "DEBUGINFOD_URLS");
	struct cq_error *err = load_api();
	if (err)
		return err;
	struct cq_debuginfod *d = calloc(1, sizeof(*d));
	if (!d)
		return &cq_error_nomem;
	if (!(d->client = api.begin())) {
		free(d);
		return cq_error_create(CQ_ERR_IO, "cannot start the debuginfod client");
	}
	d->max_size = max_size;
	d->quiet_fd = -1;
	/*
	 * elfutils 0.188 reports $DEBUGINFOD_MAXSIZE on its verbose fd even when
	 * there is none (-1), and glibc's dprintf leaks a buffer for that fd:
	 * unless the user asked for its messages, they go to /dev/null.
	 */
	if (!getenv("DEBUGINFOD_VERBOSE") &&
	    (d->quiet_fd = open("/dev/null", O_WRONLY | O_CLOEXEC)) >= 0)
		api.set_verbose_fd(d->client, d->quiet_fd);
	api.set_user_data(d->client, d);
	api.set_progressfn(d->client, progress);
	*out = d;
	return NULL;
}

void cq_debuginfod_close(struct cq_debuginfod *d)
{
	if (!d)
		return;
	api.end(d->client);
	if (d->quiet_fd >= 0)
		close(d->quiet_fd);
	free(d);
}

/* Sets elfutils' own limits for the next lookup, which it reads from the environment. */
static struct cq_error *set_limits(const struct cq_debuginfod *d, double seconds)
{
	char v[32];
	uint64_t size = d->max_size > (uint64_t)LONG_MAX ? (uint64_t)LONG_MAX : d->max_size;
	snprintf(v, sizeof(v), "%llu", (unsigned long long)size);
	if (setenv("DEBUGINFOD_MAXSIZE", v, 1) != 0)
		return &cq_error_nomem;
	/* Whole seconds, rounded up: elfutils reads 0 as no limit. */
	snprintf(v, sizeof(v), "%ld", seconds >= INT_MAX ? (long)INT_MAX : (long)seconds + 1);
	if (setenv("DEBUGINFOD_MAXTIME", v, 1) != 0)
		return &cq_error_nomem;
	return NULL;
}

/*
 * elfutils' cache directory, by its own rule: $DEBUGINFOD_CACHE_PATH, else
 * ~/.debuginfod_client_cache when it exists, else $XDG_CACHE_HOME (or
 * ~/.cache) + /debuginfod_client.  Malloc'd; NULL when unknown.
 */
static char *client_cache_dir(void)
{
	const char *env = getenv("DEBUGINFOD_CACHE_PATH");
	if (env && *env)
		return strdup(env);
	const char *home = getenv("HOME") ? getenv("HOME") : "/";
	char *p = NULL;
	struct stat st;
	if (asprintf(&p, "%s/.debuginfod_client_cache", home) < 0)
		return NULL;
	if (stat(p, &st) == 0)
		return p;
	free(p);
	const char *xdg = getenv("XDG_CACHE_HOME");
	int n = xdg && *xdg ? asprintf(&p, "%s/debuginfod_client", xdg)
	                    : asprintf(&p, "%s/.cache/debuginfod_client", home);
	return n < 0 ? NULL : p;
}

/*
 * A lookup cut short is recorded by elfutils as a miss (an empty file in
 * its cache, believed for ten minutes), as if no server had the file.  It
 * was too big or too slow instead: the empty file goes, so that the next
 * run asks again and says so again.  hex is valid, so the path stays in
 * the cache.
 */
static void forget_miss(const char *hex)
{
	char *dir = client_cache_dir(), *p = NULL;
	struct stat st;
	if (dir && asprintf(&p, "%s/%s/debuginfo", dir, hex) >= 0 && lstat(p, &st) == 0 &&
	    S_ISREG(st.st_mode) && st.st_size == 0)
		unlink(p);
	free(p);
	free(dir);
}

static struct cq_error *lookup_error(const struct cq_debuginfod *d, const char *hex, int rc,
                                     enum cq_debuginfod_outcome *outcome)
{
	if (d->cut == CUT_SIZE || rc == -EFBIG) {
		*outcome = CQ_DEBUGINFOD_TOO_BIG;
		return cq_error_create(CQ_ERR_LIMIT, "debuginfo for %s: larger than %llu bytes",
		                       hex, (unsigned long long)d->max_size);
	}
	if (d->cut == CUT_TIME || rc == -ETIME || rc == -ETIMEDOUT) {
		*outcome = CQ_DEBUGINFOD_TIMED_OUT;
		return cq_error_create(CQ_ERR_LIMIT, "debuginfo for %s: no complete answer in time",
		                       hex);
	}
	if (rc == -ENOENT) {
		*outcome = CQ_DEBUGINFOD_NOT_FOUND;
		return cq_error_create(CQ_ERR_NOT_FOUND, "debuginfo for %s: no server has it", hex);
	}
	*outcome = CQ_DEBUGINFOD_FAILED;
	return cq_error_create(CQ_ERR_IO, "debuginfo for %s: %s", hex, strerror(-rc));
}

struct cq_error *cq_debuginfod_find(struct cq_debuginfod *d, const char *build_id, double until,
                                    char **path, enum cq_debuginfod_outcome *outcome)
{
	*path = NULL;
	*outcome = CQ_DEBUGINFOD_FAILED;
	struct cq_error *err = cq_build_id_check(build_id);
	if (err)
		return err;
	/* elfutils takes the id as given: lower-case it, as servers index it. */
	char hex[CQ_BUILD_ID_HEX_MAX + 1];
	size_t n = strlen(build_id);
	for (size_t i = 0; i <= n; i++)
		hex[i] = (char)tolower((unsigned char)build_id[i]);
	double left = until - cq_clock_seconds();
	if (left <= 0) {
		*outcome = CQ_DEBUGINFOD_TIMED_OUT;
		return cq_error_create(CQ_ERR_LIMIT, "debuginfo for %s: no time left", hex);
	}
	if ((err = set_limits(d, left)))
		return err;
	d->until = until;
	d->cut = CUT_NONE;
	/* A build-id length of 0 means: the id is given as a hex string. */
	int fd = api.find_debuginfo(d->client, (const unsigned char *)hex, 0, path);
	if (fd >= 0) {
		close(fd);
		if (*path && cq_debuginfo_has_build_id(*path, hex)) {
			*outcome = CQ_DEBUGINFOD_FETCHED;
			return NULL;
		}
		if (*path)
			unlink(*path);
		free(*path);
		*path = NULL;
		*outcome = CQ_DEBUGINFOD_MISMATCH;
		return cq_error_create(CQ_ERR_FORMAT,
		                       "debuginfo for %s: the server sent a file with another "
		                       "build-id",
		                       hex);
	}
	free(*path);
	*path = NULL;
	err = lookup_error(d, hex, fd, outcome);
	if (*outcome == CQ_DEBUGINFOD_TOO_BIG || *outcome == CQ_DEBUGINFOD_TIMED_OUT)
		forget_miss(hex);
	return err;
}
