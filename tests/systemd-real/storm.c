/* storm.c - tests/systemd-real: the storm's program, one SIGSEGV in storm_fault. */
#include <stddef.h>

int *volatile target; /* NULL, and the compiler cannot know it */

__attribute__((noinline)) void storm_fault(int v)
{
	*target = v;
}

int main(int argc, char **argv)
{
	(void)argv;
	storm_fault(argc);
	return 0;
}
