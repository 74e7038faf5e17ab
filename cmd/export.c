/*
 * export.c - `coreq export`: the crash database as NDJSON records for a
 * fleet store (libcore/store/export.h), e.g.
 *   coreq export --type core | clickhouse-client --query \
 *       "INSERT INTO coreq.cores SETTINGS input_format_skip_unknown_fields = 1 FORMAT JSONEachRow"
 */
#include "cmd/cmd.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcore/store/export.h"
#include "libcore/store/store.h"

static const char export_usage[] =
    "Usage: coreq export [--db P] [--since TIME | --after-id N] [--limit N]\n"
    "                    [--type core,thread,stack,bucket,wait] [--host NAME]\n"
    "                    [--format ndjson]\n"
    "\n"
    "Write the stored crash records to standard output, one JSON object per\n"
    "line, for a fleet store such as ClickHouse (schema/clickhouse/, `FORMAT\n"
    "JSONEachRow`).  Record types: core, thread (threads and suspended async\n"
    "chains), stack (frames as build-id + offset + kind + trust, with names),\n"
    "bucket, and wait (one per thread blocked on a lock: its tid, the primitive,\n"
    "the lock's address, the owner's tid or why it is unknown, the deadlock it\n"
    "is on); each has a natural key (a core's content identity, a stack's or\n"
    "bucket's hash, a thread's core and place), so loading the same records\n"
    "twice changes nothing.\n"
    "Only analysed cores (status ok or partial) are exported.  Every core\n"
    "record carries local_id: give the highest one seen to --after-id next\n"
    "time to ship only what is new (standard error says it).\n"
    "\n"
    "  --db P              database (default $COREQ_DB, else db in\n"
    "                      /etc/coreq/coreq.conf, else $XDG_STATE_HOME/coreq/\n"
    "                      coreq.db, else /var/lib/coreq/coreq.db for root)\n"
    "  --since TIME        cores that crashed at or after TIME: YYYY-MM-DD,\n"
    "                      YYYY-MM-DDTHH:MM:SS (UTC), unix seconds, -7d, 2h ago,\n"
    "                      today or yesterday\n"
    "  --after-id N        cores whose local id is above N\n"
    "  --limit N           at most N cores (with their threads, stacks, buckets,\n"
    "                      waits)\n"
    "  --type LIST         only these record types (comma-separated)\n"
    "  --host NAME         host name for cores that do not record theirs (default:\n"
    "                      this host's)\n"
    "  --format ndjson     the only format (default)\n"
    "  --help              show this help\n";

enum {
	OPT_DB = OPT_FIRST_COMMAND_SPECIFIC,
	OPT_SINCE,
	OPT_AFTER_ID,
	OPT_LIMIT,
	OPT_TYPE,
	OPT_HOST,
};

static bool parse_types(const char *arg, unsigned *out)
{
	static const struct {
		const char *name;
		unsigned bit;
	} names[] = {{"core", CQ_EXPORT_CORES},
	             {"thread", CQ_EXPORT_THREADS},
	             {"stack", CQ_EXPORT_STACKS},
	             {"bucket", CQ_EXPORT_BUCKETS},
	             {"wait", CQ_EXPORT_WAITS}};
	*out = 0;
	for (const char *p = arg; *p;) {
		size_t n = strcspn(p, ",");
		unsigned bit = 0;
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strlen(names[i].name) == n && strncmp(p, names[i].name, n) == 0)
				bit = names[i].bit;
		if (!bit)
			return false;
		*out |= bit;
		p += n + (p[n] == ',');
	}
	return *out != 0;
}

/* This host's name and machine id, for cores that do not record their own. */
static void host_identity(char host[256], char machine_id[64])
{
	if (gethostname(host, 256) != 0)
		host[0] = '\0';
	host[255] = '\0';
	machine_id[0] = '\0';
	FILE *f = fopen("/etc/machine-id", "r");
	if (f) {
		if (fgets(machine_id, 64, f))
			machine_id[strcspn(machine_id, "\n")] = '\0';
		fclose(f);
	}
}

int cmd_export(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"format", required_argument, NULL, OPT_FORMAT},
	    {"help", no_argument, NULL, OPT_HELP},
	    {"db", required_argument, NULL, OPT_DB},
	    {"since", required_argument, NULL, OPT_SINCE},
	    {"after-id", required_argument, NULL, OPT_AFTER_ID},
	    {"limit", required_argument, NULL, OPT_LIMIT},
	    {"type", required_argument, NULL, OPT_TYPE},
	    {"host", required_argument, NULL, OPT_HOST},
	    {NULL, 0, NULL, 0},
	};
	const char *db = NULL, *host_name = NULL;
	struct cq_export_options o = {0};
	unsigned n;
	int opt;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (opt == 'h')
			opt = OPT_HELP;
		switch (opt) {
		case 'h':
		case OPT_HELP:
			fputs(export_usage, stdout);
			return EXIT_OK;
		case OPT_FORMAT:
			if (strcmp(optarg, "ndjson") != 0)
				return cmd_usage_error("export",
				                       "--format must be ndjson, not '%s'", optarg);
			break;
		case OPT_DB:
			db = optarg;
			break;
		case OPT_SINCE:
			if (cmd_time_option("export", "--since", optarg, &o.since))
				return EXIT_USAGE;
			break;
		case OPT_AFTER_ID:
		case OPT_LIMIT:
			if (!cmd_parse_count(optarg, 0, UINT32_MAX, &n, "export",
			                     opt == OPT_LIMIT ? "--limit" : "--after-id"))
				return EXIT_USAGE;
			*(opt == OPT_LIMIT ? &o.limit : &o.after_id) = n;
			break;
		case OPT_TYPE:
			if (!parse_types(optarg, &o.types))
				return cmd_usage_error(
				    "export",
				    "--type takes core, thread, stack, bucket, wait "
				    "(comma-separated), not '%s'",
				    optarg);
			break;
		case OPT_HOST:
			host_name = optarg;
			break;
		default:
			return cmd_option_error("export", opt, argv);
		}
	}
	if (optind != argc)
		return cmd_usage_error("export", "unexpected argument '%s'", argv[optind]);
	char host[256], machine_id[64];
	host_identity(host, machine_id);
	o.host = host_name ? host_name : host;
	o.machine_id = machine_id[0] ? machine_id : NULL;
	struct cq_store *store;
	int rc = cmd_open_store_query(db, &store);
	if (rc != EXIT_OK)
		return rc;
	struct cq_export_result r;
	struct cq_error *err = cq_store_export(store, &o, stdout, &r);
	cq_store_close(store);
	if (err)
		return cmd_fail(db ? db : "database", err);
	fprintf(stderr,
	        "coreq export: %lld cores, %lld threads, %lld stacks, %lld buckets, %lld waits; "
	        "last id %lld\n",
	        (long long)r.cores, (long long)r.threads, (long long)r.stacks, (long long)r.buckets,
	        (long long)r.waits, (long long)r.last_id);
	return EXIT_OK;
}
