/* deadlock.c: corpus program.  A process that hangs on locks in a known
 * shape, for the wait-for graph (issue 35).  `deadlock SHAPE`:
 *
 *   abba       two threads take mutexes A and B in opposite orders
 *   cycle3     three threads, three mutexes, each takes its own then the next
 *   chain      no cycle: thread "holder" takes M and blocks in read() on a
 *              pipe nobody writes; "mid" takes N then waits for M; "tail"
 *              waits for N; "also" waits for M
 *   recursive  "owner" takes a recursive mutex R twice and blocks in read();
 *              "waiter" waits for R
 *   rwlock     "reader" read-locks L and blocks in read(); "writer" waits to
 *              write-lock L
 *
 * Once every worker is blocked in the kernel (its /proc/self/task/TID/syscall
 * says futex or read), main writes the oracle to ./oracle, creates ./ready
 * and waits in wait_for_watchdog -> pause until another process kills it with
 * SIGABRT, as a watchdog would.  The oracle says, one fact a line:
 *
 *   thread TID NAME          a worker and its name
 *   holds TID KIND ADDR N    TID holds the lock at ADDR (N times; KIND mutex
 *                            or rwlock; for an rwlock, N readers or writer 1)
 *   waits TID KIND ADDR      TID is blocked taking the lock at ADDR
 *   blocked TID read         TID is blocked in read(), holding what it holds
 *   verdict deadlock | verdict hang TID   a cycle, or everyone waits for TID
 */
#include "common.h"

#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <sys/syscall.h>

#define MAXW 4

struct worker {
	const char *name;
	pid_t tid;
	pthread_t thread;
};

static struct worker workers[MAXW];
static int nworkers;
static pthread_mutex_t mx[3] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
                                PTHREAD_MUTEX_INITIALIZER};
static pthread_mutex_t rec;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t first_locks;
static int never_written[2]; /* a pipe: read() on [0] blocks for ever */
static FILE *oracle;
static const char *shape;

static void fact(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fact(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(oracle, fmt, ap);
	va_end(ap);
	fputc('\n', oracle);
}

/* Blocks in read() for ever (the pipe's write end stays open). */
CHAIN static void block_in_read(void)
{
	char c;
	while (read(never_written[0], &c, 1) != 0 || errno == EINTR)
		;
	KEEP_FRAME();
}

CHAIN static void take(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
	KEEP_FRAME();
}

CHAIN static void take_write(pthread_rwlock_t *l)
{
	pthread_rwlock_wrlock(l);
	KEEP_FRAME();
}

/* The cycle shapes: worker i takes mx[i], waits at the barrier, then takes mx[(i+1) % n]. */
CHAIN static void *cycle_worker(void *arg)
{
	int i = (int)(long)arg, n = nworkers;
	take(&mx[i]);
	pthread_barrier_wait(&first_locks);
	take(&mx[(i + 1) % n]);
	return NULL;
}

/* chain: 0 holder, 1 mid, 2 tail, 3 also. */
CHAIN static void *chain_worker(void *arg)
{
	int i = (int)(long)arg;
	switch (i) {
	case 0:
		take(&mx[0]);
		pthread_barrier_wait(&first_locks);
		block_in_read();
		break;
	case 1:
		take(&mx[1]);
		pthread_barrier_wait(&first_locks);
		take(&mx[0]);
		break;
	default:
		pthread_barrier_wait(&first_locks);
		take(i == 2 ? &mx[1] : &mx[0]);
		break;
	}
	return NULL;
}

/* recursive: 0 owner (R twice, then read), 1 waiter. */
CHAIN static void *recursive_worker(void *arg)
{
	if ((long)arg == 0) {
		take(&rec);
		take(&rec);
		pthread_barrier_wait(&first_locks);
		block_in_read();
	} else {
		pthread_barrier_wait(&first_locks);
		take(&rec);
	}
	return NULL;
}

/* rwlock: 0 reader (read lock, then read), 1 writer. */
CHAIN static void *rwlock_worker(void *arg)
{
	if ((long)arg == 0) {
		pthread_rwlock_rdlock(&rw);
		pthread_barrier_wait(&first_locks);
		block_in_read();
	} else {
		pthread_barrier_wait(&first_locks);
		take_write(&rw);
	}
	return NULL;
}

/* The syscall number TID is blocked in, or -1 while it runs. */
static long blocked_in(pid_t tid)
{
	char path[64];
	long nr = -1;
	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &nr) != 1)
		nr = -1;
	fclose(f);
	return nr;
}

/* Waits until every worker is blocked in the syscall the shape puts it in. */
static void wait_all_blocked(const long *want)
{
	for (int tries = 0; tries < 5000; tries++) {
		int ok = 1;
		for (int i = 0; i < nworkers; i++)
			if (workers[i].tid == 0 || blocked_in(workers[i].tid) != want[i])
				ok = 0;
		if (ok) {
			corpus_sleep_ms(50); /* and once more, after a pause */
			for (int i = 0; i < nworkers; i++)
				if (blocked_in(workers[i].tid) != want[i])
					ok = 0;
			if (ok)
				return;
		}
		corpus_sleep_ms(2);
	}
	fprintf(stderr, "deadlock: workers never all blocked\n");
	exit(3);
}

