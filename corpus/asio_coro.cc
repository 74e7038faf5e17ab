// asio_coro.cc: C++20 coroutines of Debian's standalone Asio (libasio-dev,
// asio::awaitable through co_spawn and use_awaitable), which follows no
// async-stack ABI: Asio's pump (awaitable_thread::pump) resumes the
// innermost awaitable directly, so the coroutines awaiting it are on no
// native stack.  Each awaitable frame's promise (awaitable_frame_base)
// holds caller_, a pointer to the awaiting coroutine's promise.  Issue 33.
//
// What it leaves behind, when it crashes (SIGSEGV, a write to address 0 in
// crash_now), all on the main thread's io_context:
//
//   parked chain T (three awaitables, on a steady_timer one hour away):
//       timer_leaf  co_await timer.async_wait     (AWAIT:timer_leaf)
//       timer_mid   co_await timer_leaf(..)       (AWAIT:timer_mid)
//       timer_top   co_await timer_mid(..)        (AWAIT:timer_top)
//   parked chain P (two awaitables, on a read of an empty pipe):
//       pipe_leaf   co_await async_read_some      (AWAIT:pipe_leaf)
//       pipe_top    co_await pipe_leaf(..)        (AWAIT:pipe_top)
//   the crashed thread: crash_now <- crash_leaf (running) <- crash_mid
//       (AWAIT:crash_mid) <- crash_top (AWAIT:crash_top) <- Asio's pump
//       <- ... <- io_context::run <- main
//
// Each step is printed (START / AWAIT lines) for the tests to read.
#include <asio.hpp>
#include <chrono>
#include <cstdio>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noipa))

NOINLINE static void crash_now(int depth)
{
	std::printf("CRASH in crash_leaf, %d awaits deep\n", depth);
	std::fflush(stdout);
	*(volatile int *)nullptr = depth;
	asm volatile("");
}

static asio::awaitable<void> timer_leaf(asio::steady_timer &t)
{
	std::printf("AWAIT timer_leaf async_wait\n");
	co_await t.async_wait(asio::use_awaitable); // AWAIT:timer_leaf
}

static asio::awaitable<void> timer_mid(asio::steady_timer &t)
{
	std::printf("AWAIT timer_mid timer_leaf\n");
	co_await timer_leaf(t); // AWAIT:timer_mid
}

static asio::awaitable<void> timer_top(asio::steady_timer &t)
{
	std::printf("AWAIT timer_top timer_mid\n");
	co_await timer_mid(t); // AWAIT:timer_top
}

static asio::awaitable<size_t> pipe_leaf(asio::posix::stream_descriptor &d)
{
	char buf[16];
	std::printf("AWAIT pipe_leaf async_read_some\n");
	size_t n = co_await d.async_read_some(asio::buffer(buf), asio::use_awaitable); // AWAIT:pipe_leaf
	co_return n;
}

static asio::awaitable<void> pipe_top(asio::posix::stream_descriptor &d)
{
	std::printf("AWAIT pipe_top pipe_leaf\n");
	size_t n = co_await pipe_leaf(d); // AWAIT:pipe_top
	std::printf("read %zu\n", n);
}

static asio::awaitable<int> crash_leaf(int x)
{
	// Let the other two chains park first.
	co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
	crash_now(x);
	co_return x;
}

static asio::awaitable<int> crash_mid(int x)
{
	std::printf("AWAIT crash_mid crash_leaf\n");
	int v = co_await crash_leaf(x + 1); // AWAIT:crash_mid
	co_return v;
}

static asio::awaitable<void> crash_top(int x)
{
	std::printf("AWAIT crash_top crash_mid\n");
	int v = co_await crash_mid(x + 1); // AWAIT:crash_top
	std::printf("%d\n", v);
}

int main()
{
	asio::io_context io;
	asio::steady_timer timer(io, std::chrono::hours(1));
	int fds[2];
	if (pipe(fds) != 0)
		return 1;
	asio::posix::stream_descriptor rd(io, fds[0]);
	std::printf("START timer_top\n");
	asio::co_spawn(io, timer_top(timer), asio::detached);
	std::printf("START pipe_top\n");
	asio::co_spawn(io, pipe_top(rd), asio::detached);
	std::printf("START crash_top\n");
	std::fflush(stdout);
	asio::co_spawn(io, crash_top(1), asio::detached);
	io.run();
	return 0;
}
