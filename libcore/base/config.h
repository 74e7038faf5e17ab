/*
 * config.h - the system configuration file, read by every command so that
 * a person and the installed service find the same files:
 * /etc/coreq/coreq.conf ($COREQ_CONFIG names another), lines of
 *     key = value        # a comment
 * with the keys db, cache, store and rules.  Precedence everywhere: the
 * command line, then the environment ($COREQ_DB, $COREQ_CACHE,
 * $COREQ_RULES), then this file, then the built-in default ($XDG_* when
 * set; else for root /var/lib/coreq, as the service and the hook use; else
 * ~/.local/state/coreq and ~/.cache/coreq).
 */
#ifndef CQ_CONFIG_H
#define CQ_CONFIG_H

#include <stddef.h>

#include "libcore/base/error.h"

#define CQ_CONFIG_PATH "/etc/coreq/coreq.conf"
/* A configuration file larger than this is refused, never cut. */
#define CQ_CONFIG_MAX (64 * 1024)

struct cq_config {
	char *db, *cache, *store, *rules; /* malloc'd; NULL when not set */
	size_t bad_lines;                 /* lines that were not `key = value` of a known key */
};

/* Parses a configuration text (untrusted: any bytes); free with cq_config_free. */
void cq_config_parse(const char *text, size_t len, struct cq_config *out);
void cq_config_free(struct cq_config *c);

/*
 * The value of key ("db", "cache", "store", "rules") in the configuration
 * file, read once per process; NULL when it has none (or there is no file,
 * or the file was refused).
 */
const char *cq_config_get(const char *key);

/*
 * Reads the configuration file if it was not yet; why it was refused, or
 * NULL.  A file that is absent (or, for the system's file, kept from this
 * user) is no error: the defaults apply; /dev/null is an empty file.  One that is not a regular
 * file (a FIFO would block every command), is over CQ_CONFIG_MAX bytes or cannot be read is
 * refused, and none of its values is used.  The error is the caller's, and handed out once.
 */
struct cq_error *cq_config_check(void);

/* The file read: $COREQ_CONFIG when set, else CQ_CONFIG_PATH. */
const char *cq_config_path(void);

#endif
