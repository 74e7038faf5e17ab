/*
 * hook_analysis.c - the hook's analysis child and the channel that tells it
 * when the raw copy is complete and where the core was stored (see
 * hook_analysis.h).
 */
#include "cmd/hook_analysis.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "libcore/analysis/stacktrace.h"
#include "libcore/capture/capture.h"
#include "libcore/pipeline/ingest.h"
#include "libcore/store/capture_rows.h"
#include "libcore/store/store.h"
#include "libcore/triage/rules.h"

#define MSG_RAW    'R' /* the raw copy is complete */
#define MSG_STORED 'S' /* followed by a u32 length and the stored path */

/*
 * The account the analysis runs as when the hook is root: the crashed
 * process's own uid and gid, so that a core crafted to exploit a parser bug
 * gains nothing its owner did not have.  Every uid but 0 is dropped to,
 * container ranges mapped high (up to 2^32 - 2) included; an id the kernel
 * could not have passed (negative, or (uid_t)-1 and above) drops to
 * nobody's 65534 instead of staying root.  False when no drop applies: the
 * hook is not root, or the crash was root's own.
 */
#define ANALYSIS_FALLBACK_ID 65534u
#define LINUX_ID_MAX         0xfffffffeLL /* (uid_t)-1 means "no change" to setuid */

static bool analysis_account(const struct cq_capture *c, uid_t *uid, gid_t *gid)
{
	if (geteuid() != 0 || c->uid == 0)
		return false;
	bool uid_ok = c->uid > 0 && c->uid <= LINUX_ID_MAX;
	bool gid_ok = uid_ok && c->gid >= 0 && c->gid <= LINUX_ID_MAX;
	*uid = uid_ok ? (uid_t)c->uid : ANALYSIS_FALLBACK_ID;
	*gid = gid_ok ? (gid_t)c->gid : ANALYSIS_FALLBACK_ID;
	return true;
}

