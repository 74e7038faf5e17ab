// cxx_task.cc: C++20 coroutines through a task type written from the
// standard alone, in the shape of cppcoro's and libunifex's tasks, with no
// async-stack ABI (no folly records): all a debugger has is gcc's coroutine
// frames.  Issue 33.
//
// Task<T> is lazy (initial_suspend is suspend_always); `co_await task`
// stores the awaiting coroutine's handle as the awaited task's
// continuation (in its promise) and transfers to it symmetrically;
// final_suspend transfers back to the continuation.  sync_wait(task)
// resumes the task from a plain function and returns its value.  Event is
// a one-waiter event: `co_await ev` stores the waiter's handle in ev.
//
// What it leaves behind, when main crashes (SIGSEGV, a write to address 0
// in crash_now):
//
//   parked chain A (three coroutines, parked on event_a):
//       park_leaf  co_await event_a            (AWAIT:park_leaf)
//       park_mid   co_await park_leaf(..)      (AWAIT:park_mid)
//       park_top   co_await park_mid(..)       (AWAIT:park_top)
//   parked chain B (two coroutines, parked on event_b):
//       wait_b     co_await event_b            (AWAIT:wait_b)
//       hold_b     co_await wait_b(..)         (AWAIT:hold_b)
//   the crashed thread: crash_now <- inner (running) <- mid (AWAIT:mid)
//       <- outer (AWAIT:outer) <- sync_wait <- main
//
// At -O0 g++ keeps each awaiting coroutine's actor on the native stack
// (symmetric transfer is a call); at -O2 it is a tail call, so the native
// stack holds inner's actor only.  Each step is printed (START / AWAIT
// lines) for the tests to read.
//
// `cxx_task heap MIB` (for make bench) first writes MIB MiB of heap with
// pseudo-random words, then leaves the same chains and crashes the same way.
//
// With CXX_TASK_DONE defined (cxx_done.cc includes this file so), the task
// type has libunifex's release shape besides: see cxx_done.cc.
#include <coroutine>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <utility>

#define NOINLINE __attribute__((noinline, noipa))

#ifdef CXX_TASK_DONE
// libunifex's release shape.  Every task's promise owns a coroutine for its
// done path, made with the promise and never started (unifex's
// unhandled_done); its frame holds the promise's address.  An awaited task
// keeps, next to its continuation, the awaiting task's done coroutine
// (unifex's continuation_handle).  Those frames await nothing.
struct DoneCoro {
	struct promise_type {
		DoneCoro get_return_object()
		{
			return DoneCoro{std::coroutine_handle<promise_type>::from_promise(*this)};
		}
		std::suspend_always initial_suspend() noexcept { return {}; }
		std::suspend_always final_suspend() noexcept { return {}; }
		void return_void() {}
		void unhandled_exception() { std::terminate(); }
	};
	std::coroutine_handle<promise_type> handle;
};

static DoneCoro unhandled_done(void *owner)
{
	std::printf("DONE %p\n", owner);
	co_return;
}
#endif

template <class T> struct Task {
	struct promise_type {
		std::coroutine_handle<> continuation;
		T value{};
#ifdef CXX_TASK_DONE
		std::coroutine_handle<> continuation_done;
		DoneCoro done = unhandled_done(this);
		~promise_type() { done.handle.destroy(); }
#endif
		Task get_return_object()
		{
			return Task{std::coroutine_handle<promise_type>::from_promise(*this)};
		}
		std::suspend_always initial_suspend() noexcept { return {}; }
		struct FinalAwaiter {
			bool await_ready() noexcept { return false; }
			std::coroutine_handle<>
			await_suspend(std::coroutine_handle<promise_type> h) noexcept
			{
				std::coroutine_handle<> c = h.promise().continuation;
				return c ? c : std::noop_coroutine();
			}
			void await_resume() noexcept {}
		};
		FinalAwaiter final_suspend() noexcept { return {}; }
		void return_value(T v) { value = v; }
		void unhandled_exception() { std::terminate(); }
	};

	std::coroutine_handle<promise_type> handle;

	explicit Task(std::coroutine_handle<promise_type> h) : handle(h) {}
	Task(Task &&o) noexcept : handle(std::exchange(o.handle, {})) {}
	Task(const Task &) = delete;
	~Task()
	{
		if (handle)
			handle.destroy();
	}

	bool await_ready() noexcept { return false; }
#ifdef CXX_TASK_DONE
	template <class P>
	std::coroutine_handle<> await_suspend(std::coroutine_handle<P> awaiting) noexcept
	{
		handle.promise().continuation = awaiting;
		handle.promise().continuation_done = awaiting.promise().done.handle;
		return handle;
	}
#else
	std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept
	{
		handle.promise().continuation = awaiting;
		return handle;
	}
#endif
	T await_resume() { return handle.promise().value; }
};

