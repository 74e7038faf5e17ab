/*
 * push.c - `coreq push --clickhouse URL`: ship the crash records that are
 * new since the last push to ClickHouse over its HTTP interface, the same
 * NDJSON `coreq export` writes, in batches of cores.  The batches, their
 * order, the retries and the cursor file are the library's
 * (libcore/pipeline/push.h); this file parses options and prints what was
 * sent.
 */
#include "cmd/cmd.h"
#include "cmd/options.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcore/pipeline/push.h"
#include "libcore/store/store.h"

struct push_args {
	struct cq_push_options p;
	const char *db, *host;
	enum cmd_format format;
};

#define PUSH_COUNT(name, field, help)                                                              \
	{                                                                                          \
		name, 0, CMD_OPT_COUNT, offsetof(struct push_args, p.field), "N", help, 1,         \
		    1000000, NULL, NULL                                                            \
	}

static const struct cmd_opt push_options[] = {
    {"clickhouse", 0, CMD_OPT_STRING, offsetof(struct push_args, p.url), "URL",
     "the server's HTTP endpoint (required)", 0, 0, NULL, NULL},
    CMD_ROW_DB(struct push_args, db),
    {"cursor", 0, CMD_OPT_STRING, offsetof(struct push_args, p.cursor_path), "FILE",
     "where the cursor is kept", 0, 0, NULL, NULL},
    PUSH_COUNT("batch", batch, "cores per batch (default 1000)"),
    PUSH_COUNT("max-batches", max_batches, "stop after N batches (default: until all is sent)"),
    PUSH_COUNT("retries", retries, "attempts per request (default 5; waits 1, 2, 4... s)"),
    {"timeout", 0, CMD_OPT_COUNT, offsetof(struct push_args, p.timeout), "S",
     "seconds per request (default 60)", 1, 1000000, NULL, NULL},
    {"host", 0, CMD_OPT_STRING, offsetof(struct push_args, host), "NAME",
     "host name for cores that do not record theirs", 0, 0, NULL, NULL},
    CMD_ROW_FORMAT(struct push_args, format),
    CMD_OPT_END,
};

static const struct cmd_spec push_spec = {
    .name = "push",
    .forms = "--clickhouse URL [OPTIONS]",
    .about = "Send the crash records stored since the last push to ClickHouse's HTTP\n"
             "interface (e.g. http://127.0.0.1:8123), into the tables of\n"
             "schema/clickhouse/ (database coreq), in batches of cores.  The cursor file\n"
             "(default: the database's path + .push-cursor) holds the last core shipped\n"
             "and moves only after a whole batch is in, so a push that fails loses\n"
             "nothing: the next one resends from there, and re-sent rows replace\n"
             "themselves.  A cursor file that cannot be read, or holds no core id, is\n"
             "an error (remove it to push every core again).  Failed requests are\n"
             "retried with exponential backoff.  A store made before coreq.waits needs\n"
             "schema/clickhouse/003_waits.sql run once.\n"
             "Prints what was sent; exit 1 when the server could not take it.\n",
    .opt = push_options,
    .flags = CMD_SPEC_NO_ARGS,
};

static void print_result(const struct push_args *a, const struct cq_push_result *r, bool complete)
{
	if (a->format == CMD_FORMAT_JSON)
		printf("{\"cores\":%lld,\"threads\":%lld,\"stacks\":%lld,\"buckets\":%lld,"
		       "\"waits\":%lld,\"cursor_before\":%lld,\"cursor\":%lld,\"complete\":"
		       "%s}\n",
		       (long long)r->cores, (long long)r->threads, (long long)r->stacks,
		       (long long)r->buckets, (long long)r->waits, (long long)r->cursor_before,
		       (long long)r->cursor, complete ? "true" : "false");
	else
		printf("pushed %lld cores (%lld threads, %lld stacks, %lld buckets, %lld "
		       "waits) to %s; cursor %lld\n",
		       (long long)r->cores, (long long)r->threads, (long long)r->stacks,
		       (long long)r->buckets, (long long)r->waits, a->p.url, (long long)r->cursor);
}

/* Pushes from the open store: what was sent, then the exit status. */
static int push_from(struct push_args *a, struct cq_store *store)
{
	char hostname[256] = "";
	if (!a->host && gethostname(hostname, sizeof(hostname)) == 0)
		a->host = hostname;
	a->p.host = a->host;
	struct cq_push_result r;
	struct cq_error *err = cq_push(store, &a->p, &r);
	cq_store_close(store);
	if (!r.started)
		return cmd_fail(a->p.url, err);
	print_result(a, &r, !err);
	return err ? cmd_fail(a->p.url, err) : EXIT_OK;
}

int cmd_push(int argc, char **argv)
{
	struct push_args a = {.p = {.batch = 1000, .retries = 5, .timeout = 60}};
	int rc = cmd_opts_parse(&push_spec, argc, argv, &a);
	if (rc != CMD_OPTS_GO_ON)
		return rc;
	if (!a.p.url || !*a.p.url)
		return cmd_usage_error("push", "--clickhouse URL is required");
	char *def = a.db ? NULL : cq_store_default_path();
	const char *dbpath = a.db ? a.db : def;
	char *cursor_default = NULL;
	if (!a.p.cursor_path && dbpath && asprintf(&cursor_default, "%s.push-cursor", dbpath) >= 0)
		a.p.cursor_path = cursor_default;
	struct cq_store *store = NULL;
	rc = dbpath ? cmd_open_store_query(dbpath, &store) : EXIT_INPUT;
	if (!dbpath)
		fprintf(stderr, "coreq: no database path: use --db or set COREQ_DB\n");
	if (rc == EXIT_OK && !a.p.cursor_path)
		cq_store_close(store);
	if (rc == EXIT_OK && a.p.cursor_path)
		rc = push_from(&a, store);
	else if (rc == EXIT_OK)
		rc = EXIT_INPUT;
	free(def);
	free(cursor_default);
	return rc;
}
