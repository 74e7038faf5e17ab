/*
 * export.c - `coreq export`: the crash database as NDJSON records for a
 * fleet store (libcore/store/export.h), e.g.
 *   coreq export --type core | clickhouse-client --query \
 *       "INSERT INTO coreq.cores SETTINGS input_format_skip_unknown_fields = 1 FORMAT JSONEachRow"
 */
#include "cmd/cmd.h"
#include "cmd/options.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcore/store/export.h"
#include "libcore/store/store.h"

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

struct export_args {
	struct cq_export_options o;
	const char *db, *host;
};

static int format_option(const char *cmd, const char *option, const char *arg, void *field)
{
	(void)option;
	(void)field;
	if (strcmp(arg, "ndjson") != 0)
		return cmd_usage_error(cmd, "--format must be ndjson, not '%s'", arg);
	return CMD_OPTS_GO_ON;
}

static int type_option(const char *cmd, const char *option, const char *arg, void *field)
{
	(void)option;
	if (!parse_types(arg, field))
		return cmd_usage_error(cmd,
		                       "--type takes core, thread, stack, bucket, wait "
		                       "(comma-separated), not '%s'",
		                       arg);
	return CMD_OPTS_GO_ON;
}

static const struct cmd_opt export_options[] = {
    CMD_ROW_DB(struct export_args, db),
    {"since", 0, CMD_OPT_TIME, offsetof(struct export_args, o.since), "TIME",
     "cores that crashed at or after TIME: YYYY-MM-DD, YYYY-MM-DDTHH:MM:SS (UTC), unix "
     "seconds, -7d, 2h ago, today or yesterday",
     0, 0, NULL, NULL},
    {"after-id", 0, CMD_OPT_COUNT64, offsetof(struct export_args, o.after_id), "N",
     "cores whose local id is above N", 0, UINT32_MAX, NULL, NULL},
    {"limit", 0, CMD_OPT_COUNT64, offsetof(struct export_args, o.limit), "N",
     "at most N cores (with their threads, stacks, buckets, waits)", 0, UINT32_MAX, NULL, NULL},
    {"type", 0, CMD_OPT_CALL, offsetof(struct export_args, o.types), "LIST",
     "only these record types (comma-separated): core, thread, stack, bucket, wait", 0, 0,
     type_option, NULL},
    {"host", 0, CMD_OPT_STRING, offsetof(struct export_args, host), "NAME",
     "host name for cores that do not record theirs (default: this host's)", 0, 0, NULL, NULL},
    {"format", 0, CMD_OPT_CALL, 0, "ndjson", "the only format (default)", 0, 0, format_option,
     NULL},
    CMD_OPT_END,
};

static const struct cmd_spec export_spec = {
    .name = "export",
    .forms = "[OPTIONS]",
    .about = "Write the stored crash records to standard output, one JSON object per\n"
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
             "time to ship only what is new (standard error says it).\n",
    .opt = export_options,
    .flags = CMD_SPEC_NO_ARGS,
};

int cmd_export(int argc, char **argv)
{
	struct export_args a = {.db = NULL};
	int rc = cmd_opts_parse(&export_spec, argc, argv, &a);
	if (rc != CMD_OPTS_GO_ON)
		return rc;
	char host[256], machine_id[64];
	host_identity(host, machine_id);
	a.o.host = a.host ? a.host : host;
	a.o.machine_id = machine_id[0] ? machine_id : NULL;
	struct cq_store *store;
	if ((rc = cmd_open_store_query(a.db, &store)) != EXIT_OK)
		return rc;
	struct cq_export_result r;
	struct cq_error *err = cq_store_export(store, &a.o, stdout, &r);
	cq_store_close(store);
	if (err)
		return cmd_fail(a.db ? a.db : "database", err);
	fprintf(stderr,
	        "coreq export: %lld cores, %lld threads, %lld stacks, %lld buckets, %lld waits; "
	        "last id %lld\n",
	        (long long)r.cores, (long long)r.threads, (long long)r.stacks, (long long)r.buckets,
	        (long long)r.waits, (long long)r.last_id);
	return EXIT_OK;
}
