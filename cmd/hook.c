/*
 * hook.c - `coreq hook`: the kernel.core_pattern pipe entry point.
 *
 *   kernel.core_pattern=|/usr/bin/coreq hook %P %u %g %s %t %c %h %e
 *
 * The core arrives on stdin.  Storing it, recording it and analysing it in
 * a budgeted child are the library's (libcore/pipeline/hook.h); this file
 * parses the kernel's arguments and the options, and logs one line per
 * crash to stderr (or syslog when there is no stderr), or a JSON object.
 */
#include "cmd/cmd.h"
#include "cmd/options.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "libcore/base/json.h"
#include "libcore/base/parse.h"
#include "libcore/capture/capture.h"
#include "libcore/capture/spool.h"
#include "libcore/pipeline/hook.h"
#include "libcore/store/capture_rows.h"

struct hook {
	struct cq_hook_options o;
	enum cmd_format format;
};

/*
 * Whether fd 2 was open when the hook started.  A core_pattern helper may
 * start with only fd 0; the gaps are filled with /dev/null at once, so
 * files opened later never land on fds 1 and 2.
 */
static bool has_stderr;

static void fill_standard_fds(void)
{
	has_stderr = fcntl(STDERR_FILENO, F_GETFD) != -1;
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) != -1)
			continue;
		int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (nul >= 0 && nul != fd) {
			dup2(nul, fd);
			close(nul);
		}
	}
}

