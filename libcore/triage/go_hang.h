/*
 * go_hang.h - a Go process killed from outside buckets as a hang, not as
 * the runtime's way of dying.
 *
 * A Go program whose runtime finds a signal fatal (SIGABRT or SIGQUIT from
 * a watchdog or a person, with GOTRACEBACK=crash) dumps its goroutines and
 * then kills itself: runtime.sighandler calls crash, dieFromSignal and
 * raise(SIGABRT) (src/runtime/signal_unix.go).  The core's signal is that
 * SIGABRT, sent by the process to itself, so the core alone does not say
 * "from outside"; the crashed thread's stack does: it ends in the runtime's
 * signal handler with no panic, fatal error or fault (runtime.gopanic,
 * throw, fatal*, sigpanic) on it.
 *
 * Such a core's signature is the program's frames its threads were in
 * when the signal came (a goroutine blocked in a system call stays on its
 * thread), not the runtime's machinery:
 *
 *   hang: main.readForever | main.spin < main.serve
 *
 * Goroutines parked off any thread (channel, mutex, select, network waits)
 * are not read here: they need the goroutine list (the go async runtime).
 *
 * Limitation: a fault the runtime cannot turn into a panic (in cgo's C
 * code) also ends in runtime.sighandler; telling it from a signal sent from
 * outside needs the signal frame's siginfo, which the frames do not carry.
 */
#ifndef CQ_GO_HANG_H
#define CQ_GO_HANG_H

#include <stdbool.h>

#include "libcore/base/error.h"

struct cq_bucket_namer;
struct cq_bucket_rules;
struct cq_bucket_signature;
struct cq_stacks;
struct cq_thread_stack;

/* Whether the crashed thread died in the Go runtime's handler of a signal, not of a panic. */
bool cq_bucket_go_signalled(const struct cq_thread_stack *crashed);

/* The hang signature of a Go core cq_bucket_go_signalled says yes to (replaces out). */
struct cq_error *cq_bucket_go_hang_signature(const struct cq_bucket_rules *r,
                                             struct cq_bucket_namer *nm,
                                             const struct cq_stacks *stacks,
                                             struct cq_bucket_signature *out);

#endif
