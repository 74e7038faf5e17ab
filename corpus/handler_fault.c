/* handler_fault.c: corpus program.  main -> victim writes through NULL; the
 * SIGSEGV handler on_segv (SA_SIGINFO) calls report_fault, whose own bug
 * writes through NULL again.  SIGSEGV is blocked while its handler runs, so
 * the kernel kills the process with that second fault: a crash inside the
 * crash handler, which a signature must blame (sighandler.c is the other
 * shape: a handler that reports and then ends the process):
 *   report_fault <- on_segv <- <signal frame> <- victim <- main */
#include "common.h"

volatile void *fault_address;
int *volatile report_buffer; /* never set: the reporter's bug */

CHAIN static void report_fault(void *addr)
{
	fault_address = addr;
	*report_buffer = 1;
	KEEP_FRAME();
}

CHAIN static void on_segv(int sig, siginfo_t *info, void *uctx)
{
	(void)sig;
	(void)uctx;
	report_fault(info->si_addr);
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
