// cxx_exit.cc: libunifex's release shape of a task that hops to another
// thread (issue 50), written from the standard: cxx_hop.cc's task type (the
// continuation in the promise, symmetric transfer), a worker thread that
// resumes what is queued on it, an awaiter that keeps the awaited task as a
// tagged word (libunifex's), and an at-exit coroutine as libunifex's
// schedule() makes one (unifex::at_coroutine_exit): made with the task and
// never started, put between the task and its awaiter (the task's
// continuation becomes the at-exit coroutine, whose own promise keeps the
// awaiter), to run when the task completes and then resume the awaiter.
//
// What it leaves behind, when the worker crashes (SIGSEGV, a write to
// address 0 in crash_now):
//
//   worker (crashed): crash_now <- inner_task (running) <- mid_task
//       (AWAIT:mid_task) <- outer_task (AWAIT:outer_task) <- Worker::run
//       (at -O0 mid_task's actor calls inner_task's: mid_task is a native
//       frame there, outer_task an async one)
//   main: blocked in sync_wait (a condition variable)
//   the at-exit coroutine: never started, listed in no chain
//
// Before the crash crash_now writes ./oracle, the program's own record:
//
//   frame NAME ADDR     the coroutine frame of NAME (inner_task, mid_task,
//                       outer_task, at_exit) at ADDR
//   thread TID worker   the worker's tid (the crashing thread)
//   chain crash_now inner_task mid_task outer_task
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <coroutine>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#define NOINLINE __attribute__((noinline, noipa))

// The coroutine that runs when a task completes, then resumes its awaiter.
struct AtExit {
	struct promise_type {
		std::coroutine_handle<> continuation;
		AtExit get_return_object()
		{
			return AtExit{std::coroutine_handle<promise_type>::from_promise(*this)};
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
		void return_void()
		{
		}
		void unhandled_exception()
		{
			std::terminate();
		}
	};
	std::coroutine_handle<promise_type> handle;
};

static AtExit at_exit()
{
	co_return;
}

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

	// Awaited, the task keeps its coroutine only as a tagged word (low bit
	// set), as libunifex's awaiter does: the awaiting frame holds no plain
	// pointer to the awaited one.
	std::coroutine_handle<promise_type> handle;
	uintptr_t tagged = 0;

	explicit Task(std::coroutine_handle<promise_type> h) : handle(h)
	{
	}
	Task(Task &&o) noexcept
	    : handle(std::exchange(o.handle, {})), tagged(std::exchange(o.tagged, 0))
	{
	}
	Task(const Task &) = delete;
	~Task()
	{
		if (handle)
			handle.destroy();
		else if (tagged)
			untagged().destroy();
	}
	std::coroutine_handle<promise_type> untagged() const
	{
		return std::coroutine_handle<promise_type>::from_address(
		    reinterpret_cast<void *>(tagged & ~uintptr_t{1}));
	}
	bool await_ready() noexcept
	{
		return false;
	}
	std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept
	{
		std::coroutine_handle<promise_type> h = std::exchange(handle, {});
		tagged = reinterpret_cast<uintptr_t>(h.address()) | 1;
		h.promise().continuation = awaiting;
		return h;
	}
	T await_resume()
	{
		return untagged().promise().value;
	}
};

// The frames, as the coroutines see them (external: -O2 keeps the stores).
void *frame_inner, *frame_mid, *frame_outer, *frame_at_exit;
std::atomic<bool> main_waiting{false};

// co_await Here{&p}: p = this coroutine's frame, without suspending.
struct Here {
	void **at;
	bool await_ready() const noexcept
	{
		return false;
	}
	bool await_suspend(std::coroutine_handle<> h) noexcept
	{
		*at = h.address();
		return false;
	}
	void await_resume() const noexcept
	{
	}
};

// co_await ExitHook{}: puts a new at-exit coroutine between this task and its awaiter.
struct ExitHook {
	bool await_ready() const noexcept
	{
		return false;
	}
	bool await_suspend(std::coroutine_handle<Task<int>::promise_type> h) noexcept
	{
		AtExit e = at_exit();
		e.handle.promise().continuation = h.promise().continuation;
		h.promise().continuation = e.handle;
		frame_at_exit = e.handle.address();
		return false;
	}
	void await_resume() const noexcept
	{
	}
};

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
	while (!main_waiting)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	FILE *o = std::fopen("oracle.tmp", "w");
	if (!o)
		std::exit(3);
	std::fprintf(o, "frame inner_task %p\nframe mid_task %p\nframe outer_task %p\n", frame_inner,
	             frame_mid, frame_outer);
	std::fprintf(o, "frame at_exit %p\n", frame_at_exit);
	std::fprintf(o, "thread %ld worker\n", (long)syscall(SYS_gettid));
	std::fprintf(o, "chain crash_now inner_task mid_task outer_task\n");
	std::fclose(o);
	if (std::rename("oracle.tmp", "oracle") != 0)
		std::exit(3);
	*(volatile int *)nullptr = depth;
	asm volatile("");
}

static Task<int> inner_task(int x)
{
	co_await Here{&frame_inner};
	crash_now(x);
	co_return x;
}

static Task<int> mid_task(Worker &w, int x)
{
	co_await Here{&frame_mid};
	co_await ExitHook{};
	co_await Hop{w};
	int v = co_await inner_task(x + 1); // AWAIT:mid_task
	co_return v;
}

static Task<int> outer_task(Worker &w, int x)
{
	co_await Here{&frame_outer};
	int v = co_await mid_task(w, x + 1); // AWAIT:outer_task
	co_return v;
}

std::mutex done_m;
std::condition_variable done_cv;
template <class T> NOINLINE static T sync_wait(Task<T> task)
{
	std::coroutine_handle<typename Task<T>::promise_type> h = task.handle;
	h.resume();
	std::unique_lock<std::mutex> l(done_m);
	main_waiting = true;
	while (!h.done())
		done_cv.wait(l);
	return h.promise().value;
}

static Worker worker;

NOINLINE static void run_worker()
{
	worker.run();
}

int main()
{
	std::thread t(run_worker);
	return sync_wait(outer_task(worker, 1));
}
