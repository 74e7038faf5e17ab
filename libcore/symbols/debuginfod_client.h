/*
 * debuginfod_client.h - debuginfo by build-id from debuginfod servers,
 * through elfutils' own client (libdebuginfod): its cache
 * ($DEBUGINFOD_CACHE_PATH), timeouts ($DEBUGINFOD_TIMEOUT) and server list
 * ($DEBUGINFOD_URLS, unless urls are given here).  Network access: only
 * commands a person runs use it (resymbolize), never the hook.
 */
#ifndef CQ_DEBUGINFOD_CLIENT_H
#define CQ_DEBUGINFOD_CLIENT_H

#include "libcore/base/error.h"

struct cq_debuginfod;

/* urls: space-separated server URLs, or NULL for $DEBUGINFOD_URLS. */
struct cq_error *cq_debuginfod_open(const char *urls, struct cq_debuginfod **out);
void cq_debuginfod_close(struct cq_debuginfod *d);

/*
 * The path (malloc'd) of the debuginfo file for build_id (lower-case hex),
 * in the client's cache; CQ_ERR_NOT_FOUND when no server has it.
 */
struct cq_error *cq_debuginfod_find(struct cq_debuginfod *d, const char *build_id, char **path);

#endif
