/*
 * hook.c - `coreq hook`: the kernel.core_pattern pipe entry point.
 *
 *   kernel.core_pattern=|/usr/bin/coreq hook %P %u %g %s %t %c %h %e
 *
 * The core arrives on stdin.  Order matters, because nothing may be lost:
 * 1. the core is stored first (zstd, atomically, named and xattr'd as
 *    systemd-coredump would), and stdin is closed so the kernel can reap
 *    the crashed process;
 * 2. a placeholder row (status "pending") records it in the database;
 * 3. a child process analyses and ingests it, exactly as `coreq ingest
 *    FILE` would, under a time and memory budget.  The child reads the raw
 *    copy kept in memory while step 1 compresses (hook_analysis.c), so the
 *    analysis overlaps the compression and nothing is decompressed again;
 *    it writes nothing to the database before steps 1 and 2 are done;
 * 4. if the child fails or runs out of budget, the row says "failed" and
 *    why; a later `coreq ingest` of the stored file can complete it.
 * One line per crash goes to stderr (or syslog when there is no stderr).
 */
#include "cmd/cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "libcore/analysis/stacktrace.h"
#include "libcore/base/config.h"
#include "libcore/base/json.h"
#include "libcore/base/parse.h"
#include "libcore/db/cache.h"
#include "libcore/pipeline/ingest.h"
#include "libcore/triage/rules.h"
#include "libcore/capture/capture.h"
#include "libcore/base/paths.h"
#include "libcore/store/store.h"
#include "libcore/store/capture_rows.h"
#include "cmd/hook_analysis.h"

#define HOOK_STATE_DIR    "/var/lib/coreq"
#define DEFAULT_TIMEOUT   120
#define DEFAULT_MEMORY    (2ull << 30)
#define DEFAULT_MAX_SIZE  (32ull << 30)
#define DEFAULT_KEEP_FREE (1ull << 30)

static const char hook_usage[] =
    "Usage: coreq hook [--store DIR] [--db P] [--cache P] [--max-size BYTES] [--keep-free BYTES]\n"
    "                  [--timeout SECONDS] [--memory-limit BYTES] [--max-analyses N]\n"
    "                  [--raw-memory BYTES] [--format text|json]\n"
    "                  PID UID GID SIGNAL TIME RLIMIT HOSTNAME COMM\n"
    "\n"
    "The kernel.core_pattern pipe handler:\n"
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
    "standard error (syslog when there is none).\n"
    "\n"
    "  --store DIR          where cores are kept (default: store in /etc/coreq/coreq.conf,\n"
    "                       else " HOOK_STATE_DIR "/cores)\n"
    "  --db P               database (default: db in /etc/coreq/coreq.conf, else\n"
    "                       " HOOK_STATE_DIR "/coreq.db)\n"
    "  --cache P            unwind-table and symbol cache (default: cache in the\n"
    "                       configuration, else " HOOK_STATE_DIR "/cache.db)\n"
    "  --max-size BYTES     store at most this much of a core (default 32 GiB)\n"
    "  --timeout SECONDS    analysis time budget (default 120; 0 = none)\n"
    "  --memory-limit BYTES analysis memory budget, RLIMIT_DATA (default 2 GiB; 0 = none)\n"
    "  --max-analyses N     analyse at most N cores at once (default: the number of\n"
    "                       CPUs; 0 = store only).  In a crash storm the cores beyond\n"
    "                       are stored and recorded 'pending'; `coreq ingest DIR` of\n"
    "                       the store completes them\n"
    "  --keep-free BYTES    leave this much free in the store's file system (default\n"
    "                       1 GiB; 0 = no check): a core that would not fit is cut\n"
    "                       short, or not stored at all\n"
    "  --raw-memory BYTES   keep up to this much of the raw core in memory for the\n"
    "                       analysis (default: half of MemAvailable); a bigger core\n"
    "                       is analysed from the stored file after it is written;\n"
    "                       0 = always so\n"
    "  --format text|json   the log line as text on stderr, or a JSON object on stdout\n"
    "  --help               show this help\n";

enum {
	OPT_STORE = OPT_FIRST_COMMAND_SPECIFIC,
	OPT_DB,
	OPT_CACHE,
	OPT_MAX_SIZE,
	OPT_TIMEOUT,
	OPT_MEMORY,
	OPT_KEEP_FREE,
	OPT_MAX_ANALYSES,
	OPT_RAW_MEMORY,
};

