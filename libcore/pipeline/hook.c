/*
 * hook.c - the hook's flow: store, record, analyse in the sandbox, read
 * back (see hook.h).
 */
#include "libcore/pipeline/hook.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcore/analysis/stacktrace.h"
#include "libcore/base/paths.h"
#include "libcore/capture/sandbox.h"
#include "libcore/capture/spool.h"
#include "libcore/db/cache.h"
#include "libcore/model/core.h"
#include "libcore/pipeline/ingest.h"
#include "libcore/store/store.h"
#include "libcore/triage/bucket.h"
#include "libcore/triage/rules.h"

#define DEFAULT_TIMEOUT   120
#define DEFAULT_MEMORY    (2ull << 30)
#define DEFAULT_MAX_SIZE  (32ull << 30)
#define DEFAULT_KEEP_FREE (1ull << 30)

void cq_hook_options_init(struct cq_hook_options *o)
{
	memset(o, 0, sizeof(*o));
	o->max_size = DEFAULT_MAX_SIZE;
	o->keep_free = DEFAULT_KEEP_FREE;
	o->memory = DEFAULT_MEMORY;
	o->timeout = DEFAULT_TIMEOUT;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	o->max_analyses = cpus > 0 && cpus < 1024 ? (unsigned)cpus : 1;
	/*
	 * No raw copy: the analysis reads the stored seekable file, frame by
	 * frame, once it is written (libcore/model/source.h), so a core of any
	 * size costs the hook a few frames of memory, not its size.
	 */
	o->raw_memory = 0;
	o->input_fd = STDIN_FILENO;
	cq_capture_init(&o->cap);
}

/* The run's own copy of the paths (defaults resolved) and what it holds. */
struct hook {
	const struct cq_hook_options *o;
	char *store_dir; /* absolute */
	char *db, *cache;
	struct cq_capture cap;
};

static struct cq_error *resolve_paths(struct hook *h)
{
	const struct cq_hook_options *o = h->o;
	h->db = o->db ? strdup(o->db) : cq_store_default_path();
	if (!h->db)
		return o->db ? &cq_error_nomem
		             : cq_error_create(CQ_ERR_USAGE,
		                               "no database path: use --db or set COREQ_DB");
	h->cache = o->cache ? strdup(o->cache) : cq_cache_default_path(); /* NULL: none */
	if (o->cache && !h->cache)
		return &cq_error_nomem;
	char *store = o->store_dir ? strdup(o->store_dir) : cq_capture_default_store();
	if (!store)
		return o->store_dir
		           ? &cq_error_nomem
		           : cq_error_create(CQ_ERR_USAGE, "no store directory: use --store");
	struct cq_error *err = cq_path_make_parent_dirs(h->db);
	char *probe = NULL;
	if (!err && asprintf(&probe, "%s/x", store) < 0)
		err = &cq_error_nomem;
	if (!err)
		err = cq_path_make_parent_dirs(probe);
	free(probe);
	/* Rows name the stored file by its absolute path, as `coreq ingest` does. */
	if (!err && !(h->store_dir = realpath(store, NULL)))
		err = cq_error_errno(errno, "cannot resolve %s", store);
	free(store);
	return err;
}

/* The boot id, when the kernel's arguments did not carry it. */
static void read_boot_id(struct cq_capture *c)
{
	if (c->boot_id[0])
		return;
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	char line[64];
	if (f && fgets(line, sizeof(line), f)) {
		size_t n = 0;
		for (char *p = line; *p && n < 32; p++)
			if (*p != '-' && *p != '\n')
				c->boot_id[n++] = *p;
		c->boot_id[n == 32 ? 32 : 0] = 0;
	}
	if (f)
		fclose(f);
}

/*
 * One of max slots for an analysis: a lock file .analysis-slot-N in the
 * store (hidden, so directory ingests pass it by), held with flock for as
 * long as the returned descriptor is open; the kernel drops it when the
 * hook dies.  -1 when every slot is taken.
 */
static int take_analysis_slot(const char *store_dir, unsigned max)
{
	for (unsigned i = 0; i < max; i++) {
		char *path;
		if (asprintf(&path, "%s/.analysis-slot-%u", store_dir, i) < 0)
			return -1;
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		free(path);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return fd;
		close(fd);
	}
	return -1;
}

/* Records a crash whose core is not kept: a not_stored row saying why. */
static struct cq_error *record_not_stored(const struct hook *h, const char *why, int64_t *id)
{
	char name[512], *path = NULL;
	struct cq_error *err = cq_capture_systemd_name(&h->cap, 0, name, sizeof(name), "");
	if (!err && asprintf(&path, "%s/%s", h->store_dir, name) < 0)
		err = &cq_error_nomem;
	struct cq_store *store;
	if (!err && !(err = cq_store_open(h->db, &store))) {
		err = cq_store_placeholder(store, &h->cap, path, 0, "not_stored", why, id);
		cq_store_close(store);
	}
	free(path);
	return err;
}

