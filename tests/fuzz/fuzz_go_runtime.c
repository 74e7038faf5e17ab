/*
 * fuzz_go_runtime.c - libFuzzer target for the go runtime
 * (unwind/async/go.c): the Go scheduler's state read from a core (allgs,
 * each g, the Ms, sudogs, wait reason strings) and the cached layout blob,
 * both untrusted.
 *
 * The input patches the example scene of tests/unit/go_scene.h (three gs,
 * one M with a fatal error's closure on its g0 stack, a sudog, the runtime's
 * strings): each 10-byte record is a 2-byte
 * word and an 8-byte value; a word without its top bit writes the memory at
 * twice its value, with it the layout blob at its low 10 bits (the blob's
 * length is kept).  The driver
 * runs detect, threads and decode; every goroutine listed must be of kind
 * "go" with at least one frame, and at most max_suspended are listed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/go_scene.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct gs_scene s;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gs_example(&s);
	gs_fatal(&s, "concurrent map writes", 0x700);
	for (size_t i = 0; i + 10 <= size; i += 10) {
		uint16_t off;
		uint64_t v;
		memcpy(&off, data + i, 2);
		memcpy(&v, data + i + 2, 8);
		size_t at = (size_t)(off & 0x7fff) * 2;
		if (!(off & 0x8000) && at + 8 <= GS_SIZE)
			memcpy(s.mem + at, &v, 8);
		else if ((off & 0x8000) && (off & 0x3ff) + 8u <= sizeof(s.blob))
			memcpy(s.blob + (off & 0x3ff), &v, 8);
	}
	struct cq_unwind_options uo;
	cq_unwind_options_default(&uo);
	struct cq_thread_stack thread = {0};
	struct cq_stacks stacks;
	memset(&stacks, 0, sizeof(stacks));
	stacks.threads = &thread;
	stacks.nthreads = 1;
	struct cq_async_ctx ctx = {
	    .target = &s.target, .unwind = &uo, .max_suspended = 64, .stacks = &stacks};
	struct cq_async_states *states = NULL;
	bool native = false;
	if (cq_async_detect(&ctx, &states, &native) == NULL) {
		if (cq_async_stacks(&ctx, states) == NULL) {
			if (stacks.nsuspended > 64)
				abort();
			for (size_t i = 0; i < stacks.nsuspended; i++)
				if (strcmp(stacks.suspended[i].kind, "go") != 0 ||
				    stacks.suspended[i].nframes == 0)
					abort();
		}
	}
	cq_async_states_free(states);
	for (size_t i = 0; i < stacks.nsuspended; i++)
		free(stacks.suspended[i].frames);
	free(stacks.suspended);
	cq_stats_free(&stacks.async);
	cq_stats_free(&stacks.warnings);
	return 0;
}
