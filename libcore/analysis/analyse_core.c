/*
 * analyse_core.c - open a core and make its stacks in one call (see
 * analyse_core.h).
 */
#include "libcore/analysis/analyse_core.h"

#include <assert.h>
#include <string.h>

#include "libcore/analysis/scan_probe.h"
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
	const struct cq_analyse_hint *h = arg;
	return cq_cache_reads_heap(h->stacks ? h->stacks->cache : NULL, exe_build_id);
}

static char *cache_scan_note(void *arg, const char *exe_build_id)
{
	const struct cq_analyse_hint *h = arg;
	return cq_cache_scan_note(h->stacks ? h->stacks->cache : NULL, exe_build_id);
}

static size_t head_probe(void *arg, const uint8_t *head, uint64_t len, struct cq_feed_words *out,
                         size_t max)
{
	const struct cq_analyse_hint *h = arg;
	static const struct cq_core_options none;
	return cq_scan_probe(head, len, h->core ? h->core : &none, h->stacks, out, max);
}

void cq_analyse_stream_hint(const struct cq_analyse_hint *h, struct cq_stream_hint *hint)
{
	*hint = (struct cq_stream_hint){cache_reads_heap, (void *)h, cache_scan_note,
	                                h->stacks && h->stacks->async ? head_probe : NULL};
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
