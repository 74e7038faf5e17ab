/*
 * frames_memo.h - a stack's frames rendered once and copied for every other
 * thread parked in the same place.
 *
 * Threads with identical stacks share one pooled frames array
 * (libcore/analysis/stack_pool.h), and its text is the same bytes for each
 * of them; so is its JSON, but for each frame's "thread" member.  A memo
 * keeps the last few arrays it rendered (text; JSON without "thread") and
 * writes the copy, so a 3001-thread core formats its one shared stack once.
 * Output is byte for byte what rendering each frame afresh gives.
 */
#ifndef CQ_CMD_FRAMES_MEMO_H
#define CQ_CMD_FRAMES_MEMO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "unwind/frames.h"
#include "libcore/base/json.h"

#define FRAMES_MEMO_SLOTS 8

struct frames_memo_slot {
	const struct cq_stack_frame *frames; /* the array rendered (its identity is the key) */
	size_t n;
	char *bytes;
	size_t len;
	size_t *ends; /* JSON: frame i is bytes [ends[i-1], ends[i]) (ends[-1] = 0) */
};

struct frames_memo {
	struct frames_memo_slot slot[FRAMES_MEMO_SLOTS];
	unsigned next; /* the slot to reuse next */
	struct cq_json *scratch;
};

void frames_memo_init(struct frames_memo *m);
void frames_memo_free(struct frames_memo *m);

/*
 * Writes to out the text of frames[0..n), as render(out, frames, n) writes it;
 * from the memo when this array was rendered before.
 */
void frames_memo_text(struct frames_memo *m, FILE *out, const struct cq_stack_frame *frames,
                      size_t n,
                      void (*render)(FILE *out, const struct cq_stack_frame *f, size_t n));

/*
 * Writes frames[0..n) as JSON frame objects into the open array of j, as
 * cmd_json_frame would, frame i on thread tid[i].
 */
void frames_memo_json(struct frames_memo *m, struct cq_json *j, const struct cq_stack_frame *frames,
                      size_t n, const int64_t *tid);

#endif
