/*
 * schema.h - the SQLite schema migrations compiled into the binary
 * (generated from the schema/ files by schema/embed.sh), and the runner that
 * applies them.  Two sets exist: "db" (the analysis database) and "cache"
 * (unwind tables and symbols by build-id).  Migration N of a set brings a
 * database from PRAGMA user_version N-1 to N.
 *
 * A set's first migration is its baseline: it makes the whole schema at its
 * version B from an empty file.  The database's baseline is 1, and every
 * migration since is kept, so a database of any age is upgraded.  The
 * cache keeps no history (it is derived data: schema/cache_008_baseline.sql):
 * a cache file an older coreq left, between 1 and B - 1, is emptied and made
 * again by the baseline.
 */
#ifndef CQ_SCHEMA_H
#define CQ_SCHEMA_H

#include "libcore/base/error.h"

struct sqlite3;

struct cq_schema_migration {
	const char *set;
	unsigned version;
	const char *name;
	const char *sql;
};

extern const struct cq_schema_migration cq_schema_migrations[];
extern const unsigned cq_schema_migration_count;

/*
 * What migrations 1..version of a set leave in sqlite_schema, one line per
 * object ("type|name|tbl_name|sql", ordered by type and name), made at
 * build time by schema/snapshot.sh: a file whose sqlite_schema reads the
 * same text is coreq's at that version without further checking.
 */
struct cq_schema_snapshot {
	const char *set;
	unsigned version;
	const char *text;
};

extern const struct cq_schema_snapshot cq_schema_snapshots[];
extern const unsigned cq_schema_snapshot_count;

/* The newest version of a set. */
unsigned cq_schema_latest(const char *set);

/* The version of a set's baseline, its oldest migration (above). */
unsigned cq_schema_baseline(const char *set);

/*
 * Brings db up to the newest version of set, each migration in its own
 * transaction.  A database newer than this binary is an error.  A cache
 * older than the cache's baseline is emptied first, in one transaction
 * (its tables, views and triggers dropped; SQLite's own kept).
 */
struct cq_error *cq_db_migrate(struct sqlite3 *db, const char *set);

/*
 * Opens (creating it and its directories) a coreq SQLite file and brings it
 * to the newest version of set: busy timeout of busy_ms, WAL mode (retried
 * while another process holds the file, which the busy timeout does not
 * cover for that pragma), foreign keys on.  The database and the cache are
 * both opened this way.  Every open is guarded (guard.h): path is a file
 * name, never a URI; the connection is defensive, runs no trigger and has
 * a work budget; and the file's objects must be those coreq's migrations
 * make at its version before anything else is read or written (a file
 * that is not gets a CQ_ERR_FORMAT error saying which object differs).
 *
 * The "cache" set holds only what can be computed again from the modules,
 * so it trades durability for time: it is written without fsync
 * (synchronous=OFF), neither when it is made nor at the checkpoint that
 * closing it runs, which keeps the file whole on its own for anyone who
 * copies it.  A power cut can leave it damaged: coreq then warns and runs
 * without it.  The crash database keeps its fsyncs.
 */
struct cq_error *cq_db_open(const char *path, const char *set, int busy_ms, struct sqlite3 **out);

/*
 * Opens an existing coreq SQLite file for reading only: never creates one
 * ("no such database"), never migrates it nor changes its journal mode,
 * never writes it (a WAL file in a place coreq cannot write is read
 * immutable).  A file of an older schema is refused with how to upgrade
 * it, one of a newer schema with "upgrade coreq".  Guarded as above.
 */
struct cq_error *cq_db_open_read_only(const char *path, const char *set, int busy_ms,
                                      struct sqlite3 **out);

/*
 * Opens an existing coreq SQLite file to change it: never creates one ("no
 * such database"); where it can be written it is opened and migrated as by
 * cq_db_open, where it cannot it is opened read-only.
 */
struct cq_error *cq_db_open_existing(const char *path, const char *set, int busy_ms,
                                     struct sqlite3 **out);

/* PRAGMA user_version of db. */
struct cq_error *cq_db_user_version(struct sqlite3 *db, unsigned *out);

#endif
