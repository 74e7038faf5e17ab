/*
 * replaced.c - a program replaced on disk while it runs, as a package
 * upgrade does: it writes "ready", waits for "go", then aborts in
 * apply_update.  corpus/make-fleet-cores rebuilds it (VERSION 2: another
 * build-id) over the running binary in between, so the kernel names the
 * mapping "replaced (deleted)" in the core.  Expected signature:
 * apply_update | main.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#ifndef VERSION
#define VERSION 1
#endif

const char *const replaced_version = "replaced version";

__attribute__((noinline)) static void apply_update(int v)
{
	if (v > 0)
		abort();
}

int main(int argc, char **argv)
{
	if (argc > 1) { /* wait for the binary to be replaced */
		FILE *f = fopen("ready", "w");
		if (f)
			fclose(f);
		for (int i = 0; i < 6000 && access("go", F_OK) != 0; i++)
			usleep(10000);
	}
	puts(replaced_version);
	apply_update(VERSION);
	return 0;
}
