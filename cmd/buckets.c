/*
 * buckets.c - `coreq buckets`: crash buckets, most cores first, each with
 * its signature, count, first and last time seen, executables and an
 * example core.
 */
#include "cmd/cmd.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/store_output.h"
#include "libcore/base/json.h"
#include "libcore/store/store.h"
#include "libcore/store/store_query.h"
#include "libcore/triage/bucket.h"
#include "libcore/triage/rules.h"

static const char buckets_usage[] =
    "Usage: coreq buckets [--db P] [--since TIME] [--until TIME] [--exe NAME]\n"
    "                     [--limit N] [--format text|json]\n"
    "       coreq buckets --rules[=FILE]\n"
    "\n"
    "List crash buckets, most cores first.  A bucket is a crash signature: the\n"
    "crashed thread's first frames after the crash machinery (abort, raise,\n"
    "assert, the C++ throw path, Rust panics), names normalised so that a\n"
    "rebuild does not change them, and the signal.  A process killed from outside\n"
    "while its threads wait on locks is a deadlock bucket (its cycle's lock-taking\n"
    "frames, in canonical order; a possible-deadlock bucket when the cycle rests on\n"
    "an inferred lock owner nothing in the core confirms) or a hang bucket (the\n"
    "awaited thread's call and frames), marked as such.\n"
    "\n"
    "  --db P              database (default $COREQ_DB, else db in\n"
    "                      /etc/coreq/coreq.conf, else $XDG_STATE_HOME/coreq/\n"
    "                      coreq.db, else /var/lib/coreq/coreq.db for root)\n"
    "  --since TIME        only cores that crashed at or after TIME: YYYY-MM-DD,\n"
    "                      YYYY-MM-DDTHH:MM:SS (UTC), unix seconds, or relative:\n"
    "                      -7d, 2h ago, 3 days ago, today, yesterday; counts,\n"
    "                      first/last seen and example cores are of those cores\n"
    "  --until TIME        only cores that crashed before TIME (same forms)\n"
    "  --exe NAME          only cores of this executable (full path or basename)\n"
    "  --limit N           only the N largest buckets\n"
    "  --format text|json  output format (default text)\n"
    "  --rules[=FILE]      print the bucketing rules in force (FILE, else\n"
    "                      $COREQ_RULES, else rules in /etc/coreq/coreq.conf, else\n"
    "                      /etc/coreq/rules, else the built-in\n"
    "                      ones) with their format, and exit\n"
    "  --help              show this help\n";

enum {
	OPT_DB = OPT_FIRST_COMMAND_SPECIFIC,
	OPT_SINCE,
	OPT_UNTIL,
	OPT_LIMIT,
	OPT_EXE_NAME,
	OPT_RULES,
};

/* Prints the rules in force, as their file says them. */
static int print_rules(const char *path)
{
	struct cq_bucket_rules *r;
	struct cq_error *err = cq_bucket_rules_load(path, &r);
	if (err)
		return cmd_fail(path ? path : "rules", err);
	fputs(r->text, stdout);
	cq_bucket_rules_free(r);
	return EXIT_OK;
}

struct buckets_query {
	struct cmd_listing out; /* first: the listing callbacks get it as their context */
	struct cq_store_bucket_filter filter;
	unsigned limit; /* 0: every bucket */
};

static void print_bucket(void *ctx, const struct cq_store_bucket_row *b)
{
	struct cmd_listing *p = ctx;
	const struct buckets_query *q = ctx;
	if (q->limit && p->count >= q->limit)
		return; /* the largest buckets come first */
	char first[32], last[32];
	cmd_iso_time(b->first_seen, first);
	cmd_iso_time(b->last_seen, last);
	const char *wait_kind = cq_bucket_wait_kind(b->signature);
	if (p->format == CMD_FORMAT_JSON) {
		struct cq_json *j = &p->j;
		cq_json_object_begin(j);
		cq_json_key(j, "id");
		cq_json_int(j, b->id);
		cq_json_key(j, "hash");
		cq_json_string(j, b->hash);
		cq_json_key(j, "rules_version");
		cq_json_string(j, b->rules_version);
		cq_json_key(j, "signature");
		cq_json_string(j, b->signature);
		cq_json_key(j, "kind");
		cq_json_string(j, wait_kind ? wait_kind : "crash");
		cq_json_key(j, "count");
		cq_json_int(j, b->count);
		cq_json_key(j, "first_seen");
		cq_json_string(j, first);
		cq_json_key(j, "last_seen");
		cq_json_string(j, last);
		cq_json_key(j, "exes");
		cq_json_array_begin(j);
		for (size_t i = 0; b->exes[i]; i++)
			cq_json_string(j, b->exes[i]);
		cq_json_array_end(j);
		cq_json_key(j, "example_core");
		cq_json_int(j, b->example_core);
		cq_json_object_end(j);
	} else {
		printf("%s%s%sbucket %lld (%s): %lld core%s, first %s, last %s, e.g. core %lld\n",
		       p->count ? "\n" : "", wait_kind ? wait_kind : "", wait_kind ? " " : "",
		       (long long)b->id, cmd_stored_text(b->hash), (long long)b->count,
		       b->count == 1 ? "" : "s", first, last, (long long)b->example_core);
		printf("    %s\n", cmd_stored_text(b->signature));
		for (size_t i = 0; b->exes[i]; i++)
			printf("    exe: %s\n", cmd_safe(b->exes[i]));
	}
	p->count++;
}

static struct cq_error *query_buckets(struct cq_store *store, void *ctx)
{
	struct buckets_query *q = ctx;
	return cq_store_each_bucket(store, &q->filter, print_bucket, &q->out);
}

int cmd_buckets(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"format", required_argument, NULL, OPT_FORMAT},
	    {"help", no_argument, NULL, OPT_HELP},
	    {"db", required_argument, NULL, OPT_DB},
	    {"since", required_argument, NULL, OPT_SINCE},
	    {"until", required_argument, NULL, OPT_UNTIL},
	    {"limit", required_argument, NULL, OPT_LIMIT},
	    {"exe", required_argument, NULL, OPT_EXE_NAME},
	    {"rules", optional_argument, NULL, OPT_RULES},
	    {NULL, 0, NULL, 0},
	};
	struct buckets_query q = {.out.format = CMD_FORMAT_TEXT};
	const char *db = NULL;
	int opt;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (opt == 'h')
			opt = OPT_HELP;
		switch (opt) {
		case OPT_HELP:
			fputs(buckets_usage, stdout);
			return EXIT_OK;
		case OPT_FORMAT:
			if (!cmd_parse_format(optarg, &q.out.format, "buckets"))
				return EXIT_USAGE;
			break;
		case OPT_DB:
			db = optarg;
			break;
		case OPT_SINCE:
		case OPT_UNTIL:
			if (cmd_time_option("buckets", opt == OPT_SINCE ? "--since" : "--until",
			                    optarg,
			                    opt == OPT_SINCE ? &q.filter.since : &q.filter.until))
				return EXIT_USAGE;
			break;
		case OPT_EXE_NAME:
			q.filter.exe = optarg;
			break;
		case OPT_LIMIT:
			if (!cmd_parse_count(optarg, 1, UINT32_MAX, &q.limit, "buckets", "--limit"))
				return EXIT_USAGE;
			break;
		case OPT_RULES:
			return print_rules(optarg);
		default:
			return cmd_option_error("buckets", opt, argv);
		}
	}
	if (optind != argc)
		return cmd_usage_error("buckets", "unexpected argument '%s'", argv[optind]);
	return cmd_run_listing(db, &q.out, "buckets", "no buckets", query_buckets, &q);
}
