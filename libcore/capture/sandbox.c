/*
 * sandbox.c - the hook's analysis child: its process, account, limits and
 * the channel with the parent (see sandbox.h).
 */
#include "libcore/capture/sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libcore/base/write_all.h"
#include "libcore/capture/capture.h"

/* Parent to child, on the channel. */
#define MSG_RAW    'R' /* the raw copy is complete */
#define MSG_STORED 'S' /* followed by a u32 length and the stored path */
/* Child to parent, on the report pipe. */
#define MSG_UID     'U' /* followed by the u32 uid the analysis runs as */
#define MSG_FAILURE 'F' /* followed by a u32 length and a failure the child could not record */

#define MAX_MESSAGE (1u << 16)

/*
 * How long past the child's own time budget the parent waits for it.  The
 * child's alarm() is its own: once dropped to the crashed account, that
 * user may stop it (SIGSTOP), and a stopped process never takes its
 * SIGALRM.  So the parent keeps the deadline too, on its own clock, and
 * kills the child's process group when it passes, or at once when it sees
 * the child stopped.
 */
#define PARENT_GRACE_S 5

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

/*
 * The parent's watch over the child while it waits for it: its own clock
 * (CLOCK_MONOTONIC; none without a time budget), which nothing the child
 * does moves, and the child's state.  A stopped child (SIGSTOP, which its
 * account may send) would never take its own alarm: the parent ends the
 * wait at once.  late says why a wait ended early.
 */
enum late { LATE_NOT, LATE_DEADLINE, LATE_STOPPED };

struct watch {
	pid_t pid;
	bool no_deadline;
	struct timespec deadline;
	enum late late;
};

/* How often the parent looks whether the child is stopped, in ms. */
#define WATCH_TICK_MS 100

static void watch_start(struct watch *w, pid_t pid, unsigned seconds)
{
	w->pid = pid;
	w->no_deadline = seconds == 0;
	w->late = LATE_NOT;
	clock_gettime(CLOCK_MONOTONIC, &w->deadline);
	w->deadline.tv_sec += (time_t)seconds;
}

