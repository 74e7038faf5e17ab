// async_task.h: a small C++20 coroutine library for the corpus that follows
// folly's async-stack ABI (folly/tracing/AsyncStack.h; FACTS.md section 4)
// exactly, without folly:
//
//   - AsyncStackFrame {parentFrame, instructionPointer, stackRoot} (24 bytes)
//     lives in every Task's promise; AsyncStackRoot {topFrame, nextRoot,
//     stackFramePtr, returnAddress} (32 bytes) lives on the native stack of
//     the function that registers it.
//   - extern "C" pthread_key_t folly_async_stack_root_tls_key: the key whose
//     per-thread value is a holder whose first member is the thread's current
//     atomic<AsyncStackRoot*>.
//   - extern "C" volatile uintptr_t __folly_suspended_frame_cookie: set at
//     start-up; a coroutine suspended on something that is not a coroutine
//     (an Event here) stores it in its frame's stackRoot.
//
// What each operation does to the frames (the same as folly::coro):
//   co_await child   child.parentFrame = &parent frame, child.instructionPointer
//                    = the return address of the (never inlined) await_suspend,
//                    so an address in the parent coroutine at its co_await;
//                    the child takes over the parent's stackRoot and becomes
//                    the root's topFrame.  Finishing undoes that.
//   resume_with_new_root(h, frame)  (folly's resumeCoroutineWithNewAsyncStackRoot)
//                    registers a root on its own stack (stackFramePtr =
//                    __builtin_frame_address(0)), makes it the thread's current
//                    root with the old one as nextRoot, activates frame, resumes.
//   blocking_wait(task)  a dummy frame (instructionPointer = blocking_wait's
//                    return address, stackRoot = a root registered in
//                    blocking_wait's own frame, nextRoot = the thread's current
//                    root) becomes the task's parent; the task's own
//                    instructionPointer is an address inside blocking_wait.
//                    The task runs through resume_with_new_root and the thread
//                    then sleeps until it finishes, wherever it ran.
//   co_await schedule(ex)  leaves the root (deactivate) and continues on the
//                    executor's thread through resume_with_new_root.
//   co_await event   suspends as a leaf: stackRoot = the cookie.
//   start_detached(task, ex)  runs task on ex with no parent frame.
//   sync_wait_adapted(task)  libunifex's sync_wait through sender adapters,
//                    inlined into its caller (see there); sync_wait_layers
//                    the same not inlined.
#ifndef COREQ_CORPUS_ASYNC_TASK_H
#define COREQ_CORPUS_ASYNC_TASK_H

#include <atomic>
#include <condition_variable>
#include <coroutine>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#include <pthread.h>
#include <unistd.h>

#define ASYNC_NOINLINE __attribute__((noinline, noipa))

struct AsyncStackRoot;

struct AsyncStackFrame {
	AsyncStackFrame *parentFrame = nullptr;
	void *instructionPointer = nullptr;
	AsyncStackRoot *stackRoot = nullptr;
};

struct AsyncStackRoot {
	std::atomic<AsyncStackFrame *> topFrame{nullptr};
	AsyncStackRoot *nextRoot = nullptr;
	void *stackFramePtr = nullptr;
	void *returnAddress = nullptr;
};

static_assert(sizeof(AsyncStackFrame) == 24, "folly ABI: AsyncStackFrame is 24 bytes");
static_assert(sizeof(AsyncStackRoot) == 32, "folly ABI: AsyncStackRoot is 32 bytes");

extern "C" {
__attribute__((visibility("default"), used)) pthread_key_t folly_async_stack_root_tls_key =
    0xFFFFFFFFu;
__attribute__((visibility("default"), used)) volatile uintptr_t __folly_suspended_frame_cookie;
}

// The per-thread holder the TLS key points at; its first member is the root.
struct AsyncStackRootHolder {
	std::atomic<AsyncStackRoot *> value{nullptr};
};

static void destroy_holder(void *p)
{
	delete static_cast<AsyncStackRootHolder *>(p);
}

// Creates the key (after `dummy_keys` other keys, so its number can be made
// >= 32, in glibc's second-level blocks) and the cookie.
static inline void async_stack_init(int dummy_keys)
{
	for (int i = 0; i < dummy_keys; i++) {
		pthread_key_t k;
		if (pthread_key_create(&k, nullptr) != 0)
			abort();
	}
	if (pthread_key_create(&folly_async_stack_root_tls_key, destroy_holder) != 0)
		abort();
	// Any value no pointer or small integer is likely to equal.
	__folly_suspended_frame_cookie =
	    0xf011ac0c00000000ull ^ ((uintptr_t)getpid() << 12) ^ 0x5a5ull;
}

static inline AsyncStackRootHolder *root_holder()
{
	void *p = pthread_getspecific(folly_async_stack_root_tls_key);
	if (!p) {
		p = new AsyncStackRootHolder;
		pthread_setspecific(folly_async_stack_root_tls_key, p);
	}
	return static_cast<AsyncStackRootHolder *>(p);
}

