/*
 * merge.c - `coreq merge`: fold other hosts' crash databases into one
 * (libcore/store/merge.h), in one transaction.
 */
#include "cmd/cmd.h"
#include "cmd/options.h"

#include "libcore/store/merge.h"
#include "libcore/store/store.h"

struct merge_args {
	const char *db;
	enum cmd_format format;
};

static const struct cmd_opt merge_options[] = {
    CMD_ROW_DB(struct merge_args, db),
    CMD_ROW_FORMAT(struct merge_args, format),
    CMD_OPT_END,
};

static const struct cmd_spec merge_spec = {
    .name = "merge",
    .forms = "[OPTIONS] [DB...]",
    .about = "Fold the crash databases DB... (other hosts') into the database, in one\n"
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
             "The database (--db) is created if missing.  Without DB, it is only opened:\n"
             "created if missing, upgraded to this coreq's schema if older (queries\n"
             "never upgrade a database).\n",
    .opt = merge_options,
};

static void print_result(enum cmd_format format, const struct cq_merge_result *r)
{
	if (format == CMD_FORMAT_JSON) {
		printf("{\"cores\":%lld,\"skipped\":%lld,\"refused\":%lld,\"new_stacks\":%lld}\n",
		       (long long)r->cores, (long long)r->skipped, (long long)r->refused,
		       (long long)r->stacks);
		return;
	}
	printf("merged %lld core%s (%lld already held), %lld new stack%s\n", (long long)r->cores,
	       r->cores == 1 ? "" : "s", (long long)r->skipped, (long long)r->stacks,
	       r->stacks == 1 ? "" : "s");
	if (r->refused)
		printf("refused %lld core%s: a stored hash or build-id of %s did not check\n",
		       (long long)r->refused, r->refused == 1 ? "" : "s",
		       r->refused == 1 ? "it" : "them");
}

int cmd_merge(int argc, char **argv)
{
	struct merge_args a = {.format = CMD_FORMAT_TEXT};
	int rc = cmd_opts_parse(&merge_spec, argc, argv, &a);
	if (rc != CMD_OPTS_GO_ON)
		return rc;
	struct cq_store *store;
	struct cq_error *err = cmd_open_store(a.db, &store);
	if (err)
		return cmd_fail(a.db ? a.db : "database", err);
	struct cq_merge_result r;
	err =
	    cq_store_merge(store, (const char *const *)argv + optind, (size_t)(argc - optind), &r);
	cq_store_close(store);
	if (err)
		return cmd_fail(a.db ? a.db : "database", err);
	print_result(a.format, &r);
	return EXIT_OK;
}
