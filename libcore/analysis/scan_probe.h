/*
 * scan_probe.h - what a core's heap scan will look for, found from the
 * core's first bytes alone.
 *
 * A one-stream compressed core is read once, forward, and its heap
 * streams past before the modules' pages (libcore/model/stream_image.h).
 * The words an async runtime's scan acts on (struct cq_feed_words: task
 * vtables, coroutine resume functions) are known once the runtimes are
 * detected, and detection needs only the modules: their files, found from
 * NT_FILE, and where they were loaded.  So the head (the headers, the
 * notes and the first MiB, which hold NT_FILE and the executable's own
 * headers) is opened as a core cut short, the runtimes are detected on it,
 * and the words they would scan for are what the stream keeps the pages of
 * (libcore/model/scan_keep.h).  That is a guess like any scan note: the
 * scan uses those pages only when the words it asks for, on the whole core,
 * lie within these.
 *
 * Layer: analysis.
 */
#ifndef CQ_SCAN_PROBE_H
#define CQ_SCAN_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "libcore/base/feed.h"

struct cq_core_options;
struct cq_stack_options;

/*
 * The words the heap scan of the core whose first len bytes are head would
 * act on, into out (room for max), as the runtimes detected on that head
 * alone say (core and stack options as the analysis's: the executable, the
 * sysroot, debug directories, the cache); how many.  0: no runtime scans,
 * one does not say, the head does not open as a core, or memory is short.
 */
size_t cq_scan_probe(const uint8_t *head, uint64_t len, const struct cq_core_options *core,
                     const struct cq_stack_options *stacks, struct cq_feed_words *out, size_t max);

#endif
