/*
 * resymbolize.c - `coreq resymbolize`: name stored frames from debuginfo that
 * arrived after the crash (libcore/pipeline/resymbolize.h), then re-bucket.
 */
#include "cmd/cmd.h"

#include <stdlib.h>
#include <string.h>

#include "libcore/pipeline/resymbolize.h"
#include "libcore/store/store.h"
#include "libcore/triage/bucket.h"
#include "libcore/triage/rules.h"

static const char resymbolize_usage[] =
    "Usage: coreq resymbolize [--db P] [--debuginfod URL]... [--debug-dir D]...\n"
    "                         [--rules FILE] [--signature-frames N] [--format text|json]\n"
    "\n"
    "Name the stored frames whose module had no symbols when the core was\n"
    "ingested (they keep build-id + offset): each such module's debuginfo is\n"
    "looked up by build-id in the --debug-dir trees, then on debuginfod servers\n"
    "(elfutils' client: its cache, $DEBUGINFOD_TIMEOUT, and $DEBUGINFOD_URLS\n"
    "unless --debuginfod is given).  Frames get the names `coreq stack` would\n"
    "give them with that debuginfo; stacks and their counts stay.  Then every\n"
    "core is re-bucketed, and the cores whose bucket changed are counted.\n"
    "It uses the network; the hook never runs it.\n"
    "\n"
    "  --db P                database (default $COREQ_DB, else db in\n"
    "                        /etc/coreq/coreq.conf, else $XDG_STATE_HOME/coreq/\n"
    "                        coreq.db, else /var/lib/coreq/coreq.db for root)\n"
    "  --debuginfod URL      a debuginfod server (repeatable)\n"
    "  --debug-dir D         a build-id tree of debuginfo, looked in first (repeatable)\n"
    "  --rules FILE          bucketing rules (as for ingest)\n"
    "  --signature-frames N  frames in a crash signature (default 5)\n"
    "  --format text|json    output format (default text)\n"
    "  --help                show this help\n";

enum {
	OPT_DB = OPT_FIRST_COMMAND_SPECIFIC,
	OPT_DEBUGINFOD,
	OPT_RULES,
	OPT_SIGNATURE_FRAMES,
};

#define MAX_SERVERS 16

int cmd_resymbolize(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"format", required_argument, NULL, OPT_FORMAT},
	    {"help", no_argument, NULL, OPT_HELP},
	    {"db", required_argument, NULL, OPT_DB},
	    {"debuginfod", required_argument, NULL, OPT_DEBUGINFOD},
	    {"debug-dir", required_argument, NULL, OPT_DEBUG_DIR},
	    {"rules", required_argument, NULL, OPT_RULES},
	    {"signature-frames", required_argument, NULL, OPT_SIGNATURE_FRAMES},
	    {NULL, 0, NULL, 0},
	};
	const char *db = NULL, *rules_path = NULL;
	const char *dirs[CMD_MAX_DEBUG_DIRS + 1] = {NULL};
	size_t ndirs = 0;
	char urls[4096] = "";
	unsigned nframes = CQ_BUCKET_DEFAULT_FRAMES;
	bool have_urls = false;
	enum cmd_format format = CMD_FORMAT_TEXT;
	int opt;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (opt == 'h')
			opt = OPT_HELP;
		switch (opt) {
		case 'h':
		case OPT_HELP:
			fputs(resymbolize_usage, stdout);
			return EXIT_OK;
		case OPT_FORMAT:
			if (!cmd_parse_format(optarg, &format, "resymbolize"))
				return EXIT_USAGE;
			break;
		case OPT_DB:
			db = optarg;
			break;
		case OPT_DEBUGINFOD:
			if (strlen(urls) + strlen(optarg) + 2 > sizeof(urls))
				return cmd_usage_error("resymbolize",
				                       "too many --debuginfod servers");
			if (urls[0])
				strcat(urls, " ");
			strcat(urls, optarg);
			have_urls = true;
			break;
		case OPT_DEBUG_DIR:
			if (ndirs == CMD_MAX_DEBUG_DIRS)
				return cmd_usage_error("resymbolize",
				                       "at most %d --debug-dir options",
				                       CMD_MAX_DEBUG_DIRS);
			dirs[ndirs++] = optarg;
			break;
		case OPT_RULES:
			rules_path = optarg;
			break;
		case OPT_SIGNATURE_FRAMES:
			if (!cmd_parse_count(optarg, 1, 64, &nframes, "resymbolize",
			                     "--signature-frames"))
				return EXIT_USAGE;
			break;
		default:
			return cmd_option_error("resymbolize", opt, argv);
		}
	}
	if (optind != argc)
		return cmd_usage_error("resymbolize", "unexpected argument '%s'", argv[optind]);
	struct cq_bucket_rules *rules;
	struct cq_error *err = cq_bucket_rules_load(rules_path, &rules);
	if (err)
		return cmd_fail(rules_path ? rules_path : "rules", err);
	struct cq_store *store;
	int rc = cmd_open_store_existing(db, &store);
	if (rc != EXIT_OK) {
		cq_bucket_rules_free(rules);
		return rc;
	}
	struct cq_resymbolize_options o = {.debug_dirs = dirs,
	                                   .debuginfod_urls = have_urls ? urls : NULL,
	                                   .rules = rules,
	                                   .signature_frames = nframes};
	struct cq_resymbolize_result r;
	err = cq_resymbolize(store, &o, &r);
	cq_store_close(store);
	cq_bucket_rules_free(rules);
	if (err)
		return cmd_fail(db ? db : "database", err);
	if (format == CMD_FORMAT_JSON)
		printf("{\"modules\":%lld,\"found\":%lld,\"frames\":%lld,\"cores\":%zu,"
		       "\"moved\":%zu,\"buckets_before\":%zu,\"buckets_after\":%zu}\n",
		       (long long)r.modules, (long long)r.found, (long long)r.frames,
		       r.rebucket.cores, r.rebucket.moved, r.rebucket.before, r.rebucket.after);
	else
		printf("%lld module%s without names, debuginfo for %lld; %lld frame%s named; %zu "
		       "core%s moved to another bucket\n",
		       (long long)r.modules, r.modules == 1 ? "" : "s", (long long)r.found,
		       (long long)r.frames, r.frames == 1 ? "" : "s", r.rebucket.moved,
		       r.rebucket.moved == 1 ? "" : "s");
	return EXIT_OK;
}
