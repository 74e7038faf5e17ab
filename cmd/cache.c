/*
 * cache.c - `coreq cache warm`: fill the per-build-id cache for libraries
 * and executables before their first crash (libcore/pipeline/cache_warm.h).
 */
#include "cmd/cmd.h"

#include <stdlib.h>
#include <string.h>

#include "libcore/base/json.h"
#include "libcore/db/cache.h"
#include "libcore/pipeline/cache_warm.h"

static const char cache_usage[] =
    "Usage: coreq cache warm [--cache P] [--debug-dir D]... [--format text|json] PATH...\n"
    "\n"
    "Fill the per-build-id cache for the given executables and shared libraries\n"
    "before any core of them arrives: each file's complete unwind table (its\n"
    ".eh_frame, and the .debug_frame of its debuginfo), its Rust type index if\n"
    "rustc built it, and its C++20 coroutine types.  Run it after a package\n"
    "upgrade, and the first crash of\n"
    "the new build is analysed as fast as the thousandth.  Without it, the first\n"
    "core compiles only the unwind rows its threads visit and stores those.\n"
    "Symbols are cached per frame address, so they are named by the first core.\n"
    "\n"
    "  --cache P           the cache (default $COREQ_CACHE, else\n"
    "                      $XDG_CACHE_HOME/coreq/cache.db)\n"
    "  --debug-dir D       a build-id tree of debuginfo, looked in first (repeatable)\n"
    "  --format text|json  output format (default text)\n"
    "  --help              show this help\n"
    "\n"
    "Exit status: 0 when every file was warmed, 1 when one could not be, 2 on\n"
    "bad usage.\n";

enum { OPT_CACHE = OPT_FIRST_COMMAND_SPECIFIC };

static void print_text(const char *path, const struct cq_cache_warm_result *r)
{
	printf("%s: build-id %s: unwind table %u rows%s", cmd_safe(path), r->build_id, r->rows,
	       r->table_cached ? " (cached already)" : "");
	if (r->runtimes_text && *r->runtimes_text)
		printf(", %s", r->runtimes_text); /* each runtime's, from its warm hook */
	putchar('\n');
}

static void print_json(struct cq_json *j, const char *path, const struct cq_cache_warm_result *r)
{
	cq_json_object_begin(j);
	cq_json_key(j, "path");
	cq_json_string(j, path);
	cq_json_key(j, "build_id");
	cq_json_string(j, r->build_id);
	cq_json_key(j, "unwind_rows");
	cq_json_uint(j, r->rows);
	cq_json_key(j, "unwind_cached");
	cq_json_bool(j, r->table_cached);
	cq_json_key(j, "debuginfo");
	cq_json_bool(j, r->debug_frame);
	cq_stats_json(&r->runtimes, j); /* each runtime's figures, under its own keys */
	cq_json_object_end(j);
}

int cmd_cache(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"format", required_argument, NULL, OPT_FORMAT},
	    {"help", no_argument, NULL, OPT_HELP},
	    {"cache", required_argument, NULL, OPT_CACHE},
	    {"debug-dir", required_argument, NULL, OPT_DEBUG_DIR},
	    {NULL, 0, NULL, 0},
	};
	const char *cache_path = NULL;
	const char *dirs[CMD_MAX_DEBUG_DIRS + 1] = {NULL};
	size_t ndirs = 0;
	enum cmd_format format = CMD_FORMAT_TEXT;
	int opt;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'h':
		case OPT_HELP:
			fputs(cache_usage, stdout);
			return EXIT_OK;
		case OPT_FORMAT:
			if (!cmd_parse_format(optarg, &format, "cache"))
				return EXIT_USAGE;
			break;
		case OPT_CACHE:
			cache_path = optarg;
			break;
		case OPT_DEBUG_DIR:
			if (ndirs == CMD_MAX_DEBUG_DIRS)
				return cmd_usage_error("cache", "at most %d --debug-dir options",
				                       CMD_MAX_DEBUG_DIRS);
			dirs[ndirs++] = optarg;
			break;
		default:
			return cmd_option_error("cache", opt, argv);
		}
	}
	if (optind >= argc || strcmp(argv[optind], "warm") != 0)
		return cmd_usage_error(
		    "cache", optind < argc ? "unknown action '%s'" : "expected an action: warm%s",
		    optind < argc ? argv[optind] : "");
	if (++optind >= argc)
		return cmd_usage_error("cache", "warm: expected one or more PATH arguments");
	char *default_path = cache_path ? NULL : cq_cache_default_path();
	const char *path = cache_path ? cache_path : default_path;
	if (!path) {
		fprintf(stderr,
		        "coreq: cache: no cache path: give --cache P or set $COREQ_CACHE\n");
		return EXIT_INPUT;
	}
	struct cq_cache *cache;
	struct cq_error *err = cq_cache_open(path, &cache);
	if (err) {
		int rc = cmd_fail(path, err);
		free(default_path);
		return rc;
	}
	struct cq_json j;
	if (format == CMD_FORMAT_JSON) {
		cq_json_init(&j, stdout);
		cq_json_array_begin(&j);
	}
	int rc = EXIT_OK;
	for (int i = optind; i < argc; i++) {
		struct cq_cache_warm_result r;
		err = cq_cache_warm(argv[i], dirs, cache, &r);
		if (err) {
			cq_cache_warm_result_free(&r);
			rc = cmd_fail(argv[i], err);
			continue;
		}
		if (format == CMD_FORMAT_JSON)
			print_json(&j, argv[i], &r);
		else
			print_text(argv[i], &r);
		cq_cache_warm_result_free(&r);
	}
	if (format == CMD_FORMAT_JSON) {
		cq_json_array_end(&j);
		cq_json_finish(&j);
	}
	cmd_close_cache(cache); /* says so when a damaged entry was rebuilt */
	free(default_path);
	return rc;
}
