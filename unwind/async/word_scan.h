/*
 * word_scan.h - find folly's suspended coroutine frames by scanning memory.
 *
 * A suspended leaf AsyncStackFrame holds __folly_suspended_frame_cookie in
 * its stackRoot member (offset 16).  Finding every such frame means finding
 * every 8-byte aligned word equal to the cookie in the process's writable
 * memory; callers subtract 16 and check each candidate when they walk it.
 */
#ifndef CQ_WORD_SCAN_H
#define CQ_WORD_SCAN_H

#include <stddef.h>
#include <stdint.h>

/*
 * Appends to hits (up to max_hits) the target address of every 8-byte
 * aligned word in [data, data + len) equal to value, where data holds the
 * bytes at target address start.  Returns how many were found in all, which
 * may exceed max_hits.  This is the suspended-frame cookie scan: a plain
 * word compare, so it runs at memory speed.
 */
size_t cq_word_scan(const uint8_t *data, uint64_t start, uint64_t len, uint64_t value,
                    uint64_t *hits, size_t max_hits);

#endif
