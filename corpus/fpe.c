/* fpe.c: corpus program.  main -> divider, which divides an integer by zero:
 * SIGFPE (si_code FPE_INTDIV). */
#include "common.h"

volatile int quotient;

CHAIN static void divider(void)
{
	volatile int num = 1, den = 0;
	quotient = num / den;
	KEEP_FRAME();
}

int main(void)
{
	divider();
	KEEP_FRAME();
	return 0;
}
