/*
 * waits.c - the wait-for graph of a core (see waits.h).
 *
 * Two passes.  cq_waits_find looks at each thread once: is it in a futex
 * wait (registers), what is it taking (its innermost libc frames), and who
 * holds that (one bounded read of the object).  cq_waits_graph then follows
 * the edges: every thread has at most one, so one walk per thread, each
 * wait visited once, finds the cycles and where the other chains end.
 * Nothing here allocates more than a few words per thread of the core.
 */
#include "libcore/analysis/waits.h"
#include "libcore/analysis/thread_words.h"
#include "libcore/analysis/wait_reader.h"

#include <stdlib.h>
#include <string.h>

#include "libcore/base/addr_table.h"
#include "libcore/base/bytes.h"
#include "libcore/model/core.h"
#include "libcore/model/elf_symbols.h"
#include "libcore/model/module.h"
#include "unwind/frames.h"

/* How many of a thread's innermost frames may lie between the futex call and the lock function. */
#define MAX_LOCK_FRAME_DEPTH 12
#define NONE                 SIZE_MAX

/* glibc 2.36 (nptl/pthreadP.h, lowlevellock-futex.h, pthread_rwlock_common.c). */
#define FUTEX_TID_MASK        0x3fffffffu
#define FUTEX_OWNER_DIED      0x40000000u
#define MUTEX_INCONSISTENT    0x7fffffff
#define MUTEX_NOTRECOVERABLE  0x7ffffffe
#define MUTEX_KIND_TYPE_MASK  3u
#define MUTEX_KIND_ROBUST     16u
#define MUTEX_KIND_PI         32u
#define MUTEX_KIND_KNOWN_BITS 0x3ffu /* type, robust, PI, PP, pshared, elision */
#define RWLOCK_WRPHASE        1u
#define RWLOCK_WRLOCKED       2u
#define RWLOCK_READER_SHIFT   3
#define RWLOCK_FUTEX_USED     2u
#define RWLOCK_WRPHASE_FUTEX  8
#define RWLOCK_WRITERS_FUTEX  12
#define RWLOCK_CUR_WRITER     24
#define COND_G_SIGNALS        40
/* Rust's std futex RwLock (library/std/src/sys/sync/rwlock/futex.rs): {state, writer_notify}. */
#define RUST_RWLOCK_NOTIFY 4

/* -ERESTARTSYS, -ERESTARTNOINTR, -ERESTARTNOHAND, -ERESTART_RESTARTBLOCK, -EINTR. */
static bool interrupted_call(int64_t ret)
{
	return ret == -512 || ret == -513 || ret == -514 || ret == -516 || ret == -4;
}

/*
 * The system call thread t was blocked in when the core was written, or -1.
 * x86_64: orig_rax says which and rax that it was interrupted; aarch64: the
 * kernel rewound pc onto the svc, and x8 says which (arch.h).  qemu-user
 * leaves pc just after the svc, the call's arguments still in x0..x5 (its
 * cores are the ones without NT_FILE, whose modules come from the loader's
 * list); a kernel's core is never read so, where pc after an svc is a
 * call that has returned.
 */
static int64_t blocked_call(struct cq_core *core, const struct cq_core_thread *t)
{
	const struct cq_arch_syscall_regs *sr = &core->arch->syscall;
	if (sr->nr_is_orig)
		return t->syscall_nr >= 0 && interrupted_call(t->syscall_ret) ? t->syscall_nr : -1;
	uint32_t insn;
	if (!sr->svc_insn || !cq_regs_has(&t->regs, core->arch->pc_reg))
		return -1;
	uint64_t pc = t->regs.value[core->arch->pc_reg];
	if (cq_mem_read_u32(&core->mem, pc, &insn) && insn == sr->svc_insn)
		return t->syscall_nr;
	if (core->mappings_from_link_map && pc >= 4 && cq_mem_read_u32(&core->mem, pc - 4, &insn) &&
	    insn == sr->svc_insn)
		return t->syscall_nr;
	return -1;
}

static const char *syscall_name(const struct cq_arch *arch, int64_t nr)
{
	for (size_t i = 0; i < arch->syscall.nnames; i++)
		if (arch->syscall.names[i].nr == nr)
			return arch->syscall.names[i].name;
	return "syscall";
}

/*
 * Which primitive a function takes; first match wins, so "cond_lock" before
 * "cond_".  rust: Rust's std::sync (a futex word and a poison flag: no
 * owner), named <std::sys::sync::mutex::futex::Mutex>::lock_contended since
 * Rust 1.84, std::sys::unix::locks::futex_mutex::Mutex::lock_contended before.
 */
static const struct {
	const char *part;
	enum cq_wait_kind kind;
	bool write, rust, parking;
} lock_functions[] = {
    {"parking_lot::raw_mutex::RawMutex::lock_slow", CQ_WAIT_MUTEX, false, false, true},
    {"RawRwLock::lock_exclusive_slow", CQ_WAIT_RWLOCK, true, false, true},
    {"RawRwLock::lock_upgradable_slow", CQ_WAIT_RWLOCK, true, false, true},
    {"RawRwLock::lock_shared_slow", CQ_WAIT_RWLOCK, false, false, true},
    {"parking_lot::condvar::Condvar::wait_until_internal", CQ_WAIT_CONDVAR, false, false, true},
    {"Mutex>::lock_contended", CQ_WAIT_MUTEX, false, true, false},
    {"futex_mutex::Mutex::lock_contended", CQ_WAIT_MUTEX, false, true, false},
    {"RwLock>::write_contended", CQ_WAIT_RWLOCK, true, true, false},
    {"futex_rwlock::RwLock::write_contended", CQ_WAIT_RWLOCK, true, true, false},
    {"RwLock>::read_contended", CQ_WAIT_RWLOCK, false, true, false},
    {"futex_rwlock::RwLock::read_contended", CQ_WAIT_RWLOCK, false, true, false},
    {"Condvar>::wait", CQ_WAIT_CONDVAR, false, true, false},
    {"futex_condvar::Condvar::wait", CQ_WAIT_CONDVAR, false, true, false},
    {"lll_lock_wait", CQ_WAIT_MUTEX, false, false, false},
    {"mutex_cond_lock", CQ_WAIT_MUTEX, false, false, false},
    {"mutex_lock", CQ_WAIT_MUTEX, false, false, false},
    {"mutex_timedlock", CQ_WAIT_MUTEX, false, false, false},
    {"mutex_clocklock", CQ_WAIT_MUTEX, false, false, false},
    {"rwlock_wrlock", CQ_WAIT_RWLOCK, true, false, false},
    {"rwlock_timedwrlock", CQ_WAIT_RWLOCK, true, false, false},
    {"rwlock_clockwrlock", CQ_WAIT_RWLOCK, true, false, false},
    {"rwlock_rdlock", CQ_WAIT_RWLOCK, false, false, false},
    {"rwlock_timedrdlock", CQ_WAIT_RWLOCK, false, false, false},
    {"rwlock_clockrdlock", CQ_WAIT_RWLOCK, false, false, false},
    {"cond_wait", CQ_WAIT_CONDVAR, false, false, false},
    {"cond_timedwait", CQ_WAIT_CONDVAR, false, false, false},
    {"cond_clockwait", CQ_WAIT_CONDVAR, false, false, false},
    {"pthread_join", CQ_WAIT_JOIN, false, false, false},
    {"pthread_timedjoin", CQ_WAIT_JOIN, false, false, false},
    {"pthread_clockjoin", CQ_WAIT_JOIN, false, false, false},
    {"pthread_tryjoin", CQ_WAIT_JOIN, false, false, false},
    {"sem_wait", CQ_WAIT_SEMAPHORE, false, false, false},
    {"sem_timedwait", CQ_WAIT_SEMAPHORE, false, false, false},
    {"sem_clockwait", CQ_WAIT_SEMAPHORE, false, false, false},
};

