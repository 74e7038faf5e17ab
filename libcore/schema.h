/*
 * schema.h - the SQLite schema migrations compiled into the binary
 * (generated from schema/NNN_name.sql by schema/embed.sh).  Migration N
 * brings a database from PRAGMA user_version N-1 to N.
 */
#ifndef CQ_SCHEMA_H
#define CQ_SCHEMA_H

struct cq_schema_migration {
	unsigned version;
	const char *name;
	const char *sql;
};

extern const struct cq_schema_migration cq_schema_migrations[];
extern const unsigned cq_schema_migration_count;

#endif
