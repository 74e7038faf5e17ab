// async_coro.cc: corpus program (C++20 coroutines, folly's async-stack ABI
// through async_task.h).  `async_coro SHAPE` crashes (SIGSEGV, a write to
// address 0 in a plain function) in one shape; the merged stacks each shape
// must give are listed in corpus/README.md and tests/e2e/test_async.py.
//
//   same       main -> run_same -> blocking_wait(outer) on this thread;
//              outer -> middle -> inner (co_await), inner calls crash_same.
//   cross      main -> run_cross -> blocking_wait(outer2); outer2 hops to the
//              executor thread and there -> middle2 -> inner2 -> crash_cross.
//              main sleeps in blocking_wait meanwhile.
//   nested     main -> run_nested -> blocking_wait(nest_outer); nest_outer
//              calls plain_bridge, which does blocking_wait(nest_inner);
//              nest_inner calls crash_nested.  Two roots, linked by nextRoot.
//   detached   start_detached(det_outer) on the executor; det_outer ->
//              det_inner -> crash_detached.  The chain has no parent.
//   adapter    main -> run_adapter -> sync_wait_adapted(ad_outer) inlined:
//              four async frames (the task's and three adapters') return
//              into run_adapter; ad_outer -> ad_inner -> crash_adapter.
//   adapter_call  the same through sync_wait_layers, not inlined: three
//              adapter frames and the root's return into run_adapter_call,
//              the task's frame into sync_wait_layers.
//   heap MIB   (for make bench) MIB MiB of heap written with a pattern, the
//              suspended shape's detached chain, then a crash in main.
//   suspended  two chains suspended on events that are never set: one
//              detached (sus_outer -> sus_middle -> sus_inner, on the
//              executor) and one that a thread "waiter" blocks on
//              (waiter_main -> run_waiter -> blocking_wait(w_outer) ->
//              w_inner).  Then main -> run_suspended -> crash_suspended.
//
// Compiled with -DDUMMY_KEYS=N, it creates N pthread keys before the async
// stack key (so that key is >= 32).  Every thread other than the crashing
// one is asleep when it crashes.
#include "common.h"

#include "async_task.h"

#include <cstring>

#ifndef DUMMY_KEYS
#define DUMMY_KEYS 0
#endif

static Executor executor;
static Event never_a, never_b;

static void *executor_main(void *arg)
{
	pthread_setname_np(pthread_self(), "executor");
	static_cast<Executor *>(arg)->run();
	return nullptr;
}

CHAIN static void crash_now(int threads)
{
	wait_threads_asleep(threads);
	*(volatile int *)nullptr = 1;
}

// ---- same ------------------------------------------------------------------

CHAIN void crash_same()
{
	crash_now(1);
	KEEP_FRAME();
}

Task inner()
{
	crash_same();
	co_return;
}

Task middle()
{
	co_await inner();
}

Task outer()
{
	co_await middle();
}

CHAIN void run_same()
{
	blocking_wait(outer());
	KEEP_FRAME();
}

// ---- cross -----------------------------------------------------------------

CHAIN void crash_cross()
{
	crash_now(2);
	KEEP_FRAME();
}

Task inner2()
{
	crash_cross();
	co_return;
}

Task middle2()
{
	co_await inner2();
}

Task outer2()
{
	co_await schedule(&executor);
	co_await middle2();
}

CHAIN void run_cross()
{
	executor.start(executor_main);
	blocking_wait(outer2());
	KEEP_FRAME();
}

// ---- nested ----------------------------------------------------------------

CHAIN void crash_nested()
{
	crash_now(1);
	KEEP_FRAME();
}

Task nest_inner()
{
	crash_nested();
	co_return;
}

CHAIN void plain_bridge()
{
	blocking_wait(nest_inner());
	KEEP_FRAME();
}

Task nest_outer()
{
	plain_bridge();
	co_return;
}

CHAIN void run_nested()
{
	blocking_wait(nest_outer());
	KEEP_FRAME();
}

