/*
 * waits.h - who waits for whom: the wait-for graph of a hung process.
 *
 * A thread blocked on a lock sits in a futex wait: its registers in the core
 * say so (arch.h, struct cq_arch_syscall_regs: the call's number and its
 * first argument, the futex word), and its innermost libc frames say which
 * primitive it is taking (__lll_lock_wait, pthread_rwlock_wrlock,
 * pthread_cond_wait, pthread_join...).  From the futex word and the kind,
 * cq_waits_find finds the object and reads its owner from memory, as glibc
 * 2.36 lays it out (checked with gdb's ptype /o against libc6-dbg, the
 * same on x86_64 and aarch64):
 *
 *   pthread_mutex_t   __lock@0 __count@4 __owner@8 __kind@16; the futex is
 *                     __lock; __owner is the owner's tid, except for robust
 *                     and PI mutexes, where __lock holds it (low 30 bits)
 *                     and bit 30 says the owner died
 *   pthread_rwlock_t  __readers@0 (bit 0 write phase, bit 1 write-locked,
 *                     readers from bit 3) __wrphase_futex@8
 *                     __writers_futex@12 __cur_writer@24: a writer waits on
 *                     __wrphase_futex for readers (who are only a count: no
 *                     owner) or on __writers_futex for the writer in
 *                     __cur_writer; a reader waits for __cur_writer
 *                     (a PI lock the kernel refuses with EDEADLK: glibc parks
 *                     the thread on a zero word of its own stack; the mutex
 *                     is then found among the pointers its frames hold)
 *   pthread_cond_t    the futex is __g_signals[0 or 1] (@40, @44): no owner
 *   sem_t             the futex is the semaphore's value word (@0): a count,
 *                     no owner (CPython's threading.Lock is one)
 *   Rust std::sync    Mutex, RwLock, Condvar: a futex word (Mutex: 0, 1
 *                     locked, 2 contended) and a poison flag: no owner
 *   pthread_join      the futex is the joined thread's tid field: its value
 *                     is the tid, the thread waited for
 *
 * Each waiting thread is one edge to its object, and the object one edge to
 * its owner when the core says who that is; so every thread has at most one
 * outgoing edge, and cq_waits_graph finds the cycles (deadlocks) and, for
 * the other chains, the thread (or ownerless object) they end at, in time
 * linear in the threads.  Owners that are not threads of the core, futex
 * words in unmapped memory and objects whose fields make no sense give an
 * edge whose owner is unknown, never an error.
 *
 * Layer: analysis (libcore/analysis/): it reads the core's memory and the
 * threads' named stacks; above symbols.  The layer order is in docs/internals.md
 * (Layout) and tests/check-layers.
 */
#ifndef CQ_WAITS_H
#define CQ_WAITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/error.h"

struct cq_core;
struct cq_stacks;

enum cq_wait_kind {
	CQ_WAIT_MUTEX,     /* pthread_mutex_t (and C++ std::mutex over it) */
	CQ_WAIT_RWLOCK,    /* pthread_rwlock_t; access says read or write */
	CQ_WAIT_CONDVAR,   /* pthread_cond_t: no owner */
	CQ_WAIT_JOIN,      /* pthread_join: the owner is the joined thread */
	CQ_WAIT_FUTEX,     /* a futex wait no libc frame explains */
	CQ_WAIT_SEMAPHORE, /* sem_t (sem_wait...; CPython's threading.Lock): no owner */
};

/* Why an edge has no owner thread. */
enum cq_wait_owner {
	CQ_OWNER_THREAD,      /* owner_tid is a thread of the core (owner_thread) */
	CQ_OWNER_NOT_IN_CORE, /* owner_tid is known but no thread of the core has it */
	CQ_OWNER_READERS,     /* an rwlock held by readers, who are only a count */
	CQ_OWNER_NONE,        /* the primitive records no owner (condvar, bare futex) */
	CQ_OWNER_UNREADABLE,  /* the object is in memory the core does not hold */
	CQ_OWNER_UNKNOWN,     /* the object's fields name no owner (released, damaged) */
};

