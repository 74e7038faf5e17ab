/*
 * resymbolize.c - names for stored frames from debuginfo that came later
 * (see resymbolize.h).
 *
 * The debuginfo file of a module is opened as the module itself, at its
 * link-time addresses, so a stored frame's offset is its address there;
 * each frame takes the name `coreq stack` gives a native frame at that pc:
 * the function that contains it (the last of the symbolizer's frames, the
 * ones before it being the calls inlined there).
 */
#include "libcore/pipeline/resymbolize.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/build_id.h"
#include "libcore/base/clock.h"
#include "libcore/model/module.h"
#include "libcore/store/unnamed_frames.h"
#include "libcore/symbols/debuginfo.h"
#include "libcore/symbols/debuginfod_client.h"
#include "libcore/symbols/symbolizer.h"

static const char *const outcome_names[] = {
    [CQ_RESYM_DEBUG_DIR] = "debug_dir",
    [CQ_RESYM_FETCHED] = "fetched",
    [CQ_RESYM_NOT_FOUND] = "not_found",
    [CQ_RESYM_TOO_BIG] = "too_big",
    [CQ_RESYM_TIMED_OUT] = "timed_out",
    [CQ_RESYM_SKIPPED] = "skipped",
    [CQ_RESYM_BAD_BUILD_ID] = "bad_build_id",
    [CQ_RESYM_MISMATCH] = "mismatch",
    [CQ_RESYM_FAILED] = "failed",
};

const char *cq_resymbolize_outcome_name(enum cq_resymbolize_outcome outcome)
{
	return (size_t)outcome < sizeof(outcome_names) / sizeof(outcome_names[0])
	           ? outcome_names[outcome]
	           : "failed";
}

struct todo {
	struct cq_resymbolize_result *r;
	size_t cap;
	struct cq_error *err;
};

/*
 * One module with unnamed frames.  Its stored build-id is kept only when
 * valid; a bad one is reported (quoted, bounded) and never looked up.
 */
static void add_module(void *ctx, int64_t id, const char *build_id)
{
	struct todo *t = ctx;
	struct cq_resymbolize_result *r = t->r;
	if (t->err)
		return;
	if (r->neach == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		struct cq_resymbolize_module *each = realloc(r->each, cap * sizeof(*each));
		if (!each) {
			t->err = &cq_error_nomem;
			return;
		}
		r->each = each;
		t->cap = cap;
	}
	struct cq_resymbolize_module *m = &r->each[r->neach];
	memset(m, 0, sizeof(*m));
	m->id = id;
	m->outcome = CQ_RESYM_NOT_FOUND;
	struct cq_error *bad = cq_build_id_check(build_id);
	if (bad) {
		m->outcome = CQ_RESYM_BAD_BUILD_ID;
		m->reason = strdup(bad->message);
		cq_error_free(bad);
		if (!m->reason)
			t->err = &cq_error_nomem;
	} else if (!(m->build_id = strdup(build_id))) {
		t->err = &cq_error_nomem;
	}
	r->neach++;
}

static void set_reason(struct cq_resymbolize_module *m, struct cq_error *err)
{
	free(m->reason);
	m->reason = err && err != &cq_error_nomem ? strdup(err->message) : NULL;
	cq_error_free(err);
}

static enum cq_resymbolize_outcome from_debuginfod(enum cq_debuginfod_outcome o)
{
	switch (o) {
	case CQ_DEBUGINFOD_FETCHED:
		return CQ_RESYM_FETCHED;
	case CQ_DEBUGINFOD_NOT_FOUND:
		return CQ_RESYM_NOT_FOUND;
	case CQ_DEBUGINFOD_TOO_BIG:
		return CQ_RESYM_TOO_BIG;
	case CQ_DEBUGINFOD_TIMED_OUT:
		return CQ_RESYM_TIMED_OUT;
	case CQ_DEBUGINFOD_MISMATCH:
		return CQ_RESYM_MISMATCH;
	case CQ_DEBUGINFOD_FAILED:
		break;
	}
	return CQ_RESYM_FAILED;
}

/*
 * The debuginfo of m in a local build-id tree, else from debuginfod (NULL
 * when neither has it, m->outcome and m->reason saying why).  Servers are
 * asked only before the deadline, each for the module's time at most.
 */