/*
 * Which lock_functions entry a function name matches (-1: none), through a
 * small cache by the name's address: the threads of a pool share their
 * frames' names, so 3000 threads parked alike cost a few strstr calls, not
 * 3000 times thirty.
 */
#define CLASSIFY_CACHE 64
struct classify_cache {
	const char *fn[CLASSIFY_CACHE];
	int k[CLASSIFY_CACHE];
};

static int lock_function(struct classify_cache *c, const char *fn)
{
	size_t h = ((uintptr_t)fn >> 3) % CLASSIFY_CACHE;
	if (c && c->fn[h] == fn)
		return c->k[h];
	int found = -1;
	for (size_t k = 0; k < sizeof(lock_functions) / sizeof(lock_functions[0]); k++)
		if (strstr(fn, lock_functions[k].part)) {
			found = (int)k;
			break;
		}
	if (c) {
		c->fn[h] = fn;
		c->k[h] = found;
	}
	return found;
}

/* Sets w's kind and function from the innermost lock function on the stack; false if none. */
static bool classify(const struct cq_thread_stack *ts, struct cq_wait *w,
                     struct classify_cache *cache)
{
	size_t n = ts && ts->nframes < MAX_LOCK_FRAME_DEPTH ? ts->nframes : MAX_LOCK_FRAME_DEPTH;
	for (size_t i = 0; ts && i < n; i++) {
		const char *fn = ts->frames[i].function;
		int k = fn ? lock_function(cache, fn) : -1;
		if (k < 0)
			continue;
		w->kind = lock_functions[k].kind;
		w->write = lock_functions[k].write;
		w->rust_std = lock_functions[k].rust;
		w->parking_lot = lock_functions[k].parking;
		w->function = fn;
		return true;
	}
	return false;
}

static bool read_u32(struct cq_core *core, uint64_t addr, uint32_t *out)
{
	return cq_mem_read_u32(&core->mem, addr, out);
}

static void set_owner_tid(struct cq_wait *w, uint32_t tid)
{
	if (tid == 0 || tid > INT32_MAX) {
		w->owner = CQ_OWNER_UNKNOWN;
		return;
	}
	w->owner = CQ_OWNER_NOT_IN_CORE; /* until the tid is found among the threads */
	w->owner_tid = (int32_t)tid;
}

/* How far above the stack pointer a parked PI waiter's frames are searched. */
#define PI_PARK_WINDOW 1024

/*
 * Is the mutex at addr, read as glibc 2.36 lays it out, a PI mutex held by
 * a thread other than self?  Its owner's tid then goes to *owner.
 */
static bool pi_mutex_held_by_other(struct cq_core *core, uint64_t addr, int32_t self,
                                   uint32_t *owner)
{
	uint8_t m[20];
	if ((addr & 3) || !cq_mem_read(&core->mem, addr, m, sizeof(m)))
		return false;
	uint32_t lock = cq_load_u32(m), kind = cq_load_u32(m + 16);
	uint32_t tid = lock & FUTEX_TID_MASK;
	if ((kind & ~MUTEX_KIND_KNOWN_BITS) || !(kind & MUTEX_KIND_PI) || tid == 0 ||
	    tid > INT32_MAX || (int32_t)tid == self)
		return false;
	*owner = tid;
	return true;
}

/*
 * parking_lot parks a thread on a futex word of its own: its ThreadParker,
 * inside parking_lot_core 0.9's ThreadData {parker, key, next_in_queue,
 * unpark_token, park_token, parked_with_timeout}, which rustc lays out as
 * key @0, next_in_queue @8, unpark_token @16, park_token @24, parker @32
 * (gdb on corpus/parking_lot_waits, O0 and O2).  The key is the lock's
 * address, or an RwLock's plus 1 for a writer that has taken WRITER_BIT
 * and waits for the readers to leave (raw_rwlock.rs, wait_for_readers).
 * It is taken only when the lock there is in a state a parked waiter
 * leaves: a Mutex's byte has PARKED_BIT (2); an RwLock's word PARKED_BIT or
 * WRITER_PARKED_BIT (1, 2), and for the writer behind readers WRITER_BIT
 * and WRITER_PARKED_BIT, the readers counted from bit 4 (the owner is then
 * that many readers, as for glibc); a Condvar's word is its mutex, not 0.
 * Else the object is the futex word.  No parking_lot lock records who holds
 * it.
 */
#define PARKING_KEY_BEFORE_FUTEX 32
#define PARKING_MUTEX_PARKED     2u
#define PARKING_RWLOCK_PARKED    3u
#define PARKING_RWLOCK_WRITER    0xau /* WRITER_BIT | WRITER_PARKED_BIT */
#define PARKING_READER_SHIFT     4

static void parking_lot_object(struct cq_core *core, struct cq_wait *w)
{
	uint64_t key, state = 0;
	uint8_t byte;
	bool parked = false;
	w->object = w->futex;
	w->owner = CQ_OWNER_NONE;
	if (w->futex < PARKING_KEY_BEFORE_FUTEX ||
	    !cq_mem_read_u64(&core->mem, w->futex - PARKING_KEY_BEFORE_FUTEX, &key) || !key)
		return;
	if (w->kind == CQ_WAIT_RWLOCK && (key & 7) == 1 && w->write) {
		if (!cq_mem_read_u64(&core->mem, key - 1, &state) ||
		    (state & PARKING_RWLOCK_WRITER) != PARKING_RWLOCK_WRITER)
			return;
		w->object = key - 1;
		if (state >> PARKING_READER_SHIFT && state >> PARKING_READER_SHIFT <= UINT32_MAX) {
			w->owner = CQ_OWNER_READERS;
			w->count = (uint32_t)(state >> PARKING_READER_SHIFT);
		}
		return;
	}
	if (w->kind == CQ_WAIT_MUTEX)
		parked = cq_mem_read(&core->mem, key, &byte, 1) && (byte & PARKING_MUTEX_PARKED);
	else if (!(key & 7) && cq_mem_read_u64(&core->mem, key, &state))
		parked =
		    w->kind == CQ_WAIT_RWLOCK ? (state & PARKING_RWLOCK_PARKED) != 0 : state != 0;
	if (parked)
		w->object = key;
}

/* Offset of __kind in pthread_mutex_t: glibc's lock code keeps &mutex->__data.__kind live. */
#define MUTEX_KIND_OFFSET 16

/*
 * One candidate for a parked PI waiter's mutex: word, as a pointer to the
 * mutex or to its __kind.  Returns false when a second, different mutex
 * turns up (then which one is not known).
 */
static bool pi_candidate(struct cq_core *core, struct cq_wait *w, uint64_t word, uint64_t *found,
                         uint32_t *owner)
{
	uint64_t at[2] = {word, word - MUTEX_KIND_OFFSET};
	for (int i = 0; i < 2; i++) {
		uint32_t tid;
		if (at[i] == *found || at[i] > word ||
		    !pi_mutex_held_by_other(core, at[i], w->tid, &tid))
			continue;
		if (*found)
			return false;
		*found = at[i];
		*owner = tid;
	}
	return true;
}

