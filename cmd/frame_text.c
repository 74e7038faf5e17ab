/*
 * frame_text.c - one frame of a stack as a line of text, as `coreq stack`,
 * `coreq info` and the grouped views print it: index, pc, function, module
 * + offset, file:line and the marks ([inline], [async], [fp], [scan], a
 * repeat count, [thread TID]).
 */
#include "cmd/cmd.h"

#include <inttypes.h>
#include <stdio.h>

#include "libcore/analysis/frames.h"
#include "libcore/model/module.h"

/*
 * Frames are the bulk of every stack command's output (a 3001-thread core
 * prints tens of thousands): they are written piece by piece with the
 * unlocked stdio calls and digits made here, not parsed from a format each
 * time.
 */
static void put(const char *s)
{
	fputs_unlocked(s, stdout);
}

/* v in hex, zero-padded to at least width digits. */
static void put_hex(uint64_t v, int width)
{
	char buf[17];
	int n = 0;
	do {
		buf[16 - ++n] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v && n < 16);
	while (n < width && n < 16)
		buf[16 - ++n] = '0';
	fwrite_unlocked(buf + 16 - n, 1, (size_t)n, stdout);
}

static void put_dec(int64_t v)
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
	fwrite_unlocked(buf + 21 - n - 1, 1, (size_t)n, stdout);
}

/* "#N" and the padding of "%-3zu " */
static void put_index(size_t index)
{
	putchar_unlocked('#');
	put_dec((int64_t)index);
	for (size_t w = index < 10 ? 1 : index < 100 ? 2 : 3; w < 3; w++)
		putchar_unlocked(' ');
	putchar_unlocked(' ');
}

/* A suspended future's frame: no code address; its state and its address. */
static void print_object_frame_text(const struct cq_stack_frame *f, size_t index)
{
	put_index(index);
	put(f->function ? cmd_safe(f->function) : "??");
	if (f->state) {
		put(" [");
		put(f->state);
		putchar_unlocked(']');
	}
	if (f->file) {
		put(" at ");
		put(cmd_safe(f->file));
		putchar_unlocked(':');
		put_dec(f->line);
	}
	put(" (future at 0x");
	put_hex(f->object, 1);
	put(")\n");
}

void cmd_print_frame_text(const struct cq_stack_frame *f, size_t index)
{
	if (f->object) {
		print_object_frame_text(f, index);
		return;
	}
	put_index(index);
	put("0x");
	put_hex(f->pc, 16);
	put(" in ");
	put(cmd_sgr("\033[33m"));
	put(f->function ? cmd_safe(f->function) : "??");
	put(cmd_sgr("\033[0m"));
	if (f->module) {
		put(" (");
		put(cmd_safe(cq_module_basename(f->module)));
		put("+0x");
		put_hex(f->offset, 1);
		put(f->module->status == CQ_MODULE_MISMATCH ? ", build-id mismatch)" : ")");
	}
	if (f->file) {
		put(" at ");
		put(cmd_safe(f->file));
		putchar_unlocked(':');
		put_dec(f->line);
	}
	if (f->kind == CQ_FRAME_INLINE) {
		put(" [inline]");
	} else if (f->kind == CQ_FRAME_ASYNC) {
		put(" [async]");
	} else if (f->trust == CQ_TRUST_FP || f->trust == CQ_TRUST_SCAN) {
		put(" [");
		put(cq_unwind_trust_name(f->trust));
		putchar_unlocked(']');
	}
	if (f->repeat > 1) {
		put(" \u00d7");
		put_dec(f->repeat);
	}
	if (f->thread_switch) {
		put(" [thread ");
		put_dec(f->thread_switch);
		putchar_unlocked(']');
	}
	putchar_unlocked('\n');
}
