/*
 * main.c - the coreq command table and dispatch.  Every subcommand is one
 * file in cmd/ and one row here.
 */
#include "cmd/cmd.h"

#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libcore/base/config.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
	bool paged; /* long text output: through $PAGER on a terminal */
};

static const struct command commands[] = {
    {"info", cmd_info, "what a core records: process, signal, threads, modules", true},
    {"stack", cmd_stack, "every thread's stack, unwound and symbolized", true},
    {"ingest", cmd_ingest, "analyse cores and store them in the database", false},
    {"list-stacks", cmd_list_stacks, "unique stacks in the database, most shared first", true},
    {"cores", cmd_cores, "the cores in the database", true},
    {"show", cmd_show, "one stored core with every thread's stack", true},
    {"flame", cmd_flame, "a flame graph of a core or a bucket, as an interactive SVG", false},
    {"debug", cmd_debug, "start gdb on a core (stored or a file) and its executable", false},
    {"dump", cmd_dump, "write a stored core out, decompressed", false},
    {"buckets", cmd_buckets, "crash buckets: signatures that survive rebuilds", true},
    {"resymbolize", cmd_resymbolize, "name stored frames from debuginfo that came later", false},
    {"merge", cmd_merge, "fold other hosts' crash databases into this one", false},
    {"push", cmd_push, "send new crash records to ClickHouse over HTTP", false},
    {"export", cmd_export, "crash records as NDJSON for a fleet store (ClickHouse)", false},
    {"rebucket", cmd_rebucket, "recompute every stored core's bucket under the rules in force",
     false},
    {"hook", cmd_hook, "kernel.core_pattern handler: store, then analyse a core from stdin", false},
    {"cache", cmd_cache, "fill the per-build-id cache for libraries before a crash", false},
    {"lws", cmd_lws, "libwebsockets backtraces: decode, encode, ingest logs", false},
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
	fputs("\nEvery command also takes --no-pager (text goes through $PAGER on a terminal)\n"
	      "and --color=auto|always|never (colour on a terminal only; $NO_COLOR).\n"
	      "Run 'coreq COMMAND --help' for a command's options, 'coreq help COMMAND' for\n"
	      "its manual page (coreq-COMMAND(1)); see coreq(1).\n",
	      out);
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(name, commands[i].name) == 0)
			return &commands[i];
	return NULL;
}

/* Whether man finds page (`man -w`, its output discarded). */
static bool man_has(const char *page)
{
	pid_t pid = fork();
	if (pid == 0) {
		freopen("/dev/null", "w", stdout);
		freopen("/dev/null", "w", stderr);
		execlp("man", "man", "-w", page, (char *)NULL);
		_exit(127);
	}
	int status;
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 0;
}

/*
 * `coreq help COMMAND`, as `git help` does: the command's manual page,
 * coreq-COMMAND(1); its --help text where man or the page is missing.
 */
static int help_command(const char *name)
{
	const struct command *c = find_command(name);
	if (!c) {
		fprintf(stderr, "coreq: unknown command '%s'\n", name);
		usage(stderr);
		return EXIT_USAGE;
	}
	char page[64];
	snprintf(page, sizeof(page), "coreq-%s", c->name);
	if (man_has(page)) {
		fflush(NULL);
		execlp("man", "man", page, (char *)NULL);
	}
	char *args[] = {(char *)c->name, "--help", NULL};
	optind = 1;
	return c->run(2, args);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	opterr = 0; /* each command reports option errors itself, in one line */
	if (strcmp(argv[1], "help") == 0 && argc > 2)
		return help_command(argv[2]);
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		puts("coreq " COREQ_VERSION);
		return EXIT_OK;
	}
	for (size_t i = 0; i < NCOMMANDS; i++) {
		if (strcmp(argv[1], commands[i].name) == 0) {
			int n = cmd_terminal_options(argc - 1, argv + 1);
			if (n < 0)
				return EXIT_USAGE;
			/* A refused configuration stops every command, before it uses a default. */
			struct cq_error *cerr = cq_config_check();
			if (cerr)
				return cmd_fail(cq_config_path(), cerr);
			optind = 1;
			/* Text of the commands that print much goes through the pager. */
			bool paged = commands[i].paged;
			for (int k = 1; k < n && paged; k++)
				paged = strncmp(argv[1 + k], "--format", 8) != 0 &&
				        strncmp(argv[1 + k], "--help", 6) != 0 &&
				        strcmp(argv[1 + k], "-h") != 0;
			if (paged)
				cmd_pager_start();
			int rc = commands[i].run(n, argv + 1);
			if (paged)
				cmd_pager_end();
			return rc;
		}
	}
	fprintf(stderr, "coreq: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
