/*
 * wait_reader.c - the one reader of an rwlock, confirmed (see wait_reader.h).
 *
 * One pass over every thread's registers and live stack, as waits.c's
 * inferred owners do, for the addresses of the rwlocks that count one
 * reader; a thread that references one is then asked what confirms that it
 * took it shared: the word after the reference (a std::shared_lock that
 * owns it), else, once per thread, the code of its frames' functions.
 * Everything read is bounded: stack bytes in all, frames per thread, bytes
 * of code per function.
 */
#include "libcore/analysis/wait_reader.h"

#include <stdlib.h>
#include <string.h>

#include "libcore/analysis/thread_words.h"
#include "libcore/analysis/waits.h"
#include "libcore/base/addr_table.h"
#include "libcore/base/bytes.h"
#include "libcore/model/core.h"
#include "libcore/model/elf_symbols.h"
#include "libcore/model/module.h"
#include "unwind/frames.h"

#define NONE SIZE_MAX
/* A thread's innermost frames whose functions' code is read, and bytes of code a function. */
#define READER_FRAMES   64
#define READER_CODE_MAX (64u << 10)
/*
 * Bytes of code read in all, and functions whose answer is kept (threads of
 * a pool share their frames' functions).  A pass that runs out of code
 * confirms no reader: a thread not asked might be a second claimant.
 */
#define READER_CODE_BUDGET (64u << 20)
#define READER_FN_CACHE    64
/* libstdc++'s std::shared_lock: {mutex_type *_M_pm; bool _M_owns;}. */
#define SHARED_LOCK_OWNS 8

/* One rwlock that counts one reader. */
struct reader_lock {
	uint64_t addr;
	size_t owner;   /* the one confirmed reader, NONE */
	bool several;   /* more than one thread is confirmed: which is the reader? */
	const char *by; /* what confirms owner */
};

/* glibc's read-lock and unlock entry points, by address, in whatever modules define them. */
#define RW_NAMES 8
struct rw_entries {
	uint64_t addr[RW_NAMES];
	bool read[RW_NAMES]; /* a read lock (else an unlock) */
	size_t n;
};

struct reader_pass {
	struct cq_core *core;
	const struct cq_thread_stack *const *by_thread;
	struct reader_lock *l;
	size_t n;
	const struct cq_wait *waits;
	const size_t *wait_of;
	uint8_t *reads; /* per thread: 0 not asked, 1 a frame read-locked, 2 none did */
	struct rw_entries rw;
	bool rw_found;
	uint8_t *code; /* READER_CODE_MAX bytes */
	uint64_t code_left;
	bool cut; /* the code budget ran out */
	uint64_t fn_addr[READER_FN_CACHE];
	int8_t fn_reads[READER_FN_CACHE]; /* 0 unknown, 1 read-locks, 2 does not */
};

static void find_rw_entries(struct reader_pass *p)
{
	static const char *const names[] = {
	    "pthread_rwlock_rdlock",      "__pthread_rwlock_rdlock", "pthread_rwlock_timedrdlock",
	    "pthread_rwlock_clockrdlock", "pthread_rwlock_unlock",   "__pthread_rwlock_unlock",
	};
	enum { NNAMES = sizeof(names) / sizeof(names[0]), NREAD = 4 };
	p->rw_found = true;
	for (size_t m = 0; m < p->core->nmodules; m++) {
		struct cq_symbol_query q[NNAMES];
		memset(q, 0, sizeof(q));
		for (size_t k = 0; k < NNAMES; k++)
			q[k].name = names[k];
		if (!cq_elf_find_symbols(&p->core->modules[m], q, NNAMES))
			continue;
		for (size_t k = 0; k < NNAMES && p->rw.n < RW_NAMES; k++)
			if (q[k].found) {
				p->rw.addr[p->rw.n] = q[k].addr;
				p->rw.read[p->rw.n++] = k < NREAD;
			}
	}
}

