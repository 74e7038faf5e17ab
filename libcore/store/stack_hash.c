/*
 * stack_hash.c - the stored stack's hash (see stack_hash.h).
 */
#include "libcore/store/stack_hash.h"

#include <stdio.h>
#include <string.h>

uint64_t cq_stack_hash_add(uint64_t h, const struct cq_stack_hash_frame *f)
{
	uint64_t where = f->where;
	uint8_t kind = f->kind;
	if (f->build_id)
		h = cq_fnv1a(h, f->build_id, f->build_id_len);
	h = cq_fnv1a(h, &where, sizeof(where));
	h = cq_fnv1a(h, &kind, sizeof(kind));
	if (f->future) {
		int64_t line = f->line;
		h = cq_fnv1a(h, f->function ? f->function : "",
		             f->function ? strlen(f->function) + 1 : 1);
		h = cq_fnv1a(h, f->state ? f->state : "", f->state ? strlen(f->state) + 1 : 1);
		h = cq_fnv1a(h, &line, sizeof(line));
	}
	return h;
}

void cq_stack_hash_text(uint64_t h, char out[CQ_STACK_HASH_TEXT_LEN + 1])
{
	snprintf(out, CQ_STACK_HASH_TEXT_LEN + 1, "%016llx", (unsigned long long)h);
}
