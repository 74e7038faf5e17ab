/* abort_deep.c: corpus program.  main -> level1 -> level2 -> level3 -> abort(),
 * dies with SIGABRT.  The simplest deep stack, built in every variant. */
#include "common.h"

volatile int depth_reached;

CHAIN static void level3(void)
{
	depth_reached = 3;
	abort();
}

CHAIN static void level2(void)
{
	depth_reached = 2;
	level3();
	KEEP_FRAME();
}

CHAIN static void level1(void)
{
	depth_reached = 1;
	level2();
	KEEP_FRAME();
}

int main(void)
{
	level1();
	KEEP_FRAME();
	return 0;
}
