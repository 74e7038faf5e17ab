/* bucket_multi.c: corpus program for crash bucketing.  `bucket_multi SITE`
 * dies at the crash site SITE, always through main -> dispatch:
 *
 *   f             crash_in_f -> abort()                   SIGABRT
 *   g             crash_in_g -> abort()                   SIGABRT
 *   same_abort    site_same(0) -> abort()                 SIGABRT
 *   same_segv     site_same(1): write to address 0        SIGSEGV
 *   check_abort   checker_caller(0) -> abort()            SIGABRT
 *   check_raise   checker_caller(1) -> raise(SIGABRT)     SIGABRT
 *   check_assert  checker_caller(2): assert fails ->
 *                 __assert_fail -> abort()                SIGABRT
 *
 * One binary, so only the site differs between its cores: f and g are two
 * sites, same_abort and same_segv one site with two signals, and the check_*
 * sites one caller reaching SIGABRT through three kinds of crash machinery.
 * Any other argument: exit status 2. */
#undef NDEBUG
#include "common.h"

#include <assert.h>
#include <signal.h>

volatile int site_reached;

CHAIN static void crash_in_f(void)
{
	site_reached = 1;
	abort();
}

CHAIN static void crash_in_g(void)
{
	site_reached = 2;
	abort();
}

/* No branch to a noreturn call, so -O2 does not split off a .cold part
 * (every site keeps its own name): with how != 0 the store faults, else it
 * goes to a dummy and abort() follows. */
CHAIN static void site_same(int how)
{
	static int dummy;
	int *volatile p = how ? NULL : &dummy;

	site_reached = 3;
	*p = how;
	abort();
}

CHAIN static void checker_caller(int how)
{
	site_reached = 4;
	if (how == 1)
		raise(SIGABRT);
	assert(how != 2 && "checker_caller: bad request");
	abort();
}

CHAIN static int dispatch(const char *site)
{
	if (strcmp(site, "f") == 0)
		crash_in_f();
	else if (strcmp(site, "g") == 0)
		crash_in_g();
	else if (strcmp(site, "same_abort") == 0)
		site_same(0);
	else if (strcmp(site, "same_segv") == 0)
		site_same(1);
	else if (strcmp(site, "check_abort") == 0)
		checker_caller(0);
	else if (strcmp(site, "check_raise") == 0)
		checker_caller(1);
	else if (strcmp(site, "check_assert") == 0)
		checker_caller(2);
	else
		return -1;
	KEEP_FRAME();
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2 || dispatch(argv[1]) != 0) {
		fprintf(stderr, "usage: bucket_multi "
		                "f|g|same_abort|same_segv|check_abort|check_raise|check_assert\n");
		return 2;
	}
	KEEP_FRAME();
	return 1; /* not reached */
}
