/*
 * ingest_paths.c - named paths into the crash database: the directory
 * walk, core sniffing, and the seen-files protocol around the ingest
 * pipeline (see ingest_paths.h).
 */
#include "libcore/pipeline/ingest_paths.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcore/base/regular_file.h"
#include "libcore/model/source.h"
#include "libcore/store/capture_rows.h"

/* One file to ingest; a file found in a directory carries its stat. */
struct input {
	char *path;
	bool from_dir;
	int64_t size, mtime_ns;
};

struct inputs {
	struct input *v;
	size_t n, cap;
};

static struct cq_error *push_input(struct inputs *in, const char *path, const struct stat *st)
{
	if (in->n == in->cap) {
		size_t cap = in->cap ? in->cap * 2 : 16;
		struct input *p = realloc(in->v, cap * sizeof(*p));
		if (!p)
			return &cq_error_nomem;
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
		return &cq_error_nomem;
	in->n++;
	return NULL;
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

static int path_cmp(const void *a, const void *b)
{
	return strcmp(((const struct input *)a)->path, ((const struct input *)b)->path);
}

/*
 * Adds every core-looking regular file of dir and of its subdirectories down
 * to depth levels below it (hidden names and symbolic links to directories
 * are passed by).  A subdirectory that cannot be read is passed by; running
 * out of memory stops the walk.
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
		if (e->d_name[0] == '.')
			continue;
		if (asprintf(&p, "%s/%s", dir, e->d_name) < 0) {
			err = &cq_error_nomem;
			break;
		}
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
			if (depth > 0) {
				struct cq_error *sub = walk_dir(in, p, depth - 1);
				if (sub && sub->code == CQ_ERR_NOMEM)
					err = sub;
				else
					cq_error_free(sub); /* unreadable: passed by */
			}
		} else if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && looks_like_core(p)) {
			err = push_input(in, p, &st);
		}
		free(p);
	}
	closedir(d);
	return err;
}

/* Adds the core files under dir, in path order; *found says how many. */
static struct cq_error *expand_dir(struct inputs *in, const char *dir, unsigned depth,
                                   size_t *found)
{
	*found = 0;
	char *abs = realpath(dir, NULL);
	if (!abs)
		return errno == ENOMEM ? &cq_error_nomem
		                       : cq_error_errno(errno, "cannot read directory");
	size_t first = in->n;
	struct cq_error *err = walk_dir(in, abs, depth);
	free(abs);
	if (in->n > first)
		qsort(in->v + first, in->n - first, sizeof(*in->v), path_cmp);
	*found = in->n - first;
	return err;
}

struct run {
	struct cq_store *store;
	const struct cq_ingest_paths_options *o;
	struct cq_ingest_totals *totals;
	size_t total;
};

static void emit(const struct run *run, struct cq_ingest_event ev)
{
	ev.total = run->total;
	if (run->o->report)
		run->o->report(run->o->report_arg, &ev);
}

static void warn(const struct run *run, size_t index, const char *path, struct cq_error *err)
{
	emit(run, (struct cq_ingest_event){
	              .kind = CQ_INGEST_EV_WARNING, .path = path, .index = index, .error = err});
	cq_error_free(err);
}

/* Records what became of a directory's file (a named file is not recorded). */
static void remember(const struct run *run, size_t index, const struct input *in, int64_t core_id,
                     const char *status, const char *message)
{
	if (!in->from_dir)
		return;
	struct cq_error *err = cq_store_file_record(run->store, in->path, in->size, in->mtime_ns,
	                                            core_id, status, message);
	if (err) {
		struct cq_error *w =
		    cq_error_create(err->code, "cannot remember this file: %s", err->message);
		cq_error_free(err);
		warn(run, index, in->path, w);
	}
}

static void done(const struct run *run, size_t index, const struct input *in,
                 enum cq_ingest_status status, const struct cq_ingest_result *result,
                 const struct cq_error *error)
{
	emit(run, (struct cq_ingest_event){.kind = CQ_INGEST_EV_DONE,
	                                   .path = in->path,
	                                   .index = index,
	                                   .status = status,
	                                   .result = result,
	                                   .error = error});
}

/* A failure, as one error that also says whether it could be recorded. */
static struct cq_error *failure(struct cq_error *err, const struct cq_ingest_result *res)
{
	if (!res->record_error)
		return err;
	struct cq_error *both =
	    cq_error_create(err->code, "%s; and the failure could not be recorded (%s)",
	                    err->message, res->record_error->message);
	if (both == &cq_error_nomem)
		return err;
	cq_error_free(err);
	return both;
}

static void ingest_one(const struct run *run, size_t index, const struct input *in)
{
	struct cq_ingest_result res;
	struct cq_error *err = cq_ingest_core(run->store, in->path, &run->o->ingest, &res);
	if (err) {
		err = failure(err, &res);
		run->totals->failed++;
		remember(run, index, in, 0, "failed", err->message);
		done(run, index, in, CQ_INGEST_FAILED, NULL, err);
		cq_error_free(err);
	} else if (res.store.duplicate) {
		run->totals->duplicates++;
		remember(run, index, in, res.store.core_id, "duplicate", NULL);
		done(run, index, in, CQ_INGEST_DUPLICATE, &res, NULL);
	} else {
		run->totals->ingested++;
		remember(run, index, in, res.store.core_id, "ingested", NULL);
		done(run, index, in, CQ_INGEST_INGESTED, &res, NULL);
	}
	cq_ingest_result_free(&res);
}

