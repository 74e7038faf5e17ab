/*
 * guard.c - file names as URIs, the guarded connection and the schema
 * check (see guard.h).
 *
 * Invariants (asserted): a connection is guarded once, before anything is
 * read through it; the schema check compares a file only against a version
 * of coreq's own migrations (a newer file is refused before it is checked).
 */
#include "libcore/db/guard.h"

#include <assert.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "libcore/db/db_error.h"
#include "libcore/db/schema.h"

#define PROGRESS_STEPS 10000 /* virtual machine steps between budget checks */
#define MAX_OBJECTS    4096  /* schema objects a file may have at all */

char *cq_db_uri(const char *path, const char *params)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(path);
	/* "file:" + "//" + 3 per byte + "?" + params + NUL */
	size_t cap = 5 + 2 + 3 * n + 1 + (params ? strlen(params) : 0) + 1;
	char *uri = sqlite3_malloc64(cap), *o = uri;
	if (!uri)
		return NULL;
	o += sprintf(o, "file:%s", path[0] == '/' ? "//" : "");
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("/._-~", *p)) {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = '\0';
	if (params)
		sprintf(o, "?%s", params);
	return uri;
}

/* ---- the work budget ------------------------------------------------------- */

struct budget {
	sqlite3 *db;
	uint64_t ticks; /* PROGRESS_STEPS of the statement running now */
	uint64_t limit; /* ticks allowed, from the files' sizes when last looked at */
};

/*
 * The bytes of path that are on disk: its size, but no more than its
 * allocated blocks, so a sparse tail (a 1 TB hole costs nothing to make)
 * buys no budget.
 */
static uint64_t stored_bytes(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0 || st.st_size <= 0 || st.st_blocks <= 0)
		return 0;
	uint64_t blocks = (uint64_t)st.st_blocks * 512;
	return blocks < (uint64_t)st.st_size ? blocks : (uint64_t)st.st_size;
}

/* Bytes of every file db has open (each database and its WAL). */
static uint64_t open_bytes(sqlite3 *db)
{
	uint64_t total = 0;
	const char *name;
	for (int i = 0; (name = sqlite3_db_name(db, i)); i++) {
		const char *file = sqlite3_db_filename(db, name);
		if (!file || !*file)
			continue;
		total += stored_bytes(file);
		const char *wal = sqlite3_filename_wal(file);
		if (wal)
			total += stored_bytes(wal);
	}
	return total;
}

static uint64_t limit_ticks(sqlite3 *db)
{
	uint64_t bytes = open_bytes(db);
	uint64_t steps = bytes > (CQ_DB_BUDGET_MAX - CQ_DB_BUDGET_BASE) / CQ_DB_BUDGET_PER_BYTE
	                     ? CQ_DB_BUDGET_MAX
	                     : CQ_DB_BUDGET_BASE + CQ_DB_BUDGET_PER_BYTE * bytes;
	return steps / PROGRESS_STEPS;
}

/* Non-zero interrupts the statement: it has spent its budget. */
static int on_progress(void *ctx)
{
	struct budget *b = ctx;
	if (++b->ticks <= b->limit)
		return 0;
	/* The files may have grown since the limit was set: look again. */
	b->limit = limit_ticks(b->db);
	return b->ticks > b->limit;
}

/* A statement starts (not a trigger's, whose text starts with "--"): a fresh budget. */
static int on_trace(unsigned type, void *ctx, void *stmt, void *sql)
{
	(void)stmt;
	struct budget *b = ctx;
	if (type == SQLITE_TRACE_STMT && !(sql && strncmp(sql, "--", 2) == 0))
		b->ticks = 0;
	return 0;
}

/* The function that holds the budget, so that closing the connection frees it. */
static void budget_holder(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	(void)argc;
	(void)argv;
	sqlite3_result_null(ctx);
}

struct cq_error *cq_db_guard(sqlite3 *db)
{
	assert(db);
	int on = 0;
	if (sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, &on) != SQLITE_OK || !on ||
	    sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, &on) != SQLITE_OK || on ||
	    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, &on) != SQLITE_OK || on)
		return cq_error_create(CQ_ERR_DB, "cannot make the connection defensive");
	struct budget *b = calloc(1, sizeof(*b));
	if (!b)
		return &cq_error_nomem;
	b->db = db;
	b->limit = CQ_DB_BUDGET_BASE / PROGRESS_STEPS;
	if (sqlite3_create_function_v2(db, "coreq_budget", 0, SQLITE_UTF8 | SQLITE_DIRECTONLY, b,
	                               budget_holder, NULL, NULL, free) != SQLITE_OK)
		return cq_error_create(CQ_ERR_DB, "%s", sqlite3_errmsg(db)); /* b freed by SQLite */
	sqlite3_limit(db, SQLITE_LIMIT_LENGTH, CQ_DB_MAX_VALUE);
	sqlite3_progress_handler(db, PROGRESS_STEPS, on_progress, b);
	sqlite3_trace_v2(db, SQLITE_TRACE_STMT, on_trace, b);
	return NULL;
}

