/* segv.c - tests/systemd-real: a C program that writes through a NULL pointer two calls below main.
 */
#include <stddef.h>

int *volatile slot; /* NULL, and the compiler cannot know it */

__attribute__((noinline)) void store_reading(int v)
{
	*slot = v;
}

__attribute__((noinline)) void record(int v)
{
	store_reading(v + 1);
}

int main(int argc, char **argv)
{
	(void)argv;
	record(argc);
	return 0;
}
