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
 * 3. a child process analyses and ingests the stored file, exactly as
 *    `coreq ingest FILE` would, under a time and memory budget;
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

#define HOOK_STATE_DIR    "/var/lib/coreq"
#define DEFAULT_TIMEOUT   120
#define DEFAULT_MEMORY    (2ull << 30)
#define DEFAULT_MAX_SIZE  (32ull << 30)
#define DEFAULT_KEEP_FREE (1ull << 30)

static const char hook_usage[] =
    "Usage: coreq hook [--store DIR] [--db P] [--cache P] [--max-size BYTES] [--keep-free BYTES]\n"
    "                  [--timeout SECONDS] [--memory-limit BYTES] [--max-analyses N]\n"
    "                  [--format text|json]\n"
    "                  PID UID GID SIGNAL TIME RLIMIT HOSTNAME COMM\n"
    "\n"
    "The kernel.core_pattern pipe handler:\n"
    "  kernel.core_pattern=|/usr/bin/coreq hook %P %u %g %s %t %c %h %e\n"
    "Reads a core from standard input and stores it first, zstd-compressed and\n"
    "named like systemd-coredump's cores (with user.coredump.* xattrs), in the\n"
    "store directory; records it in the database; then analyses and ingests it\n"
    "as `coreq ingest` would, in a child process with a time and memory budget.\n"
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
};

struct hook {
	const char *store_dir, *db, *cache;
	uint64_t max_size, memory, keep_free;
	unsigned timeout, max_analyses;
	int64_t analysed_as; /* the uid the analysis ran as; -1: none ran */
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

/*
 * The account the analysis runs as when the hook is root: the crashed
 * process's own uid and gid (never root's), so that a core crafted to
 * exploit a parser bug gains nothing its owner did not have.  False when
 * no drop applies (not root, or the crash was root's).
 */
static bool analysis_account(const struct hook *h, uid_t *uid, gid_t *gid)
{
	if (geteuid() != 0 || h->cap.uid <= 0 || h->cap.gid < 0 || h->cap.uid > INT32_MAX ||
	    h->cap.gid > INT32_MAX)
		return false;
	*uid = (uid_t)h->cap.uid;
	*gid = (gid_t)h->cap.gid;
	return true;
}

/*
 * Child: ingest the stored file within the budget.  Exit 0 stored, 1 failed.
 * Everything that needs root is opened first: the database and the cache
 * (SQLite keeps writing through the open descriptors), the stored core (read
 * as standard input) and a spool directory the account owns; then the child
 * drops to the account and only then reads the core.  It writes the uid it
 * analyses as to report_fd.
 */
static void analyse_child(const struct hook *h, const char *path, const char *spool_dir,
                          int report_fd)
{
	if (h->timeout)
		alarm(h->timeout);
#ifndef __SANITIZE_ADDRESS__ /* ASan's shadow memory counts as data */
	if (h->memory) {
		struct rlimit rl = {.rlim_cur = h->memory, .rlim_max = h->memory};
		setrlimit(RLIMIT_DATA, &rl);
	}
#endif
	/* Decompression spools into the store's file system, not /tmp. */
	setenv("TMPDIR", spool_dir ? spool_dir : h->store_dir, 1);
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull >= 0) {
		dup2(devnull, STDOUT_FILENO);
		dup2(devnull, STDERR_FILENO);
	}
	struct cmd_core_opts copts;
	struct cq_stack_options so;
	cmd_core_opts_init(&copts);
	cq_stack_options_default(&so);
	struct cq_store *store;
	struct cq_error *err = cmd_open_store(h->db, &store);
	if (err)
		_exit(2);
	so.cache = cmd_open_cache(h->cache);
	struct cq_bucket_rules *rules;
	if ((err = cq_bucket_rules_load(NULL, &rules))) {
		/* The core is stored; a later `coreq ingest` analyses it with good rules. */
		int64_t id;
		cq_error_free(cq_store_placeholder_failed(store, path, err->message, false, &id));
		_exit(1);
	}
	struct cq_ingest_options io = {.core = &copts.core,
	                               .stacks = &so,
	                               .signature_frames = CQ_BUCKET_DEFAULT_FRAMES,
	                               .rules = rules,
	                               .capture_override = &h->cap};
	const char *read_path = path;
	uid_t uid;
	gid_t gid;
	if (spool_dir && analysis_account(h, &uid, &gid)) {
		/* The store is root's alone: reach the spool directory through an fd. */
		int dir = open(spool_dir, O_RDONLY | O_DIRECTORY);
		char via_fd[64];
		snprintf(via_fd, sizeof(via_fd), "/proc/self/fd/%d", dir);
		if (dir >= 0)
			setenv("TMPDIR", via_fd, 1);
		int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		int64_t id;
		/* Warm both databases so their -wal and -shm files are open before the drop. */
		cq_error_free(cq_store_find_core(store, "-", &id));
		if (fd < 0 || dup2(fd, STDIN_FILENO) < 0 || setgroups(0, NULL) != 0 ||
		    setgid(gid) != 0 || setuid(uid) != 0 || getuid() != uid || geteuid() != uid) {
			cq_error_free(cq_store_placeholder_failed(
			    store, path, "cannot drop privileges for the analysis", false, &id));
			_exit(1);
		}
		close(fd);
		read_path = "-";
		io.stored_path = path;
	}
	uint32_t me = (uint32_t)geteuid();
	if (write(report_fd, &me, sizeof(me)) != (ssize_t)sizeof(me))
		me = 0;
	close(report_fd);
	struct cq_ingest_result res;
	err = cq_ingest_core(store, read_path, &io, &res);
	cq_ingest_result_free(&res);
	cq_bucket_rules_free(rules);
	cmd_close_cache(so.cache);
	cq_store_close(store);
	_exit(err ? 1 : 0);
}