struct hook {
	const char *store_dir, *db, *cache;
	uint64_t max_size, memory, keep_free;
	unsigned timeout, max_analyses;
	uint64_t raw_memory;       /* room for the raw copy the analysis reads (0: none) */
	int64_t analysed_as;       /* the uid the analysis ran as; -1: none ran */
	const char *analysed_from; /* "input file", "memory", "stored file", or NULL: none ran */
	enum cmd_format format;
	struct cq_capture cap;
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
	struct cq_capture *c = &h->cap;
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
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	char line[64];
	if (f && fgets(line, sizeof(line), f)) {
		size_t n = 0;
		for (char *p = line; *p && n < 32; p++)
			if (*p != '-' && *p != '\n')
				c->boot_id[n++] = *p;
		c->boot_id[n == 32 ? 32 : 0] = 0;
	}
	if (f)
		fclose(f);
	return EXIT_OK;
}

/* What the database says about the stored core after the analysis. */
static struct cq_error *read_outcome(const struct hook *h, const char *path,
                                     struct cq_store_outcome *o)
{
	struct cq_store *store;
	struct cq_error *err = cmd_open_store(h->db, &store);
	if (err)
		return err;
	err = cq_store_stored_outcome(store, path, o);
	cq_store_close(store);
	return err;
}

static void report(const struct hook *h, const struct cq_capture_stored *s,
                   const struct cq_store_outcome *o, const char *error)
{
	const struct cq_capture *c = &h->cap;
	if (h->format == CMD_FORMAT_JSON) {
		struct cq_json j;
		cq_json_init(&j, stdout);
		cq_json_object_begin(&j);
		cq_json_key(&j, "pid");
		cq_json_int(&j, c->pid);
		cq_json_key(&j, "analysis_uid");
		if (h->analysed_as >= 0)
			cq_json_int(&j, h->analysed_as);
		else
			cq_json_null(&j);
		cq_json_key(&j, "analysed_from");
		cq_json_string(&j, h->analysed_from);
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

/*
 * One of max slots for an analysis: a lock file .analysis-slot-N in the
 * store (hidden, so directory ingests pass it by), held with flock for as
 * long as the returned descriptor is open; the kernel drops it when the
 * hook dies.  -1 when every slot is taken.
 */
static int take_analysis_slot(const char *store_dir, unsigned max)
{
	for (unsigned i = 0; i < max; i++) {
		char *path;
		if (asprintf(&path, "%s/.analysis-slot-%u", store_dir, i) < 0)
			return -1;
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		free(path);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return fd;
		close(fd);
	}
	return -1;
}

/* Records a crash whose core is not kept: a not_stored row saying why. */
static struct cq_error *record_not_stored(const struct hook *h, const char *why, int64_t *id)
{
	char name[512], *path = NULL;
	struct cq_error *err = cq_capture_systemd_name(&h->cap, 0, name, sizeof(name), "");
	if (!err && asprintf(&path, "%s/%s", h->store_dir, name) < 0)
		err = &cq_error_nomem;
	struct cq_store *store;
	if (!err && !(err = cmd_open_store(h->db, &store))) {
		err = cq_store_placeholder(store, &h->cap, path, 0, "not_stored", why, id);
		cq_store_close(store);
	}
	free(path);
	return err;
}

/* Half of MemAvailable: the default room for the raw copy (0 when unknown). */
static uint64_t default_raw_memory(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[128];
	unsigned long long kib = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return (uint64_t)kib * 1024 / 2;
}

/*
 * Whether the core comes as a regular file, at its start, that will be
 * stored whole (limit 0: no limit): then the analysis reads it in place.
 */
static bool input_is_whole_file(uint64_t limit)
{
	struct stat st;
	return fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode) &&
	       lseek(STDIN_FILENO, 0, SEEK_CUR) == 0 &&
	       (limit == 0 || (uint64_t)st.st_size <= limit);
}

/*
 * The whole core is in memory: the analysis may start, and the kernel may
 * finish with the crashed process now rather than after the compression.
 */
static void raw_complete(void *arg, uint64_t size)
{
	hook_analysis_raw_complete(arg, size);
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull >= 0) {
		dup2(devnull, STDIN_FILENO); /* fd 0 stays taken, see fill_standard_fds */
		close(devnull);
	}
}

