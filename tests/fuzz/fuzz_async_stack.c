/*
 * fuzz_async_stack.c - libFuzzer target for the folly async-stack walker
 * (unwind/async/folly_walk.c) and the suspended-frame cookie scan
 * (unwind/async/word_scan.c) on a synthetic address space made from the input.
 *
 * Input layout (all little-endian; a short input is zero-padded):
 *
 *   0   nthreads (1 + b % 3), max_steps (b % 128), stack mapping size
 *       (256 << (b % 5)), flags (bit 0: a cookie is known), leaf offset (u16),
 *       scan start misalignment (b % 8), spare, cookie (u64)
 *   16  3 threads of 40 bytes: nframes (b % 9), end (b % 6), flags (bit 0:
 *       has a root), spare, root offset (u16), innermost sp offset (u16),
 *       then 8 native frames of 4 bytes: sp delta in words from the previous
 *       frame (int8), fp offset in words from sp (int8, -128: no fp), pc
 *       (0x400000 + u16)
 *   136 memory, readable at MEM_BASE: every pointer in it may point back
 *       into it (cycles, misaligned, unreadable all reachable)
 *
 * "Offsets" are from MEM_BASE.  Stacks are the mappings of the chosen size
 * tiling [MEM_BASE, MEM_BASE + 64 KiB), so native frames and roots can sit on
 * several stacks.  Every thread is merged; the header's leaf and, when a
 * cookie is known, the first cookie hits of the scan are walked as
 * suspended chains.  The documented
 * invariants are checked and any violation aborts: at most max_steps steps,
 * a valid end reason, native steps naming a real frame, async steps a non-zero
 * pc, a thread without a (readable) root getting its native frames unchanged,
 * a lone leaf ending detached, the scan agreeing with a plain word loop, and
 * every walk being deterministic.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/arch.h"
#include "unwind/async/word_scan.h"
#include "unwind/async/folly_walk.h"

#define MEM_BASE     0x10000000ull
#define STACK_SPAN   0x10000ull
#define CODE_BASE    0x400000ull
#define HDR_SIZE     16
#define THREAD_SIZE  40
#define MAX_THREADS  3
#define MAX_NFRAMES  8
#define INPUT_HEADER (HDR_SIZE + MAX_THREADS * THREAD_SIZE)
#define MAX_LEAVES   8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct space {
	const uint8_t *mem;
	size_t len;
	uint64_t stack_size;
};

static bool sp_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct space *s = ctx;
	if (addr < MEM_BASE || addr - MEM_BASE > s->len || len > s->len - (addr - MEM_BASE))
		return false;
	memcpy(buf, s->mem + (addr - MEM_BASE), len);
	return true;
}

static const struct cq_cfi_table *sp_cfi_at(void *ctx, uint64_t pc, uint64_t *bias)
{
	(void)ctx, (void)pc, (void)bias;
	return NULL;
}

static bool sp_is_code(void *ctx, uint64_t addr)
{
	(void)ctx;
	return addr >= CODE_BASE && addr < CODE_BASE + 0x10000;
}

static bool sp_stack_bounds(void *ctx, uint64_t sp, uint64_t *lo, uint64_t *hi)
{
	const struct space *s = ctx;
	if (sp < MEM_BASE || sp >= MEM_BASE + STACK_SPAN)
		return false;
	*lo = MEM_BASE + ((sp - MEM_BASE) & ~(s->stack_size - 1));
	*hi = *lo + s->stack_size;
	return true;
}

static const struct cq_unwind_target_ops sp_ops = {
    .read = sp_read,
    .cfi_at = sp_cfi_at,
    .is_code = sp_is_code,
    .stack_bounds = sp_stack_bounds,
};

static uint64_t get(const uint8_t *b, size_t n)
{
	uint64_t v = 0;
	for (size_t i = n; i-- > 0;)
		v = v << 8 | b[i];
	return v;
}

/* The walker's view of the input: its threads, their frames, the memory. */
struct world {
	struct space space;
	struct cq_unwind_target tg;
	struct cq_folly_thread threads[MAX_THREADS];
	struct cq_unwind_frame *frames[MAX_THREADS];
	size_t nthreads, max_steps;
	uint64_t cookie, leaf;
};

