/*
 * debuginfod_client.c - debuginfo from debuginfod servers (see
 * debuginfod_client.h).
 */
#include "libcore/symbols/debuginfod_client.h"

#include <elfutils/debuginfod.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcore/base/dynlib.h"

/* libdebuginfod, loaded on first use (libcore/base/dynlib.h). */
static struct {
	debuginfod_client *(*begin)(void);
	void (*end)(debuginfod_client *);
	int (*find_debuginfo)(debuginfod_client *, const unsigned char *, int, char **);
} api;

static struct cq_error *load_api(void)
{
	const struct cq_dynlib_sym syms[] = {
	    {"debuginfod_begin", (void **)&api.begin},
	    {"debuginfod_end", (void **)&api.end},
	    {"debuginfod_find_debuginfo", (void **)&api.find_debuginfo},
	};
	return cq_dynlib_load("libdebuginfod.so.1", syms, sizeof(syms) / sizeof(syms[0]));
}

struct cq_debuginfod {
	debuginfod_client *client;
};

struct cq_error *cq_debuginfod_open(const char *urls, struct cq_debuginfod **out)
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
	*out = d;
	return NULL;
}

void cq_debuginfod_close(struct cq_debuginfod *d)
{
	if (!d)
		return;
	api.end(d->client);
	free(d);
}

struct cq_error *cq_debuginfod_find(struct cq_debuginfod *d, const char *build_id, char **path)
{
	*path = NULL;
	/* A build-id length of 0 means: the id is given as a hex string. */
	int fd = api.find_debuginfo(d->client, (const unsigned char *)build_id, 0, path);
	if (fd < 0) {
		free(*path);
		*path = NULL;
		return cq_error_create(fd == -2 /* -ENOENT */ ? CQ_ERR_NOT_FOUND : CQ_ERR_IO,
		                       "debuginfo for %s: %s", build_id, strerror(-fd));
	}
	close(fd);
	return NULL;
}
