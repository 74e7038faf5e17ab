/* nthreads.c: corpus program.  `nthreads N` starts N threads with 64 KiB
 * stacks, each parked in parked_thread -> pthread_cond_wait.  Once all are
 * asleep the main thread runs main -> nthreads_crash -> abort(): N+1 threads,
 * SIGABRT.  Used for the threads-10/1000/3000 cases (many-thread cores). */
#include "common.h"

#include <errno.h>
#include <pthread.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t parked_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t never_cv = PTHREAD_COND_INITIALIZER;
static long parked;
static int released; /* never set */

CHAIN static void *parked_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	parked++;
	pthread_cond_signal(&parked_cv);
	while (!released)
		pthread_cond_wait(&never_cv, &lock);
	pthread_mutex_unlock(&lock);
	KEEP_FRAME();
	return NULL;
}

CHAIN static void nthreads_crash(void)
{
	abort();
}

int main(int argc, char **argv)
{
	pthread_attr_t attr;
	char *end;
	long n;

	if (argc != 2) {
		fprintf(stderr, "usage: nthreads N\n");
		return 2;
	}
	errno = 0;
	n = strtol(argv[1], &end, 10);
	if (errno || *end || n < 1 || n > 100000) {
		fprintf(stderr, "nthreads: bad thread count '%s'\n", argv[1]);
		return 2;
	}
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (long i = 0; i < n; i++) {
		pthread_t tid;
		int err = pthread_create(&tid, &attr, parked_thread, NULL);
		if (err) {
			fprintf(stderr, "nthreads: thread %ld: %s\n", i, strerror(err));
			return 2;
		}
	}
	pthread_attr_destroy(&attr);
	pthread_mutex_lock(&lock);
	while (parked < n)
		pthread_cond_wait(&parked_cv, &lock);
	pthread_mutex_unlock(&lock);
	wait_threads_asleep((int)n + 1);
	nthreads_crash();
	KEEP_FRAME();
	return 0;
}
