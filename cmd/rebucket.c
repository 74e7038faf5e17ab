/*
 * rebucket.c - `coreq rebucket`: recompute every stored core's crash
 * signature from its stored frames under the rules in force, in one
 * transaction, and say how many buckets merged or split.
 */
#include "cmd/cmd.h"

#include <stdlib.h>

#include "libcore/base/json.h"
#include "libcore/store/rebucket.h"
#include "libcore/store/store.h"
#include "libcore/triage/bucket.h"
#include "libcore/triage/rules.h"

static const char rebucket_usage[] =
    "Usage: coreq rebucket [--db P] [--rules FILE] [--signature-frames N] [--format text|json]\n"
    "\n"
    "Recompute the crash signature of every stored core from the frames the\n"
    "database holds (no core file is read again), under the bucketing rules in\n"
    "force, in one transaction.  Buckets whose signature survives keep their id;\n"
    "counts, first/last seen and example cores move with their cores.  Reports\n"
    "how many cores moved and how many buckets merged or split.\n"
    "\n"
    "  --db P                database (default $COREQ_DB, else db in\n"
    "                        /etc/coreq/coreq.conf, else $XDG_STATE_HOME/coreq/\n"
    "                        coreq.db, else /var/lib/coreq/coreq.db for root)\n"
    "  --rules FILE          bucketing rules (default $COREQ_RULES, else\n"
    "                        /etc/coreq/rules, else the built-in ones)\n"
    "  --signature-frames N  frames in a crash signature (default 5)\n"
    "  --format text|json    output format (default text)\n"
    "  --help                show this help\n";

enum {
	OPT_DB = OPT_FIRST_COMMAND_SPECIFIC,
	OPT_RULES,
	OPT_SIGNATURE_FRAMES,
};

static void print_result(enum cmd_format format, const struct cq_store_rebucket_result *r,
                         const char *version)
{
	if (format != CMD_FORMAT_JSON) {
		printf("rebucketed %zu core%s with rules %s: %zu bucket%s before, %zu after; "
		       "%zu merged, %zu split, %zu core%s moved\n",
		       r->cores, r->cores == 1 ? "" : "s", version, r->before,
		       r->before == 1 ? "" : "s", r->after, r->merged, r->split, r->moved,
		       r->moved == 1 ? "" : "s");
		return;
	}
	struct cq_json j;
	cq_json_init(&j, stdout);
	cq_json_object_begin(&j);
	cq_json_key(&j, "rules_version");
	cq_json_string(&j, version);
	const char *keys[] = {"cores",  "buckets_before", "buckets_after",
	                      "merged", "split",          "moved"};
	size_t vals[] = {r->cores, r->before, r->after, r->merged, r->split, r->moved};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		cq_json_key(&j, keys[i]);
		cq_json_uint(&j, vals[i]);
	}
	cq_json_object_end(&j);
	cq_json_finish(&j);
}

int cmd_rebucket(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"format", required_argument, NULL, OPT_FORMAT},
	    {"help", no_argument, NULL, OPT_HELP},
	    {"db", required_argument, NULL, OPT_DB},
	    {"rules", required_argument, NULL, OPT_RULES},
	    {"signature-frames", required_argument, NULL, OPT_SIGNATURE_FRAMES},
	    {NULL, 0, NULL, 0},
	};
	enum cmd_format format = CMD_FORMAT_TEXT;
	const char *db = NULL, *rules_path = NULL;
	unsigned nframes = CQ_BUCKET_DEFAULT_FRAMES;
	int opt;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (opt == 'h')
			opt = OPT_HELP;
		if (opt == OPT_HELP) {
			fputs(rebucket_usage, stdout);
			return EXIT_OK;
		} else if (opt == OPT_FORMAT) {
			if (!cmd_parse_format(optarg, &format, "rebucket"))
				return EXIT_USAGE;
		} else if (opt == OPT_DB) {
			db = optarg;
		} else if (opt == OPT_RULES) {
			rules_path = optarg;
		} else if (opt == OPT_SIGNATURE_FRAMES) {
			if (!cmd_parse_count(optarg, 1, 64, &nframes, "rebucket",
			                     "--signature-frames"))
				return EXIT_USAGE;
		} else {
			return cmd_option_error("rebucket", opt, argv);
		}
	}
	if (optind != argc)
		return cmd_usage_error("rebucket", "unexpected argument '%s'", argv[optind]);
	struct cq_bucket_rules *rules;
	struct cq_store *store;
	int rc = cmd_open_rules_and_store(rules_path, db, &rules, &store);
	if (rc != EXIT_OK)
		return rc;
	struct cq_store_rebucket_result r;
	struct cq_error *err = cq_store_rebucket(store, rules, nframes, &r);
	if (err)
		rc = cmd_fail(db ? db : "database", err);
	else
		print_result(format, &r, rules->version);
	cq_store_close(store);
	cq_bucket_rules_free(rules);
	return rc;
}