/*
 * glibc's answer to EDEADLK from FUTEX_LOCK_PI (pthread_mutex_lock.c:
 * "Delay the thread indefinitely"): a futex wait on a zero word of the
 * waiter's own stack, in its mutex lock frame.  The word is near the stack
 * pointer and holds 0; a mutex a thread really sleeps on holds its owner or
 * 2.  The mutex is still where the lock frames keep it: in a callee-saved
 * register (glibc 2.36 at -O2 keeps &mutex->__data.__kind in r14, gdb's
 * location of `mutex`) or among the words their frames saved.  The
 * thread's registers and the words from the stack pointer to just above the
 * parked word are searched for a pointer to a PI mutex (or its __kind) held
 * by another thread; one is used only when it is the only one.
 */
static bool pi_refused(struct cq_core *core, const struct cq_core_thread *t, struct cq_wait *w)
{
	unsigned sp_reg = core->arch->sp_reg;
	uint32_t word;
	if (!cq_regs_has(&t->regs, sp_reg))
		return false;
	uint64_t sp = t->regs.value[sp_reg];
	if (w->futex < sp || w->futex - sp >= PI_PARK_WINDOW || !read_u32(core, w->futex, &word) ||
	    word != 0)
		return false;
	w->pi_refused = true;
	w->pi = true;
	w->object = 0;
	w->owner = CQ_OWNER_UNKNOWN;
	uint64_t found = 0, end = w->futex + 256;
	uint32_t owner = 0;
	for (unsigned r = 0; r < CQ_REGS_MAX; r++)
		if (cq_regs_has(&t->regs, r) && r != sp_reg &&
		    !pi_candidate(core, w, t->regs.value[r], &found, &owner))
			return true;
	for (uint64_t a = sp & ~(uint64_t)7; a + 8 <= end; a += 8) {
		uint64_t p;
		if (cq_mem_read_u64(&core->mem, a, &p) && !pi_candidate(core, w, p, &found, &owner))
			return true;
	}
	if (found) {
		w->object = found;
		set_owner_tid(w, owner);
	}
	return true;
}

static void mutex_owner(struct cq_core *core, struct cq_wait *w)
{
	uint8_t m[20];
	w->object = w->futex;
	if (!cq_mem_read(&core->mem, w->object, m, sizeof(m))) {
		w->owner = CQ_OWNER_UNREADABLE;
		return;
	}
	uint32_t lock = cq_load_u32(m), count = cq_load_u32(m + 4), kind = cq_load_u32(m + 16);
	int32_t owner = cq_load_i32(m + 8);
	if (kind & ~MUTEX_KIND_KNOWN_BITS) {
		w->owner = CQ_OWNER_UNKNOWN; /* not a glibc mutex as 2.36 lays it out */
		return;
	}
	static const char *const types[] = {"normal", "recursive", "errorcheck", "adaptive"};
	w->mutex_type = types[kind & MUTEX_KIND_TYPE_MASK];
	w->robust = kind & MUTEX_KIND_ROBUST;
	w->pi = kind & MUTEX_KIND_PI;
	if ((kind & MUTEX_KIND_TYPE_MASK) == 1)
		w->count = count;
	if (owner == MUTEX_INCONSISTENT || owner == MUTEX_NOTRECOVERABLE)
		w->owner_died = true;
	if (w->robust || w->pi) {
		w->owner_died = w->owner_died || (lock & FUTEX_OWNER_DIED);
		set_owner_tid(w, lock & FUTEX_TID_MASK);
	} else {
		set_owner_tid(w, owner > 0 ? (uint32_t)owner : 0);
	}
}

/*
 * A writer sleeps on __wrphase_futex while readers hold the lock (it is the
 * primary writer: __readers has WRLOCKED, not WRPHASE, and a reader count),
 * else on __writers_futex (1 | FUTEX_USED) behind the writer in __cur_writer.
 * A reader sleeps on __wrphase_futex in a write phase, else on __readers.
 */
static void rwlock_owner(struct cq_core *core, struct cq_wait *w)
{
	uint32_t readers, word;
	uint64_t f = w->futex;
	w->object = f;
	if (!read_u32(core, f, &word)) {
		w->owner = CQ_OWNER_UNREADABLE;
		return;
	}
	if (w->write && f >= RWLOCK_WRPHASE_FUTEX &&
	    read_u32(core, f - RWLOCK_WRPHASE_FUTEX, &readers) && (readers & RWLOCK_WRLOCKED) &&
	    !(readers & RWLOCK_WRPHASE) && readers >> RWLOCK_READER_SHIFT) {
		w->object = f - RWLOCK_WRPHASE_FUTEX;
		w->owner = CQ_OWNER_READERS;
		w->count = readers >> RWLOCK_READER_SHIFT;
		return;
	}
	if (w->write && f >= RWLOCK_WRITERS_FUTEX && word == (1u | RWLOCK_FUTEX_USED))
		w->object = f - RWLOCK_WRITERS_FUTEX;
	else if (!w->write && f >= RWLOCK_WRPHASE_FUTEX &&
	         read_u32(core, f - RWLOCK_WRPHASE_FUTEX, &readers) && (readers & RWLOCK_WRPHASE))
		w->object = f - RWLOCK_WRPHASE_FUTEX;
	else if (w->write) {
		w->owner = CQ_OWNER_UNKNOWN; /* the layout does not say which word this is */
		return;
	}
	uint32_t writer;
	if (!read_u32(core, w->object + RWLOCK_CUR_WRITER, &writer)) {
		w->owner = CQ_OWNER_UNREADABLE;
		return;
	}
	set_owner_tid(w, writer);
}

/* The condvar holding __g_signals[0] (@40) or [1] (@44): the one 8-byte aligned. */
static void condvar_object(struct cq_wait *w)
{
	uint64_t off = COND_G_SIGNALS + (w->futex & 4);
	w->object = w->futex >= off ? w->futex - off : w->futex;
	w->owner = CQ_OWNER_NONE;
}

static void join_owner(struct cq_core *core, struct cq_wait *w)
{
	uint32_t tid;
	w->object = w->futex;
	if (!read_u32(core, w->futex, &tid))
		w->owner = CQ_OWNER_UNREADABLE;
	else
		set_owner_tid(w, tid);
}

static int tid_order(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;
	return (*x > *y) - (*x < *y);
}

/* Index of the thread with tid in sorted (tid << 32 | index... as pairs), or NONE. */
static size_t find_tid(const int64_t *sorted, size_t n, int32_t tid)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int32_t t = (int32_t)(sorted[mid] >> 32);
		if (t < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && (int32_t)(sorted[lo] >> 32) == tid)
		return (size_t)(uint32_t)sorted[lo];
	return NONE;
}

/* Resolves owner tids to threads of the core. */
static struct cq_error *resolve_owners(struct cq_waits *w, const int32_t *tids, size_t nthreads)
{
	int64_t *sorted = malloc((nthreads ? nthreads : 1) * sizeof(*sorted));
	if (!sorted)
		return &cq_error_nomem;
	for (size_t t = 0; t < nthreads; t++)
		sorted[t] = (int64_t)tids[t] * ((int64_t)1 << 32) + (int64_t)(uint32_t)t;
	qsort(sorted, nthreads, sizeof(*sorted), tid_order);
	for (size_t i = 0; i < w->nwaits; i++) {
		struct cq_wait *wt = &w->waits[i];
		if (wt->owner != CQ_OWNER_NOT_IN_CORE)
			continue;
		size_t t = find_tid(sorted, nthreads, wt->owner_tid);
		if (t != NONE) {
			wt->owner = CQ_OWNER_THREAD;
			wt->owner_thread = t;
		}
	}
	free(sorted);
	return NULL;
}

