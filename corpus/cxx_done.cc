// cxx_done.cc: cxx_task.cc's program (the same task type, coroutines,
// chains and crash) with libunifex's release shape: every task's promise
// owns a coroutine for its done path, made with the promise and never
// started (unifex's unhandled_done), whose frame holds the promise's
// address; an awaited task keeps, next to its continuation, the awaiting
// task's done coroutine (unifex's continuation_handle).  libunifex does
// this with NDEBUG (its async stacks off).  Those frames point at, and are
// pointed at from, the tasks' frames and promises, but await nothing: they
// must be taken for no awaiter and listed as no chain.  Issue 33.
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
//   and seven done coroutines, one per task, never started.
//
// The program is cxx_task.cc's, with CXX_TASK_DONE for the done shape; its
// expected chains and await lines are cxx_task.cc's.
#define CXX_TASK_DONE 1
#include "cxx_task.cc"
