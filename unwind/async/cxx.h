/*
 * cxx.h - what the "cxx" async runtime (unwind/async/cxx.c, C++20
 * coroutines of any library) offers outside the runtime seam: filling the
 * per-build-id cache with a module's coroutine types (coreq cache warm).
 */
#ifndef CQ_ASYNC_CXX_H
#define CQ_ASYNC_CXX_H

#include <stdbool.h>
#include <stddef.h>

#include "libcore/base/error.h"
#include "unwind/target.h"

/*
 * Module m's coroutine types, read from the target's cache or from the
 * module (then cached, through t's cache_put): *types of them (0 for a
 * module without coroutines), *cached when the cache held them already.
 */
struct cq_error *cq_cxx_types_warm(const struct cq_unwind_target *t, size_t m, size_t *types,
                                   bool *cached);

#endif
