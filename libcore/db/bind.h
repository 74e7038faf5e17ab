/*
 * bind.h - binding values that may be unknown to SQLite statements, by one
 * rule: an unknown value is SQL NULL.  A C string is unknown when the
 * pointer is NULL; fixed-size text fields that use "" for unknown (the
 * capture metadata) say so with cq_db_text_or_null().
 */
#ifndef CQ_DB_BIND_H
#define CQ_DB_BIND_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Binds s (copied), or NULL when s is NULL. */
static inline void cq_db_bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

/* Binds v when known, else NULL. */
static inline void cq_db_bind_int_if(sqlite3_stmt *st, int i, bool known, int64_t v)
{
	if (known)
		sqlite3_bind_int64(st, i, v);
	else
		sqlite3_bind_null(st, i);
}

/* s, or NULL when it is empty: for fields where "" means unknown. */
static inline const char *cq_db_text_or_null(const char *s)
{
	return s && s[0] ? s : NULL;
}

#endif
