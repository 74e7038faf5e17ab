/*
 * runtimes.c - the table of async runtimes and the driver that runs them
 * (see runtime.h).
 *
 * Adding a runtime: one file in unwind/async/ defining its
 * `const struct cq_async_runtime`, and one line in the table below.
 *
 * The scan: every writable segment the core holds is read once, in chunks
 * of SCAN_CHUNK bytes that are read ahead before and dropped from our
 * resident set after they are handed to every scanning runtime, so a large
 * heap costs neither its size in memory nor a page fault per page.
 */
#include "unwind/async/runtime.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "libcore/analysis/stacktrace.h"
#include "libcore/base/clock.h"
#include "libcore/model/core.h"
#include "libcore/model/memory.h"

extern const struct cq_async_runtime cq_async_folly;
extern const struct cq_async_runtime cq_async_rust_dyn;

/* Every runtime, in the order their suspended stacks are listed. */
static const struct cq_async_runtime *const runtimes[] = {
    &cq_async_folly,
    &cq_async_rust_dyn,
};
#define NRUNTIMES (sizeof(runtimes) / sizeof(runtimes[0]))

#define SCAN_CHUNK (8u << 20)

struct cq_async_states {
	void *state[NRUNTIMES];
	struct cq_async_needs needs[NRUNTIMES];
};

struct cq_error *cq_async_detect(const struct cq_async_ctx *ctx, struct cq_async_states **out,
                                 bool *wants_native)
{
	*wants_native = false;
	struct cq_async_states *s = calloc(1, sizeof(*s));
	if (!s)
		return &cq_error_nomem;
	for (size_t i = 0; i < NRUNTIMES; i++) {
		struct cq_error *err = runtimes[i]->detect(ctx, &s->state[i], &s->needs[i]);
		if (err) {
			cq_async_states_free(s);
			return err;
		}
		*wants_native |= s->state[i] && s->needs[i].native_frames;
	}
	*out = s;
	return NULL;
}

void cq_async_states_free(struct cq_async_states *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < NRUNTIMES; i++)
		if (s->state[i])
			runtimes[i]->destroy(s->state[i]);
	free(s);
}

/* One pass over the core's writable memory, every scanning runtime fed. */
static void scan_memory(struct cq_async_ctx *ctx, struct cq_async_states *s)
{
	size_t nscan = 0;
	for (size_t i = 0; i < NRUNTIMES; i++)
		nscan += s->state[i] && s->needs[i].scan;
	if (nscan == 0)
		return;
	size_t nseg;
	const struct cq_mem_segment *seg = cq_mem_core_segments(&ctx->core->mem, &nseg);
	double start = cq_clock_seconds();
	for (size_t g = 0; g < nseg; g++) {
		const struct cq_mem_segment *sg = &seg[g];
		if (!(sg->flags & CQ_MEM_WRITE) || !sg->data || sg->data_len < 8)
			continue;
		uint64_t end = sg->start + (sg->data_len & ~(uint64_t)7);
		for (uint64_t at = sg->start; at < end;) {
			uint64_t begin = at > sg->start ? at - 8 : at;
			uint64_t stop = end - at > SCAN_CHUNK ? at + SCAN_CHUNK : end;
			struct cq_async_chunk c = {.segment = sg,
			                           .addr = begin,
			                           .data = sg->data + (begin - sg->start),
			                           .len = stop - begin,
			                           .overlap = at - begin};
			cq_core_advise(ctx->core, c.data, c.len, MADV_WILLNEED);
			for (size_t i = 0; i < NRUNTIMES; i++)
				if (s->state[i] && s->needs[i].scan)
					runtimes[i]->scan(s->state[i], ctx, &c);
			cq_core_advise(ctx->core, c.data, c.len, MADV_DONTNEED);
			at = stop;
		}
	}
	ctx->scan_seconds = cq_clock_seconds() - start;
	cq_core_trim(ctx->core);
}

struct cq_error *cq_async_stacks(struct cq_async_ctx *ctx, struct cq_async_states *s)
{
	struct cq_error *err = NULL;
	for (size_t i = 0; i < NRUNTIMES && !err; i++)
		if (s->state[i] && runtimes[i]->threads)
			err = runtimes[i]->threads(s->state[i], ctx);
	if (!err)
		scan_memory(ctx, s);
	for (size_t i = 0; i < NRUNTIMES && !err; i++)
		if (s->state[i] && runtimes[i]->decode)
			err = runtimes[i]->decode(s->state[i], ctx);
	return err;
}

struct cq_error *cq_async_add_suspended(const struct cq_async_ctx *ctx,
                                        struct cq_suspended_stack *s, bool *added)
{
	struct cq_stacks *st = ctx->stacks;
	*added = false;
	if (st->nsuspended >= ctx->options->max_suspended) {
		free(s->frames);
		return NULL;
	}
	struct cq_suspended_stack *a = realloc(st->suspended, (st->nsuspended + 1) * sizeof(*a));
	if (!a) {
		free(s->frames);
		return &cq_error_nomem;
	}
	st->suspended = a;
	st->suspended[st->nsuspended++] = *s;
	*added = true;
	return NULL;
}