/* Milliseconds left before the deadline (rounded up): -1 none, 0 passed. */
static int watch_ms_left(const struct watch *w)
{
	if (w->no_deadline)
		return -1;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	long long ns = (long long)(w->deadline.tv_sec - now.tv_sec) * 1000000000LL +
	               (w->deadline.tv_nsec - now.tv_nsec);
	if (ns <= 0)
		return 0;
	long long ms = (ns + 999999) / 1000000;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* Whether the child is stopped now (left waitable: WNOWAIT). */
static bool child_stopped(pid_t pid)
{
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	return waitid(P_PID, (id_t)pid, &si, WSTOPPED | WNOHANG | WNOWAIT) == 0 &&
	       si.si_pid == pid && si.si_code == CLD_STOPPED;
}

/*
 * Polls fd (or nothing, fd -1) for up to one tick and sets *n to poll's
 * result; false instead, with w->late set, once the deadline has passed or
 * the child is stopped.
 */
static bool watch_poll(struct watch *w, int fd, int *n)
{
	int ms = watch_ms_left(w);
	if (ms == 0)
		w->late = LATE_DEADLINE;
	else if (child_stopped(w->pid))
		w->late = LATE_STOPPED;
	if (w->late != LATE_NOT)
		return false;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	*n = poll(fd >= 0 ? &p : NULL, fd >= 0 ? 1 : 0,
	          ms < 0 || ms > WATCH_TICK_MS ? WATCH_TICK_MS : ms);
	return true;
}

/* Waits until fd is readable (true) or the watch ends the wait (false, w->late). */
static bool readable_by(int fd, struct watch *w)
{
	int n = 0;
	while (watch_poll(w, fd, &n))
		if (n > 0 || (n < 0 && errno != EINTR))
			return true; /* readable, or an error the read will give */
	return false;
}

/*
 * Sends or reads all len bytes over the channel; false if it ended first or
 * (reading, with a watch w) w ended the wait first, which sets w->late.
 */
static bool transfer_all(int fd, void *buf, size_t len, bool sending, struct watch *w)
{
	char *p = buf;
	while (len > 0) {
		if (!sending && w && !readable_by(fd, w))
			return false;
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
	return transfer_all(fd, (void *)buf, len, true, NULL);
}

/* Reads all len bytes (while w, when given, lets it); false if the channel ended. */
static bool read_all_by(int fd, void *buf, size_t len, struct watch *w)
{
	return transfer_all(fd, buf, len, false, w);
}

static bool read_all(int fd, void *buf, size_t len)
{
	return read_all_by(fd, buf, len, NULL);
}

/* Writes all len bytes to a pipe; false if it could not. */
static bool write_all_fd(int fd, const void *buf, size_t len)
{
	return cq_write_all(fd, buf, len, -1);
}

/* A length-prefixed text after its message byte (MSG_STORED, MSG_FAILURE). */
static bool send_text(int fd, char msg, const char *text, bool socket)
{
	size_t len = strlen(text);
	if (len > MAX_MESSAGE)
		len = MAX_MESSAGE;
	uint32_t n = (uint32_t)len;
	bool (*put)(int, const void *, size_t) = socket ? send_all : write_all_fd;
	return put(fd, &msg, 1) && put(fd, &n, sizeof(n)) && put(fd, text, len);
}

/*
 * The text after a length-prefixed message (malloc'd), or NULL when the
 * channel ends (or w, when given, ends the wait: w->late).
 */
static char *read_text_by(int fd, struct watch *w)
{
	uint32_t len;
	if (!read_all_by(fd, &len, sizeof(len), w) || len == 0 || len > MAX_MESSAGE)
		return NULL;
	char *text = malloc((size_t)len + 1);
	if (!text || !read_all_by(fd, text, len, w)) {
		free(text);
		return NULL;
	}
	text[len] = 0;
	return text;
}

static char *read_text(int fd)
{
	return read_text_by(fd, NULL);
}

/* The analysis's await_stored: the analysis clock stops while the parent compresses. */
static struct cq_error *await_stored(void *arg, char **stored_path)
{
	int ctl = *(int *)arg;
	unsigned left = alarm(0);
	char msg;
	char *path = read_all(ctl, &msg, 1) && msg == MSG_STORED ? read_text(ctl) : NULL;
	if (left)
		alarm(left);
	if (!path)
		return cq_error_create(CQ_ERR_IO, "the core was not stored");
	*stored_path = path;
	return NULL;
}

/*
 * Child: the analysis failed before it could run, for why.  The parent
 * records that under the stored path, once the core is stored.
 */
static void child_fail(int report_fd, const char *why) __attribute__((noreturn));

static void child_fail(int report_fd, const char *why)
{
	send_text(report_fd, MSG_FAILURE, why, false);
	_exit(1);
}

/* Sets RLIMIT_DATA to bytes, or says why it cannot be. */
static struct cq_error *apply_memory_budget(uint64_t bytes)
{
#ifdef __SANITIZE_ADDRESS__ /* ASan's shadow memory counts as data: tests run without */
	(void)bytes;
	return NULL;
#else
	struct rlimit rl = {.rlim_cur = bytes, .rlim_max = bytes};
	if (setrlimit(RLIMIT_DATA, &rl) == 0)
		return NULL;
	int e = errno;
	struct rlimit now;
	if (getrlimit(RLIMIT_DATA, &now) == 0 && now.rlim_max != RLIM_INFINITY)
		return cq_error_errno(e,
		                      "cannot set the analysis memory budget of %llu bytes "
		                      "(RLIMIT_DATA; the hook's own hard limit is %llu bytes)",
		                      (unsigned long long)bytes, (unsigned long long)now.rlim_max);
	return cq_error_errno(e,
	                      "cannot set the analysis memory budget of %llu bytes (RLIMIT_DATA)",
	                      (unsigned long long)bytes);
#endif
}

/*
 * Child: dies with the hook (SIGKILL when the parent goes), since a child
 * left behind keeps the analysis slot it inherited and may be held stopped
 * by its account.  A change of account clears this: called again after the
 * drop.
 */
static void die_with_parent(pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
}

/*
 * Child: wait for the raw copy or the stored file, then analyse within the
 * budget.  Exit 0 done (or nothing to do), 1 failed.  Everything that needs
 * root is opened first (work.prepare: the database and the cache, which
 * SQLite keeps writing through the open descriptors), then the core (read
 * as standard input) and a spool directory the account owns; then the
 * child drops to the account and only then reads the core.  It tells the
 * parent the uid it analyses as.
 */
static void child_main(const struct cq_sandbox_config *cfg, pid_t parent, int ctl, int memfd,
                       const char *spool_dir, int report_fd) __attribute__((noreturn));

static void child_main(const struct cq_sandbox_config *cfg, pid_t parent, int ctl, int memfd,
                       const char *spool_dir, int report_fd)
{
	/* A process group of its own, which the parent kills whole when it must. */
	setpgid(0, 0);
	die_with_parent(parent);
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
	char *path = from_memory ? NULL : msg == MSG_STORED ? read_text(ctl) : NULL;
	if (!from_memory && !path)
		_exit(0);
	if (cfg->timeout)
		alarm(cfg->timeout);
	struct cq_error *err = cfg->memory ? apply_memory_budget(cfg->memory) : NULL;
	if (err)
		child_fail(report_fd, err->message);
	/* Decompression spools into the store's file system, not /tmp. */
	setenv("TMPDIR", spool_dir ? spool_dir : cfg->work_dir, 1);
	if ((err = cfg->work.prepare(cfg->work.arg)))
		child_fail(report_fd, err->message);
	struct cq_sandbox_core core = {.path = path};
	int fd = -1;
	if (from_memory) {
		/* Read-only, as the stored file would be; the memfd itself is writable. */
		char self[64];
		snprintf(self, sizeof(self), "/proc/self/fd/%d", memfd);
		fd = open(self, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			fd = dup(memfd);
		core.await_stored = await_stored;
		core.await_ctx = &ctl;
	}
	uid_t uid;
	gid_t gid;
	if (spool_dir && analysis_account(cfg->cap, &uid, &gid)) {
		/* The store is root's alone: reach the spool directory through an fd. */
		int dir = open(spool_dir, O_RDONLY | O_DIRECTORY);
		char via_fd[64];
		snprintf(via_fd, sizeof(via_fd), "/proc/self/fd/%d", dir);
		if (dir >= 0)
			setenv("TMPDIR", via_fd, 1);
		if (!from_memory)
			fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0 || setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0 ||
		    getuid() != uid || geteuid() != uid)
			child_fail(report_fd, "cannot drop privileges for the analysis");
		die_with_parent(parent);
	}
	if (fd >= 0) {
		if (dup2(fd, STDIN_FILENO) < 0)
			_exit(1);
		close(fd);
		core.path = "-";
		core.stored_path = path;
	}
	if (memfd >= 0)
		close(memfd);
	uint32_t me = (uint32_t)geteuid();
	char u = MSG_UID;
	if (!write_all_fd(report_fd, &u, 1) || !write_all_fd(report_fd, &me, sizeof(me)))
		_exit(1);
	struct cq_error *record_error = NULL;
	err = core.path ? cfg->work.analyse(cfg->work.arg, &core, &record_error)
	                : cq_error_create(CQ_ERR_IO, "cannot open the raw copy");
	if (err && record_error) {
		char text[1024];
		snprintf(text, sizeof(text), "%s (the analysis could not record this: %s)",
		         err->message, record_error->message);
		send_text(report_fd, MSG_FAILURE, text, false);
	}
	_exit(err ? 1 : 0);
}

/*
 * A private spool directory in the store for an analysis that drops to
 * uid/gid (owned by them, removed by the parent), or NULL when none drops.
 */
static char *spool_dir_for(const struct cq_sandbox_config *cfg)
{
	uid_t uid;
	gid_t gid;
	char *dir = NULL;
	if (!analysis_account(cfg->cap, &uid, &gid) ||
	    asprintf(&dir, "%s/.spool-XXXXXX", cfg->work_dir) < 0)
		return NULL;
	if (!mkdtemp(dir) || chown(dir, uid, gid) != 0) {
		rmdir(dir);
		free(dir);
		return NULL;
	}
	return dir;
}

/* At most this deep, and this many passes, is a spool directory emptied. */
#define SPOOL_DEPTH  16
#define SPOOL_PASSES 8

/*
 * Empties the directory fd names (a spool directory or one inside it),
 * entries relative to it, nothing followed (the directory is the
 * account's); returns whether it removed anything.
 */
static bool empty_dir(int fd, int depth)
{
	DIR *dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return false;
	}
	bool removed = false;
	for (struct dirent *e; (e = readdir(dir));) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (unlinkat(dirfd(dir), e->d_name, 0) == 0) {
			removed = true;
			continue;
		}
		if (errno != EISDIR || depth >= SPOOL_DEPTH)
			continue;
		int sub =
		    openat(dirfd(dir), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0)
			removed |= empty_dir(sub, depth + 1);
		removed |= unlinkat(dirfd(dir), e->d_name, AT_REMOVEDIR) == 0;
	}
	closedir(dir);
	return removed;
}

