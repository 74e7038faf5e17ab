/*
 * ingest.c - `coreq ingest CORE... | DIR | -`: analyse cores and store them,
 * one transaction each, skipping cores already stored (by content).
 */
#include "cmd/cmd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "libcore/analysis/stacktrace.h"
#include "libcore/triage/bucket.h"
#include "libcore/triage/rules.h"

#include "libcore/base/clock.h"
#include "libcore/base/json.h"
#include "libcore/base/regular_file.h"
#include "libcore/db/cache.h"
#include "libcore/model/source.h"
#include "libcore/pipeline/ingest.h"
#include "libcore/store/store.h"
#include "libcore/store/capture_rows.h"

struct cq_capture;

/* One file to ingest; a file found in a directory carries its stat. */
struct input {
	char *path;
	bool from_dir;
	int64_t size, mtime_ns;
};

struct progress {
	bool shown;
	size_t done, total;
	double start; /* cq_clock_seconds() */
};

struct ingest_run {
	struct cmd_core_opts o;
	struct cq_stack_options so;
	struct cq_store *store;
	struct cq_json json;
	struct progress progress;
	unsigned signature_frames;
	struct cq_bucket_rules *rules;
	/* Metadata to use instead of what the file's name and xattrs say. */
	const struct cq_capture *capture_override;
	size_t ingested, duplicates, failed, unchanged;
	/* What became of the last input. */
	int64_t last_core_id;
	char last_bucket[CQ_BUCKET_HASH_LEN + 1];
	bool last_new_bucket;
	char last_error[256];
};

#define DEFAULT_MAX_DEPTH 8

static const char ingest_usage[] =
    "Usage: coreq ingest [--db P] [--format text|json] [--sysroot D] [--debug-dir D]\n"
    "                    [--cache P | --no-cache] [--signature-frames N] [--rules FILE]\n"
    "                    [--no-async] [--max-core-size BYTES] [--max-depth N]\n"
    "                    CORE... | DIR | -\n"
    "\n"
    "Analyse each core (every thread's stack, as `coreq stack`) and store it in\n"
    "the database, one transaction per core: a core is stored whole or not at\n"
    "all.  A core already stored (same content, under any name or compression)\n"
    "is skipped.  DIR means every core-looking file in it and in its\n"
    "subdirectories, down to --max-depth levels (raw or compressed; hidden\n"
    "names are passed by); a DIR without one says \"0 core files in DIR\".\n"
    "Cores that cannot be analysed are reported and skipped; the exit status is\n"
    "then 1.  A progress bar is shown when standard error is a terminal.\n"
    "Each core is filed in a crash bucket by its signature: the crashed thread's\n"
    "first N frames, normalised, after the crash machinery (abort, raise, assert,\n"
    "the C++ throw path, Rust panics), and the signal (see `coreq buckets`).\n"
    "\n"
    "  --db P              database (default $COREQ_DB, else db in\n"
    "                      /etc/coreq/coreq.conf, else $XDG_STATE_HOME/coreq/\n"
    "                      coreq.db, else /var/lib/coreq/coreq.db for root)\n"
    "  --format text|json  output format (default text)\n"
    "  --sysroot D         look for every module path under D\n"
    "  --debug-dir D       add a build-id tree of debuginfo (repeatable)\n"
    "  --max-core-size BYTES  cut a compressed or piped core at BYTES once\n"
    "                      decompressed (K, M, G, T suffixes; default: the free\n"
    "                      space of $TMPDIR less 1 GiB); a cut core is truncated\n"
    "  --cache P           unwind-table and symbol cache (see coreq stack)\n"
    "  --no-cache          do not use the cache\n"
    "  --signature-frames N  frames in a crash signature (default 5)\n"
    "  --rules FILE        bucketing rules (default $COREQ_RULES, else rules in\n"
    "                      /etc/coreq/coreq.conf, else /etc/coreq/rules,\n"
    "                      else the built-in ones: see `coreq buckets --rules`)\n"
    "  --no-async          native frames only: no async stacks, no suspended ones\n"
    "  --max-depth N       levels of subdirectories of DIR to look in (default 8, 0: none)\n"
    "  --help              show this help\n";

struct inputs {
	struct input *v;
	size_t n, cap;
};

static bool push_input(struct inputs *in, const char *path, const struct stat *st)
{
	if (in->n == in->cap) {
		size_t cap = in->cap ? in->cap * 2 : 16;
		struct input *p = realloc(in->v, cap * sizeof(*p));
		if (!p)
			return false;
		in->v = p;
		in->cap = cap;
	}
	struct input *e = &in->v[in->n];
	*e = (struct input){.from_dir = st != NULL};
	if (st) {
		e->size = (int64_t)st->st_size;
		e->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	}
	if (!(e->path = strdup(path)))
		return false;
	in->n++;
	return true;
}

