/* deadlock_cxx.cc: corpus program.  The ABBA deadlock of deadlock.c through
 * C++: two std::thread workers take std::mutex A and B with std::lock_guard
 * in opposite orders (lock_ab, lock_ba), so every wait goes through
 * libstdc++'s std::mutex::lock (__gthread_mutex_lock, then glibc's
 * pthread_mutex_lock) and the owner is read from the pthread_mutex_t inside
 * the std::mutex.  `deadlock_cxx abba` (the only shape): once both workers
 * are blocked in futex waits, main writes ./oracle in deadlock.c's format
 * (thread, holds, waits, verdict lines), creates ./ready and waits in
 * wait_for_watchdog -> pause until another process kills it with SIGABRT.
 */
#include "common.h"

#include <pthread.h>
#include <sys/syscall.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

static std::mutex a, b;
static pthread_barrier_t first_locks;
static std::atomic<pid_t> tids[2];

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

static bool both_in_futex()
{
	for (auto &t : tids)
		if (t == 0 || blocked_in(t) != SYS_futex)
			return false;
	return true;
}

CHAIN static void wait_for_watchdog()
{
	for (;;)
		pause();
	KEEP_FRAME();
}

int main(int argc, char **argv)
{
	if (argc != 2 || strcmp(argv[1], "abba") != 0) {
		fprintf(stderr, "usage: deadlock_cxx abba\n");
		return 2;
	}
	pthread_barrier_init(&first_locks, NULL, 2);
	std::thread t0([] {
		tids[0] = gettid();
		pthread_setname_np(pthread_self(), "lock-ab");
		lock_ab();
	});
	std::thread t1([] {
		tids[1] = gettid();
		pthread_setname_np(pthread_self(), "lock-ba");
		lock_ba();
	});
	int tries = 0;
	for (; tries < 5000; tries++) {
		if (both_in_futex()) {
			corpus_sleep_ms(50); /* and once more, after a pause */
			if (both_in_futex())
				break;
		}
		corpus_sleep_ms(2);
	}
	if (tries == 5000) {
		fprintf(stderr, "deadlock_cxx: workers never both blocked\n");
		return 3;
	}
	FILE *o = fopen("oracle.tmp", "w");
	if (!o)
		return 3;
	/* A std::mutex is its pthread_mutex_t: the futex word is at its address. */
	fprintf(o, "shape abba\n");
	fprintf(o, "thread %d lock-ab\nthread %d lock-ba\n", (int)tids[0], (int)tids[1]);
	fprintf(o, "holds %d mutex %p 1\n", (int)tids[0], (void *)&a);
	fprintf(o, "waits %d mutex %p\n", (int)tids[0], (void *)&b);
	fprintf(o, "holds %d mutex %p 1\n", (int)tids[1], (void *)&b);
	fprintf(o, "waits %d mutex %p\n", (int)tids[1], (void *)&a);
	fprintf(o, "verdict deadlock\n");
	fclose(o);
	if (rename("oracle.tmp", "oracle") != 0)
		return 3;
	FILE *ready = fopen("ready", "w");
	if (!ready)
		return 3;
	fclose(ready);
	wait_for_watchdog();
	t0.join();
	t1.join();
	return 0;
}
