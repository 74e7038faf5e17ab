/*
 * frame_text.c - one frame of a stack as a line of text, as `coreq stack`,
 * `coreq info` and the grouped views print it: index, pc, function, module
 * + offset, file:line and the marks ([inline], [async], [fp], [scan], a
 * repeat count, [thread TID]).
 */
#include "cmd/cmd.h"

#include <inttypes.h>

#include "libcore/analysis/frames.h"
#include "libcore/model/module.h"

/* A suspended future's frame: no code address; its state and its address. */
static void print_object_frame_text(const struct cq_stack_frame *f, size_t index)
{
	printf("#%-3zu %s", index, f->function ? cmd_safe(f->function) : "??");
	if (f->state)
		printf(" [%s]", f->state);
	if (f->file)
		printf(" at %s:%d", cmd_safe(f->file), f->line);
	printf(" (future at 0x%" PRIx64 ")\n", f->object);
}

void cmd_print_frame_text(const struct cq_stack_frame *f, size_t index)
{
	if (f->object) {
		print_object_frame_text(f, index);
		return;
	}
	printf("#%-3zu 0x%016" PRIx64 " in ", index, f->pc);
	printf("%s%s%s", cmd_sgr("\033[33m"), f->function ? cmd_safe(f->function) : "??",
	       cmd_sgr("\033[0m"));
	if (f->module)
		printf(" (%s+0x%" PRIx64 "%s)", cmd_safe(cq_module_basename(f->module)), f->offset,
		       f->module->status == CQ_MODULE_MISMATCH ? ", build-id mismatch" : "");
	if (f->file)
		printf(" at %s:%d", cmd_safe(f->file), f->line);
	if (f->kind == CQ_FRAME_INLINE)
		printf(" [inline]");
	else if (f->kind == CQ_FRAME_ASYNC)
		printf(" [async]");
	else if (f->trust == CQ_TRUST_FP || f->trust == CQ_TRUST_SCAN)
		printf(" [%s]", cq_unwind_trust_name(f->trust));
	if (f->repeat > 1)
		printf(" \u00d7%" PRIu32, f->repeat);
	if (f->thread_switch)
		printf(" [thread %" PRId64 "]", f->thread_switch);
	putchar('\n');
}
