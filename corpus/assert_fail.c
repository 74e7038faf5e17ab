/* assert_fail.c: corpus program.  main -> checker -> check_value, whose
 * assert(v == 0) fails: __assert_fail prints a message and aborts (SIGABRT). */
#undef NDEBUG
#include "common.h"

#include <assert.h>

volatile int checked;

CHAIN static void check_value(int v)
{
	assert(v == 0);
	checked = v;
}

CHAIN static void checker(int v)
{
	check_value(v + 1);
	KEEP_FRAME();
}

int main(int argc, char **argv)
{
	(void)argv;
	checker(argc - 1); /* check_value(1) when run without arguments */
	KEEP_FRAME();
	return 0;
}