/*
 * Removes the spool directory once its child is gone.  Spool files are
 * unlinked temporaries (O_TMPFILE), so it is normally empty; whatever a
 * child that was killed midway, or the account, left in it goes first,
 * subdirectories too (to a bounded depth), pass after pass while a pass
 * removes something (unlinking while reading may skip an entry).
 */
static void remove_spool_dir(const char *path)
{
	for (int pass = 0; pass < SPOOL_PASSES; pass++) {
		int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || !empty_dir(fd, 0))
			break;
	}
	rmdir(path);
}

static void sandbox_close(struct cq_sandbox *sb)
{
	if (sb->ctl >= 0)
		close(sb->ctl);
	if (sb->report >= 0)
		close(sb->report);
	if (sb->memfd >= 0)
		close(sb->memfd);
	if (sb->spool_dir) {
		remove_spool_dir(sb->spool_dir);
		free(sb->spool_dir);
	}
	sb->ctl = sb->report = sb->memfd = -1;
	sb->spool_dir = NULL;
}

struct cq_error *cq_sandbox_start(const struct cq_sandbox_config *cfg, uint64_t raw_memory,
                                  int input_file, struct cq_sandbox *sb)
{
	memset(sb, 0, sizeof(*sb));
	sb->cfg = cfg;
	sb->ctl = sb->report = sb->memfd = -1;
	sb->pid = -1;
	int ctl[2], report[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) != 0)
		return cq_error_errno(errno, "cannot make a channel for the analysis");
	if (pipe2(report, O_CLOEXEC) != 0) {
		struct cq_error *err = cq_error_errno(errno, "cannot make a pipe for the analysis");
		close(ctl[0]);
		close(ctl[1]);
		return err;
	}
	sb->ctl = ctl[0];
	sb->report = report[0];
	/* No memfd, no raw copy: the child then reads the stored file. */
	if (input_file >= 0)
		sb->from_input = (sb->memfd = fcntl(input_file, F_DUPFD_CLOEXEC, 3)) >= 0;
	else if (raw_memory)
		sb->memfd = memfd_create("coreq-raw-core", MFD_CLOEXEC);
	sb->spool_dir = spool_dir_for(cfg);
	fflush(NULL);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		close(ctl[0]);
		close(report[0]);
		child_main(cfg, parent, ctl[1], sb->memfd, sb->spool_dir, report[1]);
	}
	if (pid > 0)
		setpgid(pid, pid); /* as the child does, so that it is so before either runs on */
	close(ctl[1]);
	close(report[1]);
	if (pid < 0) {
		struct cq_error *err = cq_error_errno(errno, "cannot fork the analysis");
		sandbox_close(sb);
		return err;
	}
	sb->pid = pid;
	if (sb->from_input)
		cq_sandbox_raw_complete(sb, 0); /* the input file is the raw copy, whole already */
	return NULL;
}

