/* sighandler.c: corpus program.  main -> victim writes through NULL; the
 * SIGSEGV handler on_segv (SA_SIGINFO) calls crash_in_handler, which aborts.
 * The process dies with SIGABRT and the crashing thread's stack runs through
 * glibc's __restore_rt signal trampoline:
 *   abort <- crash_in_handler <- on_segv <- <signal frame> <- victim <- main */
#include "common.h"

volatile void *fault_address;

CHAIN static void crash_in_handler(void *addr)
{
	fault_address = addr;
	abort();
}

CHAIN static void on_segv(int sig, siginfo_t *info, void *uctx)
{
	(void)sig;
	(void)uctx;
	crash_in_handler(info->si_addr);
	KEEP_FRAME();
}

CHAIN static void victim(void)
{
	int *volatile p = NULL;
	*p = 7;
	KEEP_FRAME();
}

int main(void)
{
	corpus_catch(SIGSEGV, on_segv);
	victim();
	KEEP_FRAME();
	return 0;
}
