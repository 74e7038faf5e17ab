/*
 * analyse_core.c - open a core and make its stacks in one call (see
 * analyse_core.h).
 */
#include "libcore/analysis/analyse_core.h"

#include <assert.h>
#include <string.h>

#include "libcore/analysis/stacktrace.h"
#include "libcore/db/cache.h"
#include "libcore/model/core.h"
#include "libcore/model/stream_image.h"

struct cq_error *cq_analyse_core(const char *path, const struct cq_analyse_options *o,
                                 struct cq_analysed_core *out)
{
	assert(o->stacks);
	memset(out, 0, sizeof(*out));
	struct cq_error *err = cq_core_open(path, o->core, &out->core);
	if (err)
		return err;
	if (o->opened)
		o->opened(o->opened_arg, path, out->core, o->stacks);
	return cq_core_stacks(out->core, o->stacks, &out->stacks);
}

void cq_analysed_core_free(struct cq_analysed_core *a)
{
	cq_stacks_free(a->stacks);
	cq_core_close(a->core);
	a->stacks = NULL;
	a->core = NULL;
}

static bool cache_reads_heap(void *arg, const char *exe_build_id)
{
	return cq_cache_reads_heap(arg, exe_build_id);
}

static char *cache_scan_note(void *arg, const char *exe_build_id)
{
	return cq_cache_scan_note(arg, exe_build_id);
}

void cq_analyse_stream_hint(struct cq_cache *cache, struct cq_stream_hint *hint)
{
	*hint = (struct cq_stream_hint){cache ? cache_reads_heap : NULL, cache,
	                                cache ? cache_scan_note : NULL};
}

void cq_analyse_note_heap_read(struct cq_cache *cache, const struct cq_core *core)
{
	if (!cache || !core)
		return;
	struct cq_source_read rd = cq_source_read(&core->source);
	if (rd.second_pass && rd.exe_build_id && rd.exe_build_id[0])
		cq_cache_put_reads_heap(cache, rd.exe_build_id);
	if (rd.scan_note && rd.exe_build_id)
		cq_cache_put_scan_note(cache, rd.exe_build_id, rd.scan_note);
}
