/*
 * scan_probe.c - what a core's heap scan will look for, from its first
 * bytes alone (see scan_probe.h).
 *
 * Layer: analysis.
 */
#include "libcore/analysis/scan_probe.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libcore/analysis/stacktrace.h"
#include "libcore/analysis/unwind_target.h"
#include "libcore/base/write_all.h"
#include "libcore/model/core.h"
#include "libcore/symbols/symbolizer.h"
#include "unwind/async/runtime.h"

/* The runtimes detected on core, and the words they would scan for. */
static size_t detect_words(struct cq_core *core, const struct cq_stack_options *so,
                           struct cq_feed_words *out, size_t max)
{
	struct cq_symbolizer *sym = NULL;
	struct cq_core_target ct;
	struct cq_error *err = NULL;
	if (so->symbolize && (err = cq_symbolizer_create(core, so->debug_dirs, so->cache, &sym))) {
		cq_error_free(err);
		return 0;
	}
	size_t n = 0;
	if (!(err = cq_core_target_init(&ct, core, so, sym))) {
		struct cq_stacks none = {0};
		struct cq_async_ctx ctx = {.target = &ct.target,
		                           .unwind = &so->unwind,
		                           .max_suspended = so->max_suspended,
		                           .named = sym != NULL,
		                           .stacks = &none};
		struct cq_async_states *states = NULL;
		bool native;
		if (!(err = cq_async_detect(&ctx, &states, &native)))
			n = cq_async_scan_words(states, out, max);
		cq_async_states_free(states);
		cq_core_target_destroy(&ct);
	}
	cq_error_free(err);
	cq_symbolizer_destroy(sym);
	return n;
}

size_t cq_scan_probe(const uint8_t *head, uint64_t len, const struct cq_core_options *core,
                     const struct cq_stack_options *stacks, struct cq_feed_words *out, size_t max)
{
	if (!stacks->async)
		return 0;
	/* The head as a raw core file cut short: its memory past the head is missing. */
	int fd = memfd_create("coreq-head", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	size_t n = 0;
	if (cq_write_all(fd, head, (size_t)len, 0)) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		struct cq_core_options co = *core;
		co.stream_hint = NULL;
		struct cq_core *c = NULL;
		struct cq_error *err = cq_core_open(path, &co, &c);
		if (!err)
			n = detect_words(c, stacks, out, max);
		cq_error_free(err);
		cq_core_close(c);
	}
	close(fd);
	return n;
}
