/* heap_fill MIB KIND: MIB MiB of heap, then abort.  KIND "text" fills it with
 * records that compress about 8:1 (a service's heap of strings and
 * pointers), "random" with xorshift words that do not compress. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
	long mib = argc > 1 ? atol(argv[1]) : 1024;
	int random_fill = argc > 2 && strcmp(argv[2], "random") == 0;
	uint64_t x = 88172645463325252ull;
	for (long m = 0; m < mib; m++) {
		uint64_t *p = malloc(1 << 20);
		for (size_t i = 0; i < (1 << 20) / 8; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			p[i] = random_fill
			           ? x
			           : (i % 8 == 0 ? x & 0xffff : 0x2020206e6f697473ull + (i & 3));
		}
	}
	abort();
}
