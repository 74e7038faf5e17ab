/*
 * resymbolize.c - `coreq resymbolize`: name stored frames from debuginfo that
 * arrived after the crash (libcore/pipeline/resymbolize.h), then re-bucket.
 */
#include "cmd/cmd.h"

#include <stdlib.h>
#include <string.h>

#include "libcore/base/json.h"
#include "libcore/pipeline/resymbolize.h"
#include "libcore/store/store.h"
#include "libcore/triage/bucket.h"
#include "libcore/triage/rules.h"

static const char resymbolize_usage[] =
    "Usage: coreq resymbolize [--db P] [--debuginfod URL]... [--debug-dir D]...\n"
    "                         [--max-size BYTES] [--module-timeout S] [--deadline S]\n"
    "                         [--rules FILE] [--signature-frames N] [--format text|json]\n"
    "\n"
    "Name the stored frames whose module had no symbols when the core was\n"
    "ingested (they keep build-id + offset): each such module's debuginfo is\n"
    "looked up by build-id in the --debug-dir trees, then on debuginfod servers\n"
    "(elfutils' client: its cache, $DEBUGINFOD_TIMEOUT, and $DEBUGINFOD_URLS\n"
    "unless --debuginfod is given).  Frames get the names `coreq stack` would\n"
    "give them with that debuginfo; stacks and their counts stay.  Then every\n"
    "core is re-bucketed, and the cores whose bucket changed are counted.\n"
    "A stored build-id that is not 2 to 128 hex digits is never looked up, and\n"
    "a file is used only when it carries the build-id asked for.  Each module's\n"
    "outcome is listed: debug_dir, fetched, not_found, too_big, timed_out,\n"
    "skipped (the deadline had passed), bad_build_id, mismatch or failed.\n"
    "It uses the network; the hook never runs it.\n"
    "\n"
    "  --db P                database (default $COREQ_DB, else db in\n"
    "                        /etc/coreq/coreq.conf, else $XDG_STATE_HOME/coreq/\n"
    "                        coreq.db, else /var/lib/coreq/coreq.db for root)\n"
    "  --debuginfod URL      a debuginfod server (repeatable)\n"
    "  --debug-dir D         a build-id tree of debuginfo, looked in first (repeatable)\n"
    "  --max-size BYTES      largest debuginfo file taken from a server (K, M, G\n"
    "                        suffixes; at least 64K; default 512M)\n"
    "  --module-timeout S    seconds one module's lookup may take, retries\n"
    "                        included (default 120; 0: no limit)\n"
    "  --deadline S          seconds after which no server is asked and a lookup\n"
    "                        under way stops (default 600; 0: no limit)\n"
    "  --rules FILE          bucketing rules (as for ingest)\n"
    "  --signature-frames N  frames in a crash signature (default 5)\n"
    "  --format text|json    output format (default text)\n"
    "  --help                show this help\n";

enum {
	OPT_DB = OPT_FIRST_COMMAND_SPECIFIC,
	OPT_DEBUGINFOD,
	OPT_RULES,
	OPT_SIGNATURE_FRAMES,
	OPT_MAX_SIZE,
	OPT_MODULE_TIMEOUT,
	OPT_DEADLINE,
};

/* The smallest --max-size: the client's progress counts must not pass it before a transfer. */
#define MIN_MAX_SIZE (64u << 10)

static void print_json(const struct cq_resymbolize_result *r)
{
	struct cq_json j;
	cq_json_init(&j, stdout);
	cq_json_object_begin(&j);
	cq_json_key(&j, "modules");
	cq_json_int(&j, r->modules);
	cq_json_key(&j, "found");
	cq_json_int(&j, r->found);
	cq_json_key(&j, "frames");
	cq_json_int(&j, r->frames);
	cq_json_key(&j, "cores");
	cq_json_uint(&j, r->rebucket.cores);
	cq_json_key(&j, "moved");
	cq_json_uint(&j, r->rebucket.moved);
	cq_json_key(&j, "buckets_before");
	cq_json_uint(&j, r->rebucket.before);
	cq_json_key(&j, "buckets_after");
	cq_json_uint(&j, r->rebucket.after);
	cq_json_key(&j, "per_module");
	cq_json_array_begin(&j);
	for (size_t i = 0; i < r->neach; i++) {
		const struct cq_resymbolize_module *m = &r->each[i];
		cq_json_object_begin(&j);
		cq_json_key(&j, "module_id");
		cq_json_int(&j, m->id);
		cq_json_key(&j, "build_id");
		cq_json_string(&j, m->build_id);
		cq_json_key(&j, "outcome");
		cq_json_string(&j, cq_resymbolize_outcome_name(m->outcome));
		cq_json_key(&j, "frames");
		cq_json_int(&j, m->frames);
		cq_json_key(&j, "reason");
		cq_json_string(&j, m->reason);
		cq_json_object_end(&j);
	}
	cq_json_array_end(&j);
	cq_json_object_end(&j);
	cq_json_finish(&j);
}

