/*
 * main.c - the coreq command table and dispatch.  Every subcommand is one
 * file in cmd/ and one row here.
 */
#include "cmd/cmd.h"

#include <string.h>

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
    {"info", cmd_info, "what a core records: process, signal, threads, modules"},
    {"stack", cmd_stack, "every thread's stack, unwound and symbolized"},
    {"ingest", cmd_ingest, "analyse cores and store them in the database"},
    {"list-stacks", cmd_list_stacks, "unique stacks in the database, most shared first"},
    {"cores", cmd_cores, "the cores in the database"},
    {"show", cmd_show, "one stored core with every thread's stack"},
    {"flame", cmd_flame, "a flame graph of a core or a bucket, as an interactive SVG"},
    {"debug", cmd_debug, "start gdb on a core (stored or a file) and its executable"},
    {"dump", cmd_dump, "write a stored core out, decompressed"},
    {"buckets", cmd_buckets, "crash buckets: signatures that survive rebuilds"},
    {"resymbolize", cmd_resymbolize, "name stored frames from debuginfo that came later"},
    {"merge", cmd_merge, "fold other hosts' crash databases into this one"},
    {"push", cmd_push, "send new crash records to ClickHouse over HTTP"},
    {"export", cmd_export, "crash records as NDJSON for a fleet store (ClickHouse)"},
    {"rebucket", cmd_rebucket, "recompute every stored core's bucket under the rules in force"},
    {"hook", cmd_hook, "kernel.core_pattern handler: store, then analyse a core from stdin"},
    {"lws", cmd_lws, "libwebsockets backtraces: decode, encode, ingest logs"},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
	fputs("Usage: coreq COMMAND [OPTIONS] [ARGS]\n"
	      "\n"
	      "coreq analyses Linux ELF core dumps: threads, registers, memory, modules.\n"
	      "\n"
	      "Commands:\n",
	      out);
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fputs("\nRun 'coreq COMMAND --help' for a command's options; see coreq(1).\n", out);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return EXIT_OK;
	}
	opterr = 0; /* each command reports option errors itself, in one line */
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		puts("coreq " COREQ_VERSION);
		return EXIT_OK;
	}
	for (size_t i = 0; i < NCOMMANDS; i++) {
		if (strcmp(argv[1], commands[i].name) == 0) {
			optind = 1;
			return commands[i].run(argc - 1, argv + 1);
		}
	}
	fprintf(stderr, "coreq: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
