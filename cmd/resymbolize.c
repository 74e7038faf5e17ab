/*
 * resymbolize.c - `coreq resymbolize`: name stored frames from debuginfo that
 * arrived after the crash (libcore/pipeline/resymbolize.h), then re-bucket.
 */
#include "cmd/cmd.h"
#include "cmd/options.h"

#include <stdlib.h>
#include <string.h>

#include "libcore/base/json.h"
#include "libcore/pipeline/resymbolize.h"
#include "libcore/store/store.h"
#include "libcore/triage/bucket.h"
#include "libcore/triage/rules.h"

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

/* The --debuginfod servers, space-separated; given even when "" (then: none). */
struct server_list {
	char v[4096];
	bool given;
};

struct resymbolize_args {
	struct cq_resymbolize_options o;
	struct cmd_dir_list dirs;
	struct server_list urls;
	const char *db, *rules;
	enum cmd_format format;
};

static int debuginfod_option(const char *cmd, const char *option, const char *arg, void *field)
{
	(void)option;
	struct server_list *urls = field;
	if (strlen(urls->v) + strlen(arg) + 2 > sizeof(urls->v))
		return cmd_usage_error(cmd, "too many --debuginfod servers");
	if (urls->v[0])
		strcat(urls->v, " ");
	strcat(urls->v, arg);
	urls->given = true;
	return CMD_OPTS_GO_ON;
}

static int max_size_option(const char *cmd, const char *option, const char *arg, void *field)
{
	(void)option;
	if (!cmd_parse_bytes(arg, field, cmd, "--max-size"))
		return EXIT_USAGE;
	if (*(uint64_t *)field < MIN_MAX_SIZE)
		return cmd_usage_error(cmd, "--max-size must be at least 64K");
	return CMD_OPTS_GO_ON;
}

#define FIELD(f) offsetof(struct resymbolize_args, f)

static const struct cmd_opt resymbolize_options[] = {
    CMD_ROW_DB(struct resymbolize_args, db),
    {"debuginfod", 0, CMD_OPT_CALL, FIELD(urls), "URL", "a debuginfod server (repeatable)", 0, 0,
     debuginfod_option, NULL},
    {"debug-dir", 0, CMD_OPT_CALL, FIELD(dirs), "D",
     "a build-id tree of debuginfo, looked in first (repeatable)", 0, 0, cmd_opt_dir_list, NULL},
    {"max-size", 0, CMD_OPT_CALL, FIELD(o.max_size), "BYTES",
     "largest debuginfo file taken from a server (K, M, G suffixes; at least 64K; default "
     "512M)",
     0, 0, max_size_option, NULL},
    {"module-timeout", 0, CMD_OPT_COUNT, FIELD(o.module_seconds), "S",
     "seconds one module's lookup may take, retries included (default 120; 0: no limit)", 0, 86400,
     NULL, NULL},
    {"deadline", 0, CMD_OPT_COUNT, FIELD(o.deadline), "S",
     "seconds after which no server is asked and a lookup under way stops (default 600; 0: "
     "no limit)",
     0, 7 * 86400, NULL, NULL},
    CMD_ROWS_BUCKETING(struct resymbolize_args, o.signature_frames, rules),
    CMD_ROW_FORMAT(struct resymbolize_args, format),
    CMD_OPT_END,
};

static const struct cmd_spec resymbolize_spec = {
    .name = "resymbolize",
    .forms = "[OPTIONS]",
    .about = "Name the stored frames whose module had no symbols when the core was\n"
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
             "It uses the network; the hook never runs it.\n",
    .opt = resymbolize_options,
    .flags = CMD_SPEC_NO_ARGS,
};

/* Resymbolizes the database under the rules; prints the result; the exit status. */
static int run(struct resymbolize_args *a, struct cq_bucket_rules *rules)
{
	struct cq_store *store;
	int rc = cmd_open_store_existing(a->db, &store);
	if (rc != EXIT_OK)
		return rc;
	a->o.debug_dirs = a->dirs.v;
	a->o.debuginfod_urls = a->urls.given ? a->urls.v : NULL;
	a->o.rules = rules;
	struct cq_resymbolize_result r;
	struct cq_error *err = cq_resymbolize(store, &a->o, &r);
	cq_store_close(store);
	if (err) {
		cq_resymbolize_result_free(&r);
		return cmd_fail(a->db ? a->db : "database", err);
	}
	if (a->format == CMD_FORMAT_JSON)
		print_json(&r);
	else
		print_text(&r);
	cq_resymbolize_result_free(&r);
	return EXIT_OK;
}

int cmd_resymbolize(int argc, char **argv)
{
	struct resymbolize_args a = {.o = {.signature_frames = CQ_BUCKET_DEFAULT_FRAMES,
	                                   .max_size = CQ_RESYMBOLIZE_DEFAULT_MAX_SIZE,
	                                   .module_seconds = CQ_RESYMBOLIZE_DEFAULT_MODULE_SECONDS,
	                                   .deadline = CQ_RESYMBOLIZE_DEFAULT_DEADLINE},
	                             .format = CMD_FORMAT_TEXT};
	int rc = cmd_opts_parse(&resymbolize_spec, argc, argv, &a);
	if (rc != CMD_OPTS_GO_ON)
		return rc;
	struct cq_bucket_rules *rules;
	struct cq_error *err = cq_bucket_rules_load(a.rules, &rules);
	if (err)
		return cmd_fail(a.rules ? a.rules : "rules", err);
	rc = run(&a, rules);
	cq_bucket_rules_free(rules);
	return rc;
}
