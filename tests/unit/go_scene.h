/*
 * go_scene.h - a synthetic Go process for the go runtime (unwind/async/go.c)
 * without a core or DWARF: memory at GS_BASE, the runtime's symbols at
 * fixed addresses in it, and the layouts handed over as the cached blob
 * go/layout (its fields in go.c's layout_fields order), so that
 * test_go_runtime.c and fuzz_go_runtime.c drive the runtime through
 * struct cq_unwind_target alone.  Code is [GS_CODE, GS_CODE + 0x10000).
 */
#ifndef CQ_TEST_GO_SCENE_H
#define CQ_TEST_GO_SCENE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/arch.h"
#include "unwind/async/runtime.h"

#define GS_BASE 0x10000000ull
#define GS_SIZE 0x10000u
#define GS_CODE 0x400000ull
#define GS_TID  100
#define GS_SCAN 0x1000

/* Where the scene's symbols are. */
#define GS_ALLGS   (GS_BASE + 0x0)    /* slice {ptr, len, cap} */
#define GS_ALLM    (GS_BASE + 0x20)   /* *m */
#define GS_REASONS (GS_BASE + 0x40)   /* [4]string */
#define GS_STATUS  (GS_BASE + 0x80)   /* [8]string */
#define GS_STRINGS (GS_BASE + 0x100)  /* their bytes */
#define GS_GS      (GS_BASE + 0x1000) /* gs, 0x100 apart */
#define GS_MS      (GS_BASE + 0x4000) /* ms, 0x100 apart */
#define GS_SUDOG   (GS_BASE + 0x6000)
#define GS_STACKS  (GS_BASE + 0x8000) /* goroutine stacks, 0x800 apart */
#define GS_G0      (GS_GS + 0x300)    /* the M's g0 (gs_fatal): its stack below */
#define GS_G0_LO   (GS_STACKS + 0x1000)
#define GS_G0_HI   (GS_STACKS + 0x1800)
#define GS_FATAL   (GS_CODE + 0x500) /* runtime.fatal.func1 */

/* The scene's layout: runtime.g 0x100 bytes, offsets below. */
enum {
	G_STACK_LO = 0x0,
	G_STACK_HI = 0x8,
	G_M = 0x30,
	G_SCHED = 0x38, /* gobuf: sp +0, pc +8, bp +0x30 */
	G_SYSCALLSP = 0x70,
	G_SYSCALLPC = 0x78,
	G_STATUS = 0x90, /* 4 bytes */
	G_GOID = 0x98,
	G_WAITSINCE = 0xa0,
	G_REASON = 0xb0, /* 1 byte */
	G_WAITING = 0xb8,
	G_GOPC = 0xc0,
	M_G0 = 0x0,
	M_PROCID = 0x48,
	M_GSIGNAL = 0x50,
	M_ALLLINK = 0x80,
	M_CURG = 0xc0,
	SUDOG_G = 0x0,
	SUDOG_NEXT = 0x8,
	SUDOG_PREV = 0x10,
	SUDOG_ELEM = 0x18,
	SUDOG_WAITLINK = 0x40,
	SUDOG_PARENT = 0x48,
	SUDOG_C = 0x50,
};

/* The layout blob's fields, in go.c's layout_fields order. */
static inline size_t gs_layout_blob(uint8_t *out, size_t cap)
{
	const uint64_t f[] = {
	    0x100,
	    G_STACK_LO,
	    G_STACK_HI,
	    G_SCHED,
	    G_STATUS,
	    G_GOID,
	    G_WAITSINCE,
	    G_REASON,
	    G_WAITING,
	    G_GOPC,
	    G_M,
	    G_SYSCALLSP,
	    G_SYSCALLPC,
	    0 /* sp */,
	    8 /* pc */,
	    0x30 /* bp */,
	    0x100 /* m size */,
	    M_PROCID,
	    M_CURG,
	    M_G0,
	    M_GSIGNAL,
	    M_ALLLINK,
	    SUDOG_G,
	    SUDOG_NEXT,
	    SUDOG_PREV,
	    SUDOG_ELEM,
	    SUDOG_C,
	    SUDOG_WAITLINK,
	    SUDOG_PARENT,
	    0 /* semaRoot.treap */,
	    0 /* semTabSize */,
	    4 /* status size */,
	    8 /* goid size */,
	    1 /* reason size */,
	    1 /* flags: sudog tree */,
	    0 /* _Gidle */,
	    2 /* _Grunning */,
	    3 /* _Gsyscall */,
	    4 /* _Gwaiting */,
	    6 /* _Gdead */,
	    GS_SCAN,
	    0x3f /* constants */,
	    0,
	    0,
	    0,
	    0,
	    0,
	    0,
	    0,
	    0,
	    0, /* the panic layout: not given (flag off) */
	};
	size_t n = sizeof(f) / sizeof(f[0]);
	if (cap < 8 * (n + 2))
		return 0;
	const uint64_t head[2] = {0x6c6f677165726f63ull, n};
	memcpy(out, head, 16);
	memcpy(out + 16, f, 8 * n);
	return 8 * (n + 2);
}

