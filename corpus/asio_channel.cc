// asio_channel.cc: C++20 coroutines of Debian's standalone Asio 1.22
// (libasio-dev) parked on an experimental::channel and on a strand, with a
// crash in a coroutine running on that strand.  Issue 33.
//
// What it leaves behind, when it crashes (SIGSEGV, a write to address 0 in
// crash_now), all on the main thread's io_context:
//
//   parked chain R (two awaitables, receiving from channel `ch`, empty):
//       recv_leaf   co_await ch.async_receive       (AWAIT:recv_leaf)
//       recv_top    co_await recv_leaf(..)          (AWAIT:recv_top)
//   parked chain S (one awaitable, receiving from the same channel):
//       recv_solo   co_await ch.async_receive       (AWAIT:recv_solo)
//   parked chain W (two awaitables, sending on channel `full`, which has
//   no buffer and no receiver):
//       send_leaf   co_await full.async_send        (AWAIT:send_leaf)
//       send_top    co_await send_leaf(..)          (AWAIT:send_top)
//   parked chain Q (two awaitables, waiting for the strand `s`, which the
//   crashing chain holds): strand_leaf posts to the strand; its completion
//   waits in the strand's queue behind the running crash chain.
//       strand_leaf co_await asio::post(s, ..)      (AWAIT:strand_leaf)
//       strand_top  co_await strand_leaf(..)        (AWAIT:strand_top)
//   the crashed thread: crash_now <- crash_leaf (running on the strand)
//       <- crash_mid (AWAIT:crash_mid) <- crash_top (AWAIT:crash_top)
//       <- Asio's pump <- ... strand invoker ... <- io_context::run <- main
//
// Order: main spawns R, S, W and Q on the io_context and the crash chain
// on the strand, which posts the strand's invoker to the io_context at
// once; R, S, W and Q run first (the io_context runs handlers in order)
// and park; Q's post finds the strand scheduled and waits in its queue;
// then the invoker runs the crash chain, which crashes without yielding.
// Each step is printed (START / AWAIT lines) for the tests to read.
#include <asio.hpp>
#include <asio/experimental/channel.hpp>
#include <cstdio>

#define NOINLINE __attribute__((noinline, noipa))

using channel = asio::experimental::channel<void(asio::error_code, int)>;
using strand = asio::strand<asio::io_context::executor_type>;

NOINLINE static void crash_now(int depth)
{
	std::printf("CRASH in crash_leaf, %d awaits deep\n", depth);
	std::fflush(stdout);
	*(volatile int *)nullptr = depth;
	asm volatile("");
}

static asio::awaitable<int> recv_leaf(channel &ch)
{
	std::printf("AWAIT recv_leaf async_receive\n");
	int v = co_await ch.async_receive(asio::use_awaitable); // AWAIT:recv_leaf
	co_return v;
}

static asio::awaitable<void> recv_top(channel &ch)
{
	std::printf("AWAIT recv_top recv_leaf\n");
	int v = co_await recv_leaf(ch); // AWAIT:recv_top
	std::printf("got %d\n", v);
}

static asio::awaitable<void> recv_solo(channel &ch)
{
	std::printf("AWAIT recv_solo async_receive\n");
	int v = co_await ch.async_receive(asio::use_awaitable); // AWAIT:recv_solo
	std::printf("got %d\n", v);
}

static asio::awaitable<void> send_leaf(channel &full, int v)
{
	std::printf("AWAIT send_leaf async_send\n");
	co_await full.async_send(asio::error_code{}, v, asio::use_awaitable); // AWAIT:send_leaf
}

static asio::awaitable<void> send_top(channel &full)
{
	std::printf("AWAIT send_top send_leaf\n");
	co_await send_leaf(full, 7); // AWAIT:send_top
}

static asio::awaitable<void> strand_leaf(strand &s)
{
	std::printf("AWAIT strand_leaf post\n");
	co_await asio::post(s, asio::use_awaitable); // AWAIT:strand_leaf
}

static asio::awaitable<void> strand_top(strand &s)
{
	std::printf("AWAIT strand_top strand_leaf\n");
	co_await strand_leaf(s); // AWAIT:strand_top
}

static asio::awaitable<int> crash_leaf(int x)
{
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
	channel ch(io, 0), full(io, 0);
	strand s = asio::make_strand(io.get_executor());
	std::printf("START recv_top\n");
	asio::co_spawn(io, recv_top(ch), asio::detached);
	std::printf("START recv_solo\n");
	asio::co_spawn(io, recv_solo(ch), asio::detached);
	std::printf("START send_top\n");
	asio::co_spawn(io, send_top(full), asio::detached);
	std::printf("START strand_top\n");
	asio::co_spawn(io, strand_top(s), asio::detached);
	std::printf("START crash_top\n");
	std::fflush(stdout);
	asio::co_spawn(s, crash_top(1), asio::detached);
	io.run();
	return 0;
}
