/*
 * unwind.h - the native stack walker and the interface it sees the target by.
 *
 * The unwinder knows nothing about core files.  It reads memory, finds the
 * CFI table for a pc, and asks whether an address is code, all through
 * struct cq_unwind_target, which libcore implements over a core and tests
 * implement over synthetic stacks.
 *
 * Per frame: the CFI row for pc (pc - 1 for return addresses) gives the CFA
 * and the caller's registers (trust "cfi"); without CFI, a frame-pointer step
 * if rbp points at a plausible frame on this thread's stack ("fp"); as a last
 * resort, a bounded scan of the stack for a word that points just after a
 * call instruction ("scan").  Every walk is bounded by max_frames, by the
 * stack mapping, and by the rule that the CFA must increase.
 *
 * Layer: unwind (unwind/, with unwind/async/): directly on base; the native walk and the async
 * runtimes include only base and their own headers, and see a process only through
 * struct cq_unwind_target (target.h). The layer order is in docs/internals.md (Layout) and
 * tests/check-layers.
 */
#ifndef CQ_UNWIND_H
#define CQ_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/arch.h"
#include "libcore/base/error.h"
#include "unwind/cfi_table.h"
#include "unwind/target.h"

enum cq_unwind_trust {
	CQ_TRUST_CONTEXT, /* registers from the core's notes */
	CQ_TRUST_CFI,
	CQ_TRUST_FP,
	CQ_TRUST_SCAN,
	CQ_TRUST_ASYNC, /* from an async (coroutine) frame record */
	CQ_TRUST_LOG,   /* read from a log record (coreq lws), not unwound by coreq */
};

enum cq_unwind_end {
	CQ_END_OUTERMOST, /* undefined or zero return address: a thread's first frame */
	CQ_END_MAX_FRAMES,
	CQ_END_NO_UNWIND_INFO, /* no CFI, no frame pointer, nothing found by scanning */
	CQ_END_BAD_MEMORY,     /* a read failed or the return address is not code */
	CQ_END_LOOP,           /* the sp did not increase (see unwinder.c), or a frame repeated */
	CQ_END_ASYNC_DETACHED, /* an async chain ended without a parent */
};

struct cq_unwind_frame {
	uint64_t pc;
	uint64_t sp; /* stack pointer in this frame */
	uint64_t fp; /* frame-pointer register in this frame, if has_fp */
	bool has_fp;
	bool is_return_address; /* pc is after a call: look it up at pc - 1 */
	bool is_signal_frame;   /* a signal trampoline (its CFI says so) */
	uint8_t trust;          /* enum cq_unwind_trust */
};

struct cq_unwind_options {
	unsigned max_frames; /* default 256 */
	bool allow_scan;     /* default true */
	unsigned scan_words; /* words above sp a scan may look at; default 1024 */
};

#define CQ_UNWIND_DEFAULT_MAX_FRAMES 256
#define CQ_UNWIND_DEFAULT_SCAN_WORDS 1024

void cq_unwind_options_default(struct cq_unwind_options *o);

/*
 * Walks one thread from regs.  frames must hold o->max_frames entries.
 * Never fails on bad target data: the walk ends and *end says why.
 */
void cq_unwind_thread(const struct cq_unwind_target *t, const struct cq_regs *regs,
                      const struct cq_unwind_options *o, struct cq_unwind_frame *frames,
                      size_t *nframes, enum cq_unwind_end *end);

/*
 * The registers of frame k of the walk cq_unwind_thread makes from regs
 * (frame 0: regs), as far as the steps recovered them (a caller's
 * callee-saved registers); false when the walk ends before frame k or
 * frame k is not at pc and sp (another walk).
 */
bool cq_unwind_regs_at(const struct cq_unwind_target *t, const struct cq_regs *regs,
                       const struct cq_unwind_options *o, size_t k, uint64_t pc, uint64_t sp,
                       struct cq_regs *out);

/*
 * Computes the caller's registers from regs with the CFI rule set at pc.
 * Exposed for tests and for the async walker.  Returns false when a rule
 * cannot be evaluated (unreadable memory, bad expression).
 */
bool cq_unwind_step_cfi(const struct cq_unwind_target *t, const struct cq_cfi_table *table,
                        const struct cq_cfi_rule *rules, const struct cq_regs *regs,
                        struct cq_regs *caller, uint64_t *cfa);

const char *cq_unwind_trust_name(enum cq_unwind_trust trust);
const char *cq_unwind_end_name(enum cq_unwind_end end);

#endif
