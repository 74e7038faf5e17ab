/* bucket_site.c: corpus program for crash bucketing.  main -> handle_request
 * -> parse_header -> validate_length -> abort(): SIGABRT from one crash site.
 *
 * It is built in several variants whose code layout differs (O0, O2, nopie,
 * and O2pad = O2 with -DPADDING), so the same crash site sits at different
 * addresses and offsets in each binary: a crash signature made of function
 * names must be the same for all of them.  With PADDING, unrelated functions
 * with real code come first in the file and run from a constructor, so every
 * function of the crash chain moves.  At -O2, validate_length (it only
 * aborts) is cold code, placed first in .text: the padding also calls libc
 * functions the crash chain does not (qsort, snprintf, strtoul, memchr), so
 * the PLT before .text grows and validate_length moves too. */
#include "common.h"

volatile size_t length_seen;

#ifdef PADDING
volatile unsigned long padding_result;

/* Bitwise CRC-32 (IEEE) of a buffer. */
CHAIN static unsigned long pad_crc32(const unsigned char *p, size_t n)
{
	unsigned long crc = 0xffffffffUL;

	for (size_t i = 0; i < n; i++) {
		crc ^= p[i];
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320UL & (0UL - (crc & 1)));
	}
	return crc ^ 0xffffffffUL;
}

static int pad_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Sorts a small array with qsort. */
CHAIN static void pad_sort(int *a, int n)
{
	qsort(a, (size_t)n, sizeof *a, pad_cmp);
}

/* Prints a number in hex and parses it back. */
CHAIN static unsigned long pad_round_trip(unsigned long v)
{
	char buf[32];

	snprintf(buf, sizeof buf, "%lx", v);
	return strtoul(buf, NULL, 16) ^ (unsigned long)(memchr(buf, 'a', sizeof buf) != NULL);
}

/* FNV-1a hash of a string, folded with its length. */
CHAIN static unsigned long pad_fnv(const char *s)
{
	unsigned long h = 1469598103934665603UL;
	size_t n = 0;

	for (; s[n]; n++) {
		h ^= (unsigned char)s[n];
		h *= 1099511628211UL;
	}
	return h ^ n;
}

/* Counts the words, digits and punctuation of a string with a tiny state
 * machine and mixes the counts. */
CHAIN static unsigned long pad_tokens(const char *s)
{
	unsigned long words = 0, digits = 0, punct = 0;
	int in_word = 0;

	for (; *s; s++) {
		char c = *s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
			if (!in_word)
				words++;
			in_word = 1;
		} else {
			in_word = 0;
			if (c >= '0' && c <= '9')
				digits++;
			else if (c != ' ')
				punct++;
		}
	}
	return words * 10007 + digits * 101 + punct;
}

/* Greatest common divisor of every pair of a table, summed. */
CHAIN static unsigned long pad_gcd_sum(const int *a, int n)
{
	unsigned long sum = 0;

	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			int x = a[i], y = a[j];

			while (y != 0) {
				int t = x % y;
				x = y;
				y = t;
			}
			sum += (unsigned long)x;
		}
	return sum;
}

/* Runs the padding once at start-up, far from the crash chain. */
__attribute__((constructor)) static void pad_startup(void)
{
	static const char text[] = "GET /index.html HTTP/1.1, 200 OK; 3 words";
	int table[] = {48, 18, 30, 105, 12, 77, 64, 9};

	pad_sort(table, (int)(sizeof table / sizeof table[0]));
	padding_result = pad_crc32((const unsigned char *)text, sizeof text - 1) ^ pad_fnv(text) ^
	                 pad_tokens(text) ^
	                 pad_gcd_sum(table, (int)(sizeof table / sizeof table[0]));
	padding_result ^= pad_round_trip(padding_result);
}
#endif

/* The length is always too long here.  abort() is not behind a condition,
 * so -O2 does not move it to a validate_length.cold part. */
CHAIN static void validate_length(size_t len)
{
	length_seen = len;
	abort();
}

CHAIN static void parse_header(const char *header)
{
	validate_length(strlen(header));
	KEEP_FRAME();
}

CHAIN static void handle_request(const char *request)
{
	parse_header(request);
	KEEP_FRAME();
}

int main(void)
{
	handle_request("Content-Length: 12345678901234567890");
	KEEP_FRAME();
	return 0;
}
