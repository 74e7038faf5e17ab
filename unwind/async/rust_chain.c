/*
 * rust_chain.c - a decoded Rust await chain as stack frames (see rust_chain.h).
 */
#include "unwind/async/rust_chain.h"

#include <stdlib.h>
#include <string.h>

#define MAX_FUNCTION_LEN 1024

void cq_rust_names_free(struct cq_rust_names *names)
{
	for (size_t i = 0; i < names->n; i++)
		free(names->v[i]);
	free(names->v);
	*names = (struct cq_rust_names){0};
}

/* A copy of s kept in the pool; NULL when out of memory. */
static const char *keep(struct cq_rust_names *names, const char *s)
{
	char **p = realloc(names->v, (names->n + 1) * sizeof(*p));
	if (!p)
		return NULL;
	names->v = p;
	char *copy = strdup(s);
	if (copy)
		names->v[names->n++] = copy;
	return copy;
}

struct cq_error *cq_rust_chain_frames(const struct cq_unwind_target *t,
                                      const struct cq_rust_model *m,
                                      const struct cq_rust_frame *chain, size_t n,
                                      struct cq_rust_names *names, struct cq_stack_frame **out)
{
	*out = NULL;
	struct cq_stack_frame *frames = calloc(n ? n : 1, sizeof(*frames));
	if (!frames)
		return &cq_error_nomem;
	for (size_t i = 0; i < n; i++) {
		const struct cq_rust_frame *fr = &chain[n - 1 - i];
		const struct cq_rust_type *ty = &m->types[fr->type];
		char buf[MAX_FUNCTION_LEN];
		struct cq_stack_frame *f = &frames[i];
		f->kind = CQ_FRAME_ASYNC;
		f->trust = CQ_TRUST_ASYNC;
		f->object = fr->addr;
		f->module = ty->origin < t->nmodules ? t->modules[ty->origin].handle : NULL;
		const char *name = cq_rust_frame_function(ty, buf, sizeof(buf));
		if (name && !(f->function = keep(names, name))) {
			free(frames);
			return &cq_error_nomem;
		}
		if (fr->variant) {
			f->state = fr->variant->name;
			f->file = fr->variant->file;
			f->line = fr->variant->line;
		}
	}
	*out = frames;
	return NULL;
}

enum cq_unwind_end cq_rust_chain_end(enum cq_rust_chain_end end)
{
	switch (end) {
	case CQ_RUST_END_LEAF:
	case CQ_RUST_END_NO_AWAITEE:
		return CQ_END_OUTERMOST;
	case CQ_RUST_END_MAX_DEPTH:
		return CQ_END_MAX_FRAMES;
	case CQ_RUST_END_LOOP:
		return CQ_END_LOOP;
	default:
		return CQ_END_BAD_MEMORY;
	}
}