/*
 * Inferred owners.  A Rust std::sync::Mutex and a sem_t (CPython's
 * threading.Lock) record no owner, but a thread that holds one keeps a
 * reference to it for as long as it holds it: a Rust MutexGuard is a pointer
 * to the Mutex (its futex word, at offset 0 of a Mutex<T> whose T is aligned
 * to 4 bytes or less), on the holder's live stack or in a register of one of
 * its frames; a CPython 3.11 thread that took a threading.Lock keeps the lock
 * object in a slot of its interpreter frames (a local, or the bound __exit__
 * a with statement leaves on the value stack), and the lock object points to
 * the sem_t.  The one rule: a lock in the taken state (Mutex word 1 or 2,
 * semaphore value 0) that exactly one thread other than its waiters
 * references so is held by that thread, inferred.  None or several: the
 * owner stays unknown (CQ_OWNER_NONE).  A bare pointer to a sem_t on a C
 * stack is no evidence (a semaphore is a count, posted by anyone), so
 * semaphores are inferred only through CPython's lock objects.
 */

/*
 * Checked against what the core records.  An inference rests on a
 * reference, and a reference is not a hold: a thread that keeps a lock in a
 * local while the lock's real holder has exited is the one thread that
 * references it.  So each inferred owner says what, beyond the reference,
 * confirms it (owner_confirmed_by), and a cycle through an unconfirmed one
 * is only a possible deadlock (cq_waits_graph).  For CPython: the lock
 * object's own state (a _thread.lock's `locked` flag must say taken; a
 * _thread.RLock's rlock_owner must be the holder's thread ident, else the
 * inference is dropped, and when it is, it confirms), and the frame that
 * took it (a with statement pushes the lock's bound __exit__ before it takes
 * the lock, so in any thread but a waiter's that slot says the with
 * statement holds it).  A Rust Mutex keeps no state that names or confirms
 * a holder, and its guard is a bare pointer like any &Mutex: no Rust
 * inference is confirmed.
 */

/* Bytes above the stack pointer searched per thread, and CPython frames and slots walked. */
#define INFER_PY_FRAMES  4096
#define INFER_PY_SLOTS   4096
#define INFER_PY_INTERPS 64
/*
 * In all: stack bytes (beyond the core's own size: stacks that overlap, a
 * forged core) and CPython steps (each thread state, each frame and each
 * slot is one: a frame with no slots still costs one, so a forged list of
 * empty frames cannot run for ever).  A search cut short infers nothing
 * (the thread it did not reach may be the holder); so does a thread-state,
 * frame or interpreter list that runs into a loop (no live interpreter has
 * one: the core is damaged or forged).
 */
#define INFER_PY_STEPS (1u << 22)

/* CPython 3.11 on 64-bit (gdb's ptype /o against python3.11's DWARF, Debian 3.11.2). */
#define PY311_RUNTIME_INTERP_HEAD 40  /* _PyRuntime.interpreters.head */
#define PY311_INTERP_NEXT         0   /* PyInterpreterState.next */
#define PY311_INTERP_THREADS      16  /* .threads.head */
#define PY311_TSTATE_NEXT         8   /* PyThreadState.next */
#define PY311_TSTATE_INTERP       16  /* .interp: its interpreter (a check of the layout) */
#define PY311_TSTATE_CFRAME       56  /* .cframe */
#define PY311_TSTATE_THREAD_ID    152 /* .thread_id: pthread_self(), what an RLock records */
#define PY311_TSTATE_NATIVE_ID    160 /* .native_thread_id */
#define PY311_CFRAME_CURRENT      8   /* _PyCFrame.current_frame */
#define PY311_FRAME_CODE          32  /* _PyInterpreterFrame.f_code */
#define PY311_FRAME_PREVIOUS      48  /* .previous */
#define PY311_FRAME_STACKTOP      64  /* .stacktop (-1 while the frame runs) */
#define PY311_FRAME_LOCALSPLUS    72  /* .localsplus[] */
#define PY311_CODE_STACKSIZE      68  /* PyCodeObject.co_stacksize */
#define PY311_CODE_NLOCALSPLUS    76  /* .co_nlocalsplus */
#define PY_OBJECT_TYPE            8   /* ob_type */
#define PY_TYPE_NAME              24  /* PyTypeObject.tp_name */
#define PY_LOCK_SEM               16  /* lockobject.lock_lock, rlockobject.rlock_lock: the sem_t */
#define PY_LOCK_LOCKED            32  /* lockobject.locked: 1 while taken */
#define PY_RLOCK_OWNER            24  /* rlockobject.rlock_owner: the holder's thread ident */
#define PY_CFUNCTION_DEF          16  /* PyCFunctionObject.m_ml: its PyMethodDef (ml_name @0) */
#define PY_CFUNCTION_SELF         24  /* PyCFunctionObject.m_self: a bound method's object */

/* One taken lock that records no owner, and who references it. */
struct infer_lock {
	uint64_t addr; /* the futex word: the Mutex, the sem_t */
	bool python;   /* a sem_t: only CPython lock objects count as references */
	size_t owner;  /* the one thread that references it, NONE */
	bool several;
	uint64_t pyobj;  /* python: the lock object the owner's frames hold */
	bool owner_exit; /* python: among them, the lock's bound __exit__ (a with statement) */
};

/* Thread t references lock (unless t waits on it itself). */
static void infer_ref(struct infer_lock *lock, size_t t, const struct cq_wait *waits,
                      const size_t *wait_of)
{
	if (wait_of[t] != NONE && waits[wait_of[t]].object == lock->addr)
		return;
	if (lock->owner == NONE)
		lock->owner = t;
	else if (lock->owner != t)
		lock->several = true;
}

/* A word of thread t's registers or live stack: a Rust Mutex it points to. */
static void infer_word(struct infer_lock *l, size_t n, uint64_t word, size_t t,
                       const struct cq_wait *waits, const size_t *wait_of)
{
	struct infer_lock *lock = cq_addr_find(l, n, sizeof(struct infer_lock), word);
	if (lock && !lock->python)
		infer_ref(lock, t, waits, wait_of);
}

struct infer_words {
	struct infer_lock *l;
	size_t n;
	const struct cq_wait *waits;
	const size_t *wait_of;
};

static void infer_visit(void *arg, size_t t, uint64_t word, const uint8_t *at, uint64_t rest)
{
	(void)at;
	(void)rest;
	struct infer_words *w = arg;
	infer_word(w->l, w->n, word, t, w->waits, w->wait_of);
}

/* False when the search was cut short. */
static bool infer_from_stacks(struct cq_core *core, struct infer_lock *l, size_t n,
                              const struct cq_wait *waits, const size_t *wait_of)
{
	struct infer_words w = {l, n, waits, wait_of};
	return cq_thread_words(core, infer_visit, &w);
}

static bool py_type_is(struct cq_core *core, uint64_t obj, const char *const *names)
{
	uint64_t type, name;
	char buf[32];
	if (!cq_mem_read_u64(&core->mem, obj + PY_OBJECT_TYPE, &type) ||
	    !cq_mem_read_u64(&core->mem, type + PY_TYPE_NAME, &name) ||
	    !cq_mem_read_string(&core->mem, name, buf, sizeof(buf)))
		return false;
	for (; *names; names++)
		if (!strcmp(buf, *names))
			return true;
	return false;
}

