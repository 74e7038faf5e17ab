/*
 * cores.c - `coreq cores` (like `coredumpctl list`) and `coreq show ID`
 * (like `coredumpctl info`, with every thread's stored stack).
 */
#include "cmd/cmd.h"

#include <inttypes.h>
#include <string.h>
#include <stdlib.h>

#include "cmd/store_output.h"
#include "libcore/base/json.h"
#include "libcore/model/core.h"
#include "libcore/store/store.h"

static const char cores_usage[] =
    "Usage: coreq cores [--db P] [--bucket ID] [--since TIME] [--until TIME]\n"
    "                   [--exe NAME] [--pid PID] [--signal SIG] [-n N] [-r]\n"
    "                   [--format text|json]\n"
    "\n"
    "List the cores stored by `coreq ingest`: id, crash time (marked ~ when it\n"
    "is the core file's modification time, ? when the ingest time),\n"
    "pid, uid, signal, who sent it (SENDER: a pid, self, or - for the kernel;\n"
    "a ? after it when that is only what the signal claims: a process can\n"
    "queue itself a signal naming any sender), threads, crash bucket, status\n"
    "and executable, oldest first, as coredumpctl list does.\n"
    "\n"
    "  --db P              database (default $COREQ_DB, else db in\n"
    "                      /etc/coreq/coreq.conf, else $XDG_STATE_HOME/coreq/\n"
    "                      coreq.db, else /var/lib/coreq/coreq.db for root)\n"
    "  --bucket ID         only the cores in crash bucket ID: its hash or its id\n"
    "  --since TIME        only cores that crashed at or after TIME (YYYY-MM-DD,\n"
    "                      unix seconds, -7d, 2h ago, today, yesterday)\n"
    "  --until TIME        only cores that crashed before TIME\n"
    "  --exe NAME          only cores of this executable (path or basename)\n"
    "  --pid PID           only cores of this process id\n"
    "  --signal SIG        only cores killed by SIG (number, SIGSEGV or SEGV)\n"
    "  -n N                only the newest N\n"
    "  -r, --reverse       newest first\n"
    "  --format text|json  output format (default text)\n"
    "  --help              show this help\n";

static const char show_usage[] =
    "Usage: coreq show ID [--db P] [--format text|json]\n"
    "\n"
    "Show one stored core: what it records, its modules, and every thread's\n"
    "stack, the crashed thread first.  ID comes from `coreq cores`.\n"
    "\n"
    "  --db P              database (default $COREQ_DB, else db in\n"
    "                      /etc/coreq/coreq.conf, else $XDG_STATE_HOME/coreq/\n"
    "                      coreq.db, else /var/lib/coreq/coreq.db for root)\n"
    "  --format text|json  output format (default text)\n"
    "  --help              show this help\n";

enum {
	OPT_DB = OPT_FIRST_COMMAND_SPECIFIC,
	OPT_BUCKET,
	OPT_SINCE,
	OPT_UNTIL,
	OPT_EXE_NAME,
	OPT_PID,
	OPT_SIGNAL,
};

/*
 * Parses --db/--format/--help (and --bucket where bucket is not NULL) for
 * both commands; returns -1 to exit with *rc.
 */
static int parse_db_options(int argc, char **argv, const char *cmd, const char *usage,
                            const char **db, enum cmd_format *format, const char **bucket, int *rc)
{
	static const struct option longopts[] = {
	    {"format", required_argument, NULL, OPT_FORMAT},
	    {"help", no_argument, NULL, OPT_HELP},
	    {"db", required_argument, NULL, OPT_DB},
	    {"bucket", required_argument, NULL, OPT_BUCKET},
	    {NULL, 0, NULL, 0},
	};
	int opt;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (opt == 'h')
			opt = OPT_HELP;
		if (opt == OPT_HELP) {
			fputs(usage, stdout);
			*rc = EXIT_OK;
			return -1;
		}
		if (opt == OPT_DB) {
			*db = optarg;
		} else if (opt == OPT_BUCKET && bucket) {
			if (!cq_store_bucket_key_valid(optarg)) {
				*rc = cmd_usage_error(
				    cmd,
				    "--bucket takes a bucket's 16-hex-digit hash or "
				    "its id, not '%s'",
				    optarg);
				return -1;
			}
			*bucket = optarg;
		} else if (opt != OPT_FORMAT) {
			*rc = cmd_option_error(cmd, opt, argv);
			return -1;
		} else if (!cmd_parse_format(optarg, format, cmd)) {
			*rc = EXIT_USAGE;
			return -1;
		}
	}
	return 0;
}

