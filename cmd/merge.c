/*
 * merge.c - `coreq merge`: fold other hosts' crash databases into one
 * (libcore/store/merge.h), in one transaction.
 */
#include "cmd/cmd.h"

#include "libcore/store/merge.h"
#include "libcore/store/store.h"

static const char merge_usage[] =
    "Usage: coreq merge [--db P] [--format text|json] [DB...]\n"
    "\n"
    "Fold the crash databases DB... (other hosts') into the database, in one\n"
    "transaction: every analysed core it does not hold yet (by content\n"
    "identity), with its threads, suspended chains and modules; stacks,\n"
    "modules and buckets are matched by hash and build-id, and bucket counts\n"
    "are recomputed, so merging the same database twice adds nothing.  The\n"
    "sources are only read.  For a small fleet without a fleet store.\n"
    "\n"
    "A source is checked before anything is copied: its schema must be the\n"
    "one coreq makes (no views, triggers or indexes of its own, every table\n"
    "with coreq's columns), and a core is refused (counted, not copied) when\n"
    "a stack or bucket of it has a hash that is not its frames' or its\n"
    "signature's, or a module a malformed build-id.\n"
    "\n"
    "Without DB, the database is only opened: created if missing, upgraded to\n"
    "this coreq's schema if older (queries never upgrade a database).\n"
    "\n"
    "  --db P              target database (default $COREQ_DB, else\n"
    "                      $XDG_STATE_HOME/coreq/coreq.db); created if missing\n"
    "  --format text|json  output format (default text)\n"
    "  --help              show this help\n";

enum {
	OPT_DB = OPT_FIRST_COMMAND_SPECIFIC,
};

int cmd_merge(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"format", required_argument, NULL, OPT_FORMAT},
	    {"help", no_argument, NULL, OPT_HELP},
	    {"db", required_argument, NULL, OPT_DB},
	    {NULL, 0, NULL, 0},
	};
	const char *db = NULL;
	enum cmd_format format = CMD_FORMAT_TEXT;
	int opt;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (opt == 'h')
			opt = OPT_HELP;
		if (opt == OPT_HELP || opt == 'h') {
			fputs(merge_usage, stdout);
			return EXIT_OK;
		} else if (opt == OPT_FORMAT) {
			if (!cmd_parse_format(optarg, &format, "merge"))
				return EXIT_USAGE;
		} else if (opt == OPT_DB) {
			db = optarg;
		} else {
			return cmd_option_error("merge", opt, argv);
		}
	}
	struct cq_store *store;
	struct cq_error *err = cmd_open_store(db, &store);
	if (err)
		return cmd_fail(db ? db : "database", err);
	struct cq_merge_result r;
	err =
	    cq_store_merge(store, (const char *const *)argv + optind, (size_t)(argc - optind), &r);
	cq_store_close(store);
	if (err)
		return cmd_fail(db ? db : "database", err);
	if (format == CMD_FORMAT_JSON) {
		printf("{\"cores\":%lld,\"skipped\":%lld,\"refused\":%lld,\"new_stacks\":%lld}\n",
		       (long long)r.cores, (long long)r.skipped, (long long)r.refused,
		       (long long)r.stacks);
	} else {
		printf("merged %lld core%s (%lld already held), %lld new stack%s\n",
		       (long long)r.cores, r.cores == 1 ? "" : "s", (long long)r.skipped,
		       (long long)r.stacks, r.stacks == 1 ? "" : "s");
		if (r.refused)
			printf("refused %lld core%s: a stored hash or build-id of %s did not "
			       "check\n",
			       (long long)r.refused, r.refused == 1 ? "" : "s",
			       r.refused == 1 ? "it" : "them");
	}
	return EXIT_OK;
}
