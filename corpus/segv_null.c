/* segv_null.c: corpus program.  main -> writer -> store_null, which writes
 * through a NULL pointer: SIGSEGV (si_code SEGV_MAPERR, fault address 0). */
#include "common.h"

CHAIN static void store_null(void)
{
	/* The pointer itself is volatile, so the compiler cannot see it is NULL
	 * and turn the store into a trap instruction. */
	int *volatile p = NULL;
	*p = 42;
	KEEP_FRAME();
}

CHAIN static void writer(void)
{
	store_null();
	KEEP_FRAME();
}

int main(void)
{
	writer();
	KEEP_FRAME();
	return 0;
}