/* A live object: its reference count (ob_refcnt @0) is not 0, as a freed one's is. */
static bool py_live(struct cq_core *core, uint64_t obj)
{
	int64_t refs;
	return cq_mem_read_u64(&core->mem, obj, (uint64_t *)&refs) && refs > 0;
}

static const char *const py_lock_types[] = {"_thread.lock", "_thread.RLock", NULL};
static const char *const py_rlock_type[] = {"_thread.RLock", NULL};

/*
 * A slot of a CPython frame: a lock object, or a method bound to one; its
 * sem_t or 0.  *lockobj is the lock object, *with_exit says the slot held
 * its bound __exit__ (what a with statement keeps).  A slot above a running
 * frame's real top may still point to an object freed since: only live
 * objects count.
 */
static uint64_t py_lock_sem(struct cq_core *core, uint64_t obj, uint64_t *lockobj, bool *with_exit)
{
	static const char *const methods[] = {"builtin_function_or_method", NULL};
	uint64_t sem, self, def, name;
	char buf[16];
	*with_exit = false;
	if (!obj || (obj & 7) || !py_live(core, obj))
		return 0;
	if (py_type_is(core, obj, methods)) {
		if (!cq_mem_read_u64(&core->mem, obj + PY_CFUNCTION_SELF, &self) || !self ||
		    (self & 7) || !py_live(core, self))
			return 0;
		*with_exit = cq_mem_read_u64(&core->mem, obj + PY_CFUNCTION_DEF, &def) &&
		             cq_mem_read_u64(&core->mem, def, &name) &&
		             cq_mem_read_string(&core->mem, name, buf, sizeof(buf)) &&
		             !strcmp(buf, "__exit__");
		obj = self;
	}
	if (!py_type_is(core, obj, py_lock_types) ||
	    !cq_mem_read_u64(&core->mem, obj + PY_LOCK_SEM, &sem))
		return 0;
	*lockobj = obj;
	return sem;
}

/* The runtime state of a CPython 3.11 in the core (its _PyRuntime), or 0. */
static uint64_t py311_runtime(struct cq_core *core)
{
	for (size_t m = 0; m < core->nmodules; m++) {
		struct cq_symbol_query q[2] = {{.name = "_PyRuntime"}, {.name = "Py_Version"}};
		uint64_t version;
		if (cq_elf_find_symbols(&core->modules[m], q, 2) == 2 &&
		    cq_mem_read_u64(&core->mem, q[1].addr, &version) &&
		    (version >> 16 & 0xffff) == 0x030b)
			return q[0].addr;
	}
	return 0;
}

/*
 * Brent's loop check over a linked list: seen(p) for each next node p is
 * true once p has come round again; at most twice the list's tail and loop.
 */
struct loop_check {
	uint64_t saved;
	size_t power, lam;
};

static void loop_start(struct loop_check *c, uint64_t first)
{
	c->saved = first;
	c->power = 1;
	c->lam = 0;
}

static bool loop_seen(struct loop_check *c, uint64_t p)
{
	if (p == c->saved)
		return true;
	if (++c->lam == c->power) {
		c->saved = p;
		c->power *= 2;
		c->lam = 0;
	}
	return false;
}

/* What the CPython walk shares: the locks, the waits, the budget, each thread's ident. */
struct py_walk {
	struct cq_core *core;
	struct infer_lock *l;
	size_t n;
	const struct cq_wait *waits;
	const size_t *wait_of;
	size_t steps;       /* left of INFER_PY_STEPS */
	uint64_t *ident_of; /* per thread of the core: its PyThreadState.thread_id, 0 */
};

/* One slot of thread t's frames: a reference to a taken lock's object. */
static void py_slot(struct py_walk *pw, size_t t, uint64_t obj)
{
	uint64_t lockobj = 0, sem;
	bool with_exit;
	struct infer_lock *lock;
	if (!(sem = py_lock_sem(pw->core, obj, &lockobj, &with_exit)) ||
	    !(lock = cq_addr_find(pw->l, pw->n, sizeof(struct infer_lock), sem)) || !lock->python)
		return;
	infer_ref(lock, t, pw->waits, pw->wait_of);
	if (lock->owner != t)
		return;
	if (lock->pyobj && lock->pyobj != lockobj)
		lock->several = true; /* two lock objects over one sem_t: which is taken? */
	lock->pyobj = lockobj;
	lock->owner_exit |= with_exit;
}

/* Thread t's interpreter frames from frame on; false when cut short, looping or unreadable. */
static bool py_frames(struct py_walk *pw, size_t t, uint64_t frame)
{
	struct cq_mem *mem = &pw->core->mem;
	struct loop_check loop;
	loop_start(&loop, frame);
	for (int f = 0; frame; f++) {
		uint64_t code, prev;
		int32_t top, nlocals, stacksize;
		if (f == INFER_PY_FRAMES || !pw->steps)
			return false;
		pw->steps--; /* the frame itself, whatever its slots */
		if (!cq_mem_read_u64(mem, frame + PY311_FRAME_CODE, &code) ||
		    !cq_mem_read_u64(mem, frame + PY311_FRAME_PREVIOUS, &prev) ||
		    !cq_mem_read_u32(mem, frame + PY311_FRAME_STACKTOP, (uint32_t *)&top) ||
		    !cq_mem_read_u32(mem, code + PY311_CODE_NLOCALSPLUS, (uint32_t *)&nlocals) ||
		    !cq_mem_read_u32(mem, code + PY311_CODE_STACKSIZE, (uint32_t *)&stacksize) ||
		    nlocals < 0 || stacksize < 0)
			return false;
		/* A running frame (stacktop -1): every slot its code may use. */
		int64_t slots = top >= 0 && top <= (int64_t)nlocals + stacksize
		                    ? top
		                    : (int64_t)nlocals + stacksize;
		if (slots > INFER_PY_SLOTS)
			slots = INFER_PY_SLOTS;
		if ((uint64_t)slots > pw->steps)
			return false;
		pw->steps -= (size_t)slots;
		for (int64_t k = 0; k < slots; k++) {
			uint64_t obj;
			if (!cq_mem_read_u64(mem, frame + PY311_FRAME_LOCALSPLUS + 8 * (uint64_t)k,
			                     &obj))
				return false;
			py_slot(pw, t, obj);
		}
		frame = prev;
		if (frame && loop_seen(&loop, frame))
			return false;
	}
	return true;
}

/* Every CPython thread's interpreter frames: the lock objects their slots hold. */
/*
 * False when the walk was cut short (the limits above), ran into a loop, or
 * met memory the core lacks or a thread state 3.11 would not lay out so: a
 * thread not walked may be the holder.
 */