/* Whether the file at path starts like a core (see cq_source_looks_like_core). */
static bool looks_like_core(const char *path)
{
	unsigned char b[CQ_SOURCE_SNIFF_BYTES];
	int fd = cq_open_regular(path);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, b, sizeof(b));
	close(fd);
	return n > 0 && cq_source_looks_like_core(b, (size_t)n);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct input *)a)->path, ((const struct input *)b)->path);
}

/*
 * Adds every core-looking regular file of dir and of its subdirectories down
 * to depth levels below it (hidden names and symbolic links to directories
 * are passed by), in path order.
 */
static struct cq_error *walk_dir(struct inputs *in, const char *dir, unsigned depth)
{
	DIR *d = opendir(dir);
	if (!d)
		return cq_error_errno(errno, "cannot read directory");
	struct dirent *e;
	struct cq_error *err = NULL;
	while (!err && (e = readdir(d))) {
		char *p;
		struct stat st;
		if (e->d_name[0] == '.' || asprintf(&p, "%s/%s", dir, e->d_name) < 0)
			continue;
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
			if (depth > 0)
				cq_error_free(walk_dir(
				    in, p, depth - 1)); /* an unreadable subdirectory is skipped */
		} else if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && looks_like_core(p) &&
		           !push_input(in, p, &st)) {
			err = &cq_error_nomem;
		}
		free(p);
	}
	closedir(d);
	return err;
}

static struct cq_error *expand_dir(struct inputs *in, const char *dir, unsigned depth,
                                   size_t *found)
{
	char *abs = realpath(dir, NULL);
	if (!abs)
		return cq_error_errno(errno, "cannot read directory");
	size_t first = in->n;
	struct cq_error *err = walk_dir(in, abs, depth);
	free(abs);
	if (in->n > first)
		qsort(in->v + first, in->n - first, sizeof(*in->v), name_cmp);
	*found = in->n - first;
	return err;
}

static void progress_clear(struct progress *p)
{
	if (p->shown)
		fputs("\r\033[K", stderr);
}

static void progress_draw(struct progress *p)
{
	if (!p->shown)
		return;
	double secs = cq_clock_seconds() - p->start;
	int width = 30, filled = p->total ? (int)(width * p->done / p->total) : width;
	fprintf(stderr, "\r[%.*s%*s] %zu/%zu cores, %.1f/s", filled,
	        "##############################", width - filled, "", p->done, p->total,
	        secs > 0 ? (double)p->done / secs : 0.0);
	fflush(stderr);
}

static void report(struct ingest_run *run, const char *path, const char *status,
                   const struct cq_store_result *r, const struct cq_bucket_signature *sig,
                   const char *message)
{
	if (run->o.format == CMD_FORMAT_JSON) {
		struct cq_json *j = &run->json;
		bool stored = r && strcmp(status, "ingested") == 0;
		cq_json_object_begin(j);
		cq_json_key(j, "path");
		cq_json_string(j, path);
		cq_json_key(j, "status");
		cq_json_string(j, status);
		cq_json_key(j, "core_id");
		if (r && r->core_id)
			cq_json_int(j, r->core_id);
		else
			cq_json_null(j);
		const char *keys[] = {"threads", "stacks", "new_stacks", "suspended"};
		size_t vals[] = {r ? r->threads : 0, r ? r->stacks : 0, r ? r->new_stacks : 0,
		                 r ? r->suspended : 0};
		for (int i = 0; i < 4; i++) {
			cq_json_key(j, keys[i]);
			if (stored)
				cq_json_uint(j, vals[i]);
			else
				cq_json_null(j);
		}
		cq_json_key(j, "bucket_id");
		if (stored && r->bucket_id)
			cq_json_int(j, r->bucket_id);
		else
			cq_json_null(j);
		cq_json_key(j, "bucket");
		cq_json_string(j, stored && sig ? sig->hash : NULL);
		cq_json_key(j, "signature");
		cq_json_string(j, stored && sig ? sig->text : NULL);
		cq_json_key(j, "new_bucket");
		if (stored && r->bucket_id)
			cq_json_bool(j, r->new_bucket);
		else
			cq_json_null(j);
		cq_json_key(j, "message");
		cq_json_string(j, message);
		cq_json_object_end(j);
		return;
	}
	progress_clear(&run->progress);
	if (strcmp(status, "ingested") == 0)
		printf("%s: ingested as core %lld: %zu thread%s, %zu stack%s (%zu new), bucket "
		       "%lld%s\n",
		       cmd_safe(path), (long long)r->core_id, r->threads,
		       r->threads == 1 ? "" : "s", r->stacks, r->stacks == 1 ? "" : "s",
		       r->new_stacks, (long long)r->bucket_id, r->new_bucket ? " (new)" : "");
	else if (strcmp(status, "duplicate") == 0)
		printf("%s: already ingested as core %lld\n", cmd_safe(path),
		       (long long)r->core_id);
	fflush(stdout);
}

