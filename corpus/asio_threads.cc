// asio_threads.cc: C++20 coroutines of Debian's standalone Asio on two
// threads, each running its own io_context, with co_spawn called from
// each thread (issue 33): the analyser must keep each thread's chains
// apart, list each parked chain once and merge only the crashed thread's.
//
// What it leaves behind, when main crashes (SIGSEGV, a write to address 0
// in crash_now):
//
//   thread "io-b" (its own io_context, co_spawn called on that thread):
//     parked chain B (two awaitables, on a steady_timer one hour away):
//       b_leaf   co_await timer.async_wait        (AWAIT:b_leaf)
//       b_top    co_await b_leaf(..)              (AWAIT:b_top)
//     running chain (blocked in block_now, sleeping, on io-b):
//       block_now <- block_leaf (running) <- block_top (AWAIT:block_top)
//       <- Asio's pump <- ... <- io_context::run <- run_b
//   main (io_context a, co_spawn called on main):
//     parked chain A (two awaitables, on a steady_timer one hour away):
//       a_leaf   co_await timer.async_wait        (AWAIT:a_leaf)
//       a_top    co_await a_leaf(..)              (AWAIT:a_top)
//     the crashed thread: crash_now <- crash_leaf (running) <- crash_mid
//       (AWAIT:crash_mid) <- crash_top (AWAIT:crash_top) <- Asio's pump
//       <- ... <- io_context::run <- main
//
// crash_leaf waits until io-b's chains have parked and blocked.  Each step
// is printed (START / AWAIT lines).
#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#define NOINLINE __attribute__((noinline, noipa))

static std::atomic<bool> b_parked{false};

NOINLINE static void crash_now(int depth)
{
	std::printf("CRASH in crash_leaf, %d awaits deep\n", depth);
	std::fflush(stdout);
	*(volatile int *)nullptr = depth;
	asm volatile("");
}

// Blocks io-b's thread for good (the process dies first).
NOINLINE static void block_now(int depth)
{
	std::printf("BLOCK in block_leaf, %d awaits deep\n", depth);
	std::fflush(stdout);
	b_parked = true;
	for (;;)
		std::this_thread::sleep_for(std::chrono::hours(1));
}

static asio::awaitable<void> b_leaf(asio::steady_timer &t)
{
	std::printf("AWAIT b_leaf async_wait\n");
	co_await t.async_wait(asio::use_awaitable); // AWAIT:b_leaf
}

static asio::awaitable<void> b_top(asio::steady_timer &t)
{
	std::printf("AWAIT b_top b_leaf\n");
	co_await b_leaf(t); // AWAIT:b_top
}

static asio::awaitable<int> block_leaf(int x)
{
	block_now(x);
	co_return x;
}

static asio::awaitable<void> block_top(int x)
{
	std::printf("AWAIT block_top block_leaf\n");
	int v = co_await block_leaf(x + 1); // AWAIT:block_top
	std::printf("%d\n", v);
}

static asio::awaitable<void> a_leaf(asio::steady_timer &t)
{
	std::printf("AWAIT a_leaf async_wait\n");
	co_await t.async_wait(asio::use_awaitable); // AWAIT:a_leaf
}

static asio::awaitable<void> a_top(asio::steady_timer &t)
{
	std::printf("AWAIT a_top a_leaf\n");
	co_await a_leaf(t); // AWAIT:a_top
}

static asio::awaitable<int> crash_leaf(int x)
{
	// Let both other chains park first.
	while (!b_parked)
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

static void run_b()
{
	asio::io_context io;
	asio::steady_timer timer(io, std::chrono::hours(1));
	std::printf("START b_top\n");
	asio::co_spawn(io, b_top(timer), asio::detached);
	std::printf("START block_top\n");
	asio::co_spawn(io, block_top(1), asio::detached);
	io.run();
}

int main()
{
	std::thread b(run_b);
	asio::io_context io;
	asio::steady_timer timer(io, std::chrono::hours(1));
	std::printf("START a_top\n");
	asio::co_spawn(io, a_top(timer), asio::detached);
	std::printf("START crash_top\n");
	std::fflush(stdout);
	asio::co_spawn(io, crash_top(1), asio::detached);
	io.run();
	b.join();
	return 0;
}