struct cores_query {
	struct cmd_listing out; /* first: print_core_line's ctx is either */
	struct cq_store_core_filter filter;
	size_t file_times, ingest_times; /* rows whose TIME is not a crash time */
};

static void print_core_line(void *ctx, const struct cq_store_core_row *c)
{
	struct cores_query *q = ctx;
	struct cmd_listing *p = &q->out;
	if (p->format == CMD_FORMAT_JSON) {
		cmd_json_stored_core(&p->j, c);
		return;
	}
	/* A time that is not a recorded crash time is marked: ~ the file's, ? the ingest's. */
	char when[32];
	bool from_file = c->has_timestamp && c->time_source && !strcmp(c->time_source, "file");
	cmd_iso_time(c->has_timestamp ? c->timestamp : c->ingested_at, when);
	if (from_file || !c->has_timestamp) {
		strcat(when, from_file ? "~" : "?");
		*(from_file ? &q->file_times : &q->ingest_times) += 1;
	}
	if (p->count++ == 0)
		printf("%-6s %-21s %-8s %-6s %-8s %-8s %-7s %-16s %-8s %s\n", "ID", "TIME", "PID",
		       "UID", "SIG", "SENDER", "THREADS", "BUCKET", "STATUS", "EXE");
	char uid[24] = "-", sender[24] = "-";
	if (c->has_uid)
		snprintf(uid, sizeof(uid), "%lld", (long long)c->uid);
	/*
	 * The process that sent the signal: "self", its pid, or "-" (the
	 * kernel's); a "?" after it when that is only what the signal claims.
	 */
	const char *claimed = c->sender_claimed ? "?" : "";
	if (c->has_sender && c->sender_pid == c->pid)
		snprintf(sender, sizeof(sender), "self%s", claimed);
	else if (c->has_sender)
		snprintf(sender, sizeof(sender), "%lld%s", (long long)c->sender_pid, claimed);
	printf("%-6lld %-21s %-8lld %-6s %-8s %-8s %-7lld %-16s %-8s %s\n", (long long)c->id, when,
	       (long long)c->pid, uid, c->snapshot ? "snapshot" : cmd_stored_text(c->signal_name),
	       sender, (long long)c->nthreads, cmd_stored_text(c->bucket_hash),
	       cmd_stored_text(c->status), cmd_stored_text(c->exe));
}

static struct cq_error *query_cores(struct cq_store *store, void *ctx)
{
	struct cores_query *q = ctx;
	struct cq_error *err = cq_store_each_core(store, &q->filter, print_core_line, q);
	if (!err && q->file_times)
		printf("~ the core file's modification time: no crash time was captured\n");
	if (!err && q->ingest_times)
		printf("? when it was ingested: no crash time was captured, nor a file's time\n");
	return err;
}

/* A signal as a number, or by name with or without "SIG". */
static bool parse_signal(const char *arg, int64_t *out)
{
	unsigned n;
	if (strspn(arg, "0123456789") == strlen(arg) && *arg) {
		n = (unsigned)strtoul(arg, NULL, 10);
		*out = n;
		return n > 0 && n < 65;
	}
	const char *want = strncmp(arg, "SIG", 3) == 0 ? arg + 3 : arg;
	for (int sig = 1; sig < 65; sig++) {
		const char *name = cq_core_signal_name(sig);
		if (name && strcmp(name + 3, want) == 0) {
			*out = sig;
			return true;
		}
	}
	return false;
}