/*
 * A private spool directory in the store for an analysis that drops to
 * uid/gid (owned by them, removed by the parent), or NULL when none drops.
 */
static char *spool_dir_for(const struct hook *h)
{
	uid_t uid;
	gid_t gid;
	char *dir = NULL;
	if (!analysis_account(h, &uid, &gid) ||
	    asprintf(&dir, "%s/.spool-XXXXXX", h->store_dir) < 0)
		return NULL;
	if (!mkdtemp(dir) || chown(dir, uid, gid) != 0) {
		rmdir(dir);
		free(dir);
		return NULL;
	}
	return dir;
}

/* Runs the analysis in a child; on a failure the child could not record, records it. */
static struct cq_error *analyse(const struct hook *h, const char *path, int64_t *analysed_as)
{
	fflush(NULL);
	int report[2];
	if (pipe2(report, O_CLOEXEC) != 0)
		return cq_error_errno(errno, "cannot make a pipe for the analysis");
	char *spool_dir = spool_dir_for(h);
	pid_t pid = fork();
	if (pid < 0) {
		struct cq_error *err = cq_error_errno(errno, "cannot fork the analysis");
		close(report[0]);
		close(report[1]);
		if (spool_dir)
			rmdir(spool_dir);
		free(spool_dir);
		struct cq_store *store;
		int64_t id;
		struct cq_error *rerr = cmd_open_store(h->db, &store);
		if (!rerr) {
			rerr = cq_store_placeholder_failed(store, path, err->message, false, &id);
			cq_store_close(store);
		}
		if (rerr) {
			struct cq_error *both =
			    cq_error_create(err->code, "%s; recording that failed too: %s",
			                    err->message, rerr->message);
			cq_error_free(rerr);
			cq_error_free(err);
			return both;
		}
		return err;
	}
	if (pid == 0) {
		close(report[0]);
		analyse_child(h, path, spool_dir, report[1]);
	}
	close(report[1]);
	uint32_t as;
	ssize_t got;
	while ((got = read(report[0], &as, sizeof(as))) < 0 && errno == EINTR)
		;
	*analysed_as = got == (ssize_t)sizeof(as) ? (int64_t)as : -1;
	close(report[0]);
	int status;
	int waited;
	while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
		;
	if (spool_dir) {
		rmdir(spool_dir); /* empty: spool files are unlinked temporaries */
		free(spool_dir);
	}
	if (waited < 0)
		return cq_error_errno(errno, "cannot wait for the analysis");
	char reason[160] = "";
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
		snprintf(reason, sizeof(reason), "analysis exceeded its time budget of %u s",
		         h->timeout);
	else if (WIFSIGNALED(status))
		snprintf(reason, sizeof(reason),
		         "analysis killed by signal %d (memory budget %llu bytes)",
		         WTERMSIG(status), (unsigned long long)h->memory);
	else if (WEXITSTATUS(status) != 0)
		/* Status 1: the child failed and normally recorded why; keep that. */
		snprintf(reason, sizeof(reason),
		         "analysis failed (exit status %d, memory budget %llu bytes)",
		         WEXITSTATUS(status), (unsigned long long)h->memory);
	if (!reason[0])
		return NULL;
	struct cq_store *store;
	struct cq_error *err = cmd_open_store(h->db, &store);
	if (err)
		return err;
	int64_t id;
	err = cq_store_placeholder_failed(store, path, reason, WIFEXITED(status), &id);
	cq_store_close(store);
	return err;
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
	if (!err && !not_stored)
		err = cq_capture_store(STDIN_FILENO, h->store_dir, &h->cap, limit, &s);
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
	int slot = err || !h->max_analyses ? -1 : take_analysis_slot(h->store_dir, h->max_analyses);
	h->analysed_as = -1;
	if (!err && slot >= 0)
		err = analyse(h, s.path, &h->analysed_as);
	if (slot >= 0)
		close(slot);
	if (!err)
		err = read_outcome(h, s.path, &o);
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
			if (!parse_u64(optarg, &v))
				return cmd_usage_error("hook", "%s takes a byte count, not '%s'",
				                       opt == OPT_MAX_SIZE ? "--max-size"
				                       : opt == OPT_MEMORY ? "--memory-limit"
				                                           : "--keep-free",
				                       optarg);
			*(opt == OPT_MAX_SIZE ? &h.max_size
			  : opt == OPT_MEMORY ? &h.memory
			                      : &h.keep_free) = v;
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
