/*
 * stack_hash.h - the hash that identifies a stored stack (stacks.hash):
 * 64-bit FNV-1a over every frame's (build-id, offset, kind), and for a
 * suspended future's frame, which has no code address, also its function,
 * state and line (not its address: identical await chains of different
 * tasks and cores are one stack).  The same stack at another load address,
 * in another process or on another host hashes the same.
 *
 * The one home of the rule: ingest hashes the frames it analysed, merge
 * hashes the frames a source database holds and refuses a stack whose
 * stored hash disagrees.  Stored hashes must never change.
 */
#ifndef CQ_STACK_HASH_H
#define CQ_STACK_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/hash.h"

#define CQ_STACK_HASH_INIT     CQ_FNV_OFFSET
#define CQ_STACK_HASH_TEXT_LEN 16 /* lower-case hex digits */

/* One frame as the hash sees it. */
struct cq_stack_hash_frame {
	const uint8_t *build_id; /* of its module; NULL (or length 0) for none */
	size_t build_id_len;
	uint64_t where; /* the module-relative offset, else the pc */
	uint8_t kind;   /* enum cq_frame_kind */
	/* A suspended future's frame: then function, state (NULL: "") and line count. */
	bool future;
	const char *function, *state;
	int64_t line;
};

/* h with frame f folded in; start from CQ_STACK_HASH_INIT, innermost frame first. */
uint64_t cq_stack_hash_add(uint64_t h, const struct cq_stack_hash_frame *f);

/* The hash as stored: 16 lower-case hex digits. */
void cq_stack_hash_text(uint64_t h, char out[CQ_STACK_HASH_TEXT_LEN + 1]);

#endif