/* 1: a read lock, 2: an unlock, 0: neither. */
static int rw_entry(const struct rw_entries *rw, uint64_t addr)
{
	for (size_t k = 0; k < rw->n; k++)
		if (rw->addr[k] == addr)
			return rw->read[k] ? 1 : 2;
	return 0;
}

/*
 * What an x86_64 call to target calls: target itself, or the function the
 * PLT stub at target jumps to ([endbr64] [bnd] jmp *slot(%rip)), read from
 * the slot as the core holds it (bound once the thread has called it).
 */
static int call_kind(struct reader_pass *p, uint64_t target)
{
	int k = rw_entry(&p->rw, target);
	uint8_t b[16];
	size_t at = 0;
	uint64_t bound;
	if (k || !cq_mem_read(&p->core->mem, target, b, sizeof(b)))
		return k;
	if (b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa)
		at = 4;
	if (b[at] == 0xf2)
		at++;
	if (b[at] != 0xff || b[at + 1] != 0x25)
		return 0;
	uint64_t slot = target + at + 6 + (uint64_t)(int64_t)cq_load_i32(b + at + 2);
	return cq_mem_read_u64(&p->core->mem, slot, &bound) ? rw_entry(&p->rw, bound) : 0;
}

/*
 * Does the code of the function holding the return address ret call a read
 * lock, with no unlock after it, before ret?  Direct calls (e8 rel32) in
 * address order; the bytes are not decoded as instructions, so a call is
 * counted only when it lands on one of glibc's rwlock entries or a PLT stub
 * bound to one.
 */
static bool frame_read_locked(struct reader_pass *p, const struct cq_stack_frame *f)
{
	struct cq_symbol_query fn;
	if (!f->module || f->pc < 6 || !cq_elf_function_at(f->module, f->pc - 1, &fn) ||
	    f->pc <= fn.addr)
		return false;
	uint64_t len = f->pc - fn.addr;
	size_t slot = (size_t)(f->pc >> 4) % READER_FN_CACHE;
	if (p->fn_addr[slot] == f->pc && p->fn_reads[slot])
		return p->fn_reads[slot] == 1;
	if (len > p->code_left) {
		p->cut = true;
		return false;
	}
	p->code_left -= len;
	if (len > READER_CODE_MAX || !cq_mem_read(&p->core->mem, fn.addr, p->code, len))
		return false;
	int last = 0;
	for (uint64_t a = 0; a + 5 <= len; a++) {
		if (p->code[a] != 0xe8)
			continue;
		uint64_t target = fn.addr + a + 5 + (uint64_t)(int64_t)cq_load_i32(p->code + a + 1);
		int k = call_kind(p, target);
		if (k)
			last = k;
	}
	p->fn_addr[slot] = f->pc;
	p->fn_reads[slot] = last == 1 ? 1 : 2;
	return last == 1;
}

/* Did one of thread t's frames take a read lock it still holds (the code says so)? */
static bool thread_reads(struct reader_pass *p, size_t t)
{
	if (p->reads[t])
		return p->reads[t] == 1;
	p->reads[t] = 2;
	const struct cq_thread_stack *ts = p->by_thread[t];
	if (!ts || p->core->arch != &cq_arch_x86_64)
		return false;
	if (!p->rw_found)
		find_rw_entries(p);
	for (size_t i = 1; i < ts->nframes && i < READER_FRAMES; i++)
		if (ts->frames[i].kind == CQ_FRAME_NATIVE && frame_read_locked(p, &ts->frames[i])) {
			p->reads[t] = 1;
			return true;
		}
	return false;
}

/*
 * Thread t references the lock at word (a register: owns_next -1; a stack
 * word: owns_next the byte after it, the guard's _M_owns, or -1 past the
 * stack's end).
 */
