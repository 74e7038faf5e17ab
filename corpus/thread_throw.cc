// thread_throw.cc - an uncaught C++ exception thrown in a std::thread:
// std::terminate runs on that thread.  Expected signature: the throwing
// function, then the thread's body (worker_loop), never an address inside
// libstdc++ (its thread start routine has no exported name).
#include <stdexcept>
#include <thread>

__attribute__((noinline)) static void reject_message(int n)
{
	if (n > 0)
		throw std::runtime_error("bad message");
}

__attribute__((noinline)) static void worker_loop()
{
	reject_message(1);
	asm volatile("" ::: "memory");
}

int main()
{
	std::thread t(worker_loop);
	t.join();
	return 0;
}
