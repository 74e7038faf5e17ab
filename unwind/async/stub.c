/*
 * stub.c - a test-only async runtime, "stub", built into the test binaries
 * alone (CQ_TEST_RUNTIMES: the ASan build of `make test`).  It proves the
 * runtime seam: it is this one file plus one line in runtime_list.h, and its
 * chains reach every output (stack text, JSON, folded, flame, the store)
 * without anything above unwind/async/ knowing its name.
 *
 * Its "ABI" is the corpus program stub_chain.c's global record:
 *   struct { uint64_t magic; uint64_t n; uint64_t pcs[8]; } coreq_stub_chain;
 * magic is STUB_MAGIC once the program filled it; pcs[0..n) are return
 * addresses, innermost first.  It reports that one suspended chain.
 */
#ifdef CQ_TEST_RUNTIMES

#include <stdlib.h>

#include "libcore/base/memory.h"
#include "unwind/async/runtime.h"

#define STUB_MAGIC   0x636f726571737562ull /* "coreqsub" */
#define STUB_MAX_PCS 8

struct stub {
	uint64_t record;
	uint64_t pcs[STUB_MAX_PCS];
	uint64_t n;
	size_t reported;
};

static struct cq_error *stub_detect(const struct cq_async_ctx *ctx, void **state,
                                    struct cq_async_needs *needs)
{
	(void)needs;
	const struct cq_unwind_target *t = ctx->target;
	*state = NULL;
	struct cq_target_symbol q = {.name = "coreq_stub_chain"};
	for (size_t m = 0; t->ops->find_symbols && m < t->nmodules && !q.found; m++)
		t->ops->find_symbols(t->ctx, m, &q, 1);
	uint64_t magic, n;
	if (!q.found || !cq_mem_read_u64(t->mem, q.addr, &magic) || magic != STUB_MAGIC ||
	    !cq_mem_read_u64(t->mem, q.addr + 8, &n) || n == 0 || n > STUB_MAX_PCS)
		return NULL;
	struct stub *s = calloc(1, sizeof(*s));
	if (!s)
		return &cq_error_nomem;
	s->record = q.addr;
	for (; s->n < n && cq_mem_read_u64(t->mem, q.addr + 16 + 8 * s->n, &s->pcs[s->n]); s->n++)
		;
	*state = s;
	return NULL;
}

static struct cq_error *stub_decode(void *state, const struct cq_async_ctx *ctx)
{
	struct stub *s = state;
	const struct cq_unwind_target *t = ctx->target;
	struct cq_frame_list fl = {0};
	struct cq_error *err = NULL;
	for (size_t i = 0; i < s->n && !err; i++) {
		struct cq_unwind_frame uf = {
		    .pc = s->pcs[i], .is_return_address = true, .trust = CQ_TRUST_ASYNC};
		err = t->ops->add_frames(t->ctx, &fl, &uf, CQ_FRAME_ASYNC);
	}
	struct cq_suspended_stack ss = {
	    .kind = "stub", .leaf = s->record, .frames = fl.frames, .nframes = fl.n};
	bool added = false;
	if (err)
		free(fl.frames);
	else
		err = cq_async_add_suspended(ctx, &ss, &added);
	s->reported += added;
	return err;
}

static void stub_report(const void *state, const struct cq_async_ctx *ctx, struct cq_stats *st,
                        struct cq_stats *warnings)
{
	(void)ctx, (void)warnings;
	const struct stub *s = state;
	cq_stats_bool(st, "stub", s != NULL);
	cq_stats_uint(st, "stub_chains", s ? s->reported : 0);
}

static void stub_destroy(void *state)
{
	free(state);
}

static const char *const stub_kinds[] = {"stub", NULL};

const struct cq_async_runtime cq_async_stub = {
    .name = "stub",
    .kinds = stub_kinds,
    .listing = CQ_ASYNC_LIST_CHAINS,
    .heading = "Suspended stub chains",
    .noun = "chain",
    .leaf = "record",
    .detect = stub_detect,
    .decode = stub_decode,
    .report = stub_report,
    .destroy = stub_destroy,
};

#endif