void cq_sandbox_raw_complete(void *arg, uint64_t size)
{
	struct cq_sandbox *sb = arg;
	(void)size;
	char msg = MSG_RAW;
	sb->from_memory = sb->ctl >= 0 && send_all(sb->ctl, &msg, 1);
}

void cq_sandbox_stored(struct cq_sandbox *sb, const char *path)
{
	if (sb->ctl < 0)
		return;
	if (path && strlen(path) <= MAX_MESSAGE)
		send_text(sb->ctl, MSG_STORED, path, true);
	close(sb->ctl); /* an end of messages; alone, "not stored" */
	sb->ctl = -1;
	/* The child has its own descriptor: the raw copy goes when it is done. */
	if (sb->memfd >= 0)
		close(sb->memfd);
	sb->memfd = -1;
}

/*
 * Reads the child's messages until it closes the pipe (it exits), or until
 * w ends the wait (w->late).
 */
static void read_reports(int fd, struct cq_sandbox_outcome *out, char **failure, struct watch *w)
{
	char msg;
	while (read_all_by(fd, &msg, 1, w)) {
		uint32_t uid;
		if (msg == MSG_UID && read_all_by(fd, &uid, sizeof(uid), w)) {
			out->uid = (int64_t)uid;
		} else if (msg == MSG_FAILURE && !*failure) {
			if (!(*failure = read_text_by(fd, w)))
				break;
		} else {
			break;
		}
	}
}

/* A descriptor that polls readable when the child exits, or -1 (no pidfd_open). */
static int child_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	return -1;
#endif
}