static void reference(struct reader_pass *p, size_t t, uint64_t word, int owns_next)
{
	struct reader_lock *lock = cq_addr_find(p->l, p->n, sizeof(struct reader_lock), word);
	if (!lock || (p->wait_of[t] != NONE && p->waits[p->wait_of[t]].object == lock->addr))
		return;
	const char *by = owns_next == 1 ? "shared-lock" : thread_reads(p, t) ? "read-call" : NULL;
	if (!by)
		return;
	if (lock->owner == NONE) {
		lock->owner = t;
		lock->by = by;
	} else if (lock->owner != t) {
		lock->several = true;
	} else if (owns_next == 1) {
		lock->by = by; /* the guard says more than the code */
	}
}

static void reader_visit(void *arg, size_t t, uint64_t word, const uint8_t *at, uint64_t rest)
{
	struct reader_pass *p = arg;
	if (!at)
		reference(p, t, word, -1);
	else if (cq_addr_find(p->l, p->n, sizeof(struct reader_lock), word))
		reference(p, t, word, SHARED_LOCK_OWNS < rest ? at[SHARED_LOCK_OWNS] : -1);
}

/* False when the stacks' budget ran out (then no reader is confirmed). */
static bool scan_threads(struct reader_pass *p)
{
	return cq_thread_words(p->core, reader_visit, p);
}

static bool one_reader_wait(const struct cq_wait *w)
{
	return w->kind == CQ_WAIT_RWLOCK && w->write && !w->parking_lot &&
	       w->owner == CQ_OWNER_READERS && w->count == 1;
}

struct cq_error *cq_wait_readers_confirm(struct cq_core *core,
                                         const struct cq_thread_stack *const *by_thread,
                                         struct cq_wait *waits, size_t nwaits)
{
	size_t n = 0, nthreads = core->nthreads;
	for (size_t i = 0; i < nwaits; i++)
		n += one_reader_wait(&waits[i]);
	if (!n)
		return NULL;
	struct reader_pass p = {
	    .core = core, .by_thread = by_thread, .waits = waits, .code_left = READER_CODE_BUDGET};
	size_t *wait_of = malloc((nthreads ? nthreads : 1) * sizeof(*wait_of));
	p.l = calloc(n, sizeof(*p.l));
	p.reads = calloc(nthreads ? nthreads : 1, 1);
	p.code = malloc(READER_CODE_MAX);
	if (!wait_of || !p.l || !p.reads || !p.code) {
		free(wait_of);
		free(p.l);
		free(p.reads);
		free(p.code);
		return &cq_error_nomem;
	}
	for (size_t t = 0; t < nthreads; t++)
		wait_of[t] = NONE;
	for (size_t i = 0; i < nwaits; i++) {
		if (waits[i].thread < nthreads)
			wait_of[waits[i].thread] = i;
		if (one_reader_wait(&waits[i]))
			p.l[p.n++] = (struct reader_lock){.addr = waits[i].object, .owner = NONE};
	}
	qsort(p.l, p.n, sizeof(*p.l), cq_addr_order);
	size_t kept = 0;
	for (size_t k = 0; k < p.n; k++)
		if (!kept || p.l[kept - 1].addr != p.l[k].addr)
			p.l[kept++] = p.l[k];
	p.n = kept;
	p.wait_of = wait_of;
	if (scan_threads(&p) && !p.cut) {
		for (size_t i = 0; i < nwaits; i++) {
			struct cq_wait *w = &waits[i];
			struct reader_lock *lock;
			if (!one_reader_wait(w) ||
			    !(lock =
			          cq_addr_find(p.l, p.n, sizeof(struct reader_lock), w->object)) ||
			    lock->owner == NONE || lock->several)
				continue;
			w->owner = CQ_OWNER_THREAD;
			w->owner_thread = lock->owner;
			w->owner_tid = core->threads[lock->owner].tid;
			w->owner_inferred = true;
			w->owner_from = "reader";
			w->owner_confirmed_by = lock->by;
		}
	}
	free(wait_of);
	free(p.l);
	free(p.reads);
	free(p.code);
	return NULL;
}