static int run_hook(struct hook *h)
{
	struct cq_error *err = cq_path_make_parent_dirs(h->db);
	char *probe = NULL;
	if (!err && asprintf(&probe, "%s/x", h->store_dir) < 0)
		err = &cq_error_nomem;
	if (!err)
		err = cq_path_make_parent_dirs(probe);
	free(probe);
	/* Rows name the stored file by its absolute path, as `coreq ingest` does. */
	char *store_abs = err ? NULL : realpath(h->store_dir, NULL);
	if (!err && !store_abs)
		err = cq_error_errno(errno, "cannot resolve %s", h->store_dir);
	if (store_abs)
		h->store_dir = store_abs;
	struct cq_capture_stored s = {0};
	struct cq_store_outcome o = {0};
	int64_t id = 0;
	bool no_room = false;
	uint64_t limit = err ? 0
	                     : cq_capture_store_limit(h->store_dir, h->max_size, h->cap.rlimit,
	                                              h->keep_free, &no_room);
	const char *not_stored = h->cap.rlimit == 0 ? "RLIMIT_CORE is 0: core not stored"
	                         : no_room ? "less than --keep-free bytes free in the store"
	                                   : NULL;
	/*
	 * The analysis starts before the core is stored: it reads the raw copy
	 * while the stored one is compressed, and records nothing until the
	 * core is stored.
	 */
	struct hook_analysis_config acfg = {.store_dir = h->store_dir,
	                                    .db = h->db,
	                                    .cache = h->cache,
	                                    .memory = h->memory,
	                                    .timeout = h->timeout,
	                                    .cap = &h->cap};
	struct hook_analysis an;
	bool analysing = false;
	char not_started[160] = "";
	int slot = err || not_stored || !h->max_analyses
	               ? -1
	               : take_analysis_slot(h->store_dir, h->max_analyses);
	int input_file = input_is_whole_file(limit) ? STDIN_FILENO : -1;
	if (slot >= 0) {
		struct cq_error *aerr = hook_analysis_start(&acfg, h->raw_memory, input_file, &an);
		analysing = aerr == NULL;
		if (aerr)
			snprintf(not_started, sizeof(not_started), "analysis not started: %s",
			         aerr->message);
		cq_error_free(aerr);
	}
	struct cq_capture_raw raw = {.fd = analysing ? an.memfd : -1,
	                             .budget = h->raw_memory,
	                             .complete = raw_complete,
	                             .arg = &an};
	if (!err && !not_stored)
		err = cq_capture_store(STDIN_FILENO, h->store_dir, &h->cap, limit,
		                       analysing && !an.from_input ? &raw : NULL, &s);
	/* The core is on disk (or will not be): let the kernel finish with the process. */
	close(STDIN_FILENO);
	if (!err && not_stored) {
		err = record_not_stored(h, not_stored, &id);
		o.core_id = id;
		snprintf(o.message, sizeof(o.message), "%s", not_stored);
		if (!err) {
			report(h, NULL, &o, NULL);
			free(store_abs);
			return EXIT_OK;
		}
	} else if (err && store_abs) {
		/* Storing failed (disk full, I/O error): the crash is still recorded. */
		int64_t ignored;
		struct cq_error *rerr = record_not_stored(h, err->message, &ignored);
		if (rerr) {
			err = cq_error_create(err->code, "%s; recording that failed too: %s",
			                      err->message, rerr->message);
			cq_error_free(rerr);
		}
	}
	struct cq_store *store;
	if (!err && !(err = cmd_open_store(h->db, &store))) {
		err = cq_store_placeholder(
		    store, &h->cap, s.path, s.raw_bytes, "pending",
		    s.truncated ? "stored truncated at the size limit" : NULL, &id);
		cq_store_close(store);
	}
	h->analysed_as = -1;
	if (analysing) {
		hook_analysis_stored(&an, err ? NULL : s.path);
		h->analysed_from = an.from_input    ? "input file"
		                   : an.from_memory ? "memory"
		                                    : "stored file";
		struct cq_error *aerr =
		    hook_analysis_finish(&acfg, &an, err ? NULL : s.path, &h->analysed_as);
		if (!err)
			err = aerr;
		else
			cq_error_free(aerr);
		if (h->analysed_as < 0)
			h->analysed_from = NULL;
	}
	if (slot >= 0)
		close(slot);
	if (!err)
		err = read_outcome(h, s.path, &o);
	if (!err && !analysing && strcmp(o.status, "pending") == 0)
		snprintf(o.message, sizeof(o.message), "%s",
		         not_started[0] ? not_started : "analysis deferred");
	if (!err && slot < 0 && strcmp(o.status, "pending") == 0)
		snprintf(o.message, sizeof(o.message),
		         "analysis deferred (%u running): `coreq ingest %s` completes it",
		         h->max_analyses, h->store_dir);
	if (!err && !o.core_id) {
		/* The placeholder went away with no row of its own: a core stored before. */
		snprintf(o.status, sizeof(o.status), "duplicate");
		snprintf(o.message, sizeof(o.message), "the same core is already in the database");
	}
	int rc = EXIT_OK;
	if (err) {
		report(h, s.path ? &s : NULL, NULL, err->message);
		cq_error_free(err);
		rc = EXIT_INPUT;
	} else {
		report(h, &s, &o, NULL);
		if (strcmp(o.status, "ok") != 0 && strcmp(o.status, "partial") != 0 &&
		    strcmp(o.status, "duplicate") != 0 && strcmp(o.status, "pending") != 0)
			rc = EXIT_INPUT;
	}
	free(s.path);
	free(store_abs);
	return rc;
}

