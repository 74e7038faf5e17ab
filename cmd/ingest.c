/*
 * ingest.c - `coreq ingest CORE... | DIR | -`: analyse cores and store them,
 * one transaction each, skipping cores already stored (by content).  The
 * walk, the seen-files record and the pipeline are the library's
 * (libcore/pipeline/ingest_paths.h); this file parses options and shows
 * each outcome as it comes, with a progress bar on a terminal.
 */
#include "cmd/cmd.h"
#include "cmd/options.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcore/analysis/stacktrace.h"
#include "libcore/base/clock.h"
#include "libcore/base/json.h"
#include "libcore/db/cache.h"
#include "libcore/pipeline/ingest_paths.h"
#include "libcore/store/store.h"
#include "libcore/triage/bucket.h"
#include "libcore/triage/rules.h"

struct progress {
	bool shown;
	size_t done, total;
	double start; /* cq_clock_seconds() */
};

struct ingest_run {
	enum cmd_format format;
	struct cq_json json;
	struct progress progress;
};

#define DEFAULT_MAX_DEPTH 8

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
	if (run->format == CMD_FORMAT_JSON) {
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

static void warn_damaged(void *arg, const char *path, const struct cq_core *core)
{
	(void)arg;
	cmd_warn_damaged_core(path, core);
}

/* Presents one event of cq_ingest_paths as it happens. */
static void on_event(void *arg, const struct cq_ingest_event *ev)
{
	struct ingest_run *run = arg;
	const struct cq_ingest_result *res = ev->result;
	switch (ev->kind) {
	case CQ_INGEST_EV_BAD_PATH:
		cmd_print_error(ev->path, ev->error);
		break;
	case CQ_INGEST_EV_EMPTY_DIR:
		if (run->format != CMD_FORMAT_JSON)
			printf("0 core files in %s\n", cmd_safe(ev->path));
		break;
	case CQ_INGEST_EV_NEXT:
		if (ev->index == 0) {
			run->progress.total = ev->total;
			run->progress.shown = ev->total > 1 && isatty(STDERR_FILENO);
			run->progress.start = cq_clock_seconds();
		}
		run->progress.done = ev->index;
		progress_draw(&run->progress);
		break;
	case CQ_INGEST_EV_WARNING:
		cmd_warn(ev->path, "%s", ev->error->message);
		break;
	case CQ_INGEST_EV_DONE:
		if (ev->status == CQ_INGEST_FAILED) {
			progress_clear(&run->progress);
			report(run, ev->path, "failed", NULL, NULL, ev->error->message);
			cmd_print_error(ev->path, ev->error);
		} else if (ev->status == CQ_INGEST_DUPLICATE) {
			report(run, ev->path, "duplicate", &res->store, NULL, NULL);
		} else if (ev->status == CQ_INGEST_INGESTED) {
			report(run, ev->path, "ingested", &res->store, &res->signature, NULL);
		}
		run->progress.done = ev->index + 1;
		break;
	}
}

/* The stop signal received, 0 if none (see cmd_ingest). */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

static void print_summary(struct ingest_run *run, const struct cq_ingest_totals *t)
{
	if (run->format != CMD_FORMAT_JSON) {
		if (t->unchanged)
			printf("%zu file%s unchanged since an earlier ingest, skipped\n",
			       t->unchanged, t->unchanged == 1 ? "" : "s");
		return;
	}
	struct cq_json *j = &run->json;
	cq_json_array_end(j);
	cq_json_key(j, "ingested");
	cq_json_uint(j, t->ingested);
	cq_json_key(j, "duplicates");
	cq_json_uint(j, t->duplicates);
	cq_json_key(j, "failed");
	cq_json_uint(j, t->failed);
	cq_json_key(j, "unchanged");
	cq_json_uint(j, t->unchanged);
	cq_json_object_end(j);
	cq_json_finish(j);
}

struct ingest_args {
	struct cmd_core_opts o;
	struct cq_stack_options so;
	const char *db, *cache_path, *rules;
	bool no_cache;
	unsigned max_depth, signature_frames;
};

#define FIELD(f) offsetof(struct ingest_args, f)

static const struct cmd_opt ingest_options[] = {
    CMD_ROW_DB(struct ingest_args, db),
    CMD_ROWS_CORE(struct ingest_args, o),
    CMD_ROWS_CACHE(struct ingest_args, cache_path, no_cache),
    CMD_ROWS_BUCKETING(struct ingest_args, signature_frames, rules),
    {"no-async", 0, CMD_OPT_CLEAR, FIELD(so.async), NULL,
     "native frames only: no async stacks, no suspended ones", 0, 0, NULL, NULL},
    {"max-depth", 0, CMD_OPT_COUNT, FIELD(max_depth), "N",
     "levels of subdirectories of DIR to look in (default 8, 0: none)", 0, 64, NULL, NULL},
    CMD_OPT_END,
};

static const struct cmd_spec ingest_spec = {
    .name = "ingest",
    .forms = "[OPTIONS] CORE... | DIR | -",
    .about = "Analyse each core (every thread's stack, as `coreq stack`) and store it in\n"
             "the database, one transaction per core: a core is stored whole or not at\n"
             "all.  A core already stored (same content, under any name or compression)\n"
             "is skipped.  DIR means every core-looking file in it and in its\n"
             "subdirectories, down to --max-depth levels (raw or compressed; hidden\n"
             "names are passed by); a DIR without one says \"0 core files in DIR\".  Each\n"
             "DIR is read again once its files are done, until a reading finds no new\n"
             "file.  SIGTERM, SIGINT or SIGHUP ends the run between two cores.\n"
             "Cores that cannot be analysed are reported and skipped; the exit status is\n"
             "then 1.  A progress bar is shown when standard error is a terminal.\n"
             "Each core is filed in a crash bucket by its signature: the crashed thread's\n"
             "first N frames, normalised, after the crash machinery (abort, raise, assert,\n"
             "the C++ throw path, Rust panics), and the signal (see `coreq buckets`); a\n"
             "process killed from outside while its threads wait on locks, by its deadlock\n"
             "or the thread it waits for.  The wait-for graph is stored (table waits).\n",
    .opt = ingest_options,
    .unlisted = "exe", /* refused: --exe is for one core */
};

/*
 * SIGTERM (systemctl stop or restart of coreq-ingest.service, a shutdown),
 * SIGINT, SIGHUP: finish the file being analysed and stop before the next,
 * so none is left half done (an unfinished analysis counts as failed and
 * is never retried, docs/capture.md, "systemd-coredump").
 */
static void catch_stop_signals(void)
{
	struct sigaction sa = {.sa_handler = on_stop_signal, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	static const int stop_signals[] = {SIGTERM, SIGINT, SIGHUP};
	for (size_t i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++)
		sigaction(stop_signals[i], &sa, NULL);
}

/* Ingests the paths argv[optind...] into store under rules; the totals. */
static void ingest_paths(struct ingest_args *a, struct cq_store *store,
                         struct cq_bucket_rules *rules, int argc, char **argv,
                         struct cq_ingest_totals *totals)
{
	a->so.cache = a->no_cache ? NULL : cmd_open_cache(a->cache_path);
	a->so.debug_dirs = a->o.core.debug_dirs;
	struct ingest_run run = {.format = a->o.format};
	if (run.format == CMD_FORMAT_JSON) {
		cq_json_init(&run.json, stdout);
		cq_json_object_begin(&run.json);
		cq_json_key(&run.json, "results");
		cq_json_array_begin(&run.json);
	}
	struct cq_ingest_paths_options io = {
	    .ingest = {.core = &a->o.core,
	               .stacks = &a->so,
	               .signature_frames = a->signature_frames,
	               .rules = rules,
	               .opened = warn_damaged},
	    .max_depth = a->max_depth,
	    .report = on_event,
	    .report_arg = &run,
	    .stop = &stop_signal,
	};
	catch_stop_signals();
	cq_ingest_paths(store, (const char *const *)argv + optind, (size_t)(argc - optind), &io,
	                totals);
	progress_clear(&run.progress);
	print_summary(&run, totals);
	cmd_close_cache(a->so.cache);
}

int cmd_ingest(int argc, char **argv)
{
	struct ingest_args a = {.max_depth = DEFAULT_MAX_DEPTH,
	                        .signature_frames = CQ_BUCKET_DEFAULT_FRAMES};
	cmd_core_opts_init(&a.o);
	cq_stack_options_default(&a.so);
	int rc = cmd_opts_parse(&ingest_spec, argc, argv, &a);
	if (rc != CMD_OPTS_GO_ON)
		return rc;
	if (optind >= argc)
		return cmd_usage_error("ingest", "expected CORE..., a directory, or -");
	if (a.o.core.exe)
		return cmd_usage_error("ingest", "--exe is for one core; use --sysroot");
	struct cq_bucket_rules *rules;
	struct cq_store *store;
	if ((rc = cmd_open_rules_and_store(a.rules, a.db, &rules, &store)) != EXIT_OK)
		return rc;
	struct cq_ingest_totals totals;
	ingest_paths(&a, store, rules, argc, argv, &totals);
	cq_store_close(store);
	cq_bucket_rules_free(rules);
	if (stop_signal) {
		fprintf(stderr, "coreq: ingest: stopped by %s; %zu file%s left for the next run\n",
		        strsignal(stop_signal), totals.left, totals.left == 1 ? "" : "s");
		/* End as the signal would have: systemd counts SIGTERM as a clean stop. */
		signal(stop_signal, SIG_DFL);
		raise(stop_signal);
	}
	return totals.failed || totals.bad_paths ? EXIT_INPUT : EXIT_OK;
}