static void build(struct world *w, const uint8_t *hdr, const uint8_t *mem, size_t memlen)
{
	w->space = (struct space){.mem = mem, .len = memlen, .stack_size = 256ull << (hdr[2] % 5)};
	w->tg =
	    (struct cq_unwind_target){.ops = &sp_ops, .ctx = &w->space, .arch = &cq_arch_x86_64};
	w->nthreads = 1 + hdr[0] % MAX_THREADS;
	w->max_steps = hdr[1] % 128;
	w->cookie = hdr[3] & 1 ? get(hdr + 8, 8) : 0;
	w->leaf = MEM_BASE + get(hdr + 4, 2);
	for (size_t t = 0; t < w->nthreads; t++) {
		const uint8_t *th = hdr + HDR_SIZE + t * THREAD_SIZE;
		size_t n = th[0] % (MAX_NFRAMES + 1);
		/* Exactly n frames, so ASan sees any read past them. */
		struct cq_unwind_frame *f = malloc((n ? n : 1) * sizeof(*f));
		if (!f)
			abort();
		uint64_t sp = MEM_BASE + get(th + 6, 2);
		for (size_t i = 0; i < n; i++) {
			const uint8_t *d = th + 8 + 4 * i;
			if (i > 0)
				sp += (uint64_t)(int64_t)(int8_t)d[0] * 8;
			f[i] =
			    (struct cq_unwind_frame){.pc = CODE_BASE + get(d + 2, 2),
			                             .sp = sp,
			                             .fp = sp + (uint64_t)(int64_t)(int8_t)d[1] * 8,
			                             .has_fp = d[1] != 0x80,
			                             .is_return_address = i > 0,
			                             .trust = i ? CQ_TRUST_CFI : CQ_TRUST_CONTEXT};
		}
		w->frames[t] = f;
		w->threads[t] =
		    (struct cq_folly_thread){.frames = f,
		                             .nframes = n,
		                             .end = (enum cq_unwind_end)(th[1] % 6),
		                             .root = th[2] & 1 ? MEM_BASE + get(th + 4, 2) : 0};
	}
}

/* The invariants every walk keeps, whatever the memory holds. */
static void check_out(const struct world *w, const struct cq_folly_out *o)
{
	if (o->nsteps > o->max_steps)
		abort();
	if (o->end > CQ_END_ASYNC_DETACHED)
		abort();
	for (size_t i = 0; i < o->nsteps; i++) {
		const struct cq_folly_step *s = &o->steps[i];
		if (s->kind == CQ_FOLLY_STEP_NATIVE) {
			if (s->thread >= w->nthreads || s->frame >= w->threads[s->thread].nframes)
				abort();
		} else if (s->kind != CQ_FOLLY_STEP_ASYNC || s->pc == 0) {
			abort();
		}
	}
}

static bool same_out(const struct cq_folly_out *a, const struct cq_folly_out *b)
{
	if (a->nsteps != b->nsteps || a->end != b->end)
		return false;
	/* Field by field: the walker need not write padding. */
	for (size_t i = 0; i < a->nsteps; i++)
		if (a->steps[i].kind != b->steps[i].kind ||
		    a->steps[i].thread != b->steps[i].thread ||
		    a->steps[i].frame != b->steps[i].frame || a->steps[i].pc != b->steps[i].pc)
			return false;
	return true;
}

/* Joins by function too: the functions are 256-byte blocks of code. */
static enum cq_folly_same same_block(void *ctx, uint64_t native_pc, bool is_ra, uint64_t ip)
{
	(void)ctx, (void)is_ra;
	return native_pc >> 8 == ip >> 8 ? CQ_FOLLY_SAME_YES : CQ_FOLLY_SAME_NO;
}

static struct cq_folly_out new_out(size_t max_steps)
{
	/* Exactly max_steps entries, so ASan sees any write past them. */
	struct cq_folly_out o = {.steps = malloc((max_steps ? max_steps : 1) * sizeof(*o.steps)),
	                         .max_steps = max_steps,
	                         .same_function = same_block};
	if (!o.steps)
		abort();
	memset(o.steps, 0, (max_steps ? max_steps : 1) * sizeof(*o.steps));
	return o;
}

