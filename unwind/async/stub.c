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
 *
 * It also proves the seam for a runtime that caches: it declares one blob,
 * "record" (8 bytes: the link-time address of the module's record, 0 when
 * the module has none), stored per module through the target's cache the
 * first time the module's symbols are searched, and read back by later
 * cores of the same files; its warm hook (`coreq cache warm`) stores it
 * ahead of any core.  Its statistics say whether the record came from the
 * cache (stub_cached).
 */
#ifdef CQ_TEST_RUNTIMES

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/memory.h"
#include "unwind/async/runtime.h"

#define STUB_MAGIC   0x636f726571737562ull /* "coreqsub" */
#define STUB_MAX_PCS 8

struct stub {
	uint64_t record;
	uint64_t pcs[STUB_MAX_PCS];
	uint64_t n;
	size_t reported;
	bool cached; /* the record's place came from the cache */
};

/* What it caches per module (see the top comment). */
static const struct cq_target_blob stub_blob = {"stub", "record", 1};
static const struct cq_target_blob *const stub_blobs[] = {&stub_blob, NULL};

/*
 * Module m's record, at its link-time address (0: none): from the cache,
 * else from its symbols (then cached).  *cached when the cache had it.
 */
static uint64_t stub_record(const struct cq_unwind_target *t, size_t m, bool *cached)
{
	*cached = false;
	size_t len = 0;
	uint8_t *blob = t->ops->cache_get ? t->ops->cache_get(t->ctx, m, &stub_blob, &len) : NULL;
	uint64_t link = 0;
	if (blob && len == sizeof(link)) {
		memcpy(&link, blob, sizeof(link));
		free(blob);
		*cached = true;
		return link;
	}
	if (blob) {
		free(blob);
		if (t->ops->cache_reject)
			t->ops->cache_reject(t->ctx); /* damaged: found again and replaced */
	}
	struct cq_target_symbol q = {.name = "coreq_stub_chain"};
	if (t->ops->find_symbols)
		t->ops->find_symbols(t->ctx, m, &q, 1);
	link = q.found && q.addr > t->modules[m].bias ? q.addr - t->modules[m].bias : 0;
	if (t->ops->cache_put)
		t->ops->cache_put(t->ctx, m, &stub_blob, (const uint8_t *)&link, sizeof(link));
	return link;
}

static struct cq_error *stub_detect(const struct cq_async_ctx *ctx, void **state,
                                    struct cq_async_needs *needs)
{
	(void)needs;
	const struct cq_unwind_target *t = ctx->target;
	*state = NULL;
	uint64_t addr = 0, link = 0;
	bool cached = false;
	for (size_t m = 0; m < t->nmodules && !link; m++)
		if (t->modules[m].found && !t->modules[m].is_vdso &&
		    (link = stub_record(t, m, &cached)))
			addr = link + t->modules[m].bias;
	uint64_t magic, n;
	if (!addr || !cq_mem_read_u64(t->mem, addr, &magic) || magic != STUB_MAGIC ||
	    !cq_mem_read_u64(t->mem, addr + 8, &n) || n == 0 || n > STUB_MAX_PCS)
		return NULL;
	struct stub *s = calloc(1, sizeof(*s));
	if (!s)
		return &cq_error_nomem;
	s->record = addr;
	s->cached = cached;
	for (; s->n < n && cq_mem_read_u64(t->mem, addr + 16 + 8 * s->n, &s->pcs[s->n]); s->n++)
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
	cq_stats_bool(st, "stub_cached", s && s->cached);
}

/* `coreq cache warm`: the module's record into the cache ("stub_record", "stub_cached"). */
static struct cq_error *stub_warm(struct cq_async_warm *w)
{
	bool cached;
	uint64_t link = stub_record(w->target, w->module, &cached);
	cq_stats_hex(w->figures, "stub_record", link);
	cq_stats_bool(w->figures, "stub_cached", cached);
	if (link)
		snprintf(w->text, sizeof(w->text), "stub record 0x%llx%s", (unsigned long long)link,
		         cached ? " (cached already)" : "");
	return NULL;
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
    .blobs = stub_blobs,
    .warm = stub_warm,
};

#endif