static char *find_debuginfo(const struct cq_resymbolize_options *o, struct cq_debuginfod *d,
                            double deadline, struct cq_resymbolize_module *m)
{
	char *path = cq_debuginfo_find_by_build_id(m->build_id, o->debug_dirs);
	if (path) {
		m->outcome = CQ_RESYM_DEBUG_DIR;
		return path;
	}
	if (!d)
		return NULL;
	double now = cq_clock_seconds();
	if (deadline > 0 && now >= deadline) {
		m->outcome = CQ_RESYM_SKIPPED;
		set_reason(m, cq_error_create(CQ_ERR_LIMIT, "the deadline (%u s) had passed",
		                              o->deadline));
		return NULL;
	}
	double until = o->module_seconds ? now + o->module_seconds : INFINITY;
	if (deadline > 0 && deadline < until)
		until = deadline;
	enum cq_debuginfod_outcome got;
	struct cq_error *err = cq_debuginfod_find(d, m->build_id, until, &path, &got);
	m->outcome = from_debuginfod(got);
	set_reason(m, err);
	return path;
}

struct namer {
	struct cq_symbolizer *sym;
};

static bool name_frame(void *ctx, uint64_t offset, bool return_address, const char **function,
                       const char **file, int *line)
{
	struct namer *n = ctx;
	const struct cq_symbol_frame *f;
	size_t k = cq_symbolizer_lookup(n->sym, offset, return_address, &f);
	if (!k || !f[k - 1].function)
		return false;
	*function = f[k - 1].function;
	*file = f[k - 1].file;
	*line = f[k - 1].line;
	return true;
}

/*
 * Names the frames of m from the debuginfo at path, which carries m's
 * build-id (both finders check).  Only a database error or running out of
 * memory is returned; a file that cannot be used is m's outcome.
 */
static struct cq_error *name_module(struct cq_store *store, struct cq_resymbolize_module *m,
                                    const char *path)
{
	struct cq_module mod;
	struct cq_error *err = cq_module_open_elf(path, &mod);
	if (err) {
		m->outcome = CQ_RESYM_FAILED;
		set_reason(m, cq_error_prefix(err, "debuginfo file"));
		return NULL;
	}
	struct namer n = {NULL};
	if (!(err = cq_symbolizer_create_modules(&mod, 1, NULL, NULL, &n.sym))) {
		err = cq_store_name_frames(store, m->id, name_frame, &n, &m->frames);
		cq_symbolizer_destroy(n.sym);
	}
	cq_module_destroy(&mod);
	if (err && err != &cq_error_nomem && err->code != CQ_ERR_DB) {
		m->outcome = CQ_RESYM_FAILED;
		set_reason(m, err); /* a bad debuginfo file names nothing */
		err = NULL;
	}
	return err;
}

static bool any_valid(const struct cq_resymbolize_result *r)
{
	for (size_t i = 0; i < r->neach; i++)
		if (r->each[i].build_id)
			return true;
	return false;
}

struct cq_error *cq_resymbolize(struct cq_store *store, const struct cq_resymbolize_options *o,
                                struct cq_resymbolize_result *r)
{
	memset(r, 0, sizeof(*r));
	double deadline = o->deadline ? cq_clock_seconds() + o->deadline : 0;
	struct todo t = {.r = r};
	struct cq_error *err = cq_store_unnamed_modules(store, add_module, &t);
	if (!err)
		err = t.err;
	struct cq_debuginfod *d = NULL;
	const char *env = getenv("DEBUGINFOD_URLS");
	bool servers =
	    (o->debuginfod_urls && *o->debuginfod_urls) || (!o->debuginfod_urls && env && *env);
	if (!err && any_valid(r) && servers)
		err = cq_debuginfod_open(o->debuginfod_urls, o->max_size, &d);
	r->modules = (int64_t)r->neach;
	for (size_t i = 0; i < r->neach && !err; i++) {
		struct cq_resymbolize_module *m = &r->each[i];
		if (!m->build_id)
			continue;
		char *path = find_debuginfo(o, d, deadline, m);
		if (!path)
			continue;
		err = name_module(store, m, path);
		free(path);
		if (m->outcome == CQ_RESYM_DEBUG_DIR || m->outcome == CQ_RESYM_FETCHED)
			r->found++;
		r->frames += m->frames;
	}
	cq_debuginfod_close(d);
	if (!err && r->frames)
		err = cq_store_rebucket(store, o->rules, o->signature_frames, &r->rebucket);
	return err;
}

void cq_resymbolize_result_free(struct cq_resymbolize_result *r)
{
	for (size_t i = 0; i < r->neach; i++) {
		free(r->each[i].build_id);
		free(r->each[i].reason);
	}
	free(r->each);
	r->each = NULL;
	r->neach = 0;
}