static struct cq_error *record_pending(const struct hook *h, const struct cq_spool_result *s)
{
	struct cq_store *store;
	struct cq_error *err = cq_store_open(h->db, &store);
	if (err)
		return err;
	int64_t id;
	err = cq_store_placeholder(store, &h->cap, s->path, s->raw_bytes, "pending",
	                           s->truncated ? "stored truncated at the size limit" : NULL, &id);
	cq_store_close(store);
	return err;
}

/* Marks the stored core failed, for why (keep_reason: unless the child said why already). */
static struct cq_error *record_failed(const struct hook *h, const char *path, const char *why,
                                      bool keep_reason)
{
	struct cq_store *store;
	struct cq_error *err = cq_store_open(h->db, &store);
	if (err)
		return err;
	int64_t id;
	err = cq_store_placeholder_failed(store, path, why, keep_reason, &id);
	cq_store_close(store);
	return err;
}

/* What the database says about the stored core after the analysis. */
static struct cq_error *read_outcome(const struct hook *h, const char *path,
                                     struct cq_store_outcome *o)
{
	struct cq_store *store;
	struct cq_error *err = cq_store_open(h->db, &store);
	if (err)
		return err;
	err = cq_store_stored_outcome(store, path, o);
	cq_store_close(store);
	return err;
}

/*
 * Whether the core comes as a regular file, at its start, that will be
 * stored whole (limit 0: no limit): then the analysis reads it in place.
 */
static bool input_is_whole_file(int fd, uint64_t limit)
{
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && lseek(fd, 0, SEEK_CUR) == 0 &&
	       (limit == 0 || (uint64_t)st.st_size <= limit);
}

/* ---- the analysis, in the sandbox's child ---- */

struct analysis {
	const struct hook *h;
	struct cq_store *store;
	struct cq_cache *cache;
	struct cq_bucket_rules *rules;
};

/* As root: the database, the cache (the analysis goes on without one) and the rules. */
static struct cq_error *analysis_prepare(void *arg)
{
	struct analysis *a = arg;
	struct cq_error *err = cq_store_open(a->h->db, &a->store);
	if (err)
		return cq_error_prefix(err, "cannot open the database %s", a->h->db);
	if (a->h->cache)
		cq_error_free(cq_cache_open(a->h->cache, &a->cache));
	if ((err = cq_bucket_rules_load(NULL, &a->rules)))
		return err; /* a later `coreq ingest` analyses the stored core with good rules */
	/* Warm the database so its -wal and -shm files are open before the drop. */
	int64_t id;
	cq_error_free(cq_store_find_core(a->store, "-", &id));
	return NULL;
}

static struct cq_error *analysis_run(void *arg, const struct cq_sandbox_core *core,
                                     struct cq_error **record_error)
{
	struct analysis *a = arg;
	struct cq_core_options co = {0};
	struct cq_stack_options so;
	cq_stack_options_default(&so);
	so.cache = a->cache;
	struct cq_ingest_options io = {.core = &co,
	                               .stacks = &so,
	                               .signature_frames = CQ_BUCKET_DEFAULT_FRAMES,
	                               .rules = a->rules,
	                               .capture_override = &a->h->cap,
	                               .stored_path = core->stored_path,
	                               .await_stored = core->await_stored,
	                               .await_arg = core->await_ctx};
	struct cq_ingest_result res;
	struct cq_error *err = cq_ingest_core(a->store, core->path, &io, &res);
	*record_error = res.record_error;
	res.record_error = NULL;
	cq_ingest_result_free(&res);
	cq_bucket_rules_free(a->rules);
	cq_error_free(cq_cache_close(a->cache)); /* commits what the analysis cached */
	cq_store_close(a->store);
	a->rules = NULL;
	a->cache = NULL;
	a->store = NULL;
	return err;
}

/* ---- the flow ---- */

/* What raw_complete needs. */
struct raw_done {
	struct cq_sandbox *sb;
	int input_fd;
};

/*
 * The whole core is in memory: the analysis may start, and the kernel may
 * finish with the crashed process now rather than after the compression.
 */
static void raw_complete(void *arg, uint64_t size)
{
	struct raw_done *rd = arg;
	cq_sandbox_raw_complete(rd->sb, size);
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull >= 0) {
		dup2(devnull, rd->input_fd); /* the descriptor stays taken */
		close(devnull);
	}
}

/* Stores the core (or records why not); *not_stored is set when it may not be kept. */
static struct cq_error *store_core(struct hook *h, struct cq_sandbox *sb, bool analysing,
                                   uint64_t limit, const char *not_stored, struct cq_hook_result *r)
{
	struct raw_done rd = {.sb = sb, .input_fd = h->o->input_fd};
	struct cq_spool_raw raw = {.fd = analysing ? sb->memfd : -1,
	                           .budget = h->o->raw_memory,
	                           .complete = raw_complete,
	                           .arg = &rd};
	struct cq_error *err = NULL;
	if (!not_stored)
		err = cq_spool_store(h->o->input_fd, h->store_dir, &h->cap, limit,
		                     analysing && !sb->from_input ? &raw : NULL, &r->stored);
	/* The core is on disk (or will not be): let the kernel finish with the process. */
	close(h->o->input_fd);
	if (!err && not_stored) {
		err = record_not_stored(h, not_stored, &r->outcome.core_id);
		snprintf(r->outcome.message, sizeof(r->outcome.message), "%s", not_stored);
	} else if (err) {
		/* Storing failed (disk full, I/O error): the crash is still recorded. */
		int64_t ignored;
		struct cq_error *rerr = record_not_stored(h, err->message, &ignored);
		if (rerr) {
			struct cq_error *both =
			    cq_error_create(err->code, "%s; recording that failed too: %s",
			                    err->message, rerr->message);
			cq_error_free(rerr);
			if (both != &cq_error_nomem) {
				cq_error_free(err);
				err = both;
			}
		}
	} else {
		err = record_pending(h, &r->stored);
	}
	return err;
}