struct gs_scene {
	uint8_t mem[GS_SIZE];
	uint8_t blob[1024];
	size_t blob_len;
	bool rejected; /* cache_reject was called */
	struct cq_regs regs;
	struct cq_target_thread thread;
	struct cq_target_module module;
	struct cq_unwind_target target;
};

static bool gs_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct gs_scene *s = ctx;
	if (addr < GS_BASE || addr - GS_BASE > GS_SIZE || GS_SIZE - (addr - GS_BASE) < len)
		return false;
	memcpy(buf, s->mem + (addr - GS_BASE), len);
	return true;
}

static bool gs_is_code(void *ctx, uint64_t addr)
{
	(void)ctx;
	return addr >= GS_CODE && addr < GS_CODE + 0x10000;
}

static bool gs_stack_bounds(void *ctx, uint64_t sp, uint64_t *lo, uint64_t *hi)
{
	(void)ctx;
	if (sp < GS_BASE || sp >= GS_BASE + GS_SIZE)
		return false;
	*lo = GS_BASE;
	*hi = GS_BASE + GS_SIZE;
	return true;
}

static const struct cq_cfi_table *gs_cfi_at(void *ctx, uint64_t pc, uint64_t *bias)
{
	(void)ctx, (void)pc, (void)bias;
	return NULL;
}

static size_t gs_find_symbols(void *ctx, size_t m, struct cq_target_symbol *q, size_t n)
{
	(void)ctx, (void)m;
	static const struct {
		const char *name;
		uint64_t addr, size;
	} syms[] = {
	    {"runtime.allgs", GS_ALLGS, 24},
	    {"runtime.allm", GS_ALLM, 8},
	    {"runtime.waitReasonStrings", GS_REASONS, 4 * 16},
	    {"runtime.gStatusStrings", GS_STATUS, 8 * 16},
	    {"runtime.fatal.func1", GS_FATAL, 0x40},
	};
	size_t found = 0;
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < sizeof(syms) / sizeof(syms[0]) && !q[i].found; k++)
			if (strcmp(q[i].name, syms[k].name) == 0) {
				q[i].found = true;
				q[i].addr = syms[k].addr;
				q[i].size = syms[k].size;
			}
		found += q[i].found;
	}
	return found;
}

static struct cq_error *gs_add_frames(void *ctx, struct cq_frame_list *fl,
                                      const struct cq_unwind_frame *uf, int kind)
{
	(void)ctx;
	if (fl->n == fl->cap) {
		size_t cap = fl->cap ? 2 * fl->cap : 8;
		struct cq_stack_frame *p = realloc(fl->frames, cap * sizeof(*p));
		if (!p)
			return &cq_error_nomem;
		fl->frames = p;
		fl->cap = cap;
	}
	fl->frames[fl->n++] = (struct cq_stack_frame){.pc = uf->pc, .kind = kind};
	return NULL;
}

static uint8_t *gs_cache_get(void *ctx, size_t m, const struct cq_target_blob *blob, size_t *len)
{
	(void)m;
	struct gs_scene *s = ctx;
	if (strcmp(blob->runtime, "go") != 0 || s->blob_len == 0)
		return NULL;
	uint8_t *p = malloc(s->blob_len);
	if (p) {
		memcpy(p, s->blob, s->blob_len);
		*len = s->blob_len;
	}
	return p;
}

static void gs_cache_reject(void *ctx)
{
	((struct gs_scene *)ctx)->rejected = true;
}

static const struct cq_unwind_target_ops gs_ops = {
    .read = gs_read,
    .cfi_at = gs_cfi_at,
    .is_code = gs_is_code,
    .stack_bounds = gs_stack_bounds,
    .find_symbols = gs_find_symbols,
    .add_frames = gs_add_frames,
    .cache_get = gs_cache_get,
    .cache_reject = gs_cache_reject,
};

static inline void gs_put(struct gs_scene *s, uint64_t addr, uint64_t v, unsigned size)
{
	if (addr >= GS_BASE && addr - GS_BASE + size <= GS_SIZE)
		memcpy(s->mem + (addr - GS_BASE), &v, size);
}

/* A Go string at slot (its header) with its bytes at GS_STRINGS + off. */
static inline void gs_string(struct gs_scene *s, uint64_t slot, uint64_t off, const char *str)
{
	memcpy(s->mem + (GS_STRINGS - GS_BASE) + off, str, strlen(str));
	gs_put(s, slot, GS_STRINGS + off, 8);
	gs_put(s, slot + 8, strlen(str), 8);
}

