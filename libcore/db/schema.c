/*
 * schema.c - facts of the migrations compiled into the binary (see
 * schema.h): the newest version of a set.  Both the runner (migrate.c) and
 * the schema check (guard.c) ask it, so it lives apart from either.
 */
#include "libcore/db/schema.h"

#include <string.h>

unsigned cq_schema_latest(const char *set)
{
	unsigned latest = 0;
	for (unsigned i = 0; i < cq_schema_migration_count; i++)
		if (strcmp(cq_schema_migrations[i].set, set) == 0 &&
		    cq_schema_migrations[i].version > latest)
			latest = cq_schema_migrations[i].version;
	return latest;
}

unsigned cq_schema_baseline(const char *set)
{
	unsigned oldest = 0;
	for (unsigned i = 0; i < cq_schema_migration_count; i++)
		if (strcmp(cq_schema_migrations[i].set, set) == 0 &&
		    (!oldest || cq_schema_migrations[i].version < oldest))
			oldest = cq_schema_migrations[i].version;
	return oldest;
}