// One waiter; set() would resume it.  The chains here are never resumed.
struct Event {
	std::coroutine_handle<> waiter;
	bool await_ready() const noexcept { return false; }
	void await_suspend(std::coroutine_handle<> h) noexcept { waiter = h; }
	void await_resume() const noexcept {}
};

// External linkage, so that -O2 keeps the stores to them (gdb reads them).
Event event_a, event_b;

NOINLINE static void crash_now(int depth)
{
	std::printf("CRASH in inner, %d awaits deep\n", depth);
	std::fflush(stdout);
	*(volatile int *)nullptr = depth;
	asm volatile("");
}

static Task<int> park_leaf(int x)
{
	std::printf("AWAIT park_leaf event_a\n");
	co_await event_a; // AWAIT:park_leaf
	co_return x + 1;
}

static Task<int> park_mid(int x)
{
	std::printf("AWAIT park_mid park_leaf\n");
	int v = co_await park_leaf(x * 2); // AWAIT:park_mid
	co_return v + 1;
}

static Task<int> park_top(int x)
{
	std::printf("AWAIT park_top park_mid\n");
	int v = co_await park_mid(x + 3); // AWAIT:park_top
	co_return v;
}

static Task<int> wait_b(int x)
{
	std::printf("AWAIT wait_b event_b\n");
	co_await event_b; // AWAIT:wait_b
	co_return x;
}

static Task<int> hold_b(int x)
{
	std::printf("AWAIT hold_b wait_b\n");
	int v = co_await wait_b(x - 1); // AWAIT:hold_b
	co_return v;
}

static Task<int> inner(int x)
{
	crash_now(x);
	co_return x;
}

static Task<int> mid(int x)
{
	std::printf("AWAIT mid inner\n");
	int v = co_await inner(x + 1); // AWAIT:mid
	co_return v;
}

static Task<int> outer(int x)
{
	std::printf("AWAIT outer mid\n");
	int v = co_await mid(x + 1); // AWAIT:outer
	co_return v;
}

// Runs task on this thread until it finishes (or parks) and returns its value.
template <class T> NOINLINE static T sync_wait(Task<T> task)
{
	task.handle.resume();
	return task.handle.promise().value;
}

// Starts a task with no one awaiting it; the task object stays alive (its
// frame is owned by *keep).
template <class T> NOINLINE static void start(Task<T> *keep)
{
	keep->handle.resume();
}

// MIB MiB of heap, every word written (xorshift64*, never zero).
NOINLINE static uint64_t *fill_heap(size_t mib)
{
	size_t words = mib << 17;
	uint64_t *heap = static_cast<uint64_t *>(std::malloc(words * 8));
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (size_t i = 0; heap && i < words; i++) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		heap[i] = (x * 0x2545f4914f6cdd1dull) | 1;
	}
	return heap;
}

int main(int argc, char **argv)
{
	if (argc == 3 && std::strcmp(argv[1], "heap") == 0)
		(void)*(volatile uint64_t *)fill_heap(std::strtoul(argv[2], nullptr, 10));
	static Task<int> chain_a = park_top(1);
	std::printf("START park_top\n");
	start(&chain_a);
	static Task<int> chain_b = hold_b(7);
	std::printf("START hold_b\n");
	start(&chain_b);
	std::printf("START outer (sync_wait)\n");
	std::fflush(stdout);
	return sync_wait(outer(1));
}