/* Sends or reads all len bytes over the channel; false if it ended first. */
static bool transfer_all(int fd, void *buf, size_t len, bool sending)
{
	char *p = buf;
	while (len > 0) {
		/* MSG_NOSIGNAL: a child that died must not take the hook with it */
		ssize_t n = sending ? send(fd, p, len, MSG_NOSIGNAL) : read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

static bool send_all(int fd, const void *buf, size_t len)
{
	return transfer_all(fd, (void *)buf, len, true);
}

static bool read_all(int fd, void *buf, size_t len)
{
	return transfer_all(fd, buf, len, false);
}

/* The path after MSG_STORED (malloc'd), or NULL when the channel ends. */
static char *read_stored_path(int ctl)
{
	uint32_t len;
	if (!read_all(ctl, &len, sizeof(len)) || len == 0 || len > 1u << 16)
		return NULL;
	char *path = malloc((size_t)len + 1);
	if (!path || !read_all(ctl, path, len)) {
		free(path);
		return NULL;
	}
	path[len] = 0;
	return path;
}

/* ingest's await_stored: the analysis clock stops while the parent compresses. */
static struct cq_error *await_stored(void *arg, char **stored_path)
{
	int ctl = *(int *)arg;
	unsigned left = alarm(0);
	char msg;
	char *path = read_all(ctl, &msg, 1) && msg == MSG_STORED ? read_stored_path(ctl) : NULL;
	if (left)
		alarm(left);
	if (!path)
		return cq_error_create(CQ_ERR_IO, "the core was not stored");
	*stored_path = path;
	return NULL;
}

/* The stored path, waiting for it if need be; NULL when the core was not stored. */
static char *stored_path_now(int ctl, char *path)
{
	if (path)
		return path;
	struct cq_error *err = await_stored(&ctl, &path);
	if (err) {
		cq_error_free(err);
		return NULL;
	}
	return path;
}

/*
 * Child: wait for the raw copy or the stored file, then ingest within the
 * budget.  Exit 0 stored (or nothing to do), 1 failed.  Everything that
 * needs root is opened first: the database and the cache (SQLite keeps
 * writing through the open descriptors), the core (read as standard input)
 * and a spool directory the account owns; then the child drops to the
 * account and only then reads the core.  It writes the uid it analyses as
 * to report_fd.
 */
static void analyse_child(const struct hook_analysis_config *cfg, int ctl, int memfd,
                          const char *spool_dir, int report_fd)
{
	/* The kernel waits for every reader of the core's pipe: this is not one. */
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull >= 0) {
		dup2(devnull, STDIN_FILENO);
		dup2(devnull, STDOUT_FILENO);
		dup2(devnull, STDERR_FILENO);
	}
	char msg;
	if (!read_all(ctl, &msg, 1))
		_exit(0); /* not stored: the parent records that */
	bool from_memory = msg == MSG_RAW;
	char *path = from_memory ? NULL : msg == MSG_STORED ? read_stored_path(ctl) : NULL;
	if (!from_memory && !path)
		_exit(0);
	if (cfg->timeout)
		alarm(cfg->timeout);
#ifndef __SANITIZE_ADDRESS__ /* ASan's shadow memory counts as data */
	if (cfg->memory) {
		struct rlimit rl = {.rlim_cur = cfg->memory, .rlim_max = cfg->memory};
		setrlimit(RLIMIT_DATA, &rl);
	}
#endif
	/* Decompression spools into the store's file system, not /tmp. */
	setenv("TMPDIR", spool_dir ? spool_dir : cfg->store_dir, 1);
	struct cmd_core_opts copts;
	struct cq_stack_options so;
	cmd_core_opts_init(&copts);
	cq_stack_options_default(&so);
	struct cq_store *store;
	struct cq_error *err = cmd_open_store(cfg->db, &store);
	if (err)
		_exit(2);
	so.cache = cmd_open_cache(cfg->cache);
	struct cq_bucket_rules *rules;
	if ((err = cq_bucket_rules_load(NULL, &rules))) {
		/* The core is stored; a later `coreq ingest` analyses it with good rules. */
		int64_t id;
		if ((path = stored_path_now(ctl, path)))
			cq_error_free(
			    cq_store_placeholder_failed(store, path, err->message, false, &id));
		_exit(1);
	}
	struct cq_ingest_options io = {.core = &copts.core,
	                               .stacks = &so,
	                               .signature_frames = CQ_BUCKET_DEFAULT_FRAMES,
	                               .rules = rules,
	                               .capture_override = cfg->cap};
	const char *read_path = path;
	int fd = -1;
	if (from_memory) {
		/* Read-only, as the stored file would be; the memfd itself is writable. */
		char self[64];
		snprintf(self, sizeof(self), "/proc/self/fd/%d", memfd);
		fd = open(self, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			fd = dup(memfd);
		io.await_stored = await_stored;
		io.await_arg = &ctl;
	}
	uid_t uid;
	gid_t gid;
	bool drop = spool_dir && analysis_account(cfg->cap, &uid, &gid);
	if (drop) {
		/* The store is root's alone: reach the spool directory through an fd. */
		int dir = open(spool_dir, O_RDONLY | O_DIRECTORY);
		char via_fd[64];
		snprintf(via_fd, sizeof(via_fd), "/proc/self/fd/%d", dir);
		if (dir >= 0)
			setenv("TMPDIR", via_fd, 1);
		if (!from_memory)
			fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		int64_t id;
		/* Warm both databases so their -wal and -shm files are open before the drop. */
		cq_error_free(cq_store_find_core(store, "-", &id));
		if (fd < 0 || setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0 ||
		    getuid() != uid || geteuid() != uid) {
			if (!(path = stored_path_now(ctl, path)))
				_exit(1);
			cq_error_free(cq_store_placeholder_failed(
			    store, path, "cannot drop privileges for the analysis", false, &id));
			_exit(1);
		}
	}
	if (fd >= 0) {
		if (dup2(fd, STDIN_FILENO) < 0)
			_exit(1);
		close(fd);
		read_path = "-";
		io.stored_path = path;
	}
	if (memfd >= 0)
		close(memfd);
	uint32_t me = (uint32_t)geteuid();
	if (write(report_fd, &me, sizeof(me)) != (ssize_t)sizeof(me))
		me = 0;
	close(report_fd);
	struct cq_ingest_result res;
	err = read_path ? cq_ingest_core(store, read_path, &io, &res)
	                : cq_error_create(CQ_ERR_IO, "cannot open the raw copy");
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
static char *spool_dir_for(const struct hook_analysis_config *cfg)
{
	uid_t uid;
	gid_t gid;
	char *dir = NULL;
	if (!analysis_account(cfg->cap, &uid, &gid) ||
	    asprintf(&dir, "%s/.spool-XXXXXX", cfg->store_dir) < 0)
		return NULL;
	if (!mkdtemp(dir) || chown(dir, uid, gid) != 0) {
		rmdir(dir);
		free(dir);
		return NULL;
	}
	return dir;
}

static void analysis_close(struct hook_analysis *an)
{
	if (an->ctl >= 0)
		close(an->ctl);
	if (an->report >= 0)
		close(an->report);
	if (an->memfd >= 0)
		close(an->memfd);
	if (an->spool_dir) {
		rmdir(an->spool_dir); /* empty: spool files are unlinked temporaries */
		free(an->spool_dir);
	}
	an->ctl = an->report = an->memfd = -1;
	an->spool_dir = NULL;
}

struct cq_error *hook_analysis_start(const struct hook_analysis_config *cfg, uint64_t raw_memory,
                                     int input_file, struct hook_analysis *an)
{
	memset(an, 0, sizeof(*an));
	an->ctl = an->report = an->memfd = -1;
	an->pid = -1;
	int ctl[2], report[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) != 0)
		return cq_error_errno(errno, "cannot make a channel for the analysis");
	if (pipe2(report, O_CLOEXEC) != 0) {
		struct cq_error *err = cq_error_errno(errno, "cannot make a pipe for the analysis");
		close(ctl[0]);
		close(ctl[1]);
		return err;
	}
	an->ctl = ctl[0];
	an->report = report[0];
	/* No memfd, no raw copy: the child then reads the stored file. */
	if (input_file >= 0)
		an->from_input = (an->memfd = fcntl(input_file, F_DUPFD_CLOEXEC, 3)) >= 0;
	else if (raw_memory)
		an->memfd = memfd_create("coreq-raw-core", MFD_CLOEXEC);
	an->spool_dir = spool_dir_for(cfg);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		close(ctl[0]);
		close(report[0]);
		analyse_child(cfg, ctl[1], an->memfd, an->spool_dir, report[1]);
	}
	close(ctl[1]);
	close(report[1]);
	if (pid < 0) {
		struct cq_error *err = cq_error_errno(errno, "cannot fork the analysis");
		analysis_close(an);
		return err;
	}
	an->pid = pid;
	if (an->from_input)
		hook_analysis_raw_complete(an,
		                           0); /* the input file is the raw copy, whole already */
	return NULL;
}

void hook_analysis_raw_complete(void *arg, uint64_t size)
{
	struct hook_analysis *an = arg;
	(void)size;
	char msg = MSG_RAW;
	an->from_memory = an->ctl >= 0 && send_all(an->ctl, &msg, 1);
}

void hook_analysis_stored(struct hook_analysis *an, const char *path)
{
	if (an->ctl < 0)
		return;
	if (path) {
		char msg = MSG_STORED;
		size_t len = strlen(path);
		uint32_t n = (uint32_t)len;
		if (len <= 1u << 16 && send_all(an->ctl, &msg, 1))
			if (send_all(an->ctl, &n, sizeof(n)))
				send_all(an->ctl, path, len);
	}
	close(an->ctl); /* an end of messages; alone, "not stored" */
	an->ctl = -1;
	/* The child has its own descriptor: the raw copy goes when it is done. */
	if (an->memfd >= 0)
		close(an->memfd);
	an->memfd = -1;
}

struct cq_error *hook_analysis_finish(const struct hook_analysis_config *cfg,
                                      struct hook_analysis *an, const char *path,
                                      int64_t *analysed_as)
{
	if (an->ctl >= 0)
		hook_analysis_stored(an, NULL);
	uint32_t as;
	ssize_t got;
	while ((got = read(an->report, &as, sizeof(as))) < 0 && errno == EINTR)
		;
	*analysed_as = got == (ssize_t)sizeof(as) ? (int64_t)as : -1;
	int status;
	int waited;
	while ((waited = waitpid(an->pid, &status, 0)) < 0 && errno == EINTR)
		;
	analysis_close(an);
	if (waited < 0)
		return cq_error_errno(errno, "cannot wait for the analysis");
	if (!path)
		return NULL; /* nothing stored, nothing for the child to record */
	char reason[160] = "";
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
		snprintf(reason, sizeof(reason), "analysis exceeded its time budget of %u s",
		         cfg->timeout);
	else if (WIFSIGNALED(status))
		snprintf(reason, sizeof(reason),
		         "analysis killed by signal %d (memory budget %llu bytes)",
		         WTERMSIG(status), (unsigned long long)cfg->memory);
	else if (WEXITSTATUS(status) != 0)
		/* Status 1: the child failed and normally recorded why; keep that. */
		snprintf(reason, sizeof(reason),
		         "analysis failed (exit status %d, memory budget %llu bytes)",
		         WEXITSTATUS(status), (unsigned long long)cfg->memory);
	if (!reason[0])
		return NULL;
	struct cq_store *store;
	struct cq_error *err = cmd_open_store(cfg->db, &store);
	if (err)
		return err;
	int64_t id;
	err = cq_store_placeholder_failed(store, path, reason, WIFEXITED(status), &id);
	cq_store_close(store);
	return err;
}
