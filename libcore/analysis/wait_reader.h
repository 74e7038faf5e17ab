/*
 * wait_reader.h - the one reader of an rwlock, confirmed from a core.
 *
 * glibc's pthread_rwlock_t (and so C++'s std::shared_mutex, which is one)
 * counts its readers and records none of them: a writer that waits behind
 * readers has no owner (CQ_OWNER_READERS), and a cycle through a read hold
 * is never closed.  When the lock counts exactly one reader, that reader
 * can often be found and confirmed from the data: a thread, other than the
 * lock's waiters, whose stack holds the lock's address in a frame that took
 * it shared.  "Took it shared" is read from what the core records, one of:
 *
 *   "shared-lock"  a std::shared_lock on its stack owns the lock: the
 *                  lock's address followed by the guard's _M_owns, true
 *                  (libstdc++'s layout: {mutex_type *_M_pm; bool _M_owns})
 *   "read-call"    one of its frames' functions calls pthread_rwlock_rdlock
 *                  (directly, or through a PLT slot the core shows bound to
 *                  it) before the call it is in, and calls no
 *                  pthread_rwlock_unlock between the two (x86_64 code)
 *
 * Exactly one such thread: the wait's owner is that thread, inferred
 * (owner_from "reader") and confirmed (owner_confirmed_by the word above),
 * so a cycle through it is a deadlock resting on a confirmed reader
 * (waits.h, CQ_DEADLOCK_CONFIRMED).  None or several, or a lock that counts
 * more than one reader: the owner stays the count (CQ_OWNER_READERS).  A
 * bare reference to the lock is never enough.
 *
 * Layer: analysis (libcore/analysis/), under waits.c.
 */
#ifndef CQ_WAIT_READER_H
#define CQ_WAIT_READER_H

#include <stddef.h>

#include "libcore/base/error.h"

struct cq_core;
struct cq_thread_stack;
struct cq_wait;

/*
 * Confirms the one reader of every rwlock a writer in waits waits behind
 * (owner CQ_OWNER_READERS, count 1); by_thread[t] is thread t's named
 * stack or NULL.  Fails only for lack of memory.
 */
struct cq_error *cq_wait_readers_confirm(struct cq_core *core,
                                         const struct cq_thread_stack *const *by_thread,
                                         struct cq_wait *waits, size_t nwaits);

#endif