/* Waits for the analysis; records a failure the child did not record. */
static struct cq_error *finish_analysis(struct hook *h, struct cq_sandbox *sb, bool stored,
                                        struct cq_hook_result *r)
{
	cq_sandbox_stored(sb, stored ? r->stored.path : NULL);
	r->analysed_from = sb->from_input    ? "input file"
	                   : sb->from_memory ? "memory"
	                                     : "stored file";
	struct cq_sandbox_outcome out;
	struct cq_error *err = cq_sandbox_finish(sb, stored, &out);
	r->analysed_as = out.uid;
	if (out.uid < 0)
		r->analysed_from = NULL;
	if (!err && out.failed)
		err = record_failed(h, r->stored.path, out.reason, out.recorded);
	return err;
}

struct cq_error *cq_hook_run(const struct cq_hook_options *o, struct cq_hook_result *r)
{
	memset(r, 0, sizeof(*r));
	r->analysed_as = -1;
	struct hook h = {.o = o, .cap = o->cap};
	read_boot_id(&h.cap);
	struct cq_error *err = resolve_paths(&h);
	bool no_room = false;
	uint64_t limit =
	    err ? 0
	        : cq_spool_limit(h.store_dir, o->max_size, h.cap.rlimit, o->keep_free, &no_room);
	const char *not_stored = h.cap.rlimit == 0 ? "RLIMIT_CORE is 0: core not stored"
	                         : no_room         ? "less than --keep-free bytes free in the store"
	                                           : NULL;
	/*
	 * The analysis starts before the core is stored: it reads the raw copy
	 * while the stored one is compressed, and records nothing until the
	 * core is stored.
	 */
	struct analysis an = {.h = &h};
	struct cq_sandbox_config scfg = {
	    .work_dir = h.store_dir,
	    .memory = o->memory,
	    .timeout = o->timeout,
	    .cap = &h.cap,
	    .work = {.prepare = analysis_prepare, .analyse = analysis_run, .arg = &an}};
	struct cq_sandbox sb;
	bool analysing = false;
	char not_started[160] = "";
	int slot = err || not_stored || !o->max_analyses
	               ? -1
	               : take_analysis_slot(h.store_dir, o->max_analyses);
	bool had_slot = slot >= 0;
	if (had_slot) {
		int input_file = input_is_whole_file(o->input_fd, limit) ? o->input_fd : -1;
		struct cq_error *aerr = cq_sandbox_start(&scfg, o->raw_memory, input_file, &sb);
		analysing = aerr == NULL;
		if (aerr)
			snprintf(not_started, sizeof(not_started), "analysis not started: %s",
			         aerr->message);
		cq_error_free(aerr);
	}
	if (!err)
		err = store_core(&h, &sb, analysing, limit, not_stored, r);
	else
		close(o->input_fd);
	if (!err && not_stored)
		goto out; /* recorded: nothing stored, nothing analysed */
	if (analysing) {
		struct cq_error *aerr = finish_analysis(&h, &sb, !err, r);
		if (!err)
			err = aerr;
		else
			cq_error_free(aerr);
	}
	if (slot >= 0)
		close(slot);
	slot = -1;
	struct cq_store_outcome *oc = &r->outcome;
	if (!err)
		err = read_outcome(&h, r->stored.path, oc);
	if (!err && !analysing && strcmp(oc->status, "pending") == 0)
		snprintf(oc->message, sizeof(oc->message), "%s",
		         not_started[0] ? not_started : "analysis deferred");
	if (!err && !had_slot && strcmp(oc->status, "pending") == 0)
		snprintf(oc->message, sizeof(oc->message),
		         "analysis deferred (%u running): `coreq ingest %s` completes it",
		         o->max_analyses, h.store_dir);
	if (!err && !oc->core_id) {
		/*
		 * The placeholder went away with no row of its own: a core stored
		 * before.  No row names this copy, so it goes.
		 */
		bool removed = unlink(r->stored.path) == 0;
		snprintf(oc->status, sizeof(oc->status), "duplicate");
		snprintf(oc->message, sizeof(oc->message),
		         "the same core is already in the database%s",
		         removed ? "; this copy was removed" : "");
	}
out:
	if (slot >= 0)
		close(slot);
	free(h.store_dir);
	free(h.db);
	free(h.cache);
	return err;
}

void cq_hook_result_free(struct cq_hook_result *r)
{
	free(r->stored.path);
	r->stored.path = NULL;
}
