/*
 * db_error.h - the error an SQLite connection just reported, as a coreq
 * error: every db/ and store/ caller turns a failed statement into one
 * through cq_db_error, so a damaged file, a stopped statement and an
 * oversized value read the same everywhere.
 */
#ifndef CQ_DB_ERROR_H
#define CQ_DB_ERROR_H

#include <stdbool.h>

#include "libcore/base/error.h"

struct sqlite3;

/*
 * The error db just reported, as "what: reason" (the caller names the file).
 * For a damaged file (SQLITE_CORRUPT, SQLITE_NOTADB) the reason says so and
 * how to recover: `sqlite3 PATH .recover`, or moving the file aside.  A
 * statement stopped by the work budget (guard.h) says so (CQ_ERR_LIMIT).
 */
struct cq_error *cq_db_error(struct sqlite3 *db, const char *what);

/* True when db's last error says its file is damaged (SQLITE_CORRUPT, SQLITE_NOTADB). */
bool cq_db_damaged(struct sqlite3 *db);

#endif
