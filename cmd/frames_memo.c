/*
 * frames_memo.c - stacks rendered once, copied for every thread that shares
 * them (see frames_memo.h).
 */
#include "cmd/frames_memo.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"

void frames_memo_init(struct frames_memo *m)
{
	memset(m, 0, sizeof(*m));
}

static void slot_clear(struct frames_memo_slot *s)
{
	free(s->bytes);
	free(s->ends);
	memset(s, 0, sizeof(*s));
}

void frames_memo_free(struct frames_memo *m)
{
	for (unsigned i = 0; i < FRAMES_MEMO_SLOTS; i++)
		slot_clear(&m->slot[i]);
	free(m->scratch);
	m->scratch = NULL;
}

/* The slot holding frames' text (json false) or JSON, or NULL. */
static struct frames_memo_slot *lookup(struct frames_memo *m, const struct cq_stack_frame *frames,
                                       size_t n, bool json)
{
	for (unsigned i = 0; i < FRAMES_MEMO_SLOTS; i++) {
		struct frames_memo_slot *s = &m->slot[i];
		if (s->bytes && s->frames == frames && s->n == n && (s->ends != NULL) == json)
			return s;
	}
	return NULL;
}

/* A cleared slot for frames (the oldest one goes). */
static struct frames_memo_slot *claim(struct frames_memo *m, const struct cq_stack_frame *frames,
                                      size_t n)
{
	struct frames_memo_slot *s = &m->slot[m->next];
	m->next = (m->next + 1) % FRAMES_MEMO_SLOTS;
	slot_clear(s);
	s->frames = frames;
	s->n = n;
	return s;
}

void frames_memo_text(struct frames_memo *m, FILE *out, const struct cq_stack_frame *frames,
                      size_t n, void (*render)(FILE *out, const struct cq_stack_frame *f, size_t n))
{
	struct frames_memo_slot *s = lookup(m, frames, n, false);
	if (!s) {
		char *bytes = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&bytes, &len);
		if (!mem) {
			render(out, frames, n);
			return;
		}
		render(mem, frames, n);
		if (fclose(mem) != 0 || !bytes) {
			free(bytes);
			render(out, frames, n);
			return;
		}
		s = claim(m, frames, n);
		s->bytes = bytes;
		s->len = len;
	}
	fwrite_unlocked(s->bytes, 1, s->len, out);
}

/* Renders each frame's members but "thread" into a new slot; NULL if memory ran out. */
static struct frames_memo_slot *render_json(struct frames_memo *m,
                                            const struct cq_stack_frame *frames, size_t n)
{
	if (!m->scratch && !(m->scratch = malloc(sizeof(*m->scratch))))
		return NULL;
	size_t *ends = malloc((n ? n : 1) * sizeof(*ends));
	char *bytes = NULL;
	size_t len = 0;
	FILE *mem = ends ? open_memstream(&bytes, &len) : NULL;
	if (!mem) {
		free(ends);
		return NULL;
	}
	bool ok = true;
	for (size_t i = 0; i < n && ok; i++) {
		/* A fresh writer per frame: each object starts with no comma before it. */
		cq_json_init(m->scratch, mem);
		cq_json_object_begin(m->scratch);
		cmd_json_frame_fields(m->scratch, &frames[i], i);
		cq_json_flush(m->scratch);
		ok = fflush(mem) == 0;
		ends[i] = len;
	}
	if (fclose(mem) != 0 || !ok || (n && !bytes)) {
		free(bytes);
		free(ends);
		return NULL;
	}
	struct frames_memo_slot *s = claim(m, frames, n);
	s->bytes = bytes;
	s->len = len;
	s->ends = ends;
	return s;
}

void frames_memo_json(struct frames_memo *m, struct cq_json *j, const struct cq_stack_frame *frames,
                      size_t n, const int64_t *tid)
{
	struct frames_memo_slot *s = lookup(m, frames, n, true);
	if (!s && !(s = render_json(m, frames, n))) {
		for (size_t i = 0; i < n; i++)
			cmd_json_frame(j, &frames[i], i, tid[i]);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		size_t from = i ? s->ends[i - 1] : 0;
		cq_json_raw_value(j, s->bytes + from, s->ends[i] - from);
		/* ,"thread":TID} as cmd_json_frame ends a frame */
		char tail[40] = ",\"thread\":";
		size_t k = strlen(tail);
		if (tid[i] > 0) {
			char digits[24];
			int d = 0;
			for (uint64_t v = (uint64_t)tid[i]; v; v /= 10)
				digits[d++] = (char)('0' + v % 10);
			while (d)
				tail[k++] = digits[--d];
		} else {
			memcpy(tail + k, "null", 4);
			k += 4;
		}
		tail[k++] = '}';
		cq_json_raw(j, tail, k);
	}
}
