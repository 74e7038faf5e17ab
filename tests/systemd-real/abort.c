/* abort.c - tests/systemd-real: a C program that gives up with abort(). */
#include <stdlib.h>

__attribute__((noinline)) static void give_up(int why)
{
	if (why)
		abort();
}

int main(int argc, char **argv)
{
	(void)argv;
	give_up(argc);
	return 0;
}
