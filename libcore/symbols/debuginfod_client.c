/*
 * debuginfod_client.c - debuginfo from debuginfod servers (see
 * debuginfod_client.h).
 */
#include "libcore/symbols/debuginfod_client.h"

#include <elfutils/debuginfod.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	struct cq_debuginfod *d = calloc(1, sizeof(*d));
	if (!d)
		return &cq_error_nomem;
	if (!(d->client = debuginfod_begin())) {
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
	debuginfod_end(d->client);
	free(d);
}

struct cq_error *cq_debuginfod_find(struct cq_debuginfod *d, const char *build_id, char **path)
{
	*path = NULL;
	/* A build-id length of 0 means: the id is given as a hex string. */
	int fd = debuginfod_find_debuginfo(d->client, (const unsigned char *)build_id, 0, path);
	if (fd < 0) {
		free(*path);
		*path = NULL;
		return cq_error_create(fd == -2 /* -ENOENT */ ? CQ_ERR_NOT_FOUND : CQ_ERR_IO,
		                       "debuginfo for %s: %s", build_id, strerror(-fd));
	}
	close(fd);
	return NULL;
}
