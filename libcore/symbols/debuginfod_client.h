/*
 * debuginfod_client.h - debuginfo by build-id from debuginfod servers,
 * through elfutils' own client (libdebuginfod): its cache
 * ($DEBUGINFOD_CACHE_PATH), its per-connection timeout ($DEBUGINFOD_TIMEOUT)
 * and server list ($DEBUGINFOD_URLS, unless urls are given here).  Network
 * access: only commands a person runs use it (resymbolize), never the hook.
 *
 * A server is not trusted to be quick or small: every lookup has a size cap
 * and a time by which it gives up, retries included (elfutils' own limits,
 * $DEBUGINFOD_MAXSIZE and $DEBUGINFOD_MAXTIME, are set from them, and a
 * progress callback cuts a transfer that passes either, also one whose
 * length the server does not announce).  Only valid build-ids
 * (libcore/base/build_id.h) are ever asked for: elfutils makes the id a
 * directory of its cache.  A file is returned only when it carries the
 * build-id asked for; one that does not is removed from the cache, where
 * gdb and eu-stack would otherwise trust it too.
 */
#ifndef CQ_DEBUGINFOD_CLIENT_H
#define CQ_DEBUGINFOD_CLIENT_H

#include <stdint.h>

#include "libcore/base/error.h"

struct cq_debuginfod;

/* What became of one lookup. */
enum cq_debuginfod_outcome {
	CQ_DEBUGINFOD_FETCHED,   /* the file is in the client's cache */
	CQ_DEBUGINFOD_NOT_FOUND, /* no server has it */
	CQ_DEBUGINFOD_TOO_BIG,   /* announced or sent more than the size cap */
	CQ_DEBUGINFOD_TIMED_OUT, /* no complete answer by the lookup's time limit */
	CQ_DEBUGINFOD_MISMATCH,  /* the file sent carries another build-id (removed) */
	CQ_DEBUGINFOD_FAILED,    /* anything else (refused connection, bad build-id, ...) */
};

/*
 * urls: space-separated server URLs, or NULL for $DEBUGINFOD_URLS.
 * max_size: bytes one file may have (0: no cap; about a read buffer's worth
 * more may reach the cache's temporary file before the transfer is cut, and
 * elfutils then removes it).
 */
struct cq_error *cq_debuginfod_open(const char *urls, uint64_t max_size,
                                    struct cq_debuginfod **out);
void cq_debuginfod_close(struct cq_debuginfod *d);

/*
 * The path (malloc'd, in the client's cache) of the debuginfo file for
 * build_id, which must be a valid build-id, asked for in lower case.  Gives
 * up at `until` (cq_clock_seconds() time; INFINITY for never).  NULL and *outcome FETCHED on
 * success; otherwise an error saying why, *outcome classifying it.
 */
struct cq_error *cq_debuginfod_find(struct cq_debuginfod *d, const char *build_id, double until,
                                    char **path, enum cq_debuginfod_outcome *outcome);

#endif
