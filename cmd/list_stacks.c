/*
 * list_stacks.c - `coreq list-stacks`: the unique merged stacks in the
 * database, most shared first: the pstack of the whole fleet.
 */
#include "cmd/cmd.h"

#include <stdlib.h>
#include <string.h>

#include "cmd/options.h"
#include "cmd/store_output.h"
#include "libcore/base/json.h"
#include "libcore/store/store.h"

struct stacks_query {
	struct cmd_listing out; /* first: the listing callbacks get it as their context */
	struct cq_store_stack_filter filter;
	bool lws;    /* --source lws */
	bool folded; /* --format folded */
	const char *db;
};

/* A stored stack as a folded-stack line: outermost frame first, ';'-joined, then the count. */
static void print_folded(const struct cq_store_stack_row *s)
{
	for (size_t i = s->nframes; i-- > 0;) {
		const struct cq_store_frame_row *f = &s->frames[i];
		if (i + 1 < s->nframes)
			putchar(';');
		char fallback[96];
		const char *name = f->function;
		if (!name) {
			const char *base = f->module ? strrchr(f->module, '/') : NULL;
			snprintf(fallback, sizeof(fallback), "%s+0x%llx",
			         base        ? base + 1
			         : f->module ? f->module
			                     : "",
			         (unsigned long long)f->offset);
			name = fallback;
		}
		for (const char *c = cmd_safe(name); *c; c++)
			putchar(*c == ';' ? ':' : *c == ' ' ? '_' : *c);
		if (cq_store_text_is(f->kind, "inline"))
			fputs("_[i]", stdout);
		else if (cq_store_text_is(f->kind, "async"))
			fputs("_[a]", stdout);
	}
	printf(" %lld\n", (long long)(s->threads + s->suspended));
}

static void print_stack(void *ctx, const struct cq_store_stack_row *s)
{
	struct cmd_listing *p = ctx;
	if (((const struct stacks_query *)ctx)->folded) {
		print_folded(s);
		p->count++;
		return;
	}
	char first[32], last[32];
	cmd_iso_time(s->first_seen, first);
	cmd_iso_time(s->last_seen, last);
	if (p->format == CMD_FORMAT_JSON) {
		struct cq_json *j = &p->j;
		cq_json_object_begin(j);
		cq_json_key(j, "id");
		cq_json_int(j, s->id);
		cq_json_key(j, "hash");
		cq_json_string(j, s->hash);
		cq_json_key(j, "threads");
		cq_json_int(j, s->threads);
		cq_json_key(j, "cores");
		cq_json_int(j, s->cores);
		cq_json_key(j, "suspended");
		cq_json_int(j, s->suspended);
		cq_json_key(j, "first_seen");
		cq_json_string(j, first);
		cq_json_key(j, "last_seen");
		cq_json_string(j, last);
		cmd_json_stored_frames(j, s->frames, s->nframes);
		cq_json_object_end(j);
	} else {
		printf("%sstack %lld: %lld thread%s", p->count ? "\n" : "", (long long)s->id,
		       (long long)s->threads, s->threads == 1 ? "" : "s");
		if (s->suspended)
			printf(", %lld suspended", (long long)s->suspended);
		printf(" in %lld core%s (first %s, last %s)\n", (long long)s->cores,
		       s->cores == 1 ? "" : "s", first, last);
		cmd_print_stored_frames(s->frames, s->nframes, "    ");
	}
	p->count++;
}

static void print_lws_site(void *ctx, const struct cq_store_lws_site_row *s)
{
	struct cmd_listing *p = ctx;
	if (p->format == CMD_FORMAT_JSON) {
		struct cq_json *j = &p->j;
		cq_json_object_begin(j);
		cq_json_key(j, "id");
		cq_json_int(j, s->id);
		cq_json_key(j, "hash");
		cq_json_string(j, s->hash);
		cq_json_key(j, "allocations");
		cq_json_int(j, s->allocations);
		cq_json_key(j, "bytes");
		cq_json_int(j, s->bytes);
		cq_json_key(j, "logs");
		cq_json_int(j, s->logs);
		cq_json_key(j, "min_size");
		cq_json_int(j, s->min_size);
		cq_json_key(j, "max_size");
		cq_json_int(j, s->max_size);
		cmd_json_stored_frames(j, s->frames, s->nframes);
		cq_json_object_end(j);
	} else {
		printf("%sstack %lld: %lld allocation%s, %lld bytes (%lld to %lld each) in %lld "
		       "log%s\n",
		       p->count ? "\n" : "", (long long)s->id, (long long)s->allocations,
		       s->allocations == 1 ? "" : "s", (long long)s->bytes, (long long)s->min_size,
		       (long long)s->max_size, (long long)s->logs, s->logs == 1 ? "" : "s");
		cmd_print_stored_frames(s->frames, s->nframes, "    ");
	}
	p->count++;
}