static bool infer_from_python(struct py_walk *pw, const int64_t *sorted_tids)
{
	struct cq_core *core = pw->core;
	uint64_t rt = py311_runtime(core), interp, ts;
	if (!rt || !cq_mem_read_u64(&core->mem, rt + PY311_RUNTIME_INTERP_HEAD, &interp))
		return true;
	struct loop_check interps;
	loop_start(&interps, interp);
	for (int i = 0; interp && i < INFER_PY_INTERPS; i++) {
		if (!cq_mem_read_u64(&core->mem, interp + PY311_INTERP_THREADS, &ts))
			return false;
		struct loop_check threads;
		loop_start(&threads, ts);
		while (ts) {
			uint64_t native, ident, cframe, frame, next, owner;
			if (!pw->steps)
				return false;
			pw->steps--;
			if (!cq_mem_read_u64(&core->mem, ts + PY311_TSTATE_NATIVE_ID, &native) ||
			    !cq_mem_read_u64(&core->mem, ts + PY311_TSTATE_THREAD_ID, &ident) ||
			    !cq_mem_read_u64(&core->mem, ts + PY311_TSTATE_CFRAME, &cframe) ||
			    !cq_mem_read_u64(&core->mem, ts + PY311_TSTATE_NEXT, &next) ||
			    !cq_mem_read_u64(&core->mem, ts + PY311_TSTATE_INTERP, &owner) ||
			    owner != interp)
				return false; /* not laid out as 3.11 does */
			if (next && loop_seen(&threads, next))
				return false; /* a thread-state list that loops: forged */
			size_t t = native && native <= INT32_MAX
			               ? find_tid(sorted_tids, core->nthreads, (int32_t)native)
			               : NONE;
			ts = next;
			if (t == NONE)
				continue;
			pw->ident_of[t] = ident;
			if (cframe &&
			    cq_mem_read_u64(&core->mem, cframe + PY311_CFRAME_CURRENT, &frame) &&
			    !py_frames(pw, t, frame))
				return false;
		}
		if (!cq_mem_read_u64(&core->mem, interp + PY311_INTERP_NEXT, &interp))
			break;
		if (interp && loop_seen(&interps, interp))
			return false;
	}
	return !interp;
}

/*
 * What the core records about a CPython lock held, by inference, by a
 * thread whose ident is ident: what confirms it ("rlock-owner", "with"),
 * NULL when nothing does; *refuted when the lock object says it is not
 * taken, or taken by another thread.
 */
static const char *py_confirm(struct cq_core *core, const struct infer_lock *lock, uint64_t ident,
                              bool *refuted)
{
	uint64_t owner;
	uint8_t locked;
	*refuted = false;
	if (py_type_is(core, lock->pyobj, py_rlock_type)) {
		if (!cq_mem_read_u64(&core->mem, lock->pyobj + PY_RLOCK_OWNER, &owner) || !ident ||
		    owner != ident) {
			*refuted = true;
			return NULL;
		}
		return "rlock-owner";
	}
	if (!cq_mem_read(&core->mem, lock->pyobj + PY_LOCK_LOCKED, &locked, 1) || locked != 1) {
		*refuted = true;
		return NULL;
	}
	return lock->owner_exit ? "with" : NULL;
}

/* Gives each taken lock without a recorded owner the one thread that references it. */
static struct cq_error *infer_owners(struct cq_core *core, struct cq_wait *waits, size_t nwaits,
                                     const int64_t *sorted_tids)
{
	size_t n = 0, nthreads = core->nthreads;
	bool any_rust = false, any_python = false;
	for (size_t i = 0; i < nwaits; i++) {
		const struct cq_wait *w = &waits[i];
		uint32_t word;
		bool rust = w->rust_std && w->kind == CQ_WAIT_MUTEX;
		if (w->owner != CQ_OWNER_NONE || !(rust || w->kind == CQ_WAIT_SEMAPHORE) ||
		    !read_u32(core, w->object, &word) ||
		    (rust ? word != 1 && word != 2 : word != 0))
			continue;
		n++;
	}
	if (!n)
		return NULL;
	struct infer_lock *l = calloc(n, sizeof(*l));
	size_t *wait_of = malloc((nthreads ? nthreads : 1) * sizeof(*wait_of));
	if (!l || !wait_of) {
		free(l);
		free(wait_of);
		return &cq_error_nomem;
	}
	for (size_t t = 0; t < nthreads; t++)
		wait_of[t] = NONE;
	size_t k = 0;
	for (size_t i = 0; i < nwaits; i++) {
		const struct cq_wait *w = &waits[i];
		uint32_t word;
		bool rust = w->rust_std && w->kind == CQ_WAIT_MUTEX;
		if (w->thread < nthreads)
			wait_of[w->thread] = i;
		if (w->owner != CQ_OWNER_NONE || !(rust || w->kind == CQ_WAIT_SEMAPHORE) ||
		    !read_u32(core, w->object, &word) ||
		    (rust ? word != 1 && word != 2 : word != 0))
			continue;
		l[k].addr = w->object;
		l[k].python = !rust;
		l[k].owner = NONE;
		any_rust |= rust;
		any_python |= !rust;
		k++;
	}
	qsort(l, k, sizeof(*l), cq_addr_order);
	size_t kept = 0;
	for (size_t i = 0; i < k; i++) /* one entry a lock (a word both kinds claim: neither) */
		if (kept && l[kept - 1].addr == l[i].addr)
			l[kept - 1].several |= l[kept - 1].python != l[i].python;
		else
			l[kept++] = l[i];
	k = kept;
	struct py_walk pw = {
	    .core = core,
	    .l = l,
	    .n = k,
	    .waits = waits,
	    .wait_of = wait_of,
	    .steps = INFER_PY_STEPS,
	    .ident_of = any_python ? calloc(nthreads ? nthreads : 1, sizeof(*pw.ident_of)) : NULL};
	if (any_python && !pw.ident_of) {
		free(l);
		free(wait_of);
		return &cq_error_nomem;
	}
	bool stacks_done = !any_rust || infer_from_stacks(core, l, k, waits, wait_of);
	bool python_done = !any_python || infer_from_python(&pw, sorted_tids);
	for (size_t i = 0; i < nwaits; i++) {
		struct cq_wait *w = &waits[i];
		struct infer_lock *lock;
		const char *confirmed = NULL;
		bool refuted = false;
		if (w->owner != CQ_OWNER_NONE ||
		    !(lock = cq_addr_find(l, k, sizeof(struct infer_lock), w->object)) ||
		    lock->owner == NONE || lock->several ||
		    lock->python != (w->kind == CQ_WAIT_SEMAPHORE) ||
		    !(lock->python ? python_done : stacks_done))
			continue;
		if (lock->python)
			confirmed = py_confirm(core, lock, pw.ident_of[lock->owner], &refuted);
		if (refuted)
			continue;
		w->owner = CQ_OWNER_THREAD;
		w->owner_thread = lock->owner;
		w->owner_tid = core->threads[lock->owner].tid;
		w->owner_inferred = true;
		w->owner_from = lock->python ? "python" : "stack";
		w->owner_confirmed_by = confirmed;
	}
	free(pw.ident_of);
	free(l);
	free(wait_of);
	return NULL;
}

/* infer_owners, with the threads' tids sorted for CPython's native thread ids. */
static struct cq_error *infer_with_tids(struct cq_core *core, struct cq_waits *w,
                                        const int32_t *tids, size_t nthreads)
{
	int64_t *sorted = malloc((nthreads ? nthreads : 1) * sizeof(*sorted));
	if (!sorted)
		return &cq_error_nomem;
	for (size_t t = 0; t < nthreads; t++)
		sorted[t] = (int64_t)tids[t] * ((int64_t)1 << 32) + (int64_t)(uint32_t)t;
	qsort(sorted, nthreads, sizeof(*sorted), tid_order);
	struct cq_error *err = infer_owners(core, w->waits, w->nwaits, sorted);
	free(sorted);
	return err;
}

