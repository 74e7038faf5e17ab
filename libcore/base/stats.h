/*
 * stats.h - named values in order, as a component reports what it found
 * and did: counters, flags, strings, nested objects and lists.
 *
 * The async runtimes put their statistics here, each under its own keys, so
 * the JSON and text printers show every runtime's numbers without naming
 * any runtime; a new runtime adds keys, not fields.  Entries form a flat
 * list in which CQ_STAT_OBJECT and CQ_STAT_ARRAY open a level that
 * CQ_STAT_END closes; entries inside an array have no key.  Keys and
 * strings are copied.  Running out of memory drops the entry and sets
 * nomem, which the owner turns into an error when it matters.
 *
 * Layer: base.
 */
#ifndef CQ_STATS_H
#define CQ_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cq_json;

enum cq_stat_type {
	CQ_STAT_UINT,
	CQ_STAT_BOOL,
	CQ_STAT_STRING, /* a NULL string is JSON null */
	CQ_STAT_HEX,    /* a uint shown as "0x1f" */
	CQ_STAT_NULL,
	CQ_STAT_OBJECT, /* opens a nested object */
	CQ_STAT_ARRAY,  /* opens a nested list */
	CQ_STAT_END,    /* closes the innermost open object or list */
};

struct cq_stat {
	char *key; /* NULL inside a list */
	enum cq_stat_type type;
	uint64_t u;
	bool b;
	char *s;
};

struct cq_stats {
	struct cq_stat *v;
	size_t n, cap;
	bool nomem;
};

void cq_stats_uint(struct cq_stats *s, const char *key, uint64_t v);
void cq_stats_bool(struct cq_stats *s, const char *key, bool v);
void cq_stats_string(struct cq_stats *s, const char *key, const char *v);
void cq_stats_hex(struct cq_stats *s, const char *key, uint64_t v);
void cq_stats_null(struct cq_stats *s, const char *key);
void cq_stats_object(struct cq_stats *s, const char *key);
void cq_stats_array(struct cq_stats *s, const char *key);
void cq_stats_end(struct cq_stats *s);

/* The top-level entry called key (not one inside a nested level), or NULL. */
const struct cq_stat *cq_stats_find(const struct cq_stats *s, const char *key);

/* Writes the entries as members of the JSON object j has open. */
void cq_stats_json(const struct cq_stats *s, struct cq_json *j);

void cq_stats_free(struct cq_stats *s);

#endif
