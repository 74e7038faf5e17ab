/* common.h: helpers shared by the corpus crash programs.  Include it first.
 *
 * CHAIN marks a function that must appear, under its own name, on the stack
 * that the expect file describes: it is never inlined, cloned (.isra,
 * .constprop), folded with an identical function, or analysed by its callers
 * (so they cannot learn that it never returns).  KEEP_FRAME() after a call
 * keeps that call from becoming a tail call at -O2, so the caller's frame
 * stays on the stack.
 *
 * wait_threads_asleep() lets a program crash only once every other thread is
 * really blocked in the kernel, so the core always shows them parked. */
#ifndef COREQ_CORPUS_COMMON_H
#define COREQ_CORPUS_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHAIN        __attribute__((noinline, noipa))
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

/* Installs handler (SA_SIGINFO) for sig; exits 2 when sigaction fails. */
static inline void corpus_catch(int sig, void (*handler)(int, siginfo_t *, void *))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL) != 0) {
		perror("sigaction");
		exit(2);
	}
}

/* Sleep for the given number of milliseconds. */
static inline void corpus_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* One pass over /proc/self/task.  Returns the number of threads (or -1) and
 * stores in *awake how many of them, other than the caller, are not in
 * state 'S' (interruptible sleep). */
static inline int corpus_count_threads(int *awake)
{
	char self[32], path[300], buf[512];
	DIR *dir = opendir("/proc/self/task");
	struct dirent *de;
	int total = 0;

	*awake = 0;
	if (!dir)
		return -1;
	snprintf(self, sizeof self, "%ld", (long)gettid());
	while ((de = readdir(dir)) != NULL) {
		FILE *f;
		size_t n;
		char *paren;

		if (de->d_name[0] == '.')
			continue;
		total++;
		if (strcmp(de->d_name, self) == 0)
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/stat", de->d_name);
		f = fopen(path, "r");
		if (!f) {
			(*awake)++;
			continue;
		}
		n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = '\0';
		paren = strrchr(buf, ')');
		if (!paren || paren[1] != ' ' || paren[2] != 'S')
			(*awake)++;
	}
	closedir(dir);
	return total;
}

/* Wait (up to 10 s) until the process has exactly `total` threads and all of
 * them but the caller are asleep.  Exits with status 3 if that never happens,
 * because a core taken then would not match its expect file.  Under an
 * emulator whose own threads share the process (qemu-user has one),
 * CORPUS_HOST_THREADS says how many to expect besides the program's. */
static inline void wait_threads_asleep(int total)
{
	int awake = 0, n = 0;
	const char *host = getenv("CORPUS_HOST_THREADS");
	if (host)
		total += atoi(host);

	for (int i = 0; i < 1000; i++) {
		n = corpus_count_threads(&awake);
		if (n == total && awake == 0)
			return;
		corpus_sleep_ms(10);
	}
	fprintf(stderr, "corpus: %d threads (%d awake), wanted %d all asleep\n", n, awake, total);
	exit(3);
}

#endif