/* ---- the schema check ------------------------------------------------------ */

/* One schema object: its type, name and what must match (columns or SQL). */
struct object {
	char *type, *name, *shape;
};

struct objects {
	struct object *v;
	size_t n;
};

static void objects_free(struct objects *o)
{
	for (size_t i = 0; i < o->n; i++) {
		free(o->v[i].type);
		free(o->v[i].name);
		free(o->v[i].shape);
	}
	free(o->v);
	memset(o, 0, sizeof(*o));
}

static const char *text_or_empty(sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	return t ? (const char *)t : "";
}

/* A table's shape: "virtual" or its columns, each "name type notnull pk hidden;". */
static struct cq_error *table_shape(sqlite3 *db, const char *schema, const char *table,
                                    bool is_virtual, char **out)
{
	*out = NULL;
	if (is_virtual)
		return (*out = strdup("virtual")) ? NULL : &cq_error_nomem;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db,
	                       "SELECT name, type, \"notnull\", pk, hidden "
	                       "FROM pragma_table_xinfo(?1, ?2) ORDER BY cid",
	                       -1, &st, NULL) != SQLITE_OK)
		return cq_db_error(db, "schema");
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, schema, -1, SQLITE_STATIC);
	sqlite3_str *s = sqlite3_str_new(db);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		sqlite3_str_appendf(s, "%s %s %lld %lld %lld;", text_or_empty(st, 0),
		                    text_or_empty(st, 1), sqlite3_column_int64(st, 2),
		                    sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4));
	struct cq_error *err = rc == SQLITE_DONE ? NULL : cq_db_error(db, "schema");
	sqlite3_finalize(st);
	char *shape = sqlite3_str_finish(s);
	if (!err && !(*out = strdup(shape ? shape : "")))
		err = &cq_error_nomem;
	sqlite3_free(shape);
	return err;
}

/* Every object of schema in db, by name; at most MAX_OBJECTS. */
static struct cq_error *objects_of(sqlite3 *db, const char *schema, struct objects *out)
{
	memset(out, 0, sizeof(*out));
	char *q =
	    sqlite3_mprintf("SELECT type, name, tbl_name, sql, rootpage FROM \"%w\".sqlite_master "
	                    "ORDER BY name LIMIT %d",
	                    schema, MAX_OBJECTS + 1);
	sqlite3_stmt *st = NULL;
	if (!q)
		return &cq_error_nomem;
	int prc = sqlite3_prepare_v2(db, q, -1, &st, NULL);
	sqlite3_free(q);
	if (prc != SQLITE_OK)
		return cq_db_error(db, "schema");
	struct cq_error *err = NULL;
	size_t cap = 0;
	int rc;
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (out->n == MAX_OBJECTS) {
			err = cq_error_create(
			    CQ_ERR_FORMAT, "schema is not coreq's: over %d objects", MAX_OBJECTS);
			break;
		}
		if (out->n == cap) {
			cap = cap ? cap * 2 : 64;
			struct object *v = realloc(out->v, cap * sizeof(*v));
			if (!v) {
				err = &cq_error_nomem;
				break;
			}
			out->v = v;
		}
		struct object *o = &out->v[out->n];
		const char *type = text_or_empty(st, 0), *name = text_or_empty(st, 1);
		o->type = strdup(type);
		o->name = strdup(name);
		o->shape = NULL;
		out->n++;
		if (!o->type || !o->name) {
			err = &cq_error_nomem;
			break;
		}
		if (strcmp(type, "table") == 0) {
			err = table_shape(db, schema, name, sqlite3_column_int64(st, 4) == 0,
			                  &o->shape);
		} else {
			char *shape =
			    sqlite3_mprintf("%s\n%s", text_or_empty(st, 2), text_or_empty(st, 3));
			if (!shape || !(o->shape = strdup(shape)))
				err = &cq_error_nomem;
			sqlite3_free(shape);
		}
	}
	if (!err && rc != SQLITE_DONE)
		err = cq_db_error(db, "schema");
	sqlite3_finalize(st);
	if (err)
		objects_free(out);
	return err;
}

