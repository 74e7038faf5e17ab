/*
 * runtime_list.h - the async runtimes, one line each, in the order they
 * decode and their suspended stacks are listed (runtime_table.c expands it).
 * Adding a runtime is its file in unwind/async/ and one line here.
 * TEST_RUNTIME: only in the test binaries (built with CQ_TEST_RUNTIMES).
 */
RUNTIME(cq_async_folly)
RUNTIME(cq_async_tokio)
RUNTIME(cq_async_async_task)
RUNTIME(cq_async_rust)
RUNTIME(cq_async_cxx)
TEST_RUNTIME(cq_async_stub)
