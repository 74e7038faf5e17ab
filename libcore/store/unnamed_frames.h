/*
 * unnamed_frames.h - the stored frames that have no name yet, and naming
 * them later (`coreq resymbolize`): the module's debuginfo may arrive after
 * the crash was stored, and stored frames keep build-id + offset for that.
 * Only names change (function, file, line); a frame's stack, offset and kind
 * stay, so stack hashes and counts stay too.
 */
#ifndef CQ_UNNAMED_FRAMES_H
#define CQ_UNNAMED_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "libcore/base/error.h"

struct cq_store;

/*
 * Names one frame address: offset is the link-time address stored;
 * return_address says it is a caller's return address (look up offset - 1).
 * Returns true with *function (and *file and *line when known) set, pointing at
 * storage that lives until the next call; false to leave it unnamed.
 */
typedef bool (*cq_frame_namer)(void *ctx, uint64_t offset, bool return_address,
                               const char **function, const char **file, int *line);

/* Calls fn with every module (id, build-id hex) that has frames without a name. */
struct cq_error *
cq_store_unnamed_modules(struct cq_store *store,
                         void (*fn)(void *ctx, int64_t module_id, const char *build_id), void *ctx);

/*
 * Names module_id's unnamed frames with namer, in one transaction; *named
 * counts the frames that got a name.
 */
struct cq_error *cq_store_name_frames(struct cq_store *store, int64_t module_id,
                                      cq_frame_namer namer, void *ctx, int64_t *named);

#endif