/*
 * Waits for the child to exit while w lets it: 1 it did (*status), 0 w
 * ended the wait (w->late), -1 waitpid failed (errno).  A pidfd wakes the
 * wait at the exit; without one (a kernel before 5.3), the next tick does.
 */
static int wait_by(int *status, struct watch *w)
{
	int pidfd = child_pidfd(w->pid);
	int result, n;
	for (;;) {
		/*
		 * Looked at without reaping: what the child started goes with its
		 * group while the child, a zombie, still holds the group's id (a
		 * group id reaped away could be another process's by then).
		 */
		siginfo_t info = {0};
		int r = waitid(P_PID, (id_t)w->pid, &info, WEXITED | WNOHANG | WNOWAIT);
		if (r == 0 && info.si_pid == w->pid) {
			kill(-w->pid, SIGKILL);
			pid_t got;
			while ((got = waitpid(w->pid, status, 0)) < 0 && errno == EINTR)
				;
			result = got == w->pid ? 1 : -1;
			break;
		}
		if (r < 0 && errno != EINTR) {
			result = -1;
			break;
		}
		if (!watch_poll(w, pidfd, &n)) {
			result = 0;
			break;
		}
	}
	int e = errno;
	if (pidfd >= 0)
		close(pidfd);
	errno = e;
	return result;
}

/* Kills the child and whatever it started (SIGKILL ends a stopped process too) and reaps it. */
static int stop_child(pid_t pid, int *status)
{
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	int waited;
	while ((waited = waitpid(pid, status, 0)) < 0 && errno == EINTR)
		;
	return waited == pid ? 1 : -1;
}

struct cq_error *cq_sandbox_finish(struct cq_sandbox *sb, bool stored,
                                   struct cq_sandbox_outcome *out)
{
	memset(out, 0, sizeof(*out));
	out->uid = -1;
	if (sb->ctl >= 0)
		cq_sandbox_stored(sb, NULL);
	const struct cq_sandbox_config *cfg = sb->cfg;
	/*
	 * The child's budget runs from its start and pauses only while it
	 * waits for the stored path, which it has now: it has at most
	 * cfg->timeout left.
	 */
	struct watch w;
	/* The parent's own bound, saturated; the child's alarm is the budget itself. */
	unsigned bound = !cfg->timeout                              ? 0
	                 : cfg->timeout > UINT_MAX - PARENT_GRACE_S ? UINT_MAX
	                                                            : cfg->timeout + PARENT_GRACE_S;
	watch_start(&w, sb->pid, bound);
	char *failure = NULL;
	read_reports(sb->report, out, &failure, &w);
	int status = 0;
	int waited = w.late != LATE_NOT ? 0 : wait_by(&status, &w);
	bool stopped = waited == 0;
	if (stopped)
		waited = stop_child(sb->pid, &status);
	int wait_errno = errno;
	sandbox_close(sb);
	if (waited < 0) {
		free(failure);
		return cq_error_errno(wait_errno, "cannot wait for the analysis");
	}
	if (!stored) {
		free(failure); /* nothing stored, nothing for the child to record */
		return NULL;
	}
	out->failed = true;
	if (stopped && w.late == LATE_STOPPED)
		snprintf(out->reason, sizeof(out->reason),
		         "analysis stopped by the hook: its process was stopped by a signal");
	else if (stopped)
		snprintf(
		    out->reason, sizeof(out->reason),
		    "analysis stopped by the hook: still running after its time budget of %u s",
		    cfg->timeout);
	else if (failure)
		snprintf(out->reason, sizeof(out->reason), "%s", failure);
	else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
		snprintf(out->reason, sizeof(out->reason),
		         "analysis exceeded its time budget of %u s", cfg->timeout);
	else if (WIFSIGNALED(status))
		snprintf(out->reason, sizeof(out->reason),
		         "analysis killed by signal %d (memory budget %llu bytes)",
		         WTERMSIG(status), (unsigned long long)cfg->memory);
	else if (WEXITSTATUS(status) != 0)
		/* Status 1: the child failed and normally recorded why; keep that. */
		snprintf(out->reason, sizeof(out->reason),
		         "analysis failed (exit status %d, memory budget %llu bytes)",
		         WEXITSTATUS(status), (unsigned long long)cfg->memory);
	else
		out->failed = false;
	out->recorded = out->failed && !stopped && !failure && WIFEXITED(status);
	free(failure);
	return NULL;
}