// The address just after the call to here(), inside the caller.
ASYNC_NOINLINE static void *here()
{
	return __builtin_return_address(0);
}

// ---- Task --------------------------------------------------------------

struct Promise;

struct Task {
	using promise_type = Promise;
	std::coroutine_handle<Promise> h;
	explicit Task(std::coroutine_handle<Promise> handle) : h(handle)
	{
	}
	Task(Task &&o) noexcept : h(std::exchange(o.h, {}))
	{
	}
	Task(const Task &) = delete;
	~Task();
	struct Awaiter;
	Awaiter operator co_await() &&noexcept;
};

// Called when a task with no parent coroutine finishes.
struct Completion {
	std::mutex m;
	std::condition_variable cv;
	bool done = false;
	void signal()
	{
		std::lock_guard<std::mutex> g(m);
		done = true;
		cv.notify_all();
	}
};

struct Promise {
	AsyncStackFrame frame;
	std::coroutine_handle<> continuation; // the awaiting coroutine, if any
	Completion *completion = nullptr;     // blocking_wait's, if any

	Task get_return_object()
	{
		return Task(std::coroutine_handle<Promise>::from_promise(*this));
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
		std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> h) noexcept
		{
			Promise &p = h.promise();
			AsyncStackRoot *root = p.frame.stackRoot;
			if (p.continuation) { // give the root back to the parent
				AsyncStackFrame *parent = p.frame.parentFrame;
				parent->stackRoot = root;
				if (root)
					root->topFrame.store(parent);
				p.frame.stackRoot = nullptr;
				return p.continuation;
			}
			if (root)
				root->topFrame.store(nullptr);
			p.frame.stackRoot = nullptr;
			if (p.completion)
				p.completion->signal();
			return std::noop_coroutine();
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
		abort();
	}
};

inline Task::~Task()
{
	if (h && h.done())
		h.destroy();
}

struct Task::Awaiter {
	std::coroutine_handle<Promise> child;
	bool await_ready() noexcept
	{
		return false;
	}
	// Never inlined: its return address is the parent's co_await site.
	ASYNC_NOINLINE std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> parent)
	{
		AsyncStackFrame &pf = parent.promise().frame, &cf = child.promise().frame;
		cf.parentFrame = &pf;
		cf.instructionPointer = __builtin_return_address(0);
		child.promise().continuation = parent;
		cf.stackRoot = pf.stackRoot;
		pf.stackRoot = nullptr;
		if (cf.stackRoot)
			cf.stackRoot->topFrame.store(&cf);
		return child;
	}
	void await_resume() noexcept
	{
	}
};

inline Task::Awaiter Task::operator co_await() &&noexcept
{
	return Awaiter{h};
}

// folly's resumeCoroutineWithNewAsyncStackRoot.
ASYNC_NOINLINE static void resume_with_new_root(std::coroutine_handle<> h, AsyncStackFrame &frame)
{
	AsyncStackRoot root;
	root.stackFramePtr = __builtin_frame_address(0);
	root.returnAddress = __builtin_return_address(0);
	AsyncStackRootHolder *holder = root_holder();
	root.nextRoot = holder->value.load();
	holder->value.store(&root);
	frame.stackRoot = &root;
	root.topFrame.store(&frame);
	h.resume();
	holder->value.store(root.nextRoot);
}

ASYNC_NOINLINE static void wait_for(Completion *c)
{
	std::unique_lock<std::mutex> g(c->m);
	while (!c->done)
		c->cv.wait(g);
}

// folly::coro::blockingWait: runs t and sleeps until it has finished.
ASYNC_NOINLINE static void blocking_wait(Task t)
{
	AsyncStackFrame dummy;
	dummy.instructionPointer = __builtin_return_address(0);
	AsyncStackRoot root;
	root.nextRoot = root_holder()->value.load();
	root.stackFramePtr = __builtin_frame_address(0);
	root.returnAddress = __builtin_return_address(0);
	root.topFrame.store(&dummy);
	dummy.stackRoot = &root;
	Completion done;
	Promise &p = t.h.promise();
	p.frame.parentFrame = &dummy;
	p.frame.instructionPointer = here();
	p.completion = &done;
	resume_with_new_root(t.h, p.frame);
	wait_for(&done);
	__asm__ volatile("" ::"r"(&dummy), "r"(&root) : "memory");
}

// libunifex's sync_wait(adapter(adapter(adapter(task)))) with everything
// inlined into the caller: a blocking root registered in the caller's own
// frame, whose dummy frame's instructionPointer is the caller's return
// address (the native frame that follows), and ADAPTER_LAYERS frames of
// sender adapters between it and the task, each with an instructionPointer
// at its own place in the caller.  So ADAPTER_LAYERS + 1 async frames (the
// task's and the adapters') all return into the one caller.
#define ADAPTER_LAYERS 3

// Links layer[0] -> [1] -> [2] -> [3] (the root's dummy), each adapter's
// instructionPointer at its own place in the function this is inlined into.
__attribute__((always_inline)) inline void link_layers(AsyncStackFrame *layer)
{
	static_assert(ADAPTER_LAYERS == 3, "link_layers links three layers by hand");
	layer[2].parentFrame = &layer[3];
	layer[2].instructionPointer = here();
	layer[1].parentFrame = &layer[2];
	layer[1].instructionPointer = here();
	layer[0].parentFrame = &layer[1];
	layer[0].instructionPointer = here();
}

