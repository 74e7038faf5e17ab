/*
 * cores.c - `coreq cores` (like `coredumpctl list`) and `coreq show ID`
 * (like `coredumpctl info`, with every thread's stored stack).
 */
#include "cmd/cmd.h"

#include <inttypes.h>
#include <string.h>
#include <stdlib.h>

#include "cmd/options.h"
#include "cmd/store_output.h"
#include "libcore/base/json.h"
#include "libcore/model/core.h"
#include "libcore/store/store.h"

struct cores_query {
	struct cmd_listing out; /* first: print_core_line's ctx is either */
	struct cq_store_core_filter filter;
	size_t file_times, ingest_times; /* rows whose TIME is not a crash time */
	const char *db;
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

static int signal_option(const char *cmd, const char *option, const char *arg, void *field)
{
	(void)option;
	if (!parse_signal(arg, field))
		return cmd_usage_error(
		    cmd, "--signal takes a number or a name (SIGSEGV, SEGV), not '%s'", arg);
	return CMD_OPTS_GO_ON;
}

static const struct cmd_opt cores_options[] = {
    CMD_ROW_DB(struct cores_query, db),
    CMD_ROW_BUCKET(struct cores_query, filter.bucket),
    CMD_ROWS_STORE_FILTER(struct cores_query, filter.since, filter.until, filter.exe),
    {"pid", 0, CMD_OPT_COUNT64, offsetof(struct cores_query, filter.pid), "PID",
     "only cores of this process id", 1, INT32_MAX, NULL, NULL},
    {"signal", 0, CMD_OPT_CALL, offsetof(struct cores_query, filter.signal), "SIG",
     "only cores killed by SIG (number, SIGSEGV or SEGV)", 0, 0, signal_option, NULL},
    {NULL, 'n', CMD_OPT_COUNT64, offsetof(struct cores_query, filter.limit), "N",
     "only the newest N", 1, UINT32_MAX, NULL, NULL},
    {"reverse", 'r', CMD_OPT_FLAG, offsetof(struct cores_query, filter.newest_first), NULL,
     "newest first", 0, 0, NULL, NULL},
    CMD_ROW_FORMAT(struct cores_query, out.format),
    CMD_OPT_END,
};

static const struct cmd_spec cores_spec = {
    .name = "cores",
    .forms = "[OPTIONS]",
    .about = "List the cores stored by `coreq ingest`: id, crash time (marked ~ when it\n"
             "is the core file's modification time, ? when the ingest time),\n"
             "pid, uid, signal, who sent it (SENDER: a pid, self, or - for the kernel;\n"
             "a ? after it when that is only what the signal claims: a process can\n"
             "queue itself a signal naming any sender), threads, crash bucket, status\n"
             "and executable, oldest first, as coredumpctl list does.\n",
    .opt = cores_options,
    .flags = CMD_SPEC_NO_ARGS,
};

/* The text shown when no core matches. */
static void empty_text(const struct cq_store_core_filter *f, char *buf, size_t cap)
{
	bool filtered = f->since || f->until || f->exe || f->pid || f->signal;
	if (f->bucket)
		snprintf(buf, cap, "no cores in bucket %s%s", f->bucket,
		         filtered ? " that match" : "");
	else
		snprintf(buf, cap, filtered ? "no cores that match" : "no cores stored");
}

int cmd_cores(int argc, char **argv)
{
	struct cores_query q = {.out.format = CMD_FORMAT_TEXT};
	int rc = cmd_opts_parse(&cores_spec, argc, argv, &q);
	if (rc != CMD_OPTS_GO_ON)
		return rc;
	char empty[96];
	empty_text(&q.filter, empty, sizeof(empty));
	return cmd_run_listing(q.db, &q.out, "cores", empty, query_cores, &q);
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
	/* What the runtime said the crash was, as `coreq stack` shows it under its header. */
	if (c->crash_message)
		printf("\ncrash:       %s", cmd_safe(c->crash_message));
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

struct show_args {
	struct cmd_listing out;
	const char *db;
};

static const struct cmd_opt show_options[] = {
    CMD_ROW_DB(struct show_args, db),
    CMD_ROW_FORMAT(struct show_args, out.format),
    CMD_OPT_END,
};

static const struct cmd_spec show_spec = {
    .name = "show",
    .forms = "[OPTIONS] ID",
    .about = "Show one stored core: what it records, its modules, and every thread's\n"
             "stack, the crashed thread first.  ID comes from `coreq cores`.\n",
    .opt = show_options,
};

/* Each part of core id after its row, within the JSON object show_core began. */
static struct cq_error *show_parts(struct cq_store *store, int64_t id, struct cmd_listing *p)
{
	bool json = p->format == CMD_FORMAT_JSON;
	struct cq_error *err;
	if (json) {
		cq_json_key(&p->j, "modules");
		cq_json_array_begin(&p->j);
	} else {
		printf("\nmodules:\n");
	}
	if ((err = cq_store_each_module(store, id, show_module, p)))
		return err;
	if (json) {
		cq_json_array_end(&p->j);
		cq_json_key(&p->j, "threads");
		cq_json_array_begin(&p->j);
	}
	if ((err = cq_store_each_thread(store, id, show_thread, p)))
		return err;
	if (json) {
		cq_json_array_end(&p->j);
		cq_json_key(&p->j, "suspended");
		cq_json_array_begin(&p->j);
	}
	/* The async chains ingest stored, as `coreq stack` lists them after the threads. */
	if ((err = cq_store_each_suspended(store, id, show_suspended, p)))
		return err;
	if (json) {
		cq_json_array_end(&p->j);
		cq_json_object_end(&p->j);
		cq_json_finish(&p->j);
	}
	return NULL;
}

int cmd_show(int argc, char **argv)
{
	struct show_args a = {.out.format = CMD_FORMAT_TEXT};
	int rc = cmd_opts_parse(&show_spec, argc, argv, &a);
	unsigned id;
	if (rc != CMD_OPTS_GO_ON)
		return rc;
	if (optind + 1 != argc)
		return cmd_usage_error("show", "expected exactly one core ID");
	if (!cmd_parse_count(argv[optind], 1, UINT32_MAX, &id, "show", "ID"))
		return EXIT_USAGE;
	struct cq_store *store;
	if ((rc = cmd_open_store_query(a.db, &store)) != EXIT_OK)
		return rc;
	struct cq_store_core_filter one = {.id = id};
	struct cq_error *err = cq_store_each_core(store, &one, show_core, &a.out);
	if (!err)
		err = show_parts(store, id, &a.out);
	cq_store_close(store);
	if (err) {
		char what[32];
		snprintf(what, sizeof(what), "core %u", id);
		return cmd_fail(what, err);
	}
	return EXIT_OK;
}
