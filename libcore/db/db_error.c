/*
 * db_error.c - the error an SQLite connection just reported, as a coreq
 * error with its recovery hint (see db_error.h).
 */
#include "libcore/db/db_error.h"

#include <sqlite3.h>
#include <stdbool.h>

#include "libcore/db/guard.h"

bool cq_db_damaged(sqlite3 *db)
{
	int code = sqlite3_extended_errcode(db) & 0xff;
	return code == SQLITE_CORRUPT || code == SQLITE_NOTADB;
}

struct cq_error *cq_db_error(sqlite3 *db, const char *what)
{
	const char *sep = what && *what ? ": " : "";
	if (cq_db_damaged(db)) {
		const char *path = sqlite3_db_filename(db, "main");
		return cq_error_create(CQ_ERR_DB,
		                       "%s%sdamaged database (%s); recover what it holds with "
		                       "`sqlite3 %s .recover | sqlite3 NEW.db`, or move it aside",
		                       what ? what : "", sep, sqlite3_errmsg(db),
		                       path && *path ? path : "FILE");
	}
	if ((sqlite3_errcode(db) & 0xff) == SQLITE_INTERRUPT)
		return cq_error_create(CQ_ERR_LIMIT,
		                       "%s%sa query ran far longer than the database's size "
		                       "explains, and was stopped",
		                       what ? what : "", sep);
	if ((sqlite3_errcode(db) & 0xff) == SQLITE_TOOBIG)
		return cq_error_create(CQ_ERR_LIMIT,
		                       "%s%sa value in the database is over %d MiB, coreq's limit "
		                       "for one value (a damaged or forged file?)",
		                       what ? what : "", sep, CQ_DB_MAX_VALUE >> 20);
	return cq_error_create(CQ_ERR_DB, "%s%s%s", what ? what : "", sep, sqlite3_errmsg(db));
}