/* What migrations 1..version of set make, run into a database in memory. */
static struct cq_error *expected_objects(const char *set, unsigned version, struct objects *out)
{
	sqlite3 *mem = NULL;
	struct cq_error *err = NULL;
	if (sqlite3_open_v2(":memory:", &mem, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		sqlite3_close(mem);
		return &cq_error_nomem;
	}
	for (unsigned v = 1; v <= version && !err; v++)
		for (unsigned i = 0; i < cq_schema_migration_count && !err; i++) {
			const struct cq_schema_migration *m = &cq_schema_migrations[i];
			if (m->version == v && strcmp(m->set, set) == 0 &&
			    sqlite3_exec(mem, m->sql, NULL, NULL, NULL) != SQLITE_OK)
				err = cq_error_create(CQ_ERR_DB, "migration %s: %s", m->name,
				                      sqlite3_errmsg(mem));
		}
	if (!err)
		err = objects_of(mem, "main", out);
	sqlite3_close(mem);
	return err;
}

static const struct object *find(const struct objects *o, const char *name)
{
	for (size_t i = 0; i < o->n; i++)
		if (strcmp(o->v[i].name, name) == 0)
			return &o->v[i];
	return NULL;
}

/* A name from the file, short and printable, for a message. */
static const char *shown(const char *name, char buf[48])
{
	size_t i = 0;
	for (; name[i] && i < 40; i++)
		buf[i] = name[i] > ' ' && name[i] < 0x7f ? name[i] : '?';
	if (name[i])
		buf[i++] = '~';
	buf[i] = '\0';
	return buf;
}

/* Why actual's objects are not expected's, or NULL when they are. */
static struct cq_error *compare(const struct objects *actual, const struct objects *expected)
{
	char a[48], b[48];
	for (size_t i = 0; i < actual->n; i++) {
		const struct object *o = &actual->v[i];
		const struct object *e = find(expected, o->name);
		bool table = strcmp(o->type, "table") == 0;
		if (!e) {
			if (table)
				continue; /* not coreq's: never read */
			return cq_error_create(CQ_ERR_FORMAT,
			                       "schema is not coreq's: %s %s is not coreq's",
			                       shown(o->type, a), shown(o->name, b));
		}
		if (strcmp(o->type, e->type) != 0)
			return cq_error_create(
			    CQ_ERR_FORMAT, "schema is not coreq's: %s is a %s where coreq has a %s",
			    shown(o->name, a), shown(o->type, b), e->type);
		if (strcmp(o->shape, e->shape) != 0)
			return cq_error_create(
			    CQ_ERR_FORMAT,
			    table ? "schema is not coreq's: table %s does not have "
			            "coreq's columns"
			          : "schema is not coreq's: %s differs from coreq's",
			    shown(o->name, a));
	}
	for (size_t i = 0; i < expected->n; i++)
		if (!find(actual, expected->v[i].name))
			return cq_error_create(CQ_ERR_FORMAT,
			                       "schema is not coreq's: %s %s is missing",
			                       expected->v[i].type, expected->v[i].name);
	return NULL;
}

/*
 * True when schema's sqlite_schema reads exactly the build-time snapshot of
 * set at version: every object coreq's migrations make, with their SQL, and
 * nothing else.  The common case costs one query; any difference (an extra
 * table, a changed column, a file from elsewhere) falls to the full check,
 * which says what differs.
 */
static bool matches_snapshot(sqlite3 *db, const char *schema, const char *set, unsigned version)
{
	const char *want = NULL;
	for (unsigned i = 0; i < cq_schema_snapshot_count && !want; i++)
		if (cq_schema_snapshots[i].version == version &&
		    strcmp(cq_schema_snapshots[i].set, set) == 0)
			want = cq_schema_snapshots[i].text;
	char *sql = want
	                ? sqlite3_mprintf("SELECT type || '|' || name || '|' || tbl_name || '|' || "
	                                  "coalesce(sql, '') FROM \"%w\".sqlite_schema "
	                                  "ORDER BY type, name",
	                                  schema)
	                : NULL;
	sqlite3_stmt *st = NULL;
	bool same = sql && sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK;
	sqlite3_free(sql);
	size_t at = 0, len = want ? strlen(want) : 0;
	int rc = SQLITE_DONE;
	while (same && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *row = (const char *)sqlite3_column_text(st, 0);
		size_t n = (size_t)sqlite3_column_bytes(st, 0);
		same =
		    row && len - at > n && memcmp(want + at, row, n) == 0 && want[at + n] == '\n';
		at += n + 1;
	}
	same = same && rc == SQLITE_DONE && at == len;
	sqlite3_finalize(st);
	return same;
}

struct cq_error *cq_db_schema_check(sqlite3 *db, const char *schema, const char *set,
                                    unsigned version)
{
	assert(db && schema && set && version <= cq_schema_latest(set));
	if (matches_snapshot(db, schema, set, version))
		return NULL;
	struct objects actual, expected;
	struct cq_error *err = objects_of(db, schema, &actual);
	if (err)
		return err;
	if ((err = expected_objects(set, version, &expected))) {
		objects_free(&actual);
		return err;
	}
	/* SQLite's own tables (sqlite_stat1, sqlite_sequence) hold data only. */
	size_t kept = 0;
	for (size_t i = 0; i < actual.n; i++) {
		struct object *o = &actual.v[i];
		if (strcmp(o->type, "table") == 0 && strncmp(o->name, "sqlite_", 7) == 0 &&
		    !find(&expected, o->name)) {
			free(o->type);
			free(o->name);
			free(o->shape);
			continue;
		}
		actual.v[kept++] = *o;
	}
	actual.n = kept;
	err = compare(&actual, &expected);
	objects_free(&actual);
	objects_free(&expected);
	return err;
}
