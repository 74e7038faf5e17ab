/*
 * push.c - `coreq push --clickhouse URL`: ship the crash records that are
 * new since the last push to ClickHouse over its HTTP interface, the same
 * NDJSON `coreq export` writes, in batches of cores.  The batches, their
 * order, the retries and the cursor file are the library's
 * (libcore/pipeline/push.h); this file parses options and prints what was
 * sent.
 */
#include "cmd/cmd.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcore/pipeline/push.h"
#include "libcore/store/store.h"

static const char push_usage[] =
    "Usage: coreq push --clickhouse URL [--db P] [--cursor FILE] [--batch N]\n"
    "                  [--max-batches N] [--retries N] [--timeout S] [--host NAME]\n"
    "\n"
    "Send the crash records stored since the last push to ClickHouse's HTTP\n"
    "interface (e.g. http://127.0.0.1:8123), into the tables of\n"
    "schema/clickhouse/ (database coreq), in batches of cores.  The cursor file\n"
    "(default: the database's path + .push-cursor) holds the last core shipped\n"
    "and moves only after a whole batch is in, so a push that fails loses\n"
    "nothing: the next one resends from there, and re-sent rows replace\n"
    "themselves.  A cursor file that cannot be read, or holds no core id, is\n"
    "an error (remove it to push every core again).  Failed requests are\n"
    "retried with exponential backoff.  A store made before coreq.waits needs\n"
    "schema/clickhouse/003_waits.sql run once.\n"
    "Prints what was sent; exit 1 when the server could not take it.\n"
    "\n"
    "  --clickhouse URL   the server's HTTP endpoint (required)\n"
    "  --db P             database (default $COREQ_DB, else db in\n"
    "                     /etc/coreq/coreq.conf, else $XDG_STATE_HOME/coreq/\n"
    "                     coreq.db, else /var/lib/coreq/coreq.db for root)\n"
    "  --cursor FILE      where the cursor is kept\n"
    "  --batch N          cores per batch (default 1000)\n"
    "  --max-batches N    stop after N batches (default: until all is sent)\n"
    "  --retries N        attempts per request (default 5; waits 1, 2, 4... s)\n"
    "  --timeout S        per request (default 60)\n"
    "  --host NAME        host name for cores that do not record theirs\n"
    "  --format text|json output format (default text)\n"
    "  --help             show this help\n";

enum {
	OPT_DB = OPT_FIRST_COMMAND_SPECIFIC,
	OPT_CLICKHOUSE,
	OPT_CURSOR,
	OPT_BATCH,
	OPT_MAX_BATCHES,
	OPT_RETRIES,
	OPT_TIMEOUT,
	OPT_HOST,
};

int cmd_push(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"format", required_argument, NULL, OPT_FORMAT},
	    {"help", no_argument, NULL, OPT_HELP},
	    {"db", required_argument, NULL, OPT_DB},
	    {"clickhouse", required_argument, NULL, OPT_CLICKHOUSE},
	    {"cursor", required_argument, NULL, OPT_CURSOR},
	    {"batch", required_argument, NULL, OPT_BATCH},
	    {"max-batches", required_argument, NULL, OPT_MAX_BATCHES},
	    {"retries", required_argument, NULL, OPT_RETRIES},
	    {"timeout", required_argument, NULL, OPT_TIMEOUT},
	    {"host", required_argument, NULL, OPT_HOST},
	    {NULL, 0, NULL, 0},
	};
	struct cq_push_options p = {.batch = 1000, .retries = 5, .timeout = 60};
	const char *db = NULL, *host = NULL;
	enum cmd_format format = CMD_FORMAT_TEXT;
	int opt;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (opt == 'h')
			opt = OPT_HELP;
		unsigned *count = opt == OPT_BATCH         ? &p.batch
		                  : opt == OPT_MAX_BATCHES ? &p.max_batches
		                  : opt == OPT_RETRIES     ? &p.retries
		                  : opt == OPT_TIMEOUT     ? &p.timeout
		                                           : NULL;
		if (count) {
			const char *name = opt == OPT_BATCH         ? "--batch"
			                   : opt == OPT_MAX_BATCHES ? "--max-batches"
			                   : opt == OPT_RETRIES     ? "--retries"
			                                            : "--timeout";
			if (!cmd_parse_count(optarg, 1, 1000000, count, "push", name))
				return EXIT_USAGE;
			continue;
		}
		switch (opt) {
		case 'h':
		case OPT_HELP:
			fputs(push_usage, stdout);
			return EXIT_OK;
		case OPT_FORMAT:
			if (!cmd_parse_format(optarg, &format, "push"))
				return EXIT_USAGE;
			break;
		case OPT_DB:
			db = optarg;
			break;
		case OPT_CLICKHOUSE:
			p.url = optarg;
			break;
		case OPT_CURSOR:
			p.cursor_path = optarg;
			break;
		case OPT_HOST:
			host = optarg;
			break;
		default:
			return cmd_option_error("push", opt, argv);
		}
	}
	if (optind != argc)
		return cmd_usage_error("push", "unexpected argument '%s'", argv[optind]);
	if (!p.url || !*p.url)
		return cmd_usage_error("push", "--clickhouse URL is required");
	char *def = db ? NULL : cq_store_default_path();
	const char *dbpath = db ? db : def;
	char *cursor_default = NULL;
	if (!p.cursor_path && dbpath && asprintf(&cursor_default, "%s.push-cursor", dbpath) >= 0)
		p.cursor_path = cursor_default;
	struct cq_store *store = NULL;
	int rc = dbpath ? cmd_open_store_query(dbpath, &store) : EXIT_INPUT;
	if (!dbpath)
		fprintf(stderr, "coreq: no database path: use --db or set COREQ_DB\n");
	if (rc != EXIT_OK || !p.cursor_path) {
		free(def);
		free(cursor_default);
		return rc != EXIT_OK ? rc : EXIT_INPUT;
	}
	char hostname[256] = "";
	if (!host && gethostname(hostname, sizeof(hostname)) == 0)
		host = hostname;
	p.host = host;
	struct cq_push_result r;
	struct cq_error *err = cq_push(store, &p, &r);
	cq_store_close(store);
	if (!r.started) {
		rc = cmd_fail(p.url, err);
	} else {
		if (format == CMD_FORMAT_JSON) {
			printf("{\"cores\":%lld,\"threads\":%lld,\"stacks\":%lld,\"buckets\":%lld,"
			       "\"waits\":%lld,\"cursor_before\":%lld,\"cursor\":%lld,\"complete\":"
			       "%s}\n",
			       (long long)r.cores, (long long)r.threads, (long long)r.stacks,
			       (long long)r.buckets, (long long)r.waits, (long long)r.cursor_before,
			       (long long)r.cursor, err ? "false" : "true");
		} else {
			printf("pushed %lld cores (%lld threads, %lld stacks, %lld buckets, %lld "
			       "waits) to %s; cursor %lld\n",
			       (long long)r.cores, (long long)r.threads, (long long)r.stacks,
			       (long long)r.buckets, (long long)r.waits, p.url,
			       (long long)r.cursor);
		}
		rc = err ? cmd_fail(p.url, err) : EXIT_OK;
	}
	free(def);
	free(cursor_default);
	return rc;
}
