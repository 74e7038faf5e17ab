/* deadlock_cxx.cc: corpus program.  Hangs through C++'s locks in a known
 * shape, for the wait-for graph (issues 35, 50).  `deadlock_cxx SHAPE`:
 *
 *   abba         the ABBA deadlock of deadlock.c: two std::thread workers
 *                take std::mutex A and B with std::lock_guard in opposite
 *                orders (lock_ab, lock_ba); the owner is read from the
 *                pthread_mutex_t inside the std::mutex
 *   shared       a cycle through a std::shared_mutex read hold: "reader"
 *                holds S shared (a std::shared_lock) and waits for std::mutex
 *                M; "joiner" holds M and joins "writer"; "writer" waits to
 *                lock S exclusively.  glibc records only the count of
 *                readers; the reader's std::shared_lock, on its stack, says
 *                who it is
 *   shared_exited  the same threads, but the one reader of S ("exited")
 *                took it with lock_shared() and exited without unlocking it;
 *                "keeper" keeps S's address in a local and waits for M, so
 *                it is the one live thread that references S, and no reader
 *                is alive: the writer's lock has no owner among the threads
 *   condvar_any  "cva-0" and "cva-1" wait on a std::condition_variable_any
 *                (over a std::unique_lock<std::mutex>) nobody notifies
 *   sem          "sem-0" and "sem-1" wait in sem_wait on a POSIX semaphore
 *                whose value is 0 and that nobody posts
 *
 * Once every worker is blocked in the kernel (its /proc/self/task/TID/syscall
 * says futex), main writes its own account to ./oracle in deadlock.c's
 * format (thread, holds, waits, joins, verdict lines), creates ./ready and
 * waits in wait_for_watchdog -> pause until another process kills it with
 * SIGABRT.
 */
#include "common.h"

#include <pthread.h>
#include <semaphore.h>
#include <sys/syscall.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <thread>

#define MAXW 3

static std::mutex a, b;
static pthread_barrier_t first_locks;
static std::atomic<pid_t> tids[MAXW];
static int nworkers;
static std::shared_mutex *shared; /* on the heap: the reader's frames must keep its address */
static std::condition_variable_any cva;
static std::mutex cva_mutex;
static sem_t sem;
static pid_t exited_tid; /* shared_exited: the reader that left */

/* Thread 0: A, then B. */
CHAIN static void lock_ab()
{
	std::lock_guard<std::mutex> ga(a);
	pthread_barrier_wait(&first_locks);
	std::lock_guard<std::mutex> gb(b);
	KEEP_FRAME();
}

/* Thread 1: B, then A. */
CHAIN static void lock_ba()
{
	std::lock_guard<std::mutex> gb(b);
	pthread_barrier_wait(&first_locks);
	std::lock_guard<std::mutex> ga(a);
	KEEP_FRAME();
}

/* shared: reads S through a std::shared_lock, then waits for M (a). */
CHAIN static void read_then_lock(std::shared_mutex &s, std::mutex &m)
{
	std::shared_lock<std::shared_mutex> r(s);
	pthread_barrier_wait(&first_locks);
	std::lock_guard<std::mutex> g(m);
	KEEP_FRAME();
}

/* shared_exited: reads S and returns, its thread exits: a read hold no thread has. */
CHAIN static void read_and_leave(std::shared_mutex &s)
{
	s.lock_shared();
	KEEP_FRAME();
}

/* shared_exited: keeps S's address on its stack, without a read hold, and waits for M (a). */
CHAIN static void keep_then_lock(std::shared_mutex &s, std::mutex &m)
{
	std::shared_mutex *volatile kept = &s;
	pthread_barrier_wait(&first_locks);
	std::lock_guard<std::mutex> g(m);
	(void)kept;
	KEEP_FRAME();
}

CHAIN static void write_lock(std::shared_mutex &s)
{
	std::unique_lock<std::shared_mutex> w(s);
	KEEP_FRAME();
}

/* Holds M (a), starts the writer, joins it. */
CHAIN static void lock_then_join(std::mutex &m)
{
	std::lock_guard<std::mutex> g(m);
	pthread_barrier_wait(&first_locks);
	std::thread writer([] {
		tids[2] = gettid();
		pthread_setname_np(pthread_self(), "writer");
		write_lock(*shared);
	});
	writer.join();
	KEEP_FRAME();
}

CHAIN static void wait_any()
{
	std::unique_lock<std::mutex> lk(cva_mutex);
	cva.wait(lk);
	KEEP_FRAME();
}