__attribute__((always_inline)) inline void sync_wait_adapted(Task t)
{
	AsyncStackFrame layer[ADAPTER_LAYERS + 1]; // the last one is the root's dummy
	AsyncStackRoot root;
	root.nextRoot = root_holder()->value.load();
	root.stackFramePtr = __builtin_frame_address(0);
	root.returnAddress = __builtin_return_address(0);
	layer[ADAPTER_LAYERS].instructionPointer = __builtin_return_address(0);
	layer[ADAPTER_LAYERS].stackRoot = &root;
	root.topFrame.store(&layer[ADAPTER_LAYERS]);
	link_layers(layer);
	Completion done;
	Promise &p = t.h.promise();
	p.frame.parentFrame = &layer[0];
	p.frame.instructionPointer = here();
	p.completion = &done;
	resume_with_new_root(t.h, p.frame);
	wait_for(&done);
	__asm__ volatile("" ::"r"(layer), "r"(&root) : "memory");
}

// The same with sync_wait a function of its own (as libunifex's is at -O0)
// and the adapters' frames set up by its caller (link_layers), so that they
// return into the caller, as does the root's dummy frame: the native frame
// after the root.  The task's own frame returns into sync_wait_layers.
ASYNC_NOINLINE static void sync_wait_layers(Task t, AsyncStackFrame *layer)
{
	AsyncStackRoot root;
	root.nextRoot = root_holder()->value.load();
	root.stackFramePtr = __builtin_frame_address(0);
	root.returnAddress = __builtin_return_address(0);
	layer[ADAPTER_LAYERS].instructionPointer = __builtin_return_address(0);
	layer[ADAPTER_LAYERS].stackRoot = &root;
	root.topFrame.store(&layer[ADAPTER_LAYERS]);
	Completion done;
	Promise &p = t.h.promise();
	p.frame.parentFrame = &layer[0];
	p.frame.instructionPointer = here();
	p.completion = &done;
	resume_with_new_root(t.h, p.frame);
	wait_for(&done);
	__asm__ volatile("" ::"r"(layer), "r"(&root) : "memory");
}

// ---- executor ------------------------------------------------------------

// One thread that resumes posted coroutines, each under a new root.
struct Executor {
	std::mutex m;
	std::condition_variable cv;
	std::deque<std::pair<std::coroutine_handle<>, AsyncStackFrame *>> queue;
	std::thread thread;

	void post(std::coroutine_handle<> h, AsyncStackFrame *f)
	{
		std::lock_guard<std::mutex> g(m);
		queue.emplace_back(h, f);
		cv.notify_one();
	}
	ASYNC_NOINLINE void run()
	{
		for (;;) {
			std::unique_lock<std::mutex> g(m);
			while (queue.empty())
				cv.wait(g);
			auto [h, f] = queue.front();
			queue.pop_front();
			g.unlock();
			resume_with_new_root(h, *f);
		}
	}
	void start(void *(*entry)(void *))
	{
		pthread_t t;
		if (pthread_create(&t, nullptr, entry, this) != 0)
			abort();
	}
};

struct ScheduleAwaiter {
	Executor *ex;
	bool await_ready() noexcept
	{
		return false;
	}
	void await_suspend(std::coroutine_handle<Promise> h)
	{
		AsyncStackFrame &f = h.promise().frame;
		if (f.stackRoot)
			f.stackRoot->topFrame.store(nullptr);
		f.stackRoot = nullptr;
		ex->post(h, &f);
	}
	void await_resume() noexcept
	{
	}
};

inline ScheduleAwaiter schedule(Executor *ex)
{
	return ScheduleAwaiter{ex};
}

// An event that is never set in this corpus: awaiting it suspends for good.
struct Event {
	std::coroutine_handle<> waiter;
	AsyncStackFrame *frame = nullptr;
	struct Awaiter {
		Event *ev;
		bool await_ready() noexcept
		{
			return false;
		}
		void await_suspend(std::coroutine_handle<Promise> h)
		{
			AsyncStackFrame &f = h.promise().frame;
			if (f.stackRoot)
				f.stackRoot->topFrame.store(nullptr);
			f.stackRoot =
			    reinterpret_cast<AsyncStackRoot *>(__folly_suspended_frame_cookie);
			ev->waiter = h;
			ev->frame = &f;
		}
		void await_resume() noexcept
		{
		}
	};
	Awaiter operator co_await() noexcept
	{
		return Awaiter{this};
	}
};

// Runs t on ex with no parent: a detached task.
ASYNC_NOINLINE static void start_detached(Task t, Executor *ex)
{
	Promise &p = t.h.promise();
	p.frame.parentFrame = nullptr;
	p.frame.instructionPointer = here();
	ex->post(std::exchange(t.h, {}), &p.frame);
}

#endif
