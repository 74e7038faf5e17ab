/*
 * scan_keep.h - the pages of a one-stream core that its heap scan will act
 * on, found as the stream passes, so that the scan needs no second
 * decompression.
 *
 * A one-stream core (systemd-coredump's .zst) is read once, forward, and a
 * heap scan cannot run on the stream itself: what it looks for (the word
 * values of struct cq_feed_words: a runtime's vtables, its coroutines'
 * resume functions) is known only once the modules are, and they are read
 * after the heap.  But those values are addresses in modules, at the same
 * place relative to the module whatever the core: an earlier core of the
 * same build says where (a note: each range of values as offsets from the
 * lowest address its file is mapped at, and the file's path, from NT_FILE).
 * Rebased on this core's NT_FILE, the note names the values before any
 * memory streams past; every page of a writable segment that holds such a
 * word (and the bytes CQ_FEED_WORD_REACH around it) is kept as it passes.
 *
 * The keep is a guess that is checked, never trusted: the scan gets the
 * kept pages alone only when every value it asks for lies within the note's
 * rebased ranges and every byte it reads was looked at
 * (cq_scan_keep_covers).  Otherwise, a note from another build or a forged
 * one, it decompresses again as before.  A keep that would hold more than
 * its bound gives up and says so.
 *
 * Layer: model.
 */
#ifndef CQ_SCAN_KEEP_H
#define CQ_SCAN_KEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/feed.h"

/* Pages kept for a scan at most: beyond, the keep gives up. */
#define CQ_SCAN_KEEP_MAX_BYTES (32ull << 20)
/* Ranges of values a note may name at most. */
#define CQ_SCAN_KEEP_MAX_RANGES 16

struct cq_scan_keep;

/*
 * A keep for a core whose NT_FILE note is desc (len bytes; NULL: none),
 * whose writable segments lie at file offsets writable[0, nw) ([lo, hi),
 * in any order), whose bytes end at size, with pages of page bytes.  NULL
 * when out of memory.  It keeps nothing until cq_scan_keep_arm.
 */
struct cq_scan_keep *cq_scan_keep_create(const uint8_t *desc, uint64_t len,
                                         const uint64_t (*writable)[2], size_t nw, uint64_t size,
                                         uint64_t page);
void cq_scan_keep_free(struct cq_scan_keep *k);

/*
 * Arms the keep with a note (cq_scan_keep_note's text, from an earlier
 * core): false, and nothing is kept, when it does not parse or names a
 * file this core does not map.
 */
bool cq_scan_keep_arm(struct cq_scan_keep *k, const char *note);

/*
 * Arms it with words[0, n) of this core's own (a probe of its head,
 * libcore/analysis/scan_probe.h): false when n is 0 or over the bound, or
 * a range is empty or holds 0.
 */
bool cq_scan_keep_arm_words(struct cq_scan_keep *k, const struct cq_feed_words *words, size_t n);

/*
 * Bytes [at, at + len) of the core are b, with zeros after them up to the
 * next multiple of the page size; calls put(arg, off, page) once for each
 * page to keep (ascending: off is a page's offset in the core, page its
 * bytes, valid for the call).  Windows come in order, without gaps; a page
 * kept because of a word near its neighbour's edge is put with the window
 * that holds it (the last page of the window before is remembered).  put
 * returning false, more pages than the bound, or a word that cannot be
 * looked at whole (a window that ends inside a writable word) make the
 * keep give up.
 */
void cq_scan_keep_window(struct cq_scan_keep *k, uint64_t at, const uint8_t *b, uint64_t len,
                         bool (*put)(void *arg, uint64_t off, const uint8_t *page), void *arg);

/*
 * cq_scan_keep_window on a thread of its own, when there is more than one
 * CPU, while the stream reads on: b must stay as it is until the next
 * cq_scan_keep_collect, which waits for the window to be looked at and
 * then calls put for its pages on the caller's thread (put NULL: they are
 * dropped, as on an error path before b is freed).  Without a second CPU
 * the window is looked at in cq_scan_keep_collect.
 */
void cq_scan_keep_post(struct cq_scan_keep *k, uint64_t at, const uint8_t *b, uint64_t len);
void cq_scan_keep_collect(struct cq_scan_keep *k,
                          bool (*put)(void *arg, uint64_t off, const uint8_t *page), void *arg);

/*
 * The stream ended (after the last collect): a page still owed is past it,
 * and the checker thread ends.  Without it the keep covers nothing.
 */
void cq_scan_keep_end(struct cq_scan_keep *k);

/*
 * Whether the pages kept are all that a scan of spans[0, n) acting on
 * words[0, nwords) needs: the keep was armed, did not give up, saw the
 * whole stream, every span lies in a writable segment and starts at a
 * multiple of 8 in the file (the words a scan counts from its start are
 * those looked at), and every range of words lies within the note's.
 */
bool cq_scan_keep_covers(const struct cq_scan_keep *k, const struct cq_feed_span *spans, size_t n,
                         const struct cq_feed_words *words, size_t nwords);

/* The pages kept that meet [off, off + len): *first is the first's index; how many. */
size_t cq_scan_keep_pages(const struct cq_scan_keep *k, uint64_t off, uint64_t len,
                          const uint64_t **first);

/* Bytes kept, whether it was armed, and whether it gave up. */
uint64_t cq_scan_keep_bytes(const struct cq_scan_keep *k);
bool cq_scan_keep_armed(const struct cq_scan_keep *k);
bool cq_scan_keep_gave_up(const struct cq_scan_keep *k);

/*
 * The note for words[0, nwords) on this core (malloc'd text), or NULL when
 * a range does not lie in one mapped file (or out of memory): each range
 * as "LO HI PATH\n", LO and HI in hex from the lowest address PATH is
 * mapped at.
 */
char *cq_scan_keep_note(const struct cq_scan_keep *k, const struct cq_feed_words *words,
                        size_t nwords);

#endif
