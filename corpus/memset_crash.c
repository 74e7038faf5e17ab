/*
 * memset_crash.c - a crash inside memset, for bucketing across CPUs.
 * glibc picks memset's variant by CPU at load time (an ifunc), so the same
 * crash is __memset_avx2_unaligned_erms on one host and
 * __memset_sse2_unaligned_erms on another (GLIBC_TUNABLES masks CPU
 * features to show it on one machine).  Expected signature:
 * memset | clear_buffer | handle_request | main.
 */
#include <stddef.h>
#include <string.h>

static char *volatile target; /* NULL: the crash */

__attribute__((noinline)) static void clear_buffer(char *buf, size_t n)
{
	memset(buf, 0, n);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void handle_request(size_t n)
{
	clear_buffer(target, n);
	__asm__ volatile("" ::: "memory");
}

int main(void)
{
	handle_request(4096);
	return 0;
}
