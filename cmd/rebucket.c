/*
 * rebucket.c - `coreq rebucket`: recompute every stored core's crash
 * signature from its stored frames under the rules in force, in one
 * transaction, and say how many buckets merged or split.
 */
#include "cmd/cmd.h"
#include "cmd/options.h"

#include <stdlib.h>

#include "libcore/base/json.h"
#include "libcore/store/rebucket.h"
#include "libcore/store/store.h"
#include "libcore/triage/bucket.h"
#include "libcore/triage/rules.h"

struct rebucket_args {
	enum cmd_format format;
	const char *db, *rules;
	unsigned signature_frames;
};

static const struct cmd_opt rebucket_options[] = {
    CMD_ROW_DB(struct rebucket_args, db),
    CMD_ROWS_BUCKETING(struct rebucket_args, signature_frames, rules),
    CMD_ROW_FORMAT(struct rebucket_args, format),
    CMD_OPT_END,
};

static const struct cmd_spec rebucket_spec = {
    .name = "rebucket",
    .forms = "[OPTIONS]",
    .about = "Recompute the crash signature of every stored core from the frames the\n"
             "database holds (no core file is read again), under the bucketing rules in\n"
             "force, in one transaction.  Buckets whose signature survives keep their id;\n"
             "counts, first/last seen and example cores move with their cores.  Reports\n"
             "how many cores moved and how many buckets merged or split.\n",
    .opt = rebucket_options,
    .flags = CMD_SPEC_NO_ARGS,
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
	struct rebucket_args a = {.format = CMD_FORMAT_TEXT,
	                          .signature_frames = CQ_BUCKET_DEFAULT_FRAMES};
	int rc = cmd_opts_parse(&rebucket_spec, argc, argv, &a);
	if (rc != CMD_OPTS_GO_ON)
		return rc;
	struct cq_bucket_rules *rules;
	struct cq_store *store;
	rc = cmd_open_rules_and_store(a.rules, a.db, &rules, &store);
	if (rc != EXIT_OK)
		return rc;
	struct cq_store_rebucket_result r;
	struct cq_error *err = cq_store_rebucket(store, rules, a.signature_frames, &r);
	if (err)
		rc = cmd_fail(a.db ? a.db : "database", err);
	else
		print_result(a.format, &r, rules->version);
	cq_store_close(store);
	cq_bucket_rules_free(rules);
	return rc;
}