CHAIN static void wait_sem()
{
	sem_wait(&sem);
	KEEP_FRAME();
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

/* Every worker is blocked in futex (the joiner too: pthread_join is a futex wait). */
static bool all_in_futex()
{
	for (int i = 0; i < nworkers; i++)
		if (tids[i] == 0 || blocked_in(tids[i]) != SYS_futex)
			return false;
	return true;
}

CHAIN static void wait_for_watchdog()
{
	for (;;)
		pause();
	KEEP_FRAME();
}

static void start(std::thread *t, int i, const char *name, void (*body)())
{
	*t = std::thread([=] {
		tids[i] = gettid();
		pthread_setname_np(pthread_self(), name);
		body();
	});
}

/* The oracle's lines for the shape, once every worker is blocked. */
static void write_oracle(FILE *o, const char *shape)
{
	int t0 = tids[0], t1 = tids[1], t2 = tids[2];
	fprintf(o, "shape %s\n", shape);
	if (!strcmp(shape, "abba")) {
		/* A std::mutex is its pthread_mutex_t: the futex word is at its address. */
		fprintf(o, "thread %d lock-ab\nthread %d lock-ba\n", t0, t1);
		fprintf(o, "holds %d mutex %p 1\n", t0, (void *)&a);
		fprintf(o, "waits %d mutex %p\n", t0, (void *)&b);
		fprintf(o, "holds %d mutex %p 1\n", t1, (void *)&b);
		fprintf(o, "waits %d mutex %p\n", t1, (void *)&a);
		fprintf(o, "verdict deadlock\n");
	} else if (!strcmp(shape, "shared")) {
		/* A std::shared_mutex is its pthread_rwlock_t (libstdc++'s _M_rwlock, first). */
		fprintf(o, "thread %d reader\nthread %d joiner\nthread %d writer\n", t0, t1, t2);
		fprintf(o, "holds %d rwlock %p 1\n", t0, (void *)shared);
		fprintf(o, "waits %d mutex %p\n", t0, (void *)&a);
		fprintf(o, "holds %d mutex %p 1\n", t1, (void *)&a);
		fprintf(o, "joins %d %d\n", t1, t2);
		fprintf(o, "waits %d rwlock %p\n", t2, (void *)shared);
		fprintf(o, "verdict deadlock\n");
	} else if (!strcmp(shape, "shared_exited")) {
		fprintf(o, "thread %d keeper\nthread %d joiner\nthread %d writer\n", t0, t1, t2);
		fprintf(o, "exited %d\n", (int)exited_tid);
		fprintf(o, "lock rwlock %p\n", (void *)shared);
		fprintf(o, "waits %d mutex %p\n", t0, (void *)&a);
		fprintf(o, "holds %d mutex %p 1\n", t1, (void *)&a);
		fprintf(o, "joins %d %d\n", t1, t2);
		fprintf(o, "waits %d rwlock %p\n", t2, (void *)shared);
		/* Every chain ends at S's one reader, which has exited: no thread holds it. */
		fprintf(o, "verdict readers %p 1\n", (void *)shared);
	} else if (!strcmp(shape, "condvar_any")) {
		fprintf(o, "thread %d cva-0\nthread %d cva-1\n", t0, t1);
		fprintf(o, "lock condvar_any %p\n", (void *)&cva);
		fprintf(o, "waits %d condvar %p\n", t0, (void *)&cva);
		fprintf(o, "waits %d condvar %p\n", t1, (void *)&cva);
		fprintf(o, "verdict waiting %p\n", (void *)&cva);
	} else {
		fprintf(o, "thread %d sem-0\nthread %d sem-1\n", t0, t1);
		fprintf(o, "waits %d semaphore %p\n", t0, (void *)&sem);
		fprintf(o, "waits %d semaphore %p\n", t1, (void *)&sem);
		fprintf(o, "verdict waiting %p\n", (void *)&sem);
	}
}

int main(int argc, char **argv)
{
	static const char *const shapes[] = {"abba", "shared", "shared_exited", "condvar_any",
	                                     "sem"};
	const char *shape = argc == 2 ? argv[1] : "";
	bool known = false;
	for (const char *s : shapes)
		known |= !strcmp(shape, s);
	if (!known) {
		fprintf(stderr, "usage: deadlock_cxx abba|shared|shared_exited|condvar_any|sem\n");
		return 2;
	}
	std::thread t[2];
	pthread_barrier_init(&first_locks, NULL, 2);
	if (!strcmp(shape, "abba")) {
		start(&t[0], 0, "lock-ab", lock_ab);
		start(&t[1], 1, "lock-ba", lock_ba);
		nworkers = 2;
	} else if (!strncmp(shape, "shared", 6)) {
		shared = new std::shared_mutex;
		if (shape[6]) {
			std::thread leaver([] {
				exited_tid = gettid();
				read_and_leave(*shared);
			});
			leaver.join();
			start(&t[0], 0, "keeper", [] { keep_then_lock(*shared, a); });
		} else {
			start(&t[0], 0, "reader", [] { read_then_lock(*shared, a); });
		}
		start(&t[1], 1, "joiner", [] { lock_then_join(a); });
		nworkers = 3;
	} else if (!strcmp(shape, "condvar_any")) {
		start(&t[0], 0, "cva-0", wait_any);
		start(&t[1], 1, "cva-1", wait_any);
		nworkers = 2;
	} else {
		sem_init(&sem, 0, 0);
		start(&t[0], 0, "sem-0", wait_sem);
		start(&t[1], 1, "sem-1", wait_sem);
		nworkers = 2;
	}
	int tries = 0;
	for (; tries < 5000; tries++) {
		if (all_in_futex()) {
			corpus_sleep_ms(50); /* and once more, after a pause */
			if (all_in_futex())
				break;
		}
		corpus_sleep_ms(2);
	}
	if (tries == 5000) {
		fprintf(stderr, "deadlock_cxx: workers never all blocked\n");
		return 3;
	}
	FILE *o = fopen("oracle.tmp", "w");
	if (!o)
		return 3;
	write_oracle(o, shape);
	fclose(o);
	if (rename("oracle.tmp", "oracle") != 0)
		return 3;
	FILE *ready = fopen("ready", "w");
	if (!ready)
		return 3;
	fclose(ready);
	wait_for_watchdog();
	t[0].join();
	t[1].join();
	return 0;
}
