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
 *   pi         abba on two priority-inheritance mutexes (PTHREAD_PRIO_INHERIT:
 *              the owner's tid is in __lock, and the kernel sees the chain)
 *   robust     a robust mutex whose owner died: "dead" takes it and exits;
 *              "heir" takes it (EOWNERDEAD: it owns it, marked inconsistent)
 *              and blocks in read(); "waiter" waits for it
 *   join       "stuck" waits on a condvar nobody signals; "joiner" joins it
 *   condvar    "cv-0" and "cv-1" wait on a condvar nobody signals (its
 *              mutex, released by the wait, is free)
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
 *   joins TID TID2           TID is blocked in pthread_join of thread TID2
 *   pthread TID ADDR         TID's pthread_t (its struct pthread)
 *   exited TID               a worker that has exited (robust's "dead")
 *   died ADDR TID            the robust mutex at ADDR was held by TID when it
 *                            died; its heir got EOWNERDEAD
 *   pi ADDR | robust ADDR    the mutex at ADDR is of that protocol
 *   refused TID              pi: the kernel refused TID's lock (EDEADLK): TID
 *                            is not in FUTEX_LOCK_PI but in a plain wait
 *   verdict deadlock | verdict hang TID | verdict waiting ADDR
 *                            a cycle, everyone waits for TID, or every chain
 *                            ends at the condvar at ADDR (no owner)
 */
#include "common.h"

#include <errno.h>
#include <stdbool.h>
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
static pthread_mutex_t pim[2]; /* PTHREAD_PRIO_INHERIT */
static pthread_mutex_t rob;    /* PTHREAD_MUTEX_ROBUST */
static pthread_mutex_t *cycle_set = mx;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t cvm = PTHREAD_MUTEX_INITIALIZER;
static volatile int heir_rc = -1; /* robust: what the heir's lock returned */
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

static long blocked_in(pid_t tid);

/*
 * The cycle shapes: worker i takes cycle_set[i], waits at the barrier, then
 * takes cycle_set[(i+1) % n] (cycle_set: mx, or pim for pi), once worker
 * i-1 is blocked taking its own.  In that order the kernel refuses only
 * the last PI lock, the one that closes the cycle: two threads entering
 * FUTEX_LOCK_PI at once can both be refused (seen about once in 150 runs
 * on a loaded machine), which no program would choose to test.
 */
CHAIN static void *cycle_worker(void *arg)
{
	int i = (int)(long)arg, n = nworkers;
	take(&cycle_set[i]);
	pthread_barrier_wait(&first_locks);
	while (i > 0 && blocked_in(workers[i - 1].tid) != SYS_futex)
		corpus_sleep_ms(1);
	take(&cycle_set[(i + 1) % n]);
	return NULL;
}

/* robust: 0 dead (takes it and exits), 1 heir (EOWNERDEAD, then read), 2 waiter. */
CHAIN static void *robust_worker(void *arg)
{
	switch ((int)(long)arg) {
	case 0:
		take(&rob);
		pthread_barrier_wait(&first_locks);
		return NULL; /* exits holding it: the kernel marks it FUTEX_OWNER_DIED */
	case 1:
		pthread_barrier_wait(&first_locks);
		heir_rc = pthread_mutex_lock(&rob);
		block_in_read();
		break;
	default:
		pthread_barrier_wait(&first_locks);
		while (heir_rc < 0)
			corpus_sleep_ms(1);
		take(&rob);
		break;
	}
	return NULL;
}

CHAIN static void wait_on_condvar(void)
{
	pthread_mutex_lock(&cvm);
	for (;;) /* nobody signals */
		pthread_cond_wait(&cv, &cvm);
	KEEP_FRAME();
}

/* join: 0 stuck (on the condvar), 1 joiner; condvar: both wait on it. */
CHAIN static void *condvar_worker(void *arg)
{
	if ((long)arg == 1 && strcmp(shape, "join") == 0)
		pthread_join(workers[0].thread, NULL);
	else
		wait_on_condvar();
	KEEP_FRAME();
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

/*
 * Under qemu-user the kernel sees the emulator's own calls, numbered as the
 * host numbers them: CORPUS_HOST_FUTEX and CORPUS_HOST_READ (set by
 * make-aarch64-cores) say which, and they are read as this program's.
 */
static long host_call(long nr)
{
	const char *futex = getenv("CORPUS_HOST_FUTEX"), *rd = getenv("CORPUS_HOST_READ");
	if (futex && nr == atol(futex))
		return SYS_futex;
	if (rd && nr == atol(rd))
		return SYS_read;
	return nr;
}

/* The syscall number TID is blocked in, or -1 while it runs; *op: its second argument. */
static long blocked_in_op(pid_t tid, unsigned long *op)
{
	char path[64];
	long nr = -1;
	unsigned long arg1;
	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%ld 0x%lx 0x%lx", &nr, &arg1, op) != 3)
		*op = 0;
	fclose(f);
	return host_call(nr);
}

static long blocked_in(pid_t tid)
{
	unsigned long op;
	return blocked_in_op(tid, &op);
}

/* Whether TID waits in the kernel for a PI futex (FUTEX_LOCK_PI, _PI2). */
static bool in_lock_pi(pid_t tid)
{
	unsigned long op = 0;
	if (blocked_in_op(tid, &op) != SYS_futex)
		return false;
	op &= 127; /* less FUTEX_PRIVATE_FLAG and FUTEX_CLOCK_REALTIME */
	return op == 6 || op == 13;
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

/* Under qemu-user (CORPUS_SELF_ABORT), no one outside can kill it: it aborts itself. */
CHAIN static void wait_for_watchdog(void)
{
	if (getenv("CORPUS_SELF_ABORT"))
		abort();
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
	static const char *const robn[] = {"dead", "heir", "waiter"};
	static const char *const joinn[] = {"stuck", "joiner"};
	static const char *const cvn[] = {"cv-0", "cv-1"};
	const long F = SYS_futex, R = SYS_read;

	if (argc != 2) {
		fprintf(stderr, "usage: deadlock "
		                "abba|cycle3|chain|recursive|rwlock|pi|robust|join|condvar\n");
		return 2;
	}
	shape = argv[1];
	if (pipe(never_written) != 0)
		return 3;
	pthread_mutexattr_t ra;
	pthread_mutexattr_init(&ra);
	pthread_mutexattr_settype(&ra, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&rec, &ra);
	pthread_mutexattr_t pa;
	pthread_mutexattr_init(&pa);
	pthread_mutexattr_setprotocol(&pa, PTHREAD_PRIO_INHERIT);
	for (int i = 0; i < 2; i++)
		pthread_mutex_init(&pim[i], &pa);
	pthread_mutexattr_t ba;
	pthread_mutexattr_init(&ba);
	pthread_mutexattr_setrobust(&ba, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&rob, &ba);

	oracle = fopen("oracle.tmp", "w");
	if (!oracle)
		return 3;
	fact("shape %s", shape);
	if (strcmp(shape, "abba") == 0 || strcmp(shape, "cycle3") == 0 ||
	    strcmp(shape, "pi") == 0) {
		int n = shape[0] == 'c' ? 3 : 2;
		if (shape[0] == 'p') {
			cycle_set = pim;
			for (int i = 0; i < n; i++)
				fact("pi %p", (void *)&pim[i]);
		}
		long want[3] = {F, F, F};
		spawn(n, cycle_worker, cyc);
		wait_all_blocked(want);
		write_threads();
		for (int i = 0; i < n; i++) {
			fact("holds %d mutex %p 1", (int)workers[i].tid, (void *)&cycle_set[i]);
			fact("waits %d mutex %p", (int)workers[i].tid,
			     (void *)&cycle_set[(i + 1) % n]);
			/* glibc parks a thread the kernel refused (EDEADLK) on a word of its stack.
			 */
			if (shape[0] == 'p' && !in_lock_pi(workers[i].tid))
				fact("refused %d", (int)workers[i].tid);
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
	} else if (strcmp(shape, "robust") == 0) {
		long want[3] = {-1, R, F};
		spawn(3, robust_worker, robn);
		wait_all_blocked(want);
		if (heir_rc != EOWNERDEAD) {
			fprintf(stderr, "deadlock: the heir's lock returned %d\n", heir_rc);
			return 3;
		}
		write_threads();
		fact("robust %p", (void *)&rob);
		fact("exited %d", (int)workers[0].tid);
		fact("died %p %d", (void *)&rob, (int)workers[0].tid);
		fact("holds %d mutex %p 1", (int)workers[1].tid, (void *)&rob);
		fact("blocked %d read", (int)workers[1].tid);
		fact("waits %d mutex %p", (int)workers[2].tid, (void *)&rob);
		fact("verdict hang %d", (int)workers[1].tid);
	} else if (strcmp(shape, "join") == 0 || strcmp(shape, "condvar") == 0) {
		long want[2] = {F, F};
		bool join = shape[0] == 'j';
		spawn(2, condvar_worker, join ? joinn : cvn);
		wait_all_blocked(want);
		write_threads();
		fact("waits %d condvar %p", (int)workers[0].tid, (void *)&cv);
		if (join) {
			fact("joins %d %d", (int)workers[1].tid, (int)workers[0].tid);
			fact("pthread %d %p", (int)workers[0].tid, (void *)workers[0].thread);
		} else
			fact("waits %d condvar %p", (int)workers[1].tid, (void *)&cv);
		fact("verdict waiting %p", (void *)&cv);
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
