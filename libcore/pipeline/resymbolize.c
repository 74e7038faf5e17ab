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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcore/model/module.h"
#include "libcore/store/unnamed_frames.h"
#include "libcore/symbols/debuginfod_client.h"
#include "libcore/symbols/symbolizer.h"

struct todo {
	int64_t *ids;
	char **build_ids;
	size_t n, cap;
	struct cq_error *err;
};

static void add_module(void *ctx, int64_t id, const char *build_id)
{
	struct todo *t = ctx;
	if (t->err)
		return;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		int64_t *ids = realloc(t->ids, cap * sizeof(*ids));
		char **bids = ids ? realloc(t->build_ids, cap * sizeof(*bids)) : NULL;
		if (ids)
			t->ids = ids;
		if (!ids || !bids) {
			t->err = &cq_error_nomem;
			return;
		}
		t->build_ids = bids;
		t->cap = cap;
	}
	if (!(t->build_ids[t->n] = strdup(build_id))) {
		t->err = &cq_error_nomem;
		return;
	}
	t->ids[t->n++] = id;
}

/* The debuginfo of build_id in a local build-id tree, else from debuginfod; NULL if none. */
static char *find_debuginfo(const struct cq_resymbolize_options *o, struct cq_debuginfod *d,
                            const char *build_id)
{
	if (strlen(build_id) < 3)
		return NULL;
	for (size_t i = 0; o->debug_dirs && o->debug_dirs[i]; i++) {
		char *p;
		if (asprintf(&p, "%s/.build-id/%.2s/%s.debug", o->debug_dirs[i], build_id,
		             build_id + 2) < 0)
			return NULL;
		if (access(p, R_OK) == 0)
			return p;
		free(p);
	}
	char *path = NULL;
	if (d)
		cq_error_free(cq_debuginfod_find(d, build_id, &path));
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

static struct cq_error *name_module(struct cq_store *store, int64_t id, const char *path,
                                    int64_t *named)
{
	struct cq_module mod;
	struct cq_error *err = cq_module_open_elf(path, &mod);
	if (err)
		return err;
	struct namer n = {NULL};
	if (!(err = cq_symbolizer_create_modules(&mod, 1, NULL, NULL, &n.sym))) {
		err = cq_store_name_frames(store, id, name_frame, &n, named);
		cq_symbolizer_destroy(n.sym);
	}
	cq_module_destroy(&mod);
	return err;
}

struct cq_error *cq_resymbolize(struct cq_store *store, const struct cq_resymbolize_options *o,
                                struct cq_resymbolize_result *r)
{
	memset(r, 0, sizeof(*r));
	struct todo t = {0};
	struct cq_error *err = cq_store_unnamed_modules(store, add_module, &t);
	if (!err)
		err = t.err;
	struct cq_debuginfod *d = NULL;
	const char *env = getenv("DEBUGINFOD_URLS");
	bool servers =
	    (o->debuginfod_urls && *o->debuginfod_urls) || (!o->debuginfod_urls && env && *env);
	if (!err && t.n && servers)
		err = cq_debuginfod_open(o->debuginfod_urls, &d);
	r->modules = (int64_t)t.n;
	for (size_t i = 0; i < t.n && !err; i++) {
		char *path = find_debuginfo(o, d, t.build_ids[i]);
		if (!path)
			continue;
		r->found++;
		int64_t named = 0;
		struct cq_error *e = name_module(store, t.ids[i], path, &named);
		free(path);
		if (e == &cq_error_nomem || (e && e->code == CQ_ERR_DB))
			err = e;
		else
			cq_error_free(e); /* a bad debuginfo file names nothing */
		r->frames += named;
	}
	cq_debuginfod_close(d);
	for (size_t i = 0; i < t.n; i++)
		free(t.build_ids[i]);
	free(t.build_ids);
	free(t.ids);
	if (!err && r->frames)
		err = cq_store_rebucket(store, o->rules, o->signature_frames, &r->rebucket);
	return err;
}
