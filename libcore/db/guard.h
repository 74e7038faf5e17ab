/*
 * guard.h - what coreq does to every SQLite file before it reads it.  Any
 * database or cache may come from elsewhere: handed over by a person, a
 * merge source from another host, a copy on a shared disk.  Such a file
 * can carry more than rows: views and triggers (SQL that runs when coreq
 * reads or writes), a view where coreq expects a table, columns without
 * their NOT NULL, values of any type.
 *
 * - Names: a path is always a file name.  SQLite reads "file:..." as a URI
 *   (this build enables URIs globally), so coreq opens every file through
 *   a URI it builds itself with the path percent-escaped (cq_db_uri): a
 *   file called "file:x.db?mode=ro" is that file, not x.db.
 * - The connection (cq_db_guard): defensive mode (no writable_schema, no
 *   journal_mode=OFF, ...), trusted_schema off (the file's schema may call
 *   no function that is not innocuous), triggers never fire, and a work
 *   budget: one statement may run at most CQ_DB_BUDGET_BASE virtual
 *   machine steps plus CQ_DB_BUDGET_PER_BYTE per byte of the files the
 *   connection has open, then it is interrupted (the count restarts
 *   with every statement that starts, one run inside another's loop
 *   included).  A file's bytes are its allocated blocks (a sparse tail
 *   counts for nothing), and the budget is at most CQ_DB_BUDGET_MAX steps
 *   however big the files.  Honest queries stay far below that; a
 *   recursive view or damaged statistics do not.  This also bounds the
 *   temporary storage a statement can fill, which SQLite offers no limit
 *   for.
 * - One value (a string or blob, or a whole row) is at most
 *   CQ_DB_MAX_VALUE bytes (SQLITE_LIMIT_LENGTH): reading a bigger one
 *   fails with SQLITE_TOOBIG before it is loaded, so a forged 200 MB value
 *   costs no memory.  The largest honest values are a cached unwind table
 *   (7.6 MiB for libLLVM-15.so, 5 MiB of .eh_frame, the biggest measured)
 *   and a stack blob (at most --max-frames 100000 frames, about 1 MiB):
 *   64 MiB leaves room for an .eh_frame of some 40 MiB; a bigger table is
 *   not cached (the write fails, and says so).
 * - The schema (cq_db_schema_check): before coreq reads a file of version
 *   N it compares the file's objects with those its own migrations 1..N
 *   make (run into an in-memory database): every table coreq made must be
 *   a real table with the same columns (name, declared type, NOT NULL,
 *   key), every index, view and trigger must be coreq's own, with the same
 *   SQL, and nothing of those kinds may be added.  Tables coreq did not
 *   make are allowed (coreq never reads them), so are SQLite's own
 *   (sqlite_stat1, ...).
 *
 * Even a file that passes may hold any value in any column: readers treat
 * every text column as possibly NULL and every value as possibly of another
 * type.
 *
 * Layer: db (libcore/db/).
 */
#ifndef CQ_DB_GUARD_H
#define CQ_DB_GUARD_H

#include "libcore/base/error.h"

struct sqlite3;

#define CQ_DB_BUDGET_BASE     20000000ull /* virtual machine steps per statement, at least (~1 s) */
#define CQ_DB_BUDGET_PER_BYTE 256ull      /* more steps per byte of the open files */
#define CQ_DB_BUDGET_MAX      (CQ_DB_BUDGET_BASE * 3600) /* steps at most (~1 hour) */
#define CQ_DB_MAX_VALUE       (64 << 20)                 /* bytes of one string, blob or row */

/*
 * "file:PATH" (and "?params" if params is not NULL), the path
 * percent-escaped so that SQLite reads it as exactly that file name;
 * sqlite3_malloc'd, NULL when out of memory.
 */
char *cq_db_uri(const char *path, const char *params);

/* Defensive mode, trusted_schema off, triggers off, the work budget and the value limit. */
struct cq_error *cq_db_guard(struct sqlite3 *db);

/*
 * NULL when schema ("main", or an attached database's name) of db holds
 * what migrations 1..version of set make (see above), else a
 * CQ_ERR_FORMAT error saying which object differs.
 */
struct cq_error *cq_db_schema_check(struct sqlite3 *db, const char *schema, const char *set,
                                    unsigned version);

#endif