int cmd_cores(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"format", required_argument, NULL, OPT_FORMAT},
	    {"help", no_argument, NULL, OPT_HELP},
	    {"db", required_argument, NULL, OPT_DB},
	    {"bucket", required_argument, NULL, OPT_BUCKET},
	    {"since", required_argument, NULL, OPT_SINCE},
	    {"until", required_argument, NULL, OPT_UNTIL},
	    {"exe", required_argument, NULL, OPT_EXE_NAME},
	    {"pid", required_argument, NULL, OPT_PID},
	    {"signal", required_argument, NULL, OPT_SIGNAL},
	    {"reverse", no_argument, NULL, 'r'},
	    {NULL, 0, NULL, 0},
	};
	const char *db = NULL;
	struct cores_query q = {.out.format = CMD_FORMAT_TEXT};
	unsigned v;
	int opt;
	while ((opt = getopt_long(argc, argv, ":hn:r", longopts, NULL)) != -1) {
		switch (opt) {
		case 'h':
		case OPT_HELP:
			fputs(cores_usage, stdout);
			return EXIT_OK;
		case OPT_FORMAT:
			if (!cmd_parse_format(optarg, &q.out.format, "cores"))
				return EXIT_USAGE;
			break;
		case OPT_DB:
			db = optarg;
			break;
		case OPT_BUCKET:
			if (!cq_store_bucket_key_valid(optarg))
				return cmd_usage_error(
				    "cores",
				    "--bucket takes a bucket's 16-hex-digit hash or "
				    "its id, not '%s'",
				    optarg);
			q.filter.bucket = optarg;
			break;
		case OPT_SINCE:
		case OPT_UNTIL:
			if (cmd_time_option("cores", opt == OPT_SINCE ? "--since" : "--until",
			                    optarg,
			                    opt == OPT_SINCE ? &q.filter.since : &q.filter.until))
				return EXIT_USAGE;
			break;
		case OPT_EXE_NAME:
			q.filter.exe = optarg;
			break;
		case OPT_PID:
			if (!cmd_parse_count(optarg, 1, INT32_MAX, &v, "cores", "--pid"))
				return EXIT_USAGE;
			q.filter.pid = v;
			break;
		case OPT_SIGNAL:
			if (!parse_signal(optarg, &q.filter.signal))
				return cmd_usage_error(
				    "cores",
				    "--signal takes a number or a name (SIGSEGV, "
				    "SEGV), not '%s'",
				    optarg);
			break;
		case 'n':
			if (!cmd_parse_count(optarg, 1, UINT32_MAX, &v, "cores", "-n"))
				return EXIT_USAGE;
			q.filter.limit = v;
			break;
		case 'r':
			q.filter.newest_first = true;
			break;
		default:
			return cmd_option_error("cores", opt, argv);
		}
	}
	if (optind != argc)
		return cmd_usage_error("cores", "unexpected argument '%s'", argv[optind]);
	char empty[96];
	bool filtered =
	    q.filter.since || q.filter.until || q.filter.exe || q.filter.pid || q.filter.signal;
	if (q.filter.bucket)
		snprintf(empty, sizeof(empty), "no cores in bucket %s%s", q.filter.bucket,
		         filtered ? " that match" : "");
	else
		snprintf(empty, sizeof(empty),
		         filtered ? "no cores that match" : "no cores stored");
	return cmd_run_listing(db, &q.out, "cores", empty, query_cores, &q);
}