// ---- detached --------------------------------------------------------------

CHAIN void crash_detached()
{
	crash_now(2);
	KEEP_FRAME();
}

Task det_inner()
{
	crash_detached();
	co_return;
}

Task det_outer()
{
	co_await det_inner();
}

CHAIN void park_forever()
{
	Completion never;
	wait_for(&never);
	KEEP_FRAME();
}

CHAIN void run_detached()
{
	executor.start(executor_main);
	start_detached(det_outer(), &executor);
	park_forever();
	KEEP_FRAME();
}

// ---- suspended -------------------------------------------------------------

Task sus_inner()
{
	co_await never_a;
}

Task sus_middle()
{
	co_await sus_inner();
}

Task sus_outer()
{
	co_await sus_middle();
}

Task w_inner()
{
	co_await never_b;
}

Task w_outer()
{
	co_await w_inner();
}

CHAIN void run_waiter()
{
	blocking_wait(w_outer());
	KEEP_FRAME();
}

CHAIN static void *waiter_main(void *)
{
	pthread_setname_np(pthread_self(), "waiter");
	run_waiter();
	KEEP_FRAME();
	return nullptr;
}

CHAIN void crash_suspended()
{
	crash_now(3);
	KEEP_FRAME();
}

CHAIN void run_suspended()
{
	executor.start(executor_main);
	start_detached(sus_outer(), &executor);
	pthread_t waiter;
	if (pthread_create(&waiter, nullptr, waiter_main, nullptr) != 0)
		abort();
	// Both chains are suspended once their events have a waiter.
	while (!never_a.waiter || !never_b.waiter)
		corpus_sleep_ms(1);
	crash_suspended();
	KEEP_FRAME();
}

// ---- adapter ---------------------------------------------------------------

CHAIN void crash_adapter()
{
	crash_now(1);
	KEEP_FRAME();
}

Task ad_inner()
{
	crash_adapter();
	co_return;
}

Task ad_outer()
{
	co_await ad_inner();
}

CHAIN void run_adapter()
{
	sync_wait_adapted(ad_outer());
	KEEP_FRAME();
}

CHAIN void run_adapter_call()
{
	AsyncStackFrame layer[ADAPTER_LAYERS + 1];
	link_layers(layer);
	sync_wait_layers(ad_outer(), layer);
	KEEP_FRAME();
}

// ---- heap (make bench: the cookie scan over a large heap) --------------------

CHAIN void crash_heap(long mib)
{
	const size_t chunk = 1 << 20;
	for (long i = 0; i < mib; i++) {
		uint64_t *p = static_cast<uint64_t *>(malloc(chunk));
		if (!p)
			abort();
		for (size_t w = 0; w < chunk / 8; w++)
			p[w] = 0x0101010101010101ull * (uint64_t)(i + 1) + w;
	}
	executor.start(executor_main);
	start_detached(sus_outer(), &executor);
	while (!never_a.waiter)
		corpus_sleep_ms(1);
	crash_now(2);
	KEEP_FRAME();
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "heap") == 0) {
		async_stack_init(DUMMY_KEYS);
		crash_heap(atol(argv[2]));
		return 1;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: async_coro same|cross|nested|detached|suspended|adapter|adapter_call | heap MIB\n");
		return 2;
	}
	async_stack_init(DUMMY_KEYS);
	const char *shape = argv[1];
	if (strcmp(shape, "same") == 0)
		run_same();
	else if (strcmp(shape, "cross") == 0)
		run_cross();
	else if (strcmp(shape, "nested") == 0)
		run_nested();
	else if (strcmp(shape, "detached") == 0)
		run_detached();
	else if (strcmp(shape, "suspended") == 0)
		run_suspended();
	else if (strcmp(shape, "adapter") == 0)
		run_adapter();
	else if (strcmp(shape, "adapter_call") == 0)
		run_adapter_call();
	else {
		fprintf(stderr, "async_coro: unknown shape %s\n", shape);
		return 2;
	}
	KEEP_FRAME();
	return 1;
}