static void merge(const struct world *w, size_t t)
{
	struct cq_folly_out o = new_out(w->max_steps), again = new_out(w->max_steps);
	cq_folly_merge(&w->tg, w->threads, w->nthreads, t, w->cookie, &o);
	check_out(w, &o);
	cq_folly_merge(&w->tg, w->threads, w->nthreads, t, w->cookie, &again);
	if (!same_out(&o, &again))
		abort();

	/* No root, or one that cannot be read: the native frames, unchanged. */
	const struct cq_folly_thread *th = &w->threads[t];
	uint8_t buf[CQ_FOLLY_ROOT_SIZE];
	if (th->root == 0 || th->root & 7 || !sp_read(w->tg.ctx, th->root, buf, sizeof(buf))) {
		size_t n = th->nframes < w->max_steps ? th->nframes : w->max_steps;
		if (o.nsteps != n ||
		    o.end != (th->nframes > w->max_steps ? CQ_END_MAX_FRAMES : th->end))
			abort();
		for (size_t i = 0; i < n; i++)
			if (o.steps[i].kind != CQ_FOLLY_STEP_NATIVE || o.steps[i].thread != t ||
			    o.steps[i].frame != i)
				abort();
	}
	free(o.steps);
	free(again.steps);
}

static void walk_suspended(const struct world *w, uint64_t leaf)
{
	struct cq_folly_out o = new_out(w->max_steps), again = new_out(w->max_steps);
	cq_folly_walk_suspended(&w->tg, w->threads, w->nthreads, leaf, w->cookie, &o);
	check_out(w, &o);
	cq_folly_walk_suspended(&w->tg, w->threads, w->nthreads, leaf, w->cookie, &again);
	if (!same_out(&o, &again))
		abort();

	uint8_t b[CQ_FOLLY_FRAME_SIZE];
	if (leaf == 0 || leaf & 7 || !sp_read(w->tg.ctx, leaf, b, sizeof(b))) {
		/* An unreadable leaf: nothing, bad memory. */
		if (o.nsteps != 0 || o.end != CQ_END_BAD_MEMORY)
			abort();
	} else {
		uint64_t parent = get(b, 8), ip = get(b + 8, 8), root = get(b + 16, 8);
		/* The leaf's own instructionPointer comes first. */
		if (ip && w->max_steps && (o.nsteps == 0 || o.steps[0].pc != ip))
			abort();
		/* A lone leaf whose stackRoot is no root (0 or the cookie) is detached. */
		if (!parent && (root == 0 || (w->cookie && root == w->cookie))) {
			size_t want = ip != 0 && w->max_steps > 0;
			enum cq_unwind_end end =
			    ip && !w->max_steps ? CQ_END_MAX_FRAMES : CQ_END_ASYNC_DETACHED;
			if (o.nsteps != want || o.end != end)
				abort();
		}
	}
	free(o.steps);
	free(again.steps);
}

/* The cookie scan against a plain word loop; returns how many hits were kept. */
static size_t scan(const struct world *w, uint64_t start, size_t skip, uint64_t *hits)
{
	const uint8_t *mem = w->space.mem + skip;
	uint64_t len = w->space.len - skip;
	size_t n = cq_word_scan(mem, start, len, w->cookie, hits, MAX_LEAVES);
	size_t want = 0;
	for (uint64_t off = 0; off + 8 <= len; off++) {
		if ((start + off) & 7 || get(mem + off, 8) != w->cookie)
			continue;
		if (want < MAX_LEAVES && hits[want] != start + off)
			abort();
		want++;
	}
	if (n != want)
		abort();
	return n < MAX_LEAVES ? n : MAX_LEAVES;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t hdr[INPUT_HEADER] = {0};
	memcpy(hdr, data, size < INPUT_HEADER ? size : INPUT_HEADER);
	static const uint8_t none[1];
	const uint8_t *mem = size > INPUT_HEADER ? data + INPUT_HEADER : none;
	size_t memlen = size > INPUT_HEADER ? size - INPUT_HEADER : 0;

	struct world w;
	build(&w, hdr, mem, memlen);
	for (size_t t = 0; t < w.nthreads; t++)
		merge(&w, t);
	walk_suspended(&w, w.leaf);

	/* The scan as libcore runs it: each hit, less 16, is a candidate leaf. */
	uint64_t hits[MAX_LEAVES];
	size_t skip = memlen ? hdr[6] % 8 % memlen : 0;
	size_t n = scan(&w, MEM_BASE + skip, skip, hits);
	for (size_t i = 0; i < n && w.cookie; i++)
		walk_suspended(&w, hits[i] - 16);
	for (size_t t = 0; t < w.nthreads; t++)
		free(w.frames[t]);
	return 0;
}