/* A stored core's signal (or snapshot) line: si_code, sender, fault address, crashed tid. */
static void show_signal_text(const struct cq_store_core_row *c)
{
	if (c->snapshot)
		printf("snapshot:    %s (a live process: no thread crashed)",
		       cmd_safe(c->snapshot));
	else
		printf("signal:      %lld (%s)", (long long)c->signal,
		       c->signal_name ? cmd_safe(c->signal_name) : "unknown");
	if (c->has_si_code && !c->snapshot) {
		struct cmd_sender sender = {c->sender_pid, c->sender_uid, c->sender_pid == c->pid,
		                            c->sender_claimed};
		cmd_print_si_code(c->signal, c->si_code, c->has_sender ? &sender : NULL);
	}
	if (c->has_fault_address)
		printf(", fault address 0x%" PRIx64, c->fault_address);
	if (!c->snapshot)
		printf("\ncrashed tid: %lld", (long long)c->crashed_tid);
}

static void show_core(void *ctx, const struct cq_store_core_row *c)
{
	struct cmd_listing *p = ctx;
	if (p->format == CMD_FORMAT_JSON) {
		/* The document starts only once the core is known to exist. */
		cq_json_init(&p->j, stdout);
		cq_json_object_begin(&p->j);
		cq_json_key(&p->j, "core");
		cmd_json_stored_core(&p->j, c);
		return;
	}
	char when[32];
	printf("core:        %lld\n", (long long)c->id);
	printf("path:        %s\n", cmd_stored_text(c->path));
	printf("exe:         %s\n", c->exe ? cmd_safe(c->exe) : "-");
	printf("cmdline:     %s\n", c->cmdline ? cmd_safe(c->cmdline) : "-");
	if (c->comm)
		printf("comm:        %s\n", cmd_safe(c->comm));
	printf("pid:         %lld\n", (long long)c->pid);
	if (c->has_uid)
		printf("uid:         %lld\n", (long long)c->uid);
	show_signal_text(c);
	printf("\nthreads:     %lld\n", (long long)c->nthreads);
	if (c->has_timestamp) {
		cmd_iso_time(c->timestamp, when);
		printf("time:        %s%s\n", when,
		       c->time_source && !strcmp(c->time_source, "file")
		           ? " (the core file's modification time: no crash time was captured)"
		           : "");
	} else {
		printf("time:        unknown (no crash time was captured; see ingested)\n");
	}
	if (c->hostname)
		printf("hostname:    %s\n", cmd_safe(c->hostname));
	if (c->bucket_id)
		printf("bucket:      %s (id %lld)\n", cmd_stored_text(c->bucket_hash),
		       (long long)c->bucket_id);
	if (c->source)
		printf("source:      %s\n", cmd_safe(c->source));
	if (c->stored_path)
		printf("stored as:   %s\n", cmd_safe(c->stored_path));
	cmd_print_conflicts(c->meta_conflicts);
	cmd_iso_time(c->ingested_at, when);
	printf("ingested:    %s\nstatus:      %s%s%s\n", when, cmd_stored_text(c->status),
	       c->message ? ": " : "", c->message ? cmd_safe(c->message) : "");
}

static void show_module(void *ctx, const struct cq_store_module_row *m)
{
	struct cmd_listing *p = ctx;
	if (p->format == CMD_FORMAT_JSON) {
		struct cq_json *j = &p->j;
		cq_json_object_begin(j);
		cq_json_key(j, "path");
		cq_json_string(j, m->path);
		cq_json_key(j, "build_id");
		cq_json_string(j, m->build_id);
		cq_json_key(j, "start");
		cq_json_hex(j, m->start);
		cq_json_key(j, "end");
		cq_json_hex(j, m->end);
		cq_json_key(j, "status");
		cq_json_string(j, m->status);
		cq_json_object_end(j);
		return;
	}
	printf("  0x%016" PRIx64 " %-9s %-40s %s\n", m->start, cmd_stored_text(m->status),
	       cmd_stored_text(m->build_id), cmd_stored_text(m->path));
}

