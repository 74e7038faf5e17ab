/*
 * fuzz_python.c - libFuzzer target for the python runtime
 * (unwind/async/python.c): CPython 3.11's thread states, interpreter frames,
 * code objects, str objects and location tables read from a synthetic
 * address space made from the input, and the frames spliced into threads'
 * native stacks.
 *
 * Input layout (a short input is zero-padded):
 *
 *   0   nthreads (1 + b % 3), max_frames (1 + b % 64), then per thread
 *       (3 threads): its tid's low byte (tid = 100 + b) and a byte whose
 *       bit i says native frame i (of 6) is a _PyEval_EvalFrameDefault call
 *   8   memory, readable at MEM_BASE: _PyRuntime is at MEM_BASE (its
 *       interpreter list at +40, the GIL at +368), _asyncio's TaskType at
 *       MEM_BASE + 0x1800, and every pointer in it may point back into it
 *       (cycles, misaligned, unreadable all reachable)
 *
 * Py_Version says 3.11, so the layout is python_layouts.def's.  The whole
 * memory is one chunk of the scan for asyncio tasks.  Checked: every native
 * frame is kept, in order; every added frame is of kind python with pc 0, a
 * line >= 0, and at most max_frames of them per thread; every task chain is
 * of kind python, 1 to max_frames frames of kind python; the crash message
 * (the crashed thread's handled exception, as a traceback's last line) is a
 * bounded string; two runs give the same stacks, tasks and crash message;
 * the report runs.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/stats.h"
#include "unwind/async/runtime.h"
#include "unwind/target.h"

#define MEM_BASE    0x10000000ull
#define VERSION_AT  0x20000000ull
#define EVAL_LO     0x400000ull
#define OTHER_PC    0x500000ull
#define HDR_SIZE    8
#define MAX_THREADS 3
#define NATIVE      6
#define TASK_TYPE   (MEM_BASE + 0x1800)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

extern const struct cq_async_runtime cq_async_python;

struct space {
	const uint8_t *mem;
	size_t len;
};

static bool sp_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct space *s = ctx;
	static const uint32_t version = 0x030b02f0u;
	if (addr >= VERSION_AT && addr - VERSION_AT + len <= sizeof(version)) {
		memcpy(buf, (const uint8_t *)&version + (addr - VERSION_AT), len);
		return true;
	}
	if (addr < MEM_BASE || addr - MEM_BASE > s->len || len > s->len - (addr - MEM_BASE))
		return false;
	memcpy(buf, s->mem + (addr - MEM_BASE), len);
	return true;
}

static size_t sp_find_symbols(void *ctx, size_t m, struct cq_target_symbol *q, size_t n)
{
	(void)ctx;
	size_t found = 0;
	for (size_t i = 0; i < n; i++) {
		if (m == 1) { /* _asyncio */
			if (!strcmp(q[i].name, "TaskType"))
				q[i] = (struct cq_target_symbol){q[i].name, true, TASK_TYPE, 0x200};
		} else if (!strcmp(q[i].name, "_PyRuntime"))
			q[i] = (struct cq_target_symbol){q[i].name, true, MEM_BASE, 4096};
		else if (!strcmp(q[i].name, "Py_Version"))
			q[i] = (struct cq_target_symbol){q[i].name, true, VERSION_AT, 4};
		else if (!strcmp(q[i].name, "_PyEval_EvalFrameDefault"))
			q[i] = (struct cq_target_symbol){q[i].name, true, EVAL_LO, 0x1000};
		found += q[i].found;
	}
	return found;
}

static const struct cq_unwind_target_ops sp_ops = {.read = sp_read,
                                                   .find_symbols = sp_find_symbols};

/* The longest crash message: a type name, ": '", a str of at most 4096 characters, "'". */
#define MAX_MESSAGE (128 + 4 + 4 * 4096 + 1)

