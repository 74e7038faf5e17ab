// cpp_terminate.cc: corpus program (C++).  Three std::thread workers park on
// a condition variable; then main -> thrower throws a std::runtime_error that
// nothing catches, so __cxa_throw calls std::terminate, which aborts:
// 4 threads, SIGABRT, with thrower still on the crashing thread's stack.
#include "common.h"

#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <pthread.h>

namespace {
std::mutex lock;
std::condition_variable parked_cv; // main waits for the workers
std::condition_variable never_cv;  // the workers wait forever
int parked;
bool released; // never set
} // namespace

CHAIN void worker_park(int id)
{
	char name[16];
	snprintf(name, sizeof name, "cpp-worker-%d", id);
	pthread_setname_np(pthread_self(), name);
	std::unique_lock<std::mutex> guard(lock);
	parked++;
	parked_cv.notify_one();
	never_cv.wait(guard, [] { return released; });
	KEEP_FRAME();
}

CHAIN void thrower(int code)
{
	throw std::runtime_error("coreq corpus: uncaught exception " + std::to_string(code));
}

int main()
{
	const int nworkers = 3;
	std::vector<std::thread> workers;

	for (int i = 0; i < nworkers; i++)
		workers.emplace_back(worker_park, i);
	{
		std::unique_lock<std::mutex> guard(lock);
		parked_cv.wait(guard, [] { return parked == nworkers; });
	}
	wait_threads_asleep(nworkers + 1);
	thrower(42);
	KEEP_FRAME();
	for (auto &t : workers)
		t.join();
	return 0;
}
