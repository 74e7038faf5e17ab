/*
 * frame_names.h - the names crash signatures give frames whose function
 * name would split one bug into several buckets: an ifunc variant by its
 * public function, an unnamed library frame by the export covering it or
 * by the library's soname (frame_names.c says why).  Names come from each
 * module's own file, read once per core.
 *
 * Layer: triage.
 */
#ifndef CQ_FRAME_NAMES_H
#define CQ_FRAME_NAMES_H

#include <stddef.h>

#include "libcore/base/error.h"

struct cq_bucket_namer;
struct cq_core;
struct cq_module;
struct cq_stack_frame;

/*
 * Names for frames from one core's module files, each module's exported
 * symbols read once.
 */
struct cq_error *cq_bucket_namer_create(const struct cq_core *core, struct cq_bucket_namer **out);
void cq_bucket_namer_destroy(struct cq_bucket_namer *nm);

/*
 * The alt_name of a frame (see struct cq_bucket_frame in bucket.h), written
 * into buf, or NULL when its function serves as it is.  nm may be NULL.
 */
const char *cq_bucket_alt_name(struct cq_bucket_namer *nm, const struct cq_stack_frame *f,
                               char *buf, size_t cap);

/*
 * The one rule for a library's soname: the DT_SONAME of mod's file when
 * there is one (mod may be NULL: a frame read back from a database), else
 * from the path, to the major version ("libstdc++.so.6.0.30" ->
 * "libstdc++.so.6").
 */
void cq_frame_soname(const struct cq_module *mod, const char *path, char *out, size_t cap);

#endif