/* The summary line, then one line per module: its build-id (or row), outcome and why. */
static void print_text(const struct cq_resymbolize_result *r)
{
	printf("%lld module%s without names, debuginfo for %lld; %lld frame%s named; %zu "
	       "core%s moved to another bucket\n",
	       (long long)r->modules, r->modules == 1 ? "" : "s", (long long)r->found,
	       (long long)r->frames, r->frames == 1 ? "" : "s", r->rebucket.moved,
	       r->rebucket.moved == 1 ? "" : "s");
	for (size_t i = 0; i < r->neach; i++) {
		const struct cq_resymbolize_module *m = &r->each[i];
		if (m->build_id)
			printf("  %s: %s", m->build_id, cq_resymbolize_outcome_name(m->outcome));
		else
			printf("  module %lld: %s", (long long)m->id,
			       cq_resymbolize_outcome_name(m->outcome));
		if (m->frames)
			printf(", %lld frame%s named", (long long)m->frames,
			       m->frames == 1 ? "" : "s");
		if (m->reason)
			printf(" (%s)", cmd_safe(m->reason));
		putchar('\n');
	}
}

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
	    {"max-size", required_argument, NULL, OPT_MAX_SIZE},
	    {"module-timeout", required_argument, NULL, OPT_MODULE_TIMEOUT},
	    {"deadline", required_argument, NULL, OPT_DEADLINE},
	    {NULL, 0, NULL, 0},
	};
	const char *db = NULL, *rules_path = NULL;
	const char *dirs[CMD_MAX_DEBUG_DIRS + 1] = {NULL};
	size_t ndirs = 0;
	char urls[4096] = "";
	unsigned nframes = CQ_BUCKET_DEFAULT_FRAMES;
	uint64_t max_size = CQ_RESYMBOLIZE_DEFAULT_MAX_SIZE;
	unsigned module_seconds = CQ_RESYMBOLIZE_DEFAULT_MODULE_SECONDS;
	unsigned deadline = CQ_RESYMBOLIZE_DEFAULT_DEADLINE;
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
		case OPT_MAX_SIZE:
			if (!cmd_parse_bytes(optarg, &max_size, "resymbolize", "--max-size"))
				return EXIT_USAGE;
			if (max_size < MIN_MAX_SIZE)
				return cmd_usage_error("resymbolize",
				                       "--max-size must be at least 64K");
			break;
		case OPT_MODULE_TIMEOUT:
			if (!cmd_parse_count(optarg, 0, 86400, &module_seconds, "resymbolize",
			                     "--module-timeout"))
				return EXIT_USAGE;
			break;
		case OPT_DEADLINE:
			if (!cmd_parse_count(optarg, 0, 7 * 86400, &deadline, "resymbolize",
			                     "--deadline"))
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
	                                   .signature_frames = nframes,
	                                   .max_size = max_size,
	                                   .module_seconds = module_seconds,
	                                   .deadline = deadline};
	struct cq_resymbolize_result r;
	err = cq_resymbolize(store, &o, &r);
	cq_store_close(store);
	cq_bucket_rules_free(rules);
	if (err) {
		cq_resymbolize_result_free(&r);
		return cmd_fail(db ? db : "database", err);
	}
	if (format == CMD_FORMAT_JSON)
		print_json(&r);
	else
		print_text(&r);
	cq_resymbolize_result_free(&r);
	return EXIT_OK;
}