static void *start(void *arg);
struct start_arg {
	void *(*fn)(void *);
	long i;
};
static struct start_arg starts[MAXW];

static void *start(void *arg)
{
	struct start_arg *s = arg;
	workers[s->i].tid = gettid();
	pthread_setname_np(pthread_self(), workers[s->i].name);
	return s->fn((void *)s->i);
}

static void spawn(int n, void *(*fn)(void *), const char *const *names)
{
	nworkers = n;
	pthread_barrier_init(&first_locks, NULL, (unsigned)n);
	for (int i = 0; i < n; i++) {
		workers[i].name = names[i];
		starts[i] = (struct start_arg){fn, i};
	}
	for (int i = 0; i < n; i++)
		if (pthread_create(&workers[i].thread, NULL, start, &starts[i]) != 0)
			exit(3);
}

CHAIN static void wait_for_watchdog(void)
{
	for (;;)
		pause();
	KEEP_FRAME();
}

static void write_threads(void)
{
	for (int i = 0; i < nworkers; i++)
		fact("thread %d %s", (int)workers[i].tid, workers[i].name);
}

int main(int argc, char **argv)
{
	static const char *const cyc[] = {"lock-0", "lock-1", "lock-2"};
	static const char *const chn[] = {"holder", "mid", "tail", "also"};
	static const char *const recn[] = {"owner", "waiter"};
	static const char *const rwn[] = {"reader", "writer"};
	const long F = SYS_futex, R = SYS_read;

	if (argc != 2) {
		fprintf(stderr, "usage: deadlock abba|cycle3|chain|recursive|rwlock\n");
		return 2;
	}
	shape = argv[1];
	if (pipe(never_written) != 0)
		return 3;
	pthread_mutexattr_t ra;
	pthread_mutexattr_init(&ra);
	pthread_mutexattr_settype(&ra, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&rec, &ra);

	oracle = fopen("oracle.tmp", "w");
	if (!oracle)
		return 3;
	fact("shape %s", shape);
	if (strcmp(shape, "abba") == 0 || strcmp(shape, "cycle3") == 0) {
		int n = shape[0] == 'a' ? 2 : 3;
		long want[3] = {F, F, F};
		spawn(n, cycle_worker, cyc);
		wait_all_blocked(want);
		write_threads();
		for (int i = 0; i < n; i++) {
			fact("holds %d mutex %p 1", (int)workers[i].tid, (void *)&mx[i]);
			fact("waits %d mutex %p", (int)workers[i].tid, (void *)&mx[(i + 1) % n]);
		}
		fact("verdict deadlock");
	} else if (strcmp(shape, "chain") == 0) {
		long want[4] = {R, F, F, F};
		spawn(4, chain_worker, chn);
		wait_all_blocked(want);
		write_threads();
		fact("holds %d mutex %p 1", (int)workers[0].tid, (void *)&mx[0]);
		fact("blocked %d read", (int)workers[0].tid);
		fact("holds %d mutex %p 1", (int)workers[1].tid, (void *)&mx[1]);
		fact("waits %d mutex %p", (int)workers[1].tid, (void *)&mx[0]);
		fact("waits %d mutex %p", (int)workers[2].tid, (void *)&mx[1]);
		fact("waits %d mutex %p", (int)workers[3].tid, (void *)&mx[0]);
		fact("verdict hang %d", (int)workers[0].tid);
	} else if (strcmp(shape, "recursive") == 0) {
		long want[2] = {R, F};
		spawn(2, recursive_worker, recn);
		wait_all_blocked(want);
		write_threads();
		fact("holds %d mutex %p 2", (int)workers[0].tid, (void *)&rec);
		fact("blocked %d read", (int)workers[0].tid);
		fact("waits %d mutex %p", (int)workers[1].tid, (void *)&rec);
		fact("verdict hang %d", (int)workers[0].tid);
	} else if (strcmp(shape, "rwlock") == 0) {
		long want[2] = {R, F};
		spawn(2, rwlock_worker, rwn);
		wait_all_blocked(want);
		write_threads();
		fact("holds %d rwlock %p 1", (int)workers[0].tid, (void *)&rw);
		fact("blocked %d read", (int)workers[0].tid);
		fact("waits %d rwlock %p", (int)workers[1].tid, (void *)&rw);
		/* Readers are only a count: the core cannot say which thread reads. */
		fact("verdict readers");
	} else {
		fprintf(stderr, "deadlock: unknown shape %s\n", shape);
		return 2;
	}
	fclose(oracle);
	if (rename("oracle.tmp", "oracle") != 0)
		return 3;
	FILE *ready = fopen("ready", "w");
	if (!ready)
		return 3;
	fclose(ready);
	wait_for_watchdog();
	return 0;
}
