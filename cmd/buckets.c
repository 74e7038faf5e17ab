/*
 * buckets.c - `coreq buckets`: crash buckets, most cores first, each with
 * its signature, count, first and last time seen, executables and an
 * example core.
 */
#include "cmd/cmd.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/options.h"
#include "cmd/store_output.h"
#include "libcore/base/json.h"
#include "libcore/store/store.h"
#include "libcore/store/store_query.h"
#include "libcore/triage/bucket.h"
#include "libcore/triage/rules.h"

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
	const char *db;
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

/* --rules[=FILE]: print the rules in force, and exit. */
static int rules_option(const char *cmd, const char *option, const char *arg, void *field)
{
	(void)option;
	(void)cmd;
	(void)field;
	return print_rules(arg);
}

static const struct cmd_opt buckets_options[] = {
    CMD_ROW_DB(struct buckets_query, db),
    CMD_ROWS_STORE_FILTER(struct buckets_query, filter.since, filter.until, filter.exe),
    {"limit", 0, CMD_OPT_COUNT, offsetof(struct buckets_query, limit), "N",
     "only the N largest buckets", 1, UINT32_MAX, NULL, NULL},
    CMD_ROW_FORMAT(struct buckets_query, out.format),
    {"rules", 0, CMD_OPT_CALL, 0, "[=FILE]",
     "print the bucketing rules in force (FILE, else $COREQ_RULES, else rules in "
     "/etc/coreq/coreq.conf, else /etc/coreq/rules, else the built-in ones) with their "
     "format, and exit",
     0, 0, rules_option, NULL},
    CMD_OPT_END,
};

static const struct cmd_spec buckets_spec = {
    .name = "buckets",
    .forms = "[OPTIONS]\n--rules[=FILE]",
    .about = "List crash buckets, most cores first.  A bucket is a crash signature: the\n"
             "crashed thread's first frames after the crash machinery (abort, raise,\n"
             "assert, the C++ throw path, Rust panics), names normalised so that a\n"
             "rebuild does not change them, and the signal.  A process killed from outside\n"
             "while its threads wait on locks is a deadlock bucket (its cycle's lock-taking\n"
             "frames, in canonical order; a possible-deadlock bucket when the cycle rests on\n"
             "an inferred lock owner nothing in the core confirms) or a hang bucket (the\n"
             "awaited thread's call and frames), marked as such.  With --since or --until,\n"
             "counts, first/last seen and example cores are of those cores.\n",
    .opt = buckets_options,
    .flags = CMD_SPEC_NO_ARGS,
};

int cmd_buckets(int argc, char **argv)
{
	struct buckets_query q = {.out.format = CMD_FORMAT_TEXT};
	int rc = cmd_opts_parse(&buckets_spec, argc, argv, &q);
	if (rc != CMD_OPTS_GO_ON)
		return rc;
	return cmd_run_listing(q.db, &q.out, "buckets", "no buckets", query_buckets, &q);
}