/* One blocked thread's edge: the object it waits on and who holds it. */
struct cq_wait {
	size_t thread; /* index into core->threads */
	int32_t tid;
	enum cq_wait_kind kind;
	bool write;           /* rwlock: waits to write (else to read) */
	uint64_t object;      /* the object's address (the futex word's, when not known) */
	uint64_t futex;       /* the futex word the thread sleeps on */
	const char *function; /* the libc frame that says what it takes (NULL: none) */
	enum cq_wait_owner owner;
	int32_t owner_tid;      /* CQ_OWNER_THREAD, CQ_OWNER_NOT_IN_CORE */
	size_t owner_thread;    /* CQ_OWNER_THREAD: index into core->threads */
	uint32_t count;         /* recursive mutex: times held; rwlock readers: how many */
	const char *mutex_type; /* "normal", "recursive", "errorcheck", "adaptive"; NULL */
	bool robust, pi;
	bool owner_died; /* robust mutex: FUTEX_OWNER_DIED, or marked inconsistent */
	/*
	 * A PI mutex lock the kernel refused as a deadlock (EDEADLK): glibc
	 * then parks the thread for ever in a futex wait on a zero word of its
	 * own stack, not on the mutex.  The mutex is the one PI mutex held by
	 * another thread that the parked frames hold a pointer to (object, its
	 * owner); when there is not exactly one, object is 0 and the owner
	 * unknown.  futex is the stack word.
	 */
	bool pi_refused;
	/*
	 * Rust's std::sync Mutex, RwLock or Condvar (a futex word, a poison
	 * flag): the owner is not recorded (CQ_OWNER_NONE), object is the word.
	 */
	bool rust_std;
	/*
	 * The owner was inferred, not recorded (cq_waits_find, "Inferred
	 * owners" in waits.c): the lock records none, and exactly one other
	 * thread holds a reference to it while it is taken.  owner_from says
	 * where: "stack" (a word of its live stack or a register: a Rust
	 * MutexGuard) or "python" (a slot of its CPython 3.11 interpreter
	 * frames: the threading.Lock object).  owner is then CQ_OWNER_THREAD.
	 */
	bool owner_inferred;
	const char *owner_from;
	/*
	 * An inferred owner that what the core records confirms (NULL: none
	 * does, the inference rests on the reference alone): "with" (the
	 * holder's frame keeps the lock's bound __exit__, which a with
	 * statement pushes only once the lock is taken) or "rlock-owner" (a
	 * CPython RLock's own owner field names the holder's thread).
	 */
	const char *owner_confirmed_by;
	/* Filled by cq_waits_graph. */
	size_t deadlock; /* 1 + index into deadlocks when on a cycle, else 0 */
	size_t behind;   /* 1 + index into deadlocks its chain runs into, else 0 */
	size_t end;      /* index into ends where its chain ends; SIZE_MAX: on or behind a cycle */
};

/*
 * What a cycle's owners rest on.  A cycle whose owners the locks record is
 * a deadlock; one that rests on an inferred owner is one only when what the
 * core records confirms every such owner (owner_confirmed_by), else it is a
 * possible deadlock: the real holder may be a thread that has exited while
 * the one thread that references the lock only keeps it in a local.
 */
enum cq_deadlock_verdict {
	CQ_DEADLOCK_RECORDED,    /* "deadlock" */
	CQ_DEADLOCK_CONFIRMED,   /* "deadlock-inferred-confirmed" */
	CQ_DEADLOCK_UNCONFIRMED, /* "possible-deadlock" */
};

/* A cycle: cycle[first .. first + n) are wait indexes, each waiting for the next's thread. */
struct cq_deadlock {
	size_t first, n;
	enum cq_deadlock_verdict verdict;
};

/*
 * Where chains end: a thread that waits on no lock (blocked in a system
 * call, or running), or a wait whose owner is unknown.  waiters counts the
 * threads whose chain ends here, directly or through others.
 */
struct cq_wait_end {
	bool is_thread;
	size_t thread;       /* is_thread: index into core->threads */
	int32_t tid;         /* is_thread */
	const char *syscall; /* is_thread: the call it is blocked in ("read"), or NULL */
	size_t wait;         /* !is_thread: the wait (index) whose owner is unknown */
	size_t waiters;
};

struct cq_waits {
	struct cq_wait *waits; /* by thread, in core order */
	size_t nwaits;
	struct cq_deadlock *deadlocks;
	size_t ndeadlocks;
	size_t *cycle;            /* wait indexes of every deadlock, deadlocks[k] a range of it */
	struct cq_wait_end *ends; /* most waiters first */
	size_t nends;
	/* Per thread of the core: the index into ends it is, SIZE_MAX if none. */
	size_t *thread_ends;
	/* Per thread of the core: the system call it is blocked in, NULL if none known. */
	const char **syscalls;
	size_t nthreads;
};

/*
 * Builds the wait-for graph of core from its threads' stacks (stacks may be
 * NULL: no thread's kind of wait is then known, and futex waits are bare).
 * *out is NULL when no thread is blocked in a futex wait.  Fails only for
 * lack of memory.
 */
struct cq_error *cq_waits_find(struct cq_core *core, const struct cq_stacks *stacks,
                               struct cq_waits **out);

/*
 * The graph part, over waits already filled in (each wait's owner and
 * owner_thread, thread indexes < nthreads, at most one wait per thread):
 * sets every wait's deadlock and end, and fills deadlocks, cycle, ends and
 * thread_ends.
 * w->syscalls may be NULL.  Fails only for lack of memory.
 */
struct cq_error *cq_waits_graph(struct cq_waits *w, const int32_t *tids, size_t nthreads);

void cq_waits_free(struct cq_waits *w);

/* Thread index t's wait (waits are in thread order), or NULL. */
const struct cq_wait *cq_waits_of_thread(const struct cq_waits *w, size_t t);

/* "deadlock", "deadlock-inferred-confirmed", "possible-deadlock" (the store's and export's words).
 */
const char *cq_deadlock_verdict_name(enum cq_deadlock_verdict v);

/* "mutex", "rwlock", "condvar", "thread" (a join), "futex", "semaphore". */
const char *cq_wait_kind_name(enum cq_wait_kind kind);

#endif
