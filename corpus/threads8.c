/* threads8.c: corpus program.  Eight worker threads, named "wait-0".."wait-7",
 * each parked in pthread_cond_wait under its own function
 * (worker_main -> wait_here_N -> park).  Once all eight are asleep the main
 * thread runs main -> crash_main -> abort(): 9 threads, SIGABRT. */
#include "common.h"

#include <pthread.h>

#define NWORKERS 8

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t parked_cv = PTHREAD_COND_INITIALIZER; /* main waits */
static pthread_cond_t never_cv = PTHREAD_COND_INITIALIZER;  /* workers wait */
static int parked;
static int released; /* never set: the workers sleep until the crash */
volatile int where[NWORKERS];

/* Block forever in pthread_cond_wait. */
CHAIN static void park(int id)
{
	pthread_mutex_lock(&lock);
	where[id] = id + 1;
	parked++;
	pthread_cond_signal(&parked_cv);
	while (!released)
		pthread_cond_wait(&never_cv, &lock);
	pthread_mutex_unlock(&lock);
}

/* wait_here_0 .. wait_here_7: one distinct frame per worker. */
#define WAIT_HERE(n)                                                                               \
	CHAIN static void wait_here_##n(void)                                                      \
	{                                                                                          \
		where[n] = -1 - (n);                                                               \
		park(n);                                                                           \
		KEEP_FRAME();                                                                      \
	}
WAIT_HERE(0)
WAIT_HERE(1)
WAIT_HERE(2)
WAIT_HERE(3)
WAIT_HERE(4)
WAIT_HERE(5)
WAIT_HERE(6)
WAIT_HERE(7)

CHAIN static void *worker_main(void *arg)
{
	int id = (int)(long)arg;
	char name[16];

	snprintf(name, sizeof name, "wait-%d", id);
	pthread_setname_np(pthread_self(), name);
	switch (id) {
	case 0:
		wait_here_0();
		break;
	case 1:
		wait_here_1();
		break;
	case 2:
		wait_here_2();
		break;
	case 3:
		wait_here_3();
		break;
	case 4:
		wait_here_4();
		break;
	case 5:
		wait_here_5();
		break;
	case 6:
		wait_here_6();
		break;
	default:
		wait_here_7();
		break;
	}
	KEEP_FRAME();
	return NULL;
}

CHAIN static void crash_main(void)
{
	abort();
}

int main(void)
{
	pthread_t tids[NWORKERS];

	for (long i = 0; i < NWORKERS; i++) {
		int err = pthread_create(&tids[i], NULL, worker_main, (void *)i);
		if (err) {
			fprintf(stderr, "threads8: pthread_create: %s\n", strerror(err));
			return 2;
		}
	}
	pthread_mutex_lock(&lock);
	while (parked < NWORKERS)
		pthread_cond_wait(&parked_cv, &lock);
	pthread_mutex_unlock(&lock);
	wait_threads_asleep(NWORKERS + 1);
	crash_main();
	KEEP_FRAME();
	return 0;
}