/* The outcome of one input, for the seen-files record. */
static void remember(struct ingest_run *run, const struct input *in, int64_t core_id,
                     const char *status, const char *message)
{
	if (!in->from_dir)
		return;
	struct cq_error *err = cq_store_file_record(run->store, in->path, in->size, in->mtime_ns,
	                                            core_id, status, message);
	if (err) {
		cmd_warn(in->path, "cannot remember this file: %s", err->message);
		cq_error_free(err);
	}
}

static void warn_damaged(void *arg, const char *path, const struct cq_core *core)
{
	(void)arg;
	cmd_warn_damaged_core(path, core);
}

static void ingest_one(struct ingest_run *run, const struct input *in)
{
	const char *path = in->path;
	struct cq_ingest_options io = {.core = &run->o.core,
	                               .stacks = &run->so,
	                               .signature_frames = run->signature_frames,
	                               .rules = run->rules,
	                               .capture_override = run->capture_override,
	                               .opened = warn_damaged};
	struct cq_ingest_result res;
	struct cq_error *err = cq_ingest_core(run->store, path, &io, &res);
	const struct cq_store_result *r = &res.store;
	if (err) {
		run->failed++;
		if (res.record_error) { /* one line says both */
			struct cq_error *both = cq_error_create(
			    err->code, "%s; and the failure could not be recorded (%s)",
			    err->message, res.record_error->message);
			if (both != &cq_error_nomem) {
				cq_error_free(err);
				err = both;
			}
		}
		run->last_core_id = res.failed_row;
		remember(run, in, 0, "failed", err->message);
		progress_clear(&run->progress);
		report(run, path, "failed", NULL, NULL, err->message);
		snprintf(run->last_error, sizeof(run->last_error), "%s", err->message);
		cmd_fail(path, err);
	} else if (r->duplicate) {
		run->duplicates++;
		run->last_core_id = r->core_id;
		remember(run, in, r->core_id, "duplicate", NULL);
		report(run, path, "duplicate", r, NULL, NULL);
	} else {
		run->ingested++;
		run->last_core_id = r->core_id;
		run->last_new_bucket = r->new_bucket;
		snprintf(run->last_bucket, sizeof(run->last_bucket), "%s", res.signature.hash);
		remember(run, in, r->core_id, "ingested", NULL);
		report(run, path, "ingested", r, &res.signature, NULL);
	}
	cq_ingest_result_free(&res);
}

enum {
	OPT_DB = OPT_FIRST_COMMAND_SPECIFIC,
	OPT_CACHE,
	OPT_NO_CACHE,
	OPT_SIGNATURE_FRAMES,
	OPT_NO_ASYNC,
	OPT_RULES,
	OPT_MAX_DEPTH,
};

static void print_summary(struct ingest_run *run)
{
	if (run->o.format != CMD_FORMAT_JSON) {
		if (run->unchanged)
			printf("%zu file%s unchanged since an earlier ingest, skipped\n",
			       run->unchanged, run->unchanged == 1 ? "" : "s");
		return;
	}
	struct cq_json *j = &run->json;
	cq_json_array_end(j);
	cq_json_key(j, "ingested");
	cq_json_uint(j, run->ingested);
	cq_json_key(j, "duplicates");
	cq_json_uint(j, run->duplicates);
	cq_json_key(j, "failed");
	cq_json_uint(j, run->failed);
	cq_json_key(j, "unchanged");
	cq_json_uint(j, run->unchanged);
	cq_json_object_end(j);
	cq_json_finish(j);
}

