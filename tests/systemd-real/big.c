/*
 * big.c - tests/systemd-real: a crash whose core is larger than the
 * ProcessSizeMax= the test gives systemd-coredump (8 MiB of written heap),
 * so systemd stores it truncated.
 */
#include <stdlib.h>
#include <string.h>

int *volatile hole; /* NULL, and the compiler cannot know it */

__attribute__((noinline)) void fill_and_fault(char *buf, size_t n)
{
	memset(buf, 0x5a, n);
	*hole = buf[n - 1];
}

int main(void)
{
	size_t n = 8u << 20;
	fill_and_fault(malloc(n), n);
	return 0;
}
