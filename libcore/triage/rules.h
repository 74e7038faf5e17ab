/*
 * rules.h - the rules that turn a crashed stack into a crash signature,
 * as data a team can read and edit (the file format is described in
 * dist/coreq.rules, which is also the built-in default).
 *
 * A rules file is lines of `KIND PATTERN` (machinery, startup, skip,
 * prefix, sentinel, in-app, not-in-app, hidden), `version TEXT`, comments (#) and
 * blank lines.  Patterns are shell globs.  Every bucket records the version
 * of the rules that made it; a file without a version line is versioned by
 * a hash of its text, so two different files never share a version.
 *
 * The file is input like any other: parsing is bounded (size, line length,
 * rule count) and a bad line is an error naming the file and line.
 */
#ifndef CQ_RULES_H
#define CQ_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "libcore/base/error.h"

enum cq_rule_kind {
	CQ_RULE_MACHINERY,
	CQ_RULE_STARTUP,
	CQ_RULE_SKIP,
	CQ_RULE_PREFIX,
	CQ_RULE_SENTINEL,
	CQ_RULE_IN_APP,
	CQ_RULE_NOT_IN_APP,
	CQ_RULE_HIDDEN,
	CQ_RULE_KINDS,
};

struct cq_rule {
	enum cq_rule_kind kind;
	char *pattern;
};

struct cq_bucket_rules {
	char *version;
	char *origin; /* the file's path, or "built-in" */
	char *text;   /* the whole file, as read */
	struct cq_rule *rules;
	size_t nrules;
};

/* The default rules' text (dist/coreq.rules, compiled in). */
extern const char cq_bucket_default_rules[];

/* Parses text (len bytes) read from origin. */
struct cq_error *cq_bucket_rules_parse(const char *text, size_t len, const char *origin,
                                       struct cq_bucket_rules **out);

/*
 * The rules in force: the file at path if given, else $COREQ_RULES, else
 * /etc/coreq/rules if it exists, else the built-in defaults.
 */
struct cq_error *cq_bucket_rules_load(const char *path, struct cq_bucket_rules **out);
void cq_bucket_rules_free(struct cq_bucket_rules *r);

/* Whether name (or, for in-app rules, a module path) matches a rule of kind. */
bool cq_bucket_rules_match(const struct cq_bucket_rules *r, enum cq_rule_kind kind,
                           const char *name);

/* Whether a frame of the module at path is the program's own. */
bool cq_bucket_rules_in_app(const struct cq_bucket_rules *r, const char *path);

#endif