static struct cq_error *query_stacks(struct cq_store *store, void *ctx)
{
	struct stacks_query *q = ctx;
	if (q->lws)
		return cq_store_each_lws_site(store, &q->filter, print_lws_site, &q->out);
	if (q->filter.core_id) {
		/* A core that is not there is an error, as in `coreq show ID`. */
		struct cq_store_core_filter one = {.id = q->filter.core_id};
		struct cq_error *err = cq_store_each_core(store, &one, NULL, NULL);
		if (err)
			return err;
	}
	return cq_store_each_stack(store, &q->filter, print_stack, &q->out);
}

/* --format: text, json or folded. */
static int format_option(const char *cmd, const char *option, const char *arg, void *field)
{
	(void)option;
	struct stacks_query *q = field;
	if (strcmp(arg, "folded") == 0) {
		q->folded = true;
		return CMD_OPTS_GO_ON;
	}
	return cmd_parse_format(arg, &q->out.format, cmd) ? CMD_OPTS_GO_ON : EXIT_USAGE;
}

static int source_option(const char *cmd, const char *option, const char *arg, void *field)
{
	(void)option;
	if (strcmp(arg, "core") && strcmp(arg, "lws"))
		return cmd_usage_error(cmd, "--source must be core or lws, not '%s'", arg);
	*(bool *)field = strcmp(arg, "lws") == 0;
	return CMD_OPTS_GO_ON;
}

static const struct cmd_opt list_stacks_options[] = {
    CMD_ROW_DB(struct stacks_query, db),
    {"core", 0, CMD_OPT_COUNT64, offsetof(struct stacks_query, filter.core_id), "ID",
     "only the threads of core ID (see `coreq cores`)", 1, UINT32_MAX, NULL, NULL},
    CMD_ROW_EXE_NAME(struct stacks_query, filter.exe),
    CMD_ROW_BUCKET(struct stacks_query, filter.bucket),
    {"limit", 0, CMD_OPT_COUNT64, offsetof(struct stacks_query, filter.limit), "N",
     "at most N stacks", 1, UINT32_MAX, NULL, NULL},
    {"source", 0, CMD_OPT_CALL, offsetof(struct stacks_query, lws), "core|lws",
     "threads of cores (default), or lws allocation sites; with lws, --exe NAME matches the "
     "ELF and --core and --bucket do not apply",
     0, 0, source_option, NULL},
    {"format", 0, CMD_OPT_CALL, 0, "text|json|folded",
     "output format (default text); folded: one line per stack, outermost frame first, "
     "';'-joined, and how many threads and suspended chains have it",
     0, 0, format_option, NULL},
    CMD_OPT_END,
};

static const struct cmd_spec list_stacks_spec = {
    .name = "list-stacks",
    .forms = "[OPTIONS]",
    .about = "List the unique merged stacks stored by `coreq ingest`, most shared first:\n"
             "how many threads and cores have each one, when it was first and last seen,\n"
             "and its frames.  With --source lws, the allocation sites of the logs stored\n"
             "by `coreq lws ingest` instead, heaviest first: how many allocations and\n"
             "bytes each stack made, in how many logs, and its frames.\n",
    .opt = list_stacks_options,
    .flags = CMD_SPEC_NO_ARGS,
};

int cmd_list_stacks(int argc, char **argv)
{
	struct stacks_query q = {.out.format = CMD_FORMAT_TEXT};
	const struct cq_store_stack_filter *filter = &q.filter;
	int rc = cmd_opts_parse(&list_stacks_spec, argc, argv, &q);
	if (rc != CMD_OPTS_GO_ON)
		return rc;
	if (q.lws && (filter->core_id || filter->bucket))
		return cmd_usage_error("list-stacks",
		                       "--core and --bucket do not apply to --source lws");
	if (q.lws)
		return cmd_run_listing(q.db, &q.out, "stacks",
		                       filter->exe ? "no lws allocation sites stored that match"
		                                   : "no lws allocation sites stored",
		                       query_stacks, &q);
	const char *empty = filter->core_id || filter->exe || filter->bucket
	                        ? "no stacks stored that match"
	                        : "no stacks stored";
	return cmd_run_listing(q.db, &q.out, "stacks", empty, query_stacks, &q);
}