/* One log line: to stderr, or to syslog when the kernel gave us no stderr. */
static void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void log_line(const char *fmt, ...)
{
	char line[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	const char *safe = cmd_safe(line); /* comm and paths come from the crashed process */
	if (has_stderr) {
		fprintf(stderr, "coreq hook: %s\n", safe);
	} else {
		openlog("coreq", LOG_PID, LOG_DAEMON);
		syslog(LOG_NOTICE, "%s", safe);
		closelog();
	}
}

static bool parse_u64(const char *s, uint64_t *out)
{
	return cq_parse_u64(s, false, out) == CQ_PARSE_OK;
}

static bool parse_i64(const char *s, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return false;
	*out = v;
	return true;
}

/* The kernel's arguments: %P %u %g %s %t %c %h %e (COMM may have been split at spaces). */
static int parse_args(struct hook *h, int argc, char **argv)
{
	struct cq_capture *c = &h->o.cap;
	if (argc < 8)
		return cmd_usage_error("hook",
		                       "expected PID UID GID SIGNAL TIME RLIMIT HOSTNAME COMM");
	uint64_t t, rlimit;
	if (!parse_i64(argv[0], &c->pid) || c->pid <= 0)
		return cmd_usage_error("hook", "PID must be a positive number, not '%s'", argv[0]);
	if (!parse_i64(argv[1], &c->uid) || c->uid < 0 || !parse_i64(argv[2], &c->gid) ||
	    c->gid < 0)
		return cmd_usage_error("hook", "UID and GID must be numbers");
	if (!parse_i64(argv[3], &c->signal) || c->signal < 0 || c->signal > 128)
		return cmd_usage_error("hook", "SIGNAL must be a signal number, not '%s'", argv[3]);
	if (!parse_u64(argv[4], &t) || t > (uint64_t)INT64_MAX / 1000000)
		return cmd_usage_error("hook", "TIME must be unix seconds, not '%s'", argv[4]);
	if (!parse_u64(argv[5], &rlimit))
		return cmd_usage_error("hook", "RLIMIT must be a byte count, not '%s'", argv[5]);
	c->timestamp_us = (int64_t)t * 1000000;
	c->rlimit = rlimit > (uint64_t)INT64_MAX ? -1 : (int64_t)rlimit;
	c->known = CQ_CAPTURE_PID | CQ_CAPTURE_UID | CQ_CAPTURE_GID | CQ_CAPTURE_SIGNAL |
	           CQ_CAPTURE_TIMESTAMP | CQ_CAPTURE_RLIMIT;
	snprintf(c->hostname, sizeof(c->hostname), "%s", argv[6]);
	size_t o = 0;
	for (int i = 7; i < argc && o < sizeof(c->comm); i++)
		o += (size_t)snprintf(c->comm + o, sizeof(c->comm) - o, "%s%s", i > 7 ? " " : "",
		                      argv[i]);
	c->source = "hook";
	return EXIT_OK;
}

/* The crash as one JSON object on standard output. */
static void report_json(const struct hook *h, const struct cq_hook_result *r,
                        const struct cq_spool_result *s, const struct cq_store_outcome *o,
                        const char *error)
{
	const struct cq_capture *c = &h->o.cap;
	struct cq_json j;
	cq_json_init(&j, stdout);
	cq_json_object_begin(&j);
	cq_json_key(&j, "pid");
	cq_json_int(&j, c->pid);
	cq_json_key(&j, "analysis_uid");
	if (r->analysed_as >= 0)
		cq_json_int(&j, r->analysed_as);
	else
		cq_json_null(&j);
	cq_json_key(&j, "analysed_from");
	cq_json_string(&j, r->analysed_from);
	cq_json_key(&j, "comm");
	cq_json_string(&j, c->comm);
	cq_json_key(&j, "signal");
	cq_json_int(&j, c->signal);
	cq_json_key(&j, "stored_path");
	cq_json_string(&j, s && s->path ? s->path : NULL);
	cq_json_key(&j, "raw_bytes");
	cq_json_uint(&j, s ? s->raw_bytes : 0);
	cq_json_key(&j, "file_bytes");
	cq_json_uint(&j, s ? s->file_bytes : 0);
	cq_json_key(&j, "truncated");
	cq_json_bool(&j, s && s->truncated);
	cq_json_key(&j, "core_id");
	if (o && o->core_id)
		cq_json_int(&j, o->core_id);
	else
		cq_json_null(&j);
	cq_json_key(&j, "status");
	cq_json_string(&j, o && o->status[0] ? o->status : (error ? "error" : NULL));
	cq_json_key(&j, "message");
	cq_json_string(&j, error ? error : (o && o->message[0] ? o->message : NULL));
	cq_json_key(&j, "bucket");
	cq_json_string(&j, o && o->bucket[0] ? o->bucket : NULL);
	cq_json_object_end(&j);
	cq_json_finish(&j);
}

static void report(const struct hook *h, const struct cq_hook_result *r,
                   const struct cq_spool_result *s, const struct cq_store_outcome *o,
                   const char *error)
{
	const struct cq_capture *c = &h->o.cap;
	if (h->format == CMD_FORMAT_JSON) {
		report_json(h, r, s, o, error);
		return;
	}
	const char *signame = cq_core_signal_name((int)c->signal);
	char head[256];
	snprintf(head, sizeof(head), "pid %lld (%s) uid %lld %s", (long long)c->pid, c->comm,
	         (long long)c->uid, signame ? signame : "signal ?");
	if (error)
		log_line("%s: %s", head, error);
	else if (!s)
		log_line("%s: not stored (%s); core %lld", head, o->message, (long long)o->core_id);
	else if (strcmp(o->status, "ok") == 0 || strcmp(o->status, "partial") == 0)
		log_line("%s: stored %s (%llu bytes%s), core %lld %s, bucket %s: %s", head, s->path,
		         (unsigned long long)s->raw_bytes, s->truncated ? ", truncated" : "",
		         (long long)o->core_id, o->status, o->bucket, o->signature);
	else
		log_line("%s: stored %s (%llu bytes%s), core %lld %s: %s", head, s->path,
		         (unsigned long long)s->raw_bytes, s->truncated ? ", truncated" : "",
		         (long long)o->core_id, o->status, o->message);
}

static int run_hook(struct hook *h)
{
	struct cq_hook_result r;
	struct cq_error *err = cq_hook_run(&h->o, &r);
	const struct cq_store_outcome *o = &r.outcome;
	int rc = EXIT_OK;
	if (err) {
		report(h, &r, r.stored.path ? &r.stored : NULL, NULL, err->message);
		cq_error_free(err);
		rc = EXIT_INPUT;
	} else if (!r.stored.path) {
		report(h, &r, NULL, o, NULL); /* not stored, and recorded so */
	} else {
		report(h, &r, &r.stored, o, NULL);
		if (strcmp(o->status, "ok") != 0 && strcmp(o->status, "partial") != 0 &&
		    strcmp(o->status, "duplicate") != 0 && strcmp(o->status, "pending") != 0)
			rc = EXIT_INPUT;
	}
	cq_hook_result_free(&r);
	return rc;
}

/* A byte count, in plain digits. */
static int bytes_option(const char *cmd, const char *option, const char *arg, void *field)
{
	if (!parse_u64(arg, field))
		return cmd_usage_error(cmd, "%s takes a byte count, not '%s'", option, arg);
	return CMD_OPTS_GO_ON;
}

#define FIELD(f) offsetof(struct hook, f)

static const struct cmd_opt hook_options[] = {
    {"store", 0, CMD_OPT_STRING, FIELD(o.store_dir), "DIR",
     "where cores are kept (default: store in /etc/coreq/coreq.conf, else "
     "$XDG_STATE_HOME/coreq/cores, else /var/lib/coreq/cores for root, as the kernel runs it)",
     0, 0, NULL, NULL},
    CMD_ROW_DB(struct hook, o.db),
    {"cache", 0, CMD_OPT_STRING, FIELD(o.cache), "P", cmd_help_cache, 0, 0, NULL, cmd_more_cache},
    {"max-size", 0, CMD_OPT_CALL, FIELD(o.max_size), "BYTES",
     "store at most this much of a core (default 32 GiB)", 0, 0, bytes_option, NULL},
    {"timeout", 0, CMD_OPT_COUNT, FIELD(o.timeout), "SECONDS",
     "analysis time budget (default 120; 0 = none)", 0, 86400, NULL, NULL},
    {"memory-limit", 0, CMD_OPT_CALL, FIELD(o.memory), "BYTES",
     "analysis memory budget, RLIMIT_DATA (default 2 GiB; 0 = none)", 0, 0, bytes_option, NULL},
    {"max-analyses", 0, CMD_OPT_COUNT, FIELD(o.max_analyses), "N",
     "analyse at most N cores at once (default: the number of CPUs; 0 = store only).  In a "
     "crash storm the cores beyond are stored and recorded 'pending'; `coreq ingest DIR` of "
     "the store completes them",
     0, 1024, NULL, NULL},
    {"keep-free", 0, CMD_OPT_CALL, FIELD(o.keep_free), "BYTES",
     "leave this much free in the store's file system (default 1 GiB; 0 = no check): a core "
     "that would not fit is cut short, or not stored at all",
     0, 0, bytes_option, NULL},
    {"raw-memory", 0, CMD_OPT_CALL, FIELD(o.raw_memory), "BYTES",
     "keep up to this much of the raw core in memory for the analysis, which then overlaps "
     "the compression (default 0: the stored file is analysed, frame by frame, once it is "
     "written); a bigger core is analysed from that file",
     0, 0, bytes_option, NULL},
    {"format", 0, CMD_OPT_FORMAT, FIELD(format), "text|json",
     "the log line as text on stderr, or a JSON object on stdout", 0, 0, NULL, NULL},
    CMD_OPT_END,
};

static const struct cmd_spec hook_spec = {
    .name = "hook",
    .forms = "[OPTIONS] PID UID GID SIGNAL TIME RLIMIT HOSTNAME COMM",
    .about = "The kernel.core_pattern pipe handler:\n"
             "  kernel.core_pattern=|/usr/bin/coreq hook %P %u %g %s %t %c %h %e\n"
             "Reads a core from standard input and stores it first, zstd-compressed and\n"
             "named like systemd-coredump's cores (with user.coredump.* xattrs), in the\n"
             "store directory; records it in the database; and analyses and ingests it\n"
             "as `coreq ingest` would, in a child process with a time and memory budget.\n"
             "The child reads a raw copy kept in memory (or the input itself, when it is\n"
             "a regular file) while the stored copy is being compressed, and writes to\n"
             "the database only once the core is stored.\n"
             "If the analysis fails, the stored core and a 'failed' row with the reason\n"
             "remain, and `coreq ingest FILE` of the stored core can complete it later.\n"
             "RLIMIT 0 stores nothing and records that.  Logs one line per crash to\n"
             "standard error (syslog when there is none).\n",
    .opt = hook_options,
    /* stop at the first positional, so a negative-looking argument is data */
    .flags = CMD_SPEC_IN_ORDER,
};

int cmd_hook(int argc, char **argv)
{
	fill_standard_fds();
	/* The database holds every user's command lines: readable by root only. */
	umask(077);
	struct hook h = {.format = CMD_FORMAT_TEXT};
	cq_hook_options_init(&h.o);
	int rc = cmd_opts_parse(&hook_spec, argc, argv, &h);
	if (rc != CMD_OPTS_GO_ON)
		return rc;
	rc = parse_args(&h, argc - optind, argv + optind);
	if (rc != EXIT_OK)
		return rc;
	return run_hook(&h);
}