/* Asks the seen-files record about a directory's file, and marks it started. */
static void look_up(const struct run *run, size_t index, const struct input *in, bool *seen,
                    bool *unfinished)
{
	*seen = *unfinished = false;
	if (!in->from_dir)
		return;
	struct cq_error *err =
	    cq_store_file_seen(run->store, in->path, in->size, in->mtime_ns, seen, unfinished);
	if (!err && !*seen)
		err = cq_store_file_record(run->store, in->path, in->size, in->mtime_ns, 0,
		                           "started", NULL);
	if (err)
		warn(run, index, in->path, err);
}

static void ingest_input(const struct run *run, size_t index, const struct input *in)
{
	emit(run,
	     (struct cq_ingest_event){.kind = CQ_INGEST_EV_NEXT, .path = in->path, .index = index});
	bool seen, unfinished;
	look_up(run, index, in, &seen, &unfinished);
	if (unfinished) {
		/* An earlier run died on this file: report it once, do not retry it. */
		static const char why[] = "an earlier analysis of this file did not finish";
		run->totals->failed++;
		remember(run, index, in, 0, "failed", why);
		struct cq_error *err = cq_error_create(CQ_ERR_LIMIT, "%s", why);
		done(run, index, in, CQ_INGEST_FAILED, NULL, err);
		cq_error_free(err);
	} else if (seen) {
		run->totals->unchanged++;
		done(run, index, in, CQ_INGEST_UNCHANGED, NULL, NULL);
	} else {
		ingest_one(run, index, in);
	}
}

static bool stopping(const struct cq_ingest_paths_options *o)
{
	return o->stop && *o->stop;
}

static int path_ptr_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Reads the named directories again and appends to in their files that are
 * not in it yet: files that arrived while the run looked at the others
 * (systemd-coredump storing the next core of a storm).  coreq-ingest.path
 * does not see them: systemd stops watching a path unit's paths while the
 * service it started runs.  So a run ends only when a reading finds nothing
 * new.  Returns whether it appended any; errors (a directory gone, no
 * memory) end the rereading.
 */
static bool take_arrivals(struct inputs *in, const char *const *paths, size_t npaths,
                          unsigned depth)
{
	struct inputs now = {0};
	for (size_t i = 0; i < npaths; i++) {
		struct stat st;
		size_t found;
		if (strcmp(paths[i], "-") == 0 || stat(paths[i], &st) != 0 || !S_ISDIR(st.st_mode))
			continue;
		struct cq_error *err = expand_dir(&now, paths[i], depth, &found);
		if (err) {
			cq_error_free(err);
			break;
		}
	}
	size_t before = in->n;
	char **known = now.n ? malloc(in->n * sizeof(*known) + 1) : NULL;
	if (known) {
		for (size_t i = 0; i < in->n; i++)
			known[i] = in->v[i].path;
		qsort(known, in->n, sizeof(*known), path_ptr_cmp);
	}
	for (size_t i = 0; i < now.n; i++) {
		bool seen =
		    !known || bsearch(&now.v[i].path, known, before, sizeof(*known), path_ptr_cmp);
		if (seen || push_input(in, now.v[i].path, NULL) != NULL) {
			free(now.v[i].path);
			continue;
		}
		/* push_input copied the path; keep the stat taken by the walk. */
		free(in->v[in->n - 1].path);
		in->v[in->n - 1] = now.v[i];
	}
	free(known);
	free(now.v);
	return in->n > before;
}

void cq_ingest_paths(struct cq_store *store, const char *const *paths, size_t npaths,
                     const struct cq_ingest_paths_options *o, struct cq_ingest_totals *totals)
{
	assert(store && o);
	memset(totals, 0, sizeof(*totals));
	struct run run = {.store = store, .o = o, .totals = totals};
	struct inputs in = {0};
	for (size_t i = 0; i < npaths; i++) {
		struct stat st;
		struct cq_error *err = NULL;
		size_t found = 1;
		if (strcmp(paths[i], "-") != 0 && stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode))
			err = expand_dir(&in, paths[i], o->max_depth, &found);
		else
			err = push_input(&in, paths[i], NULL);
		if (err) {
			totals->bad_paths++;
			emit(&run, (struct cq_ingest_event){.kind = CQ_INGEST_EV_BAD_PATH,
			                                    .path = paths[i],
			                                    .error = err});
			cq_error_free(err);
		} else if (!found) {
			emit(&run, (struct cq_ingest_event){.kind = CQ_INGEST_EV_EMPTY_DIR,
			                                    .path = paths[i]});
		}
	}
	run.total = totals->inputs = in.n;
	size_t next = 0;
	for (;;) {
		for (; next < in.n && !stopping(o); next++)
			ingest_input(&run, next, &in.v[next]);
		if (next < in.n || stopping(o) || !take_arrivals(&in, paths, npaths, o->max_depth))
			break;
		run.total = totals->inputs = in.n;
	}
	totals->left = in.n - next;
	totals->inputs = next;
	for (size_t i = 0; i < in.n; i++)
		free(in.v[i].path);
	free(in.v);
}
