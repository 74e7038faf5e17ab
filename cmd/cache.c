/*
 * cache.c - `coreq cache warm`: fill the per-build-id cache for libraries
 * and executables before their first crash (libcore/pipeline/cache_warm.h).
 */
#include "cmd/cmd.h"
#include "cmd/options.h"

#include <stdlib.h>
#include <string.h>

#include "libcore/base/json.h"
#include "libcore/db/cache.h"
#include "libcore/pipeline/cache_warm.h"

struct cache_args {
	const char *cache_path;
	struct cmd_dir_list dirs;
	enum cmd_format format;
};

static const struct cmd_opt cache_options[] = {
    {"cache", 0, CMD_OPT_STRING, offsetof(struct cache_args, cache_path), "P",
     "the cache (default $COREQ_CACHE, else $XDG_CACHE_HOME/coreq/cache.db)", 0, 0, NULL, NULL},
    {"debug-dir", 0, CMD_OPT_CALL, offsetof(struct cache_args, dirs), "D",
     "a build-id tree of debuginfo, looked in first (repeatable)", 0, 0, cmd_opt_dir_list, NULL},
    CMD_ROW_FORMAT(struct cache_args, format),
    CMD_OPT_END,
};

static const struct cmd_spec cache_spec = {
    .name = "cache",
    .forms = "warm [OPTIONS] PATH...",
    .about = "Fill the per-build-id cache for the given executables and shared libraries\n"
             "before any core of them arrives: each file's complete unwind table (its\n"
             ".eh_frame, and the .debug_frame of its debuginfo), its Rust type index if\n"
             "rustc built it, and its C++20 coroutine types.  Run it after a package\n"
             "upgrade, and the first crash of\n"
             "the new build is analysed as fast as the thousandth.  Without it, the first\n"
             "core compiles only the unwind rows its threads visit and stores those.\n"
             "Symbols are cached per frame address, so they are named by the first core.\n",
    .opt = cache_options,
    .after = "Exit status: 0 when every file was warmed, 1 when one could not be, 2 on\n"
             "bad usage.\n",
};

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
	struct cache_args a = {.format = CMD_FORMAT_TEXT};
	int parsed = cmd_opts_parse(&cache_spec, argc, argv, &a);
	if (parsed != CMD_OPTS_GO_ON)
		return parsed;
	const char *cache_path = a.cache_path;
	const char *const *dirs = a.dirs.v;
	enum cmd_format format = a.format;
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