int cmd_hook(int argc, char **argv)
{
	fill_standard_fds();
	/* The database holds every user's command lines: readable by root only. */
	umask(077);
	static const struct option longopts[] = {
	    {"store", required_argument, NULL, OPT_STORE},
	    {"db", required_argument, NULL, OPT_DB},
	    {"cache", required_argument, NULL, OPT_CACHE},
	    {"max-size", required_argument, NULL, OPT_MAX_SIZE},
	    {"timeout", required_argument, NULL, OPT_TIMEOUT},
	    {"memory-limit", required_argument, NULL, OPT_MEMORY},
	    {"keep-free", required_argument, NULL, OPT_KEEP_FREE},
	    {"max-analyses", required_argument, NULL, OPT_MAX_ANALYSES},
	    {"raw-memory", required_argument, NULL, OPT_RAW_MEMORY},
	    {"format", required_argument, NULL, OPT_FORMAT},
	    {"help", no_argument, NULL, OPT_HELP},
	    {NULL, 0, NULL, 0},
	};
	struct hook h = {
	    .store_dir = cq_config_get("store") ? cq_config_get("store") : HOOK_STATE_DIR "/cores",
	    .db = cq_config_get("db") ? cq_config_get("db") : HOOK_STATE_DIR "/coreq.db",
	    .cache = cq_config_get("cache") ? cq_config_get("cache") : HOOK_STATE_DIR "/cache.db",
	    .max_size = DEFAULT_MAX_SIZE,
	    .memory = DEFAULT_MEMORY,
	    .keep_free = DEFAULT_KEEP_FREE,
	    .timeout = DEFAULT_TIMEOUT,
	    .max_analyses = 0,
	    .analysed_as = -1,
	    .raw_memory = default_raw_memory(),
	};
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	h.max_analyses = cpus > 0 && cpus < 1024 ? (unsigned)cpus : 1;
	cq_capture_init(&h.cap);
	int opt;
	uint64_t v;
	/* "+": stop at the first positional, so a negative-looking argument is data. */
	while ((opt = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		if (opt == 'h')
			opt = OPT_HELP;
		switch (opt) {
		case OPT_HELP:
			fputs(hook_usage, stdout);
			return EXIT_OK;
		case OPT_FORMAT:
			if (!cmd_parse_format(optarg, &h.format, "hook"))
				return EXIT_USAGE;
			break;
		case OPT_STORE:
			h.store_dir = optarg;
			break;
		case OPT_DB:
			h.db = optarg;
			break;
		case OPT_CACHE:
			h.cache = optarg;
			break;
		case OPT_MAX_SIZE:
		case OPT_MEMORY:
		case OPT_KEEP_FREE:
		case OPT_RAW_MEMORY:
			if (!parse_u64(optarg, &v))
				return cmd_usage_error("hook", "%s takes a byte count, not '%s'",
				                       opt == OPT_MAX_SIZE    ? "--max-size"
				                       : opt == OPT_MEMORY    ? "--memory-limit"
				                       : opt == OPT_KEEP_FREE ? "--keep-free"
				                                              : "--raw-memory",
				                       optarg);
			*(opt == OPT_MAX_SIZE    ? &h.max_size
			  : opt == OPT_MEMORY    ? &h.memory
			  : opt == OPT_KEEP_FREE ? &h.keep_free
			                         : &h.raw_memory) = v;
			break;
		case OPT_TIMEOUT:
			if (!cmd_parse_count(optarg, 0, 86400, &h.timeout, "hook", "--timeout"))
				return EXIT_USAGE;
			break;
		case OPT_MAX_ANALYSES:
			if (!cmd_parse_count(optarg, 0, 1024, &h.max_analyses, "hook",
			                     "--max-analyses"))
				return EXIT_USAGE;
			break;
		default:
			return cmd_option_error("hook", opt, argv);
		}
	}
	int rc = parse_args(&h, argc - optind, argv + optind);
	if (rc != EXIT_OK)
		return rc;
	return run_hook(&h);
}