int cmd_ingest(int argc, char **argv)
{
	static const struct option longopts[] = {
	    CMD_CORE_LONG_OPTIONS,
	    {"db", required_argument, NULL, OPT_DB},
	    {"cache", required_argument, NULL, OPT_CACHE},
	    {"no-cache", no_argument, NULL, OPT_NO_CACHE},
	    {"signature-frames", required_argument, NULL, OPT_SIGNATURE_FRAMES},
	    {"no-async", no_argument, NULL, OPT_NO_ASYNC},
	    {"rules", required_argument, NULL, OPT_RULES},
	    {"max-depth", required_argument, NULL, OPT_MAX_DEPTH},
	    {NULL, 0, NULL, 0},
	};
	unsigned max_depth = DEFAULT_MAX_DEPTH;
	struct ingest_run run = {.signature_frames = CQ_BUCKET_DEFAULT_FRAMES};
	cmd_core_opts_init(&run.o);
	cq_stack_options_default(&run.so);
	const char *db = NULL, *cache_path = NULL, *rules_path = NULL;
	bool no_cache = false;
	int opt;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (opt == 'h')
			opt = OPT_HELP;
		if (opt == OPT_HELP) {
			fputs(ingest_usage, stdout);
			return EXIT_OK;
		}
		int r = cmd_core_opts_handle(&run.o, opt, optarg, "ingest");
		if (r < 0)
			return EXIT_USAGE;
		if (r > 0)
			continue;
		if (opt == OPT_DB)
			db = optarg;
		else if (opt == OPT_CACHE)
			cache_path = optarg;
		else if (opt == OPT_NO_CACHE)
			no_cache = true;
		else if (opt == OPT_NO_ASYNC)
			run.so.async = false;
		else if (opt == OPT_RULES)
			rules_path = optarg;
		else if (opt == OPT_MAX_DEPTH) {
			if (!cmd_parse_count(optarg, 0, 64, &max_depth, "ingest", "--max-depth"))
				return EXIT_USAGE;
		} else if (opt == OPT_SIGNATURE_FRAMES) {
			if (!cmd_parse_count(optarg, 1, 64, &run.signature_frames, "ingest",
			                     "--signature-frames"))
				return EXIT_USAGE;
		} else
			return cmd_option_error("ingest", opt, argv);
	}
	if (optind >= argc)
		return cmd_usage_error("ingest", "expected CORE..., a directory, or -");
	if (run.o.core.exe)
		return cmd_usage_error("ingest", "--exe is for one core; use --sysroot");

	struct cq_error *rerr = cq_bucket_rules_load(rules_path, &run.rules);
	if (rerr)
		return cmd_fail(rules_path ? rules_path : "rules", rerr);
	struct inputs in = {0};
	int rc = EXIT_OK;
	for (int i = optind; i < argc; i++) {
		struct stat st;
		struct cq_error *err = NULL;
		size_t found = 0;
		if (strcmp(argv[i], "-") != 0 && stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			err = expand_dir(&in, argv[i], max_depth, &found);
			if (!err && !found && run.o.format != CMD_FORMAT_JSON)
				printf("0 core files in %s\n", cmd_safe(argv[i]));
		} else if (!push_input(&in, argv[i], NULL))
			err = &cq_error_nomem;
		if (err)
			rc = cmd_fail(argv[i], err);
	}
	struct cq_error *err = cmd_open_store(db, &run.store);
	if (err) {
		rc = cmd_fail(db ? db : "database", err);
		goto out;
	}
	run.so.cache = no_cache ? NULL : cmd_open_cache(cache_path);
	run.so.debug_dirs = run.o.core.debug_dirs;
	run.progress.total = in.n;
	run.progress.shown = in.n > 1 && isatty(STDERR_FILENO);
	run.progress.start = cq_clock_seconds();
	if (run.o.format == CMD_FORMAT_JSON) {
		cq_json_init(&run.json, stdout);
		cq_json_object_begin(&run.json);
		cq_json_key(&run.json, "results");
		cq_json_array_begin(&run.json);
	}
	for (size_t i = 0; i < in.n; i++) {
		progress_draw(&run.progress);
		bool seen = false, unfinished = false;
		const struct input *e = &in.v[i];
		if (e->from_dir) {
			struct cq_error *serr = cq_store_file_seen(run.store, e->path, e->size,
			                                           e->mtime_ns, &seen, &unfinished);
			if (!serr && !seen)
				serr = cq_store_file_record(run.store, e->path, e->size,
				                            e->mtime_ns, 0, "started", NULL);
			if (serr) {
				cmd_warn(e->path, "%s", serr->message);
				cq_error_free(serr);
			}
		}
		if (unfinished) {
			/* An earlier run died on this file: report it once, do not retry it. */
			static const char why[] = "an earlier analysis of this file did not finish";
			run.failed++;
			remember(&run, e, 0, "failed", why);
			report(&run, e->path, "failed", NULL, NULL, why);
			cmd_fail(e->path, cq_error_create(CQ_ERR_LIMIT, "%s", why));
		} else if (seen) {
			run.unchanged++;
		} else {
			ingest_one(&run, e);
		}
		run.progress.done++;
	}
	progress_clear(&run.progress);
	print_summary(&run);
	if (run.failed)
		rc = EXIT_INPUT;
	cmd_close_cache(run.so.cache);
	cq_store_close(run.store);
out:
	cq_bucket_rules_free(run.rules);
	for (size_t i = 0; i < in.n; i++)
		free(in.v[i].path);
	free(in.v);
	return rc;
}
