/* recurse.c: corpus program (aarch64 corpus, corpus/make-aarch64-cores).
 * Dies with SIGSEGV a few levels deep in recursion, in the recursive
 * function itself:
 *   recurse direct N  main -> descend(N) -> descend(N-1) ... -> descend(1)
 *   recurse mutual N  main -> ping(N) -> pong(N-1) -> ping(N-2) ... (N calls)
 * The innermost call reads through a NULL pointer.  At -O2 that path is
 * shrink-wrapped: the faulting frame allocates no stack, so its caller's
 * stack pointer (the CFA) equals its own, and only the pc tells the frames
 * apart.  Every other level is one more frame of the same function at
 * another stack pointer. */
#include "common.h"

/* NULL, read through a volatile pointer so the compiler cannot see it. */
static int *volatile null_target;

CHAIN static int descend(int n)
{
	int below;

	if (n <= 1)
		return *null_target;
	below = descend(n - 1);
	KEEP_FRAME();
	return below + n;
}

CHAIN static int pong(int n);

CHAIN static int ping(int n)
{
	int below;

	if (n <= 1)
		return *null_target;
	below = pong(n - 1);
	KEEP_FRAME();
	return below + 1;
}

CHAIN static int pong(int n)
{
	int below;

	if (n <= 1)
		return *null_target;
	below = ping(n - 1);
	KEEP_FRAME();
	return below + 2;
}

int main(int argc, char **argv)
{
	int levels = argc > 2 ? atoi(argv[2]) : 4;
	int r;

	if (argc > 1 && strcmp(argv[1], "mutual") == 0)
		r = ping(levels);
	else
		r = descend(levels);
	KEEP_FRAME();
	return r;
}
