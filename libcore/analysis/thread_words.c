/*
 * thread_words.c - the words a thread can still use (see thread_words.h).
 */
#include "libcore/analysis/thread_words.h"

#include <assert.h>

#include "libcore/base/bytes.h"
#include "libcore/base/memory.h"
#include "libcore/model/core.h"

#define STACK_EXTRA (64u << 20)

bool cq_thread_words(struct cq_core *core, cq_thread_word_fn fn, void *arg)
{
	assert(core && fn);
	unsigned sp_reg = core->arch->sp_reg;
	uint64_t budget = core->image_size + STACK_EXTRA;
	for (size_t t = 0; t < core->nthreads; t++) {
		const struct cq_regs *r = &core->threads[t].regs;
		for (unsigned k = 0; k < CQ_REGS_MAX; k++)
			if (k != sp_reg && cq_regs_has(r, k))
				fn(arg, t, r->value[k], NULL, 0);
		if (!cq_regs_has(r, sp_reg))
			continue;
		uint64_t sp = r->value[sp_reg] & ~(uint64_t)7;
		const struct cq_mem_segment *seg = cq_mem_find(&core->mem, sp);
		if (!seg || !seg->data || sp < seg->start || sp - seg->start >= seg->data_len)
			continue;
		uint64_t len = seg->data_len - (sp - seg->start);
		if (len > CQ_THREAD_WORDS_STACK_MAX)
			len = CQ_THREAD_WORDS_STACK_MAX;
		if (len > budget)
			return false;
		budget -= len;
		const uint8_t *s = seg->data + (sp - seg->start);
		for (uint64_t off = 0; off + 8 <= len; off += 8)
			fn(arg, t, cq_load_u64(s + off), s + off, len - off);
	}
	return true;
}
