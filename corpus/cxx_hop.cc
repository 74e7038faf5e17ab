// cxx_hop.cc: the task type of cxx_task.cc (written from the standard: the
// continuation in the promise, symmetric transfer) with a hop to another
// thread, in the shape of libunifex's schedule() and cppcoro's
// resume_on(): `co_await Hop{worker}` queues the coroutine's handle on a
// worker thread, which resumes it.  Two chains of the same coroutines hop
// to two workers; the same coroutine types then run on two threads at
// once.  Issue 33.
//
// What it leaves behind, when worker 1 crashes (SIGSEGV, a write to
// address 0 in crash_now):
//
//   worker 1 (crashed): crash_now <- hop_leaf (running) <- hop_mid
//       (AWAIT:hop_mid) <- hop_top (AWAIT:hop_top) <- Worker::run
//   worker 2 (blocked in block_now): block_now <- hop_leaf (running)
//       <- hop_mid <- hop_top <- Worker::run
//   parked chain (two coroutines, parked on event_b, on no thread):
//       wait_b     co_await event_b            (AWAIT:wait_b)
//       hold_b     co_await wait_b(..)         (AWAIT:hold_b)
//   main: blocked in sync_wait (a condition variable), after hop_top's
//       first resume returned to it.
//
// Each step is printed (START / AWAIT / HOP lines).
#include <atomic>
#include <condition_variable>
#include <coroutine>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#define NOINLINE __attribute__((noinline, noipa))

template <class T> struct Task {
	struct promise_type {
		std::coroutine_handle<> continuation;
		T value{};
		Task get_return_object()
		{
			return Task{std::coroutine_handle<promise_type>::from_promise(*this)};
		}
		std::suspend_always initial_suspend() noexcept
		{
			return {};
		}
		struct FinalAwaiter {
			bool await_ready() noexcept
			{
				return false;
			}
			std::coroutine_handle<>
			await_suspend(std::coroutine_handle<promise_type> h) noexcept
			{
				std::coroutine_handle<> c = h.promise().continuation;
				return c ? c : std::noop_coroutine();
			}
			void await_resume() noexcept
			{
			}
		};
		FinalAwaiter final_suspend() noexcept
		{
			return {};
		}
		void return_value(T v)
		{
			value = v;
		}
		void unhandled_exception()
		{
			std::terminate();
		}
	};

	std::coroutine_handle<promise_type> handle;

	explicit Task(std::coroutine_handle<promise_type> h) : handle(h)
	{
	}
	Task(Task &&o) noexcept : handle(std::exchange(o.handle, {}))
	{
	}
	Task(const Task &) = delete;
	~Task()
	{
		if (handle)
			handle.destroy();
	}

	bool await_ready() noexcept
	{
		return false;
	}
	std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept
	{
		handle.promise().continuation = awaiting;
		return handle;
	}
	T await_resume()
	{
		return handle.promise().value;
	}
};

// One waiter; set() would resume it.  The chains here are never resumed.
struct Event {
	std::coroutine_handle<> waiter;
	bool await_ready() const noexcept
	{
		return false;
	}
	void await_suspend(std::coroutine_handle<> h) noexcept
	{
		waiter = h;
	}
	void await_resume() const noexcept
	{
	}
};

// External linkage, so that -O2 keeps the stores (gdb reads them).
Event event_b;
std::atomic<bool> blocked{false};
std::atomic<bool> main_waiting{false}; // main is back in sync_wait, out of the chain

// A thread that resumes the coroutines queued on it, in order.
struct Worker {
	std::mutex m;
	std::condition_variable cv;
	std::deque<std::coroutine_handle<>> q;
	NOINLINE void post(std::coroutine_handle<> h)
	{
		std::lock_guard<std::mutex> g(m);
		q.push_back(h);
		cv.notify_one();
	}
	NOINLINE void run()
	{
		for (;;) {
			std::coroutine_handle<> h;
			{
				std::unique_lock<std::mutex> l(m);
				while (q.empty())
					cv.wait(l);
				h = q.front();
				q.pop_front();
			}
			h.resume();
		}
	}
};

// co_await Hop{w}: continue on w's thread.
struct Hop {
	Worker &w;
	bool await_ready() const noexcept
	{
		return false;
	}
	void await_suspend(std::coroutine_handle<> h)
	{
		w.post(h);
	}
	void await_resume() const noexcept
	{
	}
};

NOINLINE static void crash_now(int depth)
{
	std::printf("CRASH in hop_leaf, %d awaits deep\n", depth);
	std::fflush(stdout);
	*(volatile int *)nullptr = depth;
	asm volatile("");
}

NOINLINE static void block_now(int depth)
{
	std::printf("BLOCK in hop_leaf, %d awaits deep\n", depth);
	std::fflush(stdout);
	blocked = true;
	for (;;)
		std::this_thread::sleep_for(std::chrono::hours(1));
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

static Task<int> hop_leaf(Worker &w, int x, bool crash)
{
	std::printf("HOP hop_leaf\n");
	co_await Hop{w};
	while (crash && !main_waiting)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	if (crash)
		crash_now(x);
	else
		block_now(x);
	co_return x;
}

static Task<int> hop_mid(Worker &w, int x, bool crash)
{
	std::printf("AWAIT hop_mid hop_leaf\n");
	int v = co_await hop_leaf(w, x + 1, crash); // AWAIT:hop_mid
	co_return v;
}

static Task<int> hop_top(Worker &w, int x, bool crash)
{
	std::printf("AWAIT hop_top hop_mid\n");
	int v = co_await hop_mid(w, x + 1, crash); // AWAIT:hop_top
	co_return v;
}

// Starts a task with no one awaiting it; *keep owns its frame.
template <class T> NOINLINE static void start(Task<T> *keep)
{
	keep->handle.resume();
}

// Runs task until it finishes on whichever thread, and returns its value
// (this chain never finishes: worker 1 crashes first).
std::mutex done_m;
std::condition_variable done_cv;
template <class T> NOINLINE static T sync_wait(Task<T> task)
{
	task.handle.resume();
	std::unique_lock<std::mutex> l(done_m);
	main_waiting = true;
	while (!task.handle.done())
		done_cv.wait(l);
	return task.handle.promise().value;
}

static Worker w1, w2;

NOINLINE static void run_w1()
{
	w1.run();
}

NOINLINE static void run_w2()
{
	w2.run();
}

int main()
{
	std::thread t1(run_w1), t2(run_w2);
	static Task<int> chain_b = hold_b(7);
	std::printf("START hold_b\n");
	start(&chain_b);
	static Task<int> chain_2 = hop_top(w2, 1, false);
	std::printf("START hop_top (worker 2)\n");
	start(&chain_2);
	while (!blocked)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	std::printf("START hop_top (worker 1, sync_wait)\n");
	std::fflush(stdout);
	return sync_wait(hop_top(w1, 1, true));
}
