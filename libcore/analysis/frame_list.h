/*
 * frame_list.h - turning unwound frames into named frames.
 *
 * One frame from the unwinder becomes one or more cq_stack_frames: the
 * calls inlined at its pc (innermost first, kind inline), then the function
 * that contains them, with the kind the caller gives (native, or async for
 * a frame an async runtime found).  Names and lines point into the
 * symbolizer.  Used by the thread walk and by the async runtimes alike.
 */
#ifndef CQ_FRAME_LIST_H
#define CQ_FRAME_LIST_H

#include <stddef.h>

#include "unwind/frames.h"
#include "libcore/base/error.h"
#include "unwind/unwind.h"

struct cq_core;
struct cq_symbolizer;

/* Appends uf's frames; sym may be NULL (then one unnamed frame). */
struct cq_error *cq_frame_list_add(struct cq_frame_list *fl, struct cq_core *core,
                                   struct cq_symbolizer *sym, const struct cq_unwind_frame *uf,
                                   enum cq_frame_kind kind);

#endif
