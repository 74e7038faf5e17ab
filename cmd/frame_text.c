/*
 * frame_text.c - one frame of a stack as a line of text, as `coreq stack`,
 * `coreq info` and the grouped views print it: index, pc, function, module
 * + offset, file:line and the marks ([inline], [async], [fp], [scan], a
 * repeat count, [thread TID]).
 */
#include "cmd/cmd.h"

#include <inttypes.h>
#include <stdio.h>

#include "unwind/frames.h"
#include "libcore/model/module.h"

/*
 * Frames are the bulk of every stack command's output (a 3001-thread core
 * prints tens of thousands): they are written piece by piece with the
 * unlocked stdio calls and digits made here, not parsed from a format each
 * time.
 */
static void put(FILE *out, const char *s)
{
	fputs_unlocked(s, out);
}

/* v in hex, zero-padded to at least width digits. */
static void put_hex(FILE *out, uint64_t v, int width)
{
	char buf[17];
	int n = 0;
	do {
		buf[16 - ++n] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v && n < 16);
	while (n < width && n < 16)
		buf[16 - ++n] = '0';
	fwrite_unlocked(buf + 16 - n, 1, (size_t)n, out);
}

static void put_dec(FILE *out, int64_t v)
{
	char buf[21];
	int n = 0;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	do {
		buf[20 - ++n] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		buf[20 - ++n] = '-';
	fwrite_unlocked(buf + 21 - n - 1, 1, (size_t)n, out);
}

/* "#N" and the padding of "%-3zu " */
static void put_index(FILE *out, size_t index)
{
	putc_unlocked('#', out);
	put_dec(out, (int64_t)index);
	for (size_t w = index < 10 ? 1 : index < 100 ? 2 : 3; w < 3; w++)
		putc_unlocked(' ', out);
	putc_unlocked(' ', out);
}

/*
 * A suspended future's frame (no code address) or coroutine frame (its
 * resume function's address): its state and, with address, the object's.
 */
static void print_object_frame_text(FILE *out, const struct cq_stack_frame *f, size_t index,
                                    bool address)
{
	put_index(out, index);
	put(out, f->function ? cmd_safe(f->function) : "??");
	if (f->state) {
		put(out, " [");
		put(out, f->state);
		putc_unlocked(']', out);
	}
	if (f->file) {
		put(out, " at ");
		put(out, cmd_safe(f->file));
		putc_unlocked(':', out);
		put_dec(out, f->line);
	}
	if (!address) {
		putc_unlocked('\n', out);
		return;
	}
	put(out, f->pc ? " (frame at 0x" : " (future at 0x");
	put_hex(out, f->object, 1);
	put(out, ")\n");
}

/* An interpreter's frame: its function, file and line, as py-bt names them, and [py]. */
static void print_python_frame_text(FILE *out, const struct cq_stack_frame *f, size_t index)
{
	put_index(out, index);
	put(out, cmd_sgr("\033[33m"));
	put(out, f->function ? cmd_safe(f->function) : "??");
	put(out, cmd_sgr("\033[0m"));
	put(out, " at ");
	put(out, f->file ? cmd_safe(f->file) : "??");
	if (f->line > 0) {
		putc_unlocked(':', out);
		put_dec(out, f->line);
	}
	put(out, " [py]");
	if (f->state) {
		put(out, " [");
		put(out, f->state);
		putc_unlocked(']', out);
	}
	putc_unlocked('\n', out);
}

void cmd_print_frame_text(FILE *out, const struct cq_stack_frame *f, size_t index)
{
	if (f->kind == CQ_FRAME_PYTHON) {
		print_python_frame_text(out, f, index);
		return;
	}
	if (f->object) {
		print_object_frame_text(out, f, index, true);
		return;
	}
	put_index(out, index);
	put(out, "0x");
	put_hex(out, f->pc, 16);
	put(out, " in ");
	put(out, cmd_sgr("\033[33m"));
	put(out, f->function ? cmd_safe(f->function) : "??");
	put(out, cmd_sgr("\033[0m"));
	if (f->module) {
		put(out, " (");
		put(out, cmd_safe(cq_module_basename(f->module)));
		put(out, "+0x");
		put_hex(out, f->offset, 1);
		put(out, f->module->status == CQ_MODULE_MISMATCH ? ", build-id mismatch)" : ")");
	}
	if (f->file) {
		put(out, " at ");
		put(out, cmd_safe(f->file));
		putc_unlocked(':', out);
		put_dec(out, f->line);
	}
	if (f->kind == CQ_FRAME_INLINE) {
		put(out, " [inline]");
	} else if (f->kind == CQ_FRAME_ASYNC) {
		put(out, " [async]");
	} else if (f->trust == CQ_TRUST_FP || f->trust == CQ_TRUST_SCAN) {
		put(out, " [");
		put(out, cq_unwind_trust_name(f->trust));
		putc_unlocked(']', out);
	}
	if (f->repeat > 1) {
		put(out, " \u00d7");
		put_dec(out, f->repeat);
	}
	if (f->thread_switch) {
		put(out, " [thread ");
		put_dec(out, f->thread_switch);
		putc_unlocked(']', out);
	}
	putc_unlocked('\n', out);
}

void cmd_print_group_frame_text(FILE *out, const struct cq_stack_frame *f, size_t index)
{
	if (f->object)
		print_object_frame_text(out, f, index, false);
	else
		cmd_print_frame_text(out, f, index);
}