static void show_thread(void *ctx, const struct cq_store_thread_row *t)
{
	struct cmd_listing *p = ctx;
	if (p->format == CMD_FORMAT_JSON) {
		struct cq_json *j = &p->j;
		cq_json_object_begin(j);
		cmd_json_thread_id(j, t->tid, t->name, t->crashed);
		cq_json_key(j, "stack_id");
		cq_json_int(j, t->stack_id);
		cq_json_key(j, "end");
		cq_json_string(j, t->end);
		cmd_json_stored_frames(j, t->frames, t->nframes);
		cq_json_object_end(j);
		return;
	}
	printf("\nThread %lld%s%s%s (stack %lld):\n", (long long)t->tid, t->name ? " \"" : "",
	       t->name ? cmd_safe(t->name) : "", t->name ? "\"" : "", (long long)t->stack_id);
	if (t->crashed)
		printf("  (crashed)\n");
	cmd_print_stored_frames(t->frames, t->nframes, "");
}

static void show_suspended(void *ctx, const struct cq_store_suspended_row *s)
{
	struct cmd_listing *p = ctx;
	if (p->format == CMD_FORMAT_JSON) {
		struct cq_json *j = &p->j;
		cq_json_object_begin(j);
		cq_json_key(j, "kind");
		cq_json_string(j, s->kind);
		cq_json_key(j, "stack_id");
		cq_json_int(j, s->stack_id);
		cq_json_key(j, "end");
		cq_json_string(j, s->end);
		cmd_json_stored_frames(j, s->frames, s->nframes);
		cq_json_object_end(j);
		return;
	}
	printf("\nSuspended %s chain %lld (stack %lld):\n", cmd_safe(s->kind),
	       (long long)s->idx + 1, (long long)s->stack_id);
	cmd_print_stored_frames(s->frames, s->nframes, "");
	if (s->end && strcmp(s->end, "outermost") != 0)
		printf("     (stack ends: %s)\n", cmd_safe(s->end));
}

int cmd_show(int argc, char **argv)
{
	const char *db = NULL;
	struct cmd_listing p = {.format = CMD_FORMAT_TEXT};
	int rc = EXIT_OK;
	unsigned id;
	if (parse_db_options(argc, argv, "show", show_usage, &db, &p.format, NULL, &rc) < 0)
		return rc;
	if (optind + 1 != argc)
		return cmd_usage_error("show", "expected exactly one core ID");
	if (!cmd_parse_count(argv[optind], 1, UINT32_MAX, &id, "show", "ID"))
		return EXIT_USAGE;
	struct cq_store *store;
	if ((rc = cmd_open_store_query(db, &store)) != EXIT_OK)
		return rc;
	struct cq_error *err;
	struct cq_store_core_filter one = {.id = id};
	err = cq_store_each_core(store, &one, show_core, &p);
	if (!err && p.format == CMD_FORMAT_JSON) {
		cq_json_key(&p.j, "modules");
		cq_json_array_begin(&p.j);
	} else if (!err) {
		printf("\nmodules:\n");
	}
	if (!err)
		err = cq_store_each_module(store, id, show_module, &p);
	if (!err && p.format == CMD_FORMAT_JSON) {
		cq_json_array_end(&p.j);
		cq_json_key(&p.j, "threads");
		cq_json_array_begin(&p.j);
	}
	if (!err)
		err = cq_store_each_thread(store, id, show_thread, &p);
	if (!err && p.format == CMD_FORMAT_JSON) {
		cq_json_array_end(&p.j);
		cq_json_key(&p.j, "suspended");
		cq_json_array_begin(&p.j);
	}
	/* The async chains ingest stored, as `coreq stack` lists them after the threads. */
	if (!err)
		err = cq_store_each_suspended(store, id, show_suspended, &p);
	if (!err && p.format == CMD_FORMAT_JSON) {
		cq_json_array_end(&p.j);
		cq_json_object_end(&p.j);
		cq_json_finish(&p.j);
	}
	cq_store_close(store);
	if (err) {
		char what[32];
		snprintf(what, sizeof(what), "core %u", id);
		return cmd_fail(what, err);
	}
	return EXIT_OK;
}