struct cq_error *cq_waits_find(struct cq_core *core, const struct cq_stacks *stacks,
                               struct cq_waits **out)
{
	*out = NULL;
	struct classify_cache cache[1];
	memset(cache, 0, sizeof(cache));
	size_t n = core->nthreads;
	const struct cq_thread_stack **by_thread = calloc(n ? n : 1, sizeof(*by_thread));
	const char **syscalls = calloc(n ? n : 1, sizeof(*syscalls));
	struct cq_wait *waits = NULL;
	size_t nwaits = 0;
	struct cq_error *err = &cq_error_nomem;
	if (!by_thread || !syscalls)
		goto fail;
	for (size_t s = 0; stacks && s < stacks->nthreads; s++) {
		const struct cq_core_thread *t = stacks->threads[s].thread;
		if (t >= core->threads && t < core->threads + n)
			by_thread[t - core->threads] = &stacks->threads[s];
	}
	for (size_t t = 0; t < n; t++) {
		int64_t nr = blocked_call(core, &core->threads[t]);
		if (nr < 0)
			continue;
		syscalls[t] = syscall_name(core->arch, nr);
		if (nr != core->arch->syscall.futex)
			continue;
		if (!waits && !(waits = calloc(n, sizeof(*waits))))
			goto fail;
		struct cq_wait *w = &waits[nwaits++];
		w->thread = t;
		w->tid = core->threads[t].tid;
		w->futex = core->threads[t].syscall_args[0];
		if (!classify(by_thread[t], w, cache)) {
			w->kind = CQ_WAIT_FUTEX;
			w->object = w->futex;
			w->owner = CQ_OWNER_NONE;
			continue;
		}
		if (w->parking_lot) {
			parking_lot_object(core, w);
			continue;
		}
		if (w->rust_std) { /* a futex word: no owner, the object is the word's */
			w->object = w->futex;
			/* RwLock {state @0, writer_notify @4}: a writer sleeps on writer_notify */
			if (w->kind == CQ_WAIT_RWLOCK && w->write && w->futex >= RUST_RWLOCK_NOTIFY)
				w->object = w->futex - RUST_RWLOCK_NOTIFY;
			w->owner = CQ_OWNER_NONE;
			continue;
		}
		switch (w->kind) {
		case CQ_WAIT_MUTEX:
			if (!pi_refused(core, &core->threads[t], w))
				mutex_owner(core, w);
			break;
		case CQ_WAIT_RWLOCK:
			rwlock_owner(core, w);
			break;
		case CQ_WAIT_CONDVAR:
			condvar_object(w);
			break;
		case CQ_WAIT_JOIN:
			join_owner(core, w);
			break;
		case CQ_WAIT_SEMAPHORE: /* a count: whoever posts it, no owner */
			w->object = w->futex;
			w->owner = CQ_OWNER_NONE;
			break;
		case CQ_WAIT_FUTEX:
			break;
		}
	}
	if (nwaits && (err = cq_wait_readers_confirm(core, by_thread, waits, nwaits)) != NULL)
		goto fail;
	err = &cq_error_nomem;
	free(by_thread);
	by_thread = NULL;
	if (!nwaits) {
		free(syscalls);
		free(waits);
		return NULL;
	}
	struct cq_waits *w = calloc(1, sizeof(*w));
	int32_t *tids = malloc(n * sizeof(*tids));
	if (!w || !tids) {
		free(w);
		free(tids);
		goto fail;
	}
	w->waits = waits;
	w->nwaits = nwaits;
	w->syscalls = syscalls;
	w->nthreads = n;
	for (size_t t = 0; t < n; t++)
		tids[t] = core->threads[t].tid;
	err = resolve_owners(w, tids, n);
	if (!err)
		err = infer_with_tids(core, w, tids, n);
	if (!err)
		err = cq_waits_graph(w, tids, n);
	free(tids);
	if (err) {
		cq_waits_free(w);
		return err;
	}
	*out = w;
	return NULL;
fail:
	free(by_thread);
	free(syscalls);
	free(waits);
	return err;
}

/* The wait whose thread waits for w's owner, or NONE: the next edge of the chain. */
static size_t next_wait(const struct cq_wait *w, const size_t *wait_of)
{
	return w->owner == CQ_OWNER_THREAD ? wait_of[w->owner_thread] : NONE;
}

/* Most waiters first, then by tid (threads before ownerless objects); ctx: the ends. */
static int end_order(const void *a, const void *b, void *ctx)
{
	const struct cq_wait_end *ends = ctx;
	const struct cq_wait_end *x = &ends[*(const size_t *)a];
	const struct cq_wait_end *y = &ends[*(const size_t *)b];
	if (x->waiters != y->waiters)
		return x->waiters > y->waiters ? -1 : 1;
	if (x->is_thread != y->is_thread)
		return x->is_thread ? -1 : 1;
	if (x->is_thread)
		return (x->tid > y->tid) - (x->tid < y->tid);
	return (x->wait > y->wait) - (x->wait < y->wait);
}

/* Sorts ends (most waiters first) and renumbers every wait's end. */
static struct cq_error *order_ends(struct cq_waits *w)
{
	size_t n = w->nends;
	size_t *order = malloc((n ? n : 1) * sizeof(*order));
	size_t *rank = malloc((n ? n : 1) * sizeof(*rank));
	struct cq_wait_end *sorted = malloc((n ? n : 1) * sizeof(*sorted));
	if (!order || !rank || !sorted) {
		free(order);
		free(rank);
		free(sorted);
		return &cq_error_nomem;
	}
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	qsort_r(order, n, sizeof(*order), end_order, w->ends);
	for (size_t i = 0; i < n; i++) {
		sorted[i] = w->ends[order[i]];
		rank[order[i]] = i;
	}
	for (size_t i = 0; i < w->nwaits; i++)
		if (w->waits[i].end != NONE)
			w->waits[i].end = rank[w->waits[i].end];
	free(w->ends);
	w->ends = sorted;
	free(order);
	free(rank);
	return NULL;
}

/* Ownerless ends by object, then kind; ctx: the graph (its ends and waits). */
static int object_order(const void *a, const void *b, void *ctx)
{
	const struct cq_waits *w = ctx;
	const struct cq_wait *x = &w->waits[w->ends[*(const size_t *)a].wait];
	const struct cq_wait *y = &w->waits[w->ends[*(const size_t *)b].wait];
	if (x->object != y->object)
		return x->object < y->object ? -1 : 1;
	return (x->kind > y->kind) - (x->kind < y->kind);
}

/*
 * Makes the chains that end at one ownerless object (eight threads on one
 * condvar, two writers behind one rwlock's readers) one end.
 */
static struct cq_error *merge_ends(struct cq_waits *w)
{
	size_t n = w->nends, nfree = 0;
	size_t *idx = malloc((n ? n : 1) * sizeof(*idx));
	size_t *map = malloc((n ? n : 1) * sizeof(*map));
	if (!idx || !map) {
		free(idx);
		free(map);
		return &cq_error_nomem;
	}
	for (size_t e = 0; e < n; e++) {
		map[e] = e;
		if (!w->ends[e].is_thread)
			idx[nfree++] = e;
	}
	qsort_r(idx, nfree, sizeof(*idx), object_order, w);
	for (size_t k = 1; k < nfree; k++)
		if (object_order(&idx[k - 1], &idx[k], w) == 0) {
			map[idx[k]] = map[idx[k - 1]];
			w->ends[map[idx[k]]].waiters += w->ends[idx[k]].waiters;
		}
	size_t kept = 0;
	for (size_t e = 0; e < n; e++) /* idx becomes each kept end's new index */
		if (map[e] == e) {
			w->ends[kept] = w->ends[e];
			idx[e] = kept++;
		}
	for (size_t i = 0; i < w->nwaits; i++)
		if (w->waits[i].end != NONE)
			w->waits[i].end = idx[map[w->waits[i].end]];
	w->nends = kept;
	free(idx);
	free(map);
	return NULL;
}

