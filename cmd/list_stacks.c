/*
 * list_stacks.c - `coreq list-stacks`: the unique merged stacks in the
 * database, most shared first: the pstack of the whole fleet.
 */
#include "cmd/cmd.h"

#include <stdlib.h>

#include "cmd/store_output.h"
#include "libcore/json.h"
#include "libcore/store.h"

static const char list_stacks_usage[] =
	"Usage: coreq list-stacks [--db P] [--core ID] [--exe NAME] [--bucket ID] [--limit N]\n"
	"                         [--format text|json]\n"
	"\n"
	"List the unique merged stacks stored by `coreq ingest`, most shared first:\n"
	"how many threads and cores have each one, when it was first and last seen,\n"
	"and its frames.\n"
	"\n"
	"  --db P              database (default $COREQ_DB, else\n"
	"                      $XDG_STATE_HOME/coreq/coreq.db)\n"
	"  --core ID           only the threads of core ID (see `coreq cores`)\n"
	"  --exe NAME          only cores of this executable (full path or basename)\n"
	"  --bucket ID         only cores in crash bucket ID (see `coreq buckets`)\n"
	"  --limit N           at most N stacks\n"
	"  --format text|json  output format (default text)\n"
	"  --help              show this help\n";

enum {
	OPT_DB = OPT_FIRST_COMMAND_SPECIFIC,
	OPT_CORE,
	OPT_EXE_NAME,
	OPT_LIMIT,
	OPT_BUCKET,
};

struct printer {
	enum cmd_format format;
	struct cq_json j;
	size_t count;
};

static void print_stack(void *ctx, const struct cq_store_stack_row *s)
{
	struct printer *p = ctx;
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
		cq_json_key(j, "first_seen");
		cq_json_string(j, first);
		cq_json_key(j, "last_seen");
		cq_json_string(j, last);
		cmd_json_stored_frames(j, s->frames, s->nframes);
		cq_json_object_end(j);
	} else {
		printf("%sstack %lld: %lld thread%s in %lld core%s (first %s, last %s)\n",
		       p->count ? "\n" : "", (long long)s->id, (long long)s->threads,
		       s->threads == 1 ? "" : "s", (long long)s->cores, s->cores == 1 ? "" : "s",
		       first, last);
		cmd_print_stored_frames(s->frames, s->nframes, "    ");
	}
	p->count++;
}

int cmd_list_stacks(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"format", required_argument, NULL, OPT_FORMAT},
		{"help", no_argument, NULL, OPT_HELP},
		{"db", required_argument, NULL, OPT_DB},
		{"core", required_argument, NULL, OPT_CORE},
		{"exe", required_argument, NULL, OPT_EXE_NAME},
		{"limit", required_argument, NULL, OPT_LIMIT},
		{"bucket", required_argument, NULL, OPT_BUCKET},
		{NULL, 0, NULL, 0},
	};
	struct printer p = {.format = CMD_FORMAT_TEXT};
	struct cq_store_stack_filter filter = {0};
	const char *db = NULL;
	unsigned v;
	int opt;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_HELP:
			fputs(list_stacks_usage, stdout);
			return EXIT_OK;
		case OPT_FORMAT:
			if (!cmd_parse_format(optarg, &p.format, "list-stacks"))
				return EXIT_USAGE;
			break;
		case OPT_DB:
			db = optarg;
			break;
		case OPT_CORE:
			if (!cmd_parse_count(optarg, 1, UINT32_MAX, &v, "list-stacks", "--core"))
				return EXIT_USAGE;
			filter.core_id = v;
			break;
		case OPT_EXE_NAME:
			filter.exe = optarg;
			break;
		case OPT_BUCKET:
			if (!cmd_parse_count(optarg, 1, UINT32_MAX, &v, "list-stacks", "--bucket"))
				return EXIT_USAGE;
			filter.bucket_id = v;
			break;
		case OPT_LIMIT:
			if (!cmd_parse_count(optarg, 1, UINT32_MAX, &v, "list-stacks", "--limit"))
				return EXIT_USAGE;
			filter.limit = v;
			break;
		default:
			return cmd_usage_error("list-stacks", "unknown option");
		}
	}
	if (optind != argc)
		return cmd_usage_error("list-stacks", "unexpected argument '%s'", argv[optind]);
	struct cq_store *store;
	struct cq_error *err = cmd_open_store(db, &store);
	if (err)
		return cmd_fail(db ? db : "database", err);
	if (p.format == CMD_FORMAT_JSON) {
		cq_json_init(&p.j, stdout);
		cq_json_object_begin(&p.j);
		cq_json_key(&p.j, "stacks");
		cq_json_array_begin(&p.j);
	}
	err = cq_store_each_stack(store, &filter, print_stack, &p);
	if (p.format == CMD_FORMAT_JSON) {
		cq_json_array_end(&p.j);
		cq_json_object_end(&p.j);
		cq_json_finish(&p.j);
	} else if (!err && p.count == 0) {
		printf("no stacks stored%s\n",
		       filter.core_id || filter.exe || filter.bucket_id ? " that match" : "");
	}
	cq_store_close(store);
	return err ? cmd_fail(db ? db : "database", err) : EXIT_OK;
}
