/*
 * server.c - tests/systemd-real: a multi-threaded server that hangs: four
 * workers wait on a condition variable nobody signals and the main thread
 * waits in accept() on a socket nobody connects to.  It never pings
 * systemd's watchdog, so systemd kills it with SIGABRT (WatchdogSignal=).
 */
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;

__attribute__((noinline)) static void *worker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;)
		pthread_cond_wait(&work, &lock);
	return NULL;
}

__attribute__((noinline)) static void serve(int fd)
{
	for (;;) {
		int c = accept(fd, NULL, NULL);
		if (c >= 0)
			close(c);
	}
}

int main(void)
{
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	bind(fd, (struct sockaddr *)&a, sizeof a);
	listen(fd, 1);
	serve(fd);
	return 0;
}
