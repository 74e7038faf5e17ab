/*
 * frame_list.c - unwound frames to named frames, inline chains expanded
 * (see frame_list.h).
 */
#include "libcore/analysis/frame_list.h"

#include <stdlib.h>

#include "libcore/model/core.h"
#include "libcore/model/module.h"
#include "libcore/symbols/symbolizer.h"

static struct cq_stack_frame frame_at(struct cq_core *core, const struct cq_unwind_frame *uf)
{
	struct cq_stack_frame f = {.pc = uf->pc, .kind = CQ_FRAME_NATIVE, .trust = uf->trust};
	const struct cq_module *mod = cq_core_module_at(core, uf->pc);
	if (mod) {
		f.module = mod;
		f.offset = uf->pc - mod->bias;
	}
	return f;
}

struct cq_error *cq_frame_list_add(struct cq_frame_list *fl, struct cq_core *core,
                                   struct cq_symbolizer *sym, const struct cq_unwind_frame *uf,
                                   enum cq_frame_kind kind)
{
	const struct cq_symbol_frame *names = NULL;
	size_t n = sym ? cq_symbolizer_lookup(sym, uf->pc, uf->is_return_address, &names) : 1;
	if (fl->n + n > fl->cap) {
		size_t ncap = fl->cap ? fl->cap * 2 : 16;
		while (ncap < fl->n + n)
			ncap *= 2;
		struct cq_stack_frame *f = realloc(fl->frames, ncap * sizeof(*f));
		if (!f)
			return &cq_error_nomem;
		fl->frames = f;
		fl->cap = ncap;
	}
	for (size_t i = 0; i < n; i++) {
		struct cq_stack_frame f = frame_at(core, uf);
		f.kind = kind;
		if (names) {
			f.function = names[i].function;
			f.symbol = names[i].symbol;
			if (!f.function && uf->is_signal_frame)
				f.function = "<signal handler called>";
			f.file = names[i].file;
			f.line = names[i].line;
			if (names[i].inlined)
				f.kind = CQ_FRAME_INLINE;
		}
		fl->frames[fl->n++] = f;
	}
	return NULL;
}
