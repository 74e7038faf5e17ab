/*
 * runtime_table.c - the table of async runtimes (runtime.h): every
 * runtime_list.h line, in the order they decode and their suspended stacks
 * are listed.  Ownership does not hang on the order: every runtime claims
 * its futures before any decodes (a boxed task's future is tokio's, not a
 * lone `dyn Future`'s).  Adding a runtime: one file in unwind/async/
 * defining its `const struct cq_async_runtime`, and one line in
 * runtime_list.h.
 */
#include "unwind/async/runtime.h"

#ifdef CQ_TEST_RUNTIMES
#define TEST_RUNTIME(name) RUNTIME(name)
#else
#define TEST_RUNTIME(name)
#endif
#define RUNTIME(name) extern const struct cq_async_runtime name;
#include "unwind/async/runtime_list.h"
#undef RUNTIME
static const struct cq_async_runtime *const runtimes[] = {
#define RUNTIME(name) &name,
#include "unwind/async/runtime_list.h"
#undef RUNTIME
};

const struct cq_async_runtime *const *cq_async_runtimes(size_t *n)
{
	*n = sizeof(runtimes) / sizeof(runtimes[0]);
	return runtimes;
}