/* The target over s (one module, one thread) with its blob as it stands. */
static inline void gs_target(struct gs_scene *s)
{
	s->module = (struct cq_target_module){
	    .name = "go_prog", .start = GS_CODE, .end = GS_CODE + 0x10000, .found = true};
	cq_regs_set(&s->regs, cq_arch_x86_64.pc_reg, GS_CODE + 0x10);
	cq_regs_set(&s->regs, cq_arch_x86_64.sp_reg, GS_STACKS + 0x7f00);
	s->thread = (struct cq_target_thread){.tid = GS_TID, .regs = &s->regs};
	s->target = (struct cq_unwind_target){.ops = &gs_ops,
	                                      .ctx = s,
	                                      .arch = &cq_arch_x86_64,
	                                      .modules = &s->module,
	                                      .nmodules = 1,
	                                      .threads = &s->thread,
	                                      .nthreads = 1};
}

/* Three gs: 3 waits in chan receive (a sudog on channel 0x10005000), 2 is dead, 7 sleeps. */
static inline void gs_example(struct gs_scene *s)
{
	memset(s, 0, sizeof(*s));
	s->blob_len = gs_layout_blob(s->blob, sizeof(s->blob));
	static const char *const reasons[] = {"", "sleep", "chan receive", "select"};
	static const char *const statuses[] = {"idle",    "runnable", "running", "syscall",
	                                       "waiting", "moribund", "dead",    "enqueue"};
	uint64_t off = 0;
	for (int i = 0; i < 4; i++, off += 16)
		gs_string(s, GS_REASONS + 16 * (uint64_t)i, off, reasons[i]);
	for (int i = 0; i < 8; i++, off += 16)
		gs_string(s, GS_STATUS + 16 * (uint64_t)i, off, statuses[i]);
	uint64_t arr = GS_BASE + 0x200;
	gs_put(s, GS_ALLGS, arr, 8);
	gs_put(s, GS_ALLGS + 8, 3, 8);
	gs_put(s, GS_ALLGS + 16, 3, 8);
	for (int i = 0; i < 3; i++)
		gs_put(s, arr + 8 * (uint64_t)i, GS_GS + 0x100 * (uint64_t)i, 8);
	/* g 3: waiting, chan receive, on a sudog whose c is the channel */
	uint64_t g = GS_GS, stack = GS_STACKS;
	gs_put(s, g + G_GOID, 3, 8);
	gs_put(s, g + G_STATUS, 4, 4);
	gs_put(s, g + G_REASON, 2, 1);
	gs_put(s, g + G_WAITING, GS_SUDOG, 8);
	gs_put(s, GS_SUDOG + SUDOG_C, 0x10005000, 8);
	gs_put(s, g + G_GOPC, GS_CODE + 0x300, 8);
	gs_put(s, g + G_SCHED + 0, stack + 0x100, 8);    /* sp */
	gs_put(s, g + G_SCHED + 8, GS_CODE + 0x100, 8);  /* pc */
	gs_put(s, g + G_SCHED + 0x30, stack + 0x100, 8); /* bp: a frame record */
	gs_put(s, stack + 0x100, 0, 8);                  /* the caller's bp: none */
	gs_put(s, stack + 0x108, GS_CODE + 0x200, 8);    /* the return address */
	/* g 2: dead */
	gs_put(s, GS_GS + 0x100 + G_GOID, 2, 8);
	gs_put(s, GS_GS + 0x100 + G_STATUS, 6, 4);
	/* g 7: waiting (being scanned by the GC), sleep */
	g = GS_GS + 0x200;
	gs_put(s, g + G_GOID, 7, 8);
	gs_put(s, g + G_STATUS, 4 | GS_SCAN, 4);
	gs_put(s, g + G_REASON, 1, 1);
	gs_put(s, g + G_SCHED + 0, GS_STACKS + 0x900, 8);
	gs_put(s, g + G_SCHED + 8, GS_CODE + 0x400, 8);
	/* one M on the thread, running nothing */
	gs_put(s, GS_ALLM, GS_MS, 8);
	gs_put(s, GS_MS + M_PROCID, GS_TID, 8);
	gs_target(s);
}

/*
 * The M's g0, its stack holding the closure runtime.fatal builds to print
 * message (the closure's code address, then the string) at off from the
 * stack's low end, as a fatal error leaves it.
 */
static inline void gs_fatal(struct gs_scene *s, const char *message, uint64_t off)
{
	gs_put(s, GS_MS + M_G0, GS_G0, 8);
	gs_put(s, GS_G0 + G_STACK_LO, GS_G0_LO, 8);
	gs_put(s, GS_G0 + G_STACK_HI, GS_G0_HI, 8);
	gs_put(s, GS_G0_LO + off, GS_FATAL, 8);
	gs_string(s, GS_G0_LO + off + 8, 0x300, message);
}

#endif