/* One run: the threads' stacks after the runtime, into out (nthreads arrays). */
static void run(const uint8_t *hdr, struct space *sp, struct cq_thread_stack *out, size_t *nout,
                struct cq_stacks *tasks, char **message)
{
	size_t nthreads = 1 + hdr[0] % MAX_THREADS;
	struct cq_target_module mods[2] = {
	    {.name = "python3.11", .start = EVAL_LO, .end = OTHER_PC + 1},
	    {.name = "/usr/lib/python3.11/lib-dynload/_asyncio.cpython-311-x86_64-linux-gnu.so",
	     .start = OTHER_PC + 0x10000,
	     .end = OTHER_PC + 0x20000}};
	struct cq_target_thread th[MAX_THREADS];
	static struct cq_stack_frame native[MAX_THREADS][NATIVE];
	struct cq_thread_stack ts[MAX_THREADS];
	for (size_t t = 0; t < nthreads; t++) {
		th[t] = (struct cq_target_thread){.tid = 100 + hdr[2 + 2 * t]};
		for (size_t f = 0; f < NATIVE; f++)
			native[t][f] = (struct cq_stack_frame){
			    .pc = (hdr[3 + 2 * t] >> f & 1) ? EVAL_LO + 0x10 + f : OTHER_PC + f,
			    .kind = CQ_FRAME_NATIVE};
		ts[t] = (struct cq_thread_stack){.frames = native[t], .nframes = NATIVE};
	}
	struct cq_unwind_target tg = {.ops = &sp_ops,
	                              .ctx = sp,
	                              .modules = mods,
	                              .nmodules = 2,
	                              .threads = th,
	                              .nthreads = nthreads};
	struct cq_unwind_options uo = {.max_frames = 1 + hdr[1] % 64u};
	struct cq_stacks st = {.threads = ts, .nthreads = nthreads};
	struct cq_async_ctx ctx = {.target = &tg, .unwind = &uo, .max_suspended = 8, .stacks = &st};
	void *state = NULL;
	struct cq_async_needs needs = {0};
	if (cq_async_python.detect(&ctx, &state, &needs) || !state)
		abort();
	if (cq_async_python.threads(state, &ctx))
		abort(); /* only out of memory */
	if (needs.scan) {
		struct cq_async_chunk c = {
		    .addr = MEM_BASE, .data = sp->mem, .len = sp->len & ~7ull};
		if (sp->mem && c.len)
			cq_async_python.scan(state, &ctx, &c);
		if (cq_async_python.decode(state, &ctx))
			abort();
	}
	struct cq_stats stats = {0}, warnings = {0};
	cq_async_python.report(state, &ctx, &stats, &warnings);
	for (size_t t = 0; t < nthreads; t++) {
		const struct cq_thread_stack *s = &ts[t];
		size_t k = 0, py = 0;
		for (size_t i = 0; i < s->nframes; i++) {
			const struct cq_stack_frame *f = &s->frames[i];
			if (f->kind == CQ_FRAME_PYTHON) {
				if (f->pc != 0 || f->line < 0)
					abort();
				py++;
			} else if (k >= NATIVE || f->pc != native[t][k++].pc) {
				abort();
			}
		}
		if (k != NATIVE || py > uo.max_frames)
			abort();
		out[t] = *s;
		if (s->owns_frames) {
			out[t].frames = malloc(s->nframes * sizeof(*s->frames));
			if (!out[t].frames)
				abort();
			memcpy(out[t].frames, s->frames, s->nframes * sizeof(*s->frames));
			for (size_t i = 0; i < s->nframes; i++) /* strings die with the state */
				out[t].frames[i].function = out[t].frames[i].file = NULL;
			free(s->frames);
		}
	}
	*nout = nthreads;
	for (size_t i = 0; i < st.nsuspended; i++) {
		struct cq_suspended_stack *s = &st.suspended[i];
		if (strcmp(s->kind, "python") || s->nframes == 0 || s->nframes > uo.max_frames)
			abort();
		for (size_t k = 0; k < s->nframes; k++) {
			if (s->frames[k].kind != CQ_FRAME_PYTHON || s->frames[k].line < 0)
				abort();
			s->frames[k].function = s->frames[k].file = s->frames[k].state = NULL;
		}
	}
	*tasks = (struct cq_stacks){.suspended = st.suspended, .nsuspended = st.nsuspended};
	*message = NULL;
	if (st.crash_message) {
		if (strnlen(st.crash_message, MAX_MESSAGE + 1) > MAX_MESSAGE ||
		    !(*message = strdup(st.crash_message)))
			abort();
	}
	cq_async_python.destroy(state);
	cq_stats_free(&stats);
	cq_stats_free(&warnings);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t hdr[HDR_SIZE] = {0};
	memcpy(hdr, data, size < HDR_SIZE ? size : HDR_SIZE);
	struct space sp = {.mem = size > HDR_SIZE ? data + HDR_SIZE : NULL,
	                   .len = size > HDR_SIZE ? size - HDR_SIZE : 0};
	struct cq_thread_stack a[MAX_THREADS], b[MAX_THREADS];
	struct cq_stacks ta, tb;
	size_t na, nb;
	char *ma, *mb;
	run(hdr, &sp, a, &na, &ta, &ma);
	run(hdr, &sp, b, &nb, &tb, &mb);
	if (!ma != !mb || (ma && strcmp(ma, mb)))
		abort();
	free(ma);
	free(mb);
	if (ta.nsuspended != tb.nsuspended)
		abort();
	for (size_t i = 0; i < ta.nsuspended; i++) {
		if (ta.suspended[i].nframes != tb.suspended[i].nframes ||
		    ta.suspended[i].leaf != tb.suspended[i].leaf)
			abort();
		free(ta.suspended[i].frames);
		free(tb.suspended[i].frames);
	}
	free(ta.suspended);
	free(tb.suspended);
	for (size_t t = 0; t < na; t++) {
		if (a[t].nframes != b[t].nframes)
			abort();
		for (size_t i = 0; i < a[t].nframes; i++)
			if (a[t].frames[i].pc != b[t].frames[i].pc ||
			    a[t].frames[i].line != b[t].frames[i].line ||
			    a[t].frames[i].object != b[t].frames[i].object)
				abort();
		if (a[t].owns_frames)
			free(a[t].frames);
		if (b[t].owns_frames)
			free(b[t].frames);
	}
	return 0;
}
