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

#define CQ_CONFIG_PATH "/etc/coreq/coreq.conf"

struct cq_config {
	char *db, *cache, *store, *rules; /* malloc'd; NULL when not set */
	size_t bad_lines;                 /* lines that were not `key = value` of a known key */
};

/* Parses a configuration text (untrusted: any bytes); free with cq_config_free. */
void cq_config_parse(const char *text, size_t len, struct cq_config *out);
void cq_config_free(struct cq_config *c);

/*
 * The value of key ("db", "cache", "store", "rules") in the configuration
 * file, read once per process; NULL when it has none (or there is no file).
 */
const char *cq_config_get(const char *key);

#endif