/* Rotates cycle[first .. first + n) so that its lowest tid comes first. */
static void rotate_cycle(struct cq_waits *w, size_t first, size_t n)
{
	size_t low = 0;
	for (size_t i = 1; i < n; i++)
		if (w->waits[w->cycle[first + i]].tid < w->waits[w->cycle[first + low]].tid)
			low = i;
	for (size_t r = 0; r < low; r++) {
		size_t head = w->cycle[first];
		memmove(&w->cycle[first], &w->cycle[first + 1], (n - 1) * sizeof(size_t));
		w->cycle[first + n - 1] = head;
	}
}

struct cq_error *cq_waits_graph(struct cq_waits *w, const int32_t *tids, size_t nthreads)
{
	size_t n = w->nwaits;
	struct cq_error *err = &cq_error_nomem;
	size_t *wait_of = malloc((nthreads ? nthreads : 1) * sizeof(*wait_of));
	size_t *end_of = malloc((nthreads ? nthreads : 1) * sizeof(*end_of));
	size_t *path = malloc((n ? n : 1) * sizeof(*path));
	size_t *pos = malloc((n ? n : 1) * sizeof(*pos));
	uint8_t *state = calloc(n ? n : 1, 1); /* 0 new, 1 on the walk, 2 done */
	w->cycle = malloc((n ? n : 1) * sizeof(*w->cycle));
	w->deadlocks = malloc((n ? n : 1) * sizeof(*w->deadlocks));
	w->ends = malloc((n ? n : 1) * sizeof(*w->ends));
	w->ndeadlocks = w->nends = 0;
	if (!wait_of || !end_of || !path || !pos || !state || !w->cycle || !w->deadlocks ||
	    !w->ends)
		goto out;
	for (size_t t = 0; t < nthreads; t++)
		wait_of[t] = end_of[t] = NONE;
	for (size_t i = 0; i < n; i++) {
		if (w->waits[i].thread < nthreads)
			wait_of[w->waits[i].thread] = i;
		if (w->waits[i].owner == CQ_OWNER_THREAD && w->waits[i].owner_thread >= nthreads)
			w->waits[i].owner = CQ_OWNER_UNKNOWN;
	}
	size_t ncycle = 0;
	for (size_t i = 0; i < n; i++) {
		if (state[i])
			continue;
		size_t len = 0, j = i;
		while (j != NONE && state[j] == 0) {
			state[j] = 1;
			pos[j] = len;
			path[len++] = j;
			j = next_wait(&w->waits[j], wait_of);
		}
		size_t deadlock = 0, end = NONE, upto = len;
		if (j != NONE && state[j] == 1) { /* a new cycle: path[pos[j]] .. the end */
			struct cq_deadlock *d = &w->deadlocks[w->ndeadlocks++];
			d->first = ncycle;
			d->n = len - pos[j];
			for (size_t k = pos[j]; k < len; k++) {
				w->cycle[ncycle++] = path[k];
				w->waits[path[k]].deadlock = w->ndeadlocks;
				w->waits[path[k]].end = NONE;
				state[path[k]] = 2;
			}
			rotate_cycle(w, d->first, d->n);
			d->verdict = CQ_DEADLOCK_RECORDED;
			for (size_t k = d->first; k < ncycle; k++) {
				const struct cq_wait *cw = &w->waits[w->cycle[k]];
				enum cq_deadlock_verdict v =
				    !cw->owner_inferred      ? CQ_DEADLOCK_RECORDED
				    : cw->owner_confirmed_by ? CQ_DEADLOCK_CONFIRMED
				                             : CQ_DEADLOCK_UNCONFIRMED;
				if (v > d->verdict)
					d->verdict = v;
			}
			deadlock = w->ndeadlocks;
			upto = pos[j];
		} else if (j != NONE) { /* joins a chain already walked */
			deadlock = w->waits[j].deadlock ? w->waits[j].deadlock : w->waits[j].behind;
			end = w->waits[j].end;
		} else { /* ends at the last wait's owner: a thread waiting on no lock, or unknown
			  */
			const struct cq_wait *last = &w->waits[path[len - 1]];
			bool is_thread = last->owner == CQ_OWNER_THREAD;
			end = is_thread ? end_of[last->owner_thread] : NONE;
			if (end == NONE) {
				end = w->nends++;
				struct cq_wait_end *e = &w->ends[end];
				memset(e, 0, sizeof(*e));
				e->is_thread = is_thread;
				if (is_thread) {
					e->thread = last->owner_thread;
					e->tid = tids[last->owner_thread];
					e->syscall = w->syscalls ? w->syscalls[e->thread] : NULL;
					end_of[last->owner_thread] = end;
				} else {
					e->wait = path[len - 1];
				}
			}
		}
		for (size_t k = 0; k < upto; k++) {
			struct cq_wait *pw = &w->waits[path[k]];
			pw->behind = deadlock;
			pw->end = deadlock ? NONE : end;
			state[path[k]] = 2;
			if (!deadlock)
				w->ends[end].waiters++;
		}
	}
	err = merge_ends(w);
	if (!err)
		err = order_ends(w);
	if (!err) {
		for (size_t t = 0; t < nthreads; t++)
			end_of[t] = NONE;
		for (size_t e = 0; e < w->nends; e++)
			if (w->ends[e].is_thread)
				end_of[w->ends[e].thread] = e;
		w->thread_ends = end_of;
		end_of = NULL;
	}
out:
	free(wait_of);
	free(end_of);
	free(path);
	free(pos);
	free(state);
	return err;
}

const struct cq_wait *cq_waits_of_thread(const struct cq_waits *w, size_t t)
{
	size_t lo = 0, hi = w ? w->nwaits : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (w->waits[mid].thread < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return w && lo < w->nwaits && w->waits[lo].thread == t ? &w->waits[lo] : NULL;
}

void cq_waits_free(struct cq_waits *w)
{
	if (!w)
		return;
	free(w->thread_ends);
	free(w->waits);
	free(w->deadlocks);
	free(w->cycle);
	free(w->ends);
	free(w->syscalls);
	free(w);
}

const char *cq_deadlock_verdict_name(enum cq_deadlock_verdict v)
{
	switch (v) {
	case CQ_DEADLOCK_RECORDED:
		break;
	case CQ_DEADLOCK_CONFIRMED:
		return "deadlock-inferred-confirmed";
	case CQ_DEADLOCK_UNCONFIRMED:
		return "possible-deadlock";
	}
	return "deadlock";
}

const char *cq_wait_kind_name(enum cq_wait_kind kind)
{
	switch (kind) {
	case CQ_WAIT_MUTEX:
		return "mutex";
	case CQ_WAIT_RWLOCK:
		return "rwlock";
	case CQ_WAIT_CONDVAR:
		return "condvar";
	case CQ_WAIT_JOIN:
		return "thread";
	case CQ_WAIT_FUTEX:
		return "futex";
	case CQ_WAIT_SEMAPHORE:
		return "semaphore";
	}
	return "futex";
}
