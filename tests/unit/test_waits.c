/*
 * test_waits.c - the wait-for graph (libcore/analysis/waits.h).
 *
 * The graph part on hand-built waits: a two- and a three-thread cycle, a
 * thread waiting on a mutex it holds, chains ending at a thread and at an
 * ownerless object, threads behind a deadlock, an owner index out of range,
 * and one cycle of 100,000 threads (linear: it must finish at once).  Then
 * cq_waits_find on a hand-made core: threads in a futex wait (orig_rax 202,
 * rax -ERESTARTSYS, rdi the futex) under __lll_lock_wait, on a mutex whose
 * owner is no thread of the core, on a futex word in unmapped memory, on a
 * mutex held by another waiting thread, and one with no stack at all.
 * Then PI locks the kernel refused (EDEADLK: glibc parks the thread on a
 * zero word of its own stack): the mutex found from the one pointer to a PI
 * mutex held by another thread, or unknown when there are two; and Rust's
 * std Mutex and a semaphore, which record no owner.  Then owners inferred
 * for Rust Mutexes: the one other thread whose live stack or registers
 * point to a taken Mutex holds it; two such threads, none, a Mutex not
 * taken, or a pointer below the stack pointer (dead) give no owner.
 * Then what a cycle rests on (issue 45): recorded owners make a deadlock,
 * inferred ones a deadlock only when each is confirmed, else a possible
 * deadlock; and the Rust shape of a lock whose holder exited (a thread keeps
 * it in a local and waits on a second lock whose holder waits on the
 * first): the inference closes a cycle, which is a possible deadlock only.
 * Then the one reader of an rwlock (issue 50): confirmed by an owning
 * std::shared_lock on its stack, never by a bare reference, nor when two
 * threads claim it or the lock counts two readers.  Then parking_lot's
 * locks, found from the key of the parked thread's ThreadData.
 *
 * Files tested: libcore/analysis/waits.c, libcore/analysis/wait_reader.c,
 * libcore/analysis/thread_words.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "core_writer.h"
#include "libcore/analysis/waits.h"
#include "libcore/model/core.h"
#include "unwind/frames.h"

/* waits[i] is thread i's (tid 100 + i), waiting for thread owner[i] (-1: unknown). */
static struct cq_waits *graph(const long *owner, size_t n, int32_t **tids_out)
{
	struct cq_waits *w = calloc(1, sizeof(*w));
	int32_t *tids = malloc(n * sizeof(*tids));
	assert_non_null(w);
	assert_non_null(tids);
	w->waits = calloc(n, sizeof(*w->waits));
	assert_non_null(w->waits);
	w->nwaits = 0;
	for (size_t i = 0; i < n; i++) {
		tids[i] = (int32_t)(100 + i);
		if (owner[i] == -2) /* not waiting */
			continue;
		struct cq_wait *wt = &w->waits[w->nwaits++];
		wt->thread = i;
		wt->tid = tids[i];
		wt->object = 0x1000 + 0x40 * i;
		wt->owner = owner[i] >= 0 ? CQ_OWNER_THREAD : CQ_OWNER_UNKNOWN;
		wt->owner_thread = owner[i] >= 0 ? (size_t)owner[i] : 0;
		wt->owner_tid = owner[i] >= 0 ? (int32_t)(100 + owner[i]) : 0;
	}
	w->nthreads = n;
	assert_null(cq_waits_graph(w, tids, n));
	*tids_out = tids;
	return w;
}

static void test_abba(void **state)
{
	(void)state;
	int32_t *tids;
	long owner[] = {-2, 2, 1}; /* 0 runs; 1 waits for 2, 2 for 1 */
	struct cq_waits *w = graph(owner, 3, &tids);
	assert_int_equal(w->ndeadlocks, 1);
	assert_int_equal(w->deadlocks[0].n, 2);
	assert_int_equal(w->waits[w->cycle[0]].tid, 101); /* lowest tid first */
	assert_int_equal(w->waits[w->cycle[1]].tid, 102);
	assert_int_equal(w->nends, 0);
	cq_waits_free(w);
	free(tids);
}

static void test_cycle3_and_behind(void **state)
{
	(void)state;
	int32_t *tids;
	/* 2 -> 3 -> 1 -> 2 a cycle; 0 waits for 1 (behind it); 4 waits for 0. */
	long owner[] = {1, 2, 3, 1, 0};
	struct cq_waits *w = graph(owner, 5, &tids);
	assert_int_equal(w->ndeadlocks, 1);
	assert_int_equal(w->deadlocks[0].n, 3);
	assert_int_equal(w->waits[w->cycle[0]].tid, 101);
	assert_int_equal(w->waits[w->cycle[1]].tid, 102);
	assert_int_equal(w->waits[w->cycle[2]].tid, 103);
	assert_int_equal(w->waits[0].deadlock, 0);
	assert_int_equal(w->waits[0].behind, 1);
	assert_int_equal(w->waits[4].behind, 1);
	assert_int_equal(w->waits[0].end, SIZE_MAX);
	assert_int_equal(w->nends, 0);
	cq_waits_free(w);
	free(tids);
}

static void test_self_deadlock(void **state)
{
	(void)state;
	int32_t *tids;
	long owner[] = {0};
	struct cq_waits *w = graph(owner, 1, &tids);
	assert_int_equal(w->ndeadlocks, 1);
	assert_int_equal(w->deadlocks[0].n, 1);
	cq_waits_free(w);
	free(tids);
}

static void test_chains(void **state)
{
	(void)state;
	int32_t *tids;
	/* 1, 2 wait for 0 (running); 3 waits for 1; 4 waits on an ownerless object; 5 for 4. */
	long owner[] = {-2, 0, 0, 1, -1, 4};
	struct cq_waits *w = graph(owner, 6, &tids);
	assert_int_equal(w->ndeadlocks, 0);
	assert_int_equal(w->nends, 2);
	assert_true(w->ends[0].is_thread);
	assert_int_equal(w->ends[0].tid, 100);
	assert_int_equal(w->ends[0].waiters, 3);
	assert_false(w->ends[1].is_thread);
	assert_int_equal(w->waits[w->ends[1].wait].tid, 104);
	assert_int_equal(w->ends[1].waiters, 2);
	for (size_t i = 0; i < w->nwaits; i++)
		assert_int_equal(w->waits[i].end, w->waits[i].tid >= 104 ? 1 : 0);
	cq_waits_free(w);
	free(tids);
}

/* Three threads on one condvar and one on another: two ends, three waiters first. */
static void test_one_end_per_object(void **state)
{
	(void)state;
	int32_t tids[4] = {100, 101, 102, 103};
	struct cq_waits *w = calloc(1, sizeof(*w));
	assert_non_null(w);
	w->waits = calloc(4, sizeof(*w->waits));
	assert_non_null(w->waits);
	for (size_t i = 0; i < 4; i++)
		w->waits[i] = (struct cq_wait){.thread = i,
		                               .tid = tids[i],
		                               .kind = CQ_WAIT_CONDVAR,
		                               .object = i == 1 ? 0x2000 : 0x1000,
		                               .owner = CQ_OWNER_NONE};
	w->nwaits = 4;
	w->nthreads = 4;
	assert_null(cq_waits_graph(w, tids, 4));
	assert_int_equal(w->nends, 2);
	assert_int_equal(w->ends[0].waiters, 3);
	assert_int_equal(w->waits[w->ends[0].wait].object, 0x1000);
	assert_int_equal(w->ends[1].waiters, 1);
	assert_int_equal(w->waits[1].end, 1);
	assert_int_equal(w->waits[0].end, 0);
	assert_int_equal(w->waits[3].end, 0);
	cq_waits_free(w);
}

static void test_owner_out_of_range(void **state)
{
	(void)state;
	int32_t *tids;
	long owner[] = {7}; /* thread 7 of a 1-thread core */
	struct cq_waits *w = graph(owner, 1, &tids);
	assert_int_equal(w->waits[0].owner, CQ_OWNER_UNKNOWN);
	assert_int_equal(w->ndeadlocks, 0);
	assert_int_equal(w->nends, 1);
	cq_waits_free(w);
	free(tids);
}

static void test_hundred_thousand_in_one_cycle(void **state)
{
	(void)state;
	size_t n = 100000;
	long *owner = malloc(n * sizeof(*owner));
	assert_non_null(owner);
	for (size_t i = 0; i < n; i++)
		owner[i] = (long)((i + 1) % n);
	int32_t *tids;
	struct cq_waits *w = graph(owner, n, &tids);
	assert_int_equal(w->ndeadlocks, 1);
	assert_int_equal(w->deadlocks[0].n, n);
	assert_int_equal(w->waits[w->cycle[0]].tid, 100);
	assert_int_equal(w->waits[w->cycle[n - 1]].tid, (int)(100 + n - 1));
	cq_waits_free(w);
	free(tids);
	free(owner);
}

/*
 * NT_PRSTATUS of a thread in system call nr (202 futex: arg0, rdi, its word)
 * interrupted by the fatal signal, with rsp sp and rbx set.
 */
static void thread_regs(struct core_writer *cw, int32_t tid, uint64_t nr, uint64_t arg0,
                        uint64_t sp, uint64_t rbx)
{
	uint8_t d[336] = {0};
	cw_put(d + 32, (uint64_t)(uint32_t)tid, 4);
	cw_put(d + 112 + 8 * 5, rbx, 8);
	cw_put(d + 112 + 8 * 10, (uint64_t)-512, 8); /* rax: -ERESTARTSYS */
	cw_put(d + 112 + 8 * 14, arg0, 8);           /* rdi */
	cw_put(d + 112 + 8 * 15, nr, 8);             /* orig_rax */
	cw_put(d + 112 + 8 * 16, 0x401000, 8);       /* rip */
	cw_put(d + 112 + 8 * 19, sp, 8);             /* rsp */
	cw_note(cw, "CORE", NT_PRSTATUS, d, sizeof(d));
}

/* A thread in futex(futex) with stack pointer sp. */
static void futex_thread(struct core_writer *cw, int32_t tid, uint64_t futex, uint64_t sp)
{
	thread_regs(cw, tid, 202, futex, sp, 0);
}

/* Writes cw's core to /tmp/cq_test_waitsNAME.PID (and frees cw) and opens it. */
static struct cq_core *open_written(struct core_writer *cw, const char *name)
{
	char path[64];
	snprintf(path, sizeof(path), "/tmp/cq_test_waits%s.%d", name, (int)getpid());
	assert_int_equal(cw_write(cw, path, 0), 0);
	free(cw);
	struct cq_core *core;
	assert_null(cq_core_open(path, NULL, &core));
	unlink(path);
	return core;
}

static void test_find_on_a_core(void **state)
{
	(void)state;
	static uint8_t mem[0x100];
	/* mutex at 0x10000: owner tid 999 (no thread of the core), normal. */
	cw_put(mem + 0x00, 2, 4);
	cw_put(mem + 0x08, 999, 4);
	/* mutex at 0x10040: recursive, held twice by thread 11. */
	cw_put(mem + 0x40, 2, 4);
	cw_put(mem + 0x44, 2, 4);
	cw_put(mem + 0x48, 11, 4);
	cw_put(mem + 0x50, 1, 4);
	/* mutex at 0x10080: a __kind no glibc mutex has. */
	cw_put(mem + 0x88, 10, 4);
	cw_put(mem + 0x90, 0x7fff0000, 4);
	struct core_writer *cw = calloc(1, sizeof(*cw));
	assert_non_null(cw);
	futex_thread(cw, 10, 0x10000, 0);    /* owner not in the core */
	futex_thread(cw, 11, 0xdead0000, 0); /* unmapped futex word */
	futex_thread(cw, 12, 0x10040, 0);    /* held by 11 */
	futex_thread(cw, 13, 0x10000, 0);    /* no stack: a bare futex wait */
	futex_thread(cw, 14, 0x10080, 0);    /* a damaged mutex */
	cw_load(cw, 0x10000, mem, sizeof(mem), PF_R | PF_W);
	struct cq_core *core = open_written(cw, "");
	assert_int_equal(core->nthreads, 5);

	struct cq_stack_frame lock_frame = {.function = "__GI___lll_lock_wait"};
	struct cq_thread_stack ts[5];
	for (size_t t = 0; t < 5; t++)
		ts[t] = (struct cq_thread_stack){.thread = &core->threads[t],
		                                 .frames = t == 3 ? NULL : &lock_frame,
		                                 .nframes = t == 3 ? 0 : 1};
	struct cq_stacks stacks = {.threads = ts, .nthreads = 5};
	struct cq_waits *w;
	assert_null(cq_waits_find(core, &stacks, &w));
	assert_non_null(w);
	assert_int_equal(w->nwaits, 5);
	assert_int_equal(w->waits[0].kind, CQ_WAIT_MUTEX);
	assert_int_equal(w->waits[0].owner, CQ_OWNER_NOT_IN_CORE);
	assert_int_equal(w->waits[0].owner_tid, 999);
	assert_int_equal(w->waits[1].owner, CQ_OWNER_UNREADABLE);
	assert_int_equal(w->waits[2].owner, CQ_OWNER_THREAD);
	assert_int_equal(w->waits[2].owner_thread, 1);
	assert_int_equal(w->waits[2].count, 2);
	assert_string_equal(w->waits[2].mutex_type, "recursive");
	assert_int_equal(w->waits[3].kind, CQ_WAIT_FUTEX);
	assert_int_equal(w->waits[3].owner, CQ_OWNER_NONE);
	assert_int_equal(w->waits[4].owner, CQ_OWNER_UNKNOWN);
	assert_int_equal(w->ndeadlocks, 0);
	/* Thread 12 waits for 11, whose own wait has no known owner: one chain end there. */
	assert_int_equal(w->waits[2].end, w->waits[1].end);
	cq_waits_free(w);
	cq_core_close(core);
}

static void test_pi_refused_rust_semaphore(void **state)
{
	(void)state;
	static uint8_t mem[0x800];
	/* PI mutexes: M1 at 0x20000 held by 21, M2 at 0x20040 by 20, M3 at 0x20080 by 23. */
	cw_put(mem + 0x00, 21u | 0x80000000u, 4);
	cw_put(mem + 0x10, 32, 4);
	cw_put(mem + 0x40, 20, 4);
	cw_put(mem + 0x50, 32, 4);
	cw_put(mem + 0x80, 23, 4);
	cw_put(mem + 0x90, 32, 4);
	/* 20 parked: sp 0x20200, zero word 0x20210; saved words point to M1 and to M2 (its own). */
	cw_put(mem + 0x208, 0x20000, 8);
	cw_put(mem + 0x218, 0x20040 + 16, 8); /* &M2.__kind: held by 20 itself, not a candidate */
	/* 22 parked: sp 0x20600, zero word 0x20610; points to M1 and M3: which one is not known. */
	cw_put(mem + 0x608, 0x20000, 8);
	cw_put(mem + 0x618, 0x20080, 8);
	/* A Rust std Mutex word (2: contended) at 0x20100, a semaphore at 0x20140. */
	cw_put(mem + 0x100, 2, 4);
	struct core_writer *cw = calloc(1, sizeof(*cw));
	assert_non_null(cw);
	futex_thread(cw, 20, 0x20210, 0x20200);
	futex_thread(cw, 21, 0x20040, 0x20400); /* FUTEX_LOCK_PI on M2 */
	futex_thread(cw, 22, 0x20610, 0x20600);
	futex_thread(cw, 23, 0x20100, 0x20700);
	futex_thread(cw, 24, 0x20140, 0x20780);
	cw_load(cw, 0x20000, mem, sizeof(mem), PF_R | PF_W);
	struct cq_core *core = open_written(cw, "_pi");
	assert_int_equal(core->nthreads, 5);

	struct cq_stack_frame lock = {.function = "__pthread_mutex_lock_full"};
	struct cq_stack_frame rust = {.function =
	                                  "<std::sys::sync::mutex::futex::Mutex>::lock_contended"};
	struct cq_stack_frame sem = {.function = "__new_sem_wait_slow64.constprop.0"};
	struct cq_stack_frame *frames[5] = {&lock, &lock, &lock, &rust, &sem};
	struct cq_thread_stack ts[5];
	for (size_t t = 0; t < 5; t++)
		ts[t] = (struct cq_thread_stack){
		    .thread = &core->threads[t], .frames = frames[t], .nframes = 1};
	struct cq_stacks stacks = {.threads = ts, .nthreads = 5};
	struct cq_waits *w;
	assert_null(cq_waits_find(core, &stacks, &w));
	assert_non_null(w);
	assert_int_equal(w->nwaits, 5);
	/* 20: refused, its mutex M1 (held by 21); 21 waits on M2 (held by 20): one deadlock. */
	assert_true(w->waits[0].pi_refused);
	assert_int_equal(w->waits[0].object, 0x20000);
	assert_int_equal(w->waits[0].owner, CQ_OWNER_THREAD);
	assert_int_equal(w->waits[0].owner_tid, 21);
	assert_false(w->waits[1].pi_refused);
	assert_true(w->waits[1].pi);
	assert_int_equal(w->waits[1].owner_tid, 20);
	assert_int_equal(w->ndeadlocks, 1);
	assert_int_equal(w->deadlocks[0].n, 2);
	/* 22: refused, two candidates: no mutex, no owner. */
	assert_true(w->waits[2].pi_refused);
	assert_int_equal(w->waits[2].object, 0);
	assert_int_equal(w->waits[2].owner, CQ_OWNER_UNKNOWN);
	/* Rust's Mutex and the semaphore: no owner. */
	assert_int_equal(w->waits[3].kind, CQ_WAIT_MUTEX);
	assert_true(w->waits[3].rust_std);
	assert_int_equal(w->waits[3].owner, CQ_OWNER_NONE);
	assert_int_equal(w->waits[3].object, 0x20100);
	assert_int_equal(w->waits[4].kind, CQ_WAIT_SEMAPHORE);
	assert_int_equal(w->waits[4].owner, CQ_OWNER_NONE);
	assert_false(w->waits[4].pi_refused);
	cq_waits_free(w);
	cq_core_close(core);
}

static void test_inferred_rust_owner(void **state)
{
	(void)state;
	/* Rust Mutexes at 0x30000 + 0x40 k: R0 R1 R2 R4 R5 taken (2), R3 not (0). */
	static uint8_t locks[0x200];
	static uint8_t stacks[3][0x100];
	for (int k = 0; k < 6; k++)
		cw_put(locks + 0x40 * k, k == 3 ? 0 : 2, 4);
	/* The waiters' stacks: the top words of the locks' segment; 44's points to R0. */
	cw_put(locks + 0x1f0, 0x30000, 8);
	/* Stacks at 0x40000 + 0x1000 i: words at and above sp are live, below dead. */
	cw_put(stacks[0] + 0x80, 0x30000, 8); /* A (sp +0x40): a guard of R0, and of R3 */
	cw_put(stacks[0] + 0x88, 0x300c0, 8);
	cw_put(stacks[1] + 0x48, 0x30040, 8); /* B (sp +0x40) and C both point to R1 */
	cw_put(stacks[2] + 0x60, 0x30040, 8);
	cw_put(stacks[1] + 0x10, 0x30080, 8); /* D (sp +0x80): R2 below its sp only (dead) */
	struct core_writer *cw = calloc(1, sizeof(*cw));
	assert_non_null(cw);
	thread_regs(cw, 40, 0, 3, 0x40040, 0);         /* A: in read() */
	thread_regs(cw, 41, 0, 3, 0x41040, 0);         /* B */
	thread_regs(cw, 42, 0, 3, 0x42040, 0);         /* C */
	thread_regs(cw, 43, 0, 3, 0x41080, 0x30140);   /* D: in read(), rbx = R5 */
	thread_regs(cw, 44, 202, 0x30000, 0x301f0, 0); /* waits on R0 */
	thread_regs(cw, 45, 202, 0x30040, 0x301f8, 0); /* waits on R1 */
	thread_regs(cw, 46, 202, 0x30080, 0x301f8, 0); /* waits on R2 */
	thread_regs(cw, 47, 202, 0x300c0, 0x301f8, 0); /* waits on R3 (not taken) */
	thread_regs(cw, 48, 202, 0x30140, 0x301f8, 0); /* waits on R5 */
	cw_load(cw, 0x30000, locks, sizeof(locks), PF_R | PF_W);
	for (int i = 0; i < 3; i++)
		cw_load(cw, 0x40000 + 0x1000 * (uint64_t)i, stacks[i], sizeof(stacks[i]),
		        PF_R | PF_W);
	struct cq_core *core = open_written(cw, "_infer");
	assert_int_equal(core->nthreads, 9);
	struct cq_stack_frame rust = {.function =
	                                  "<std::sys::sync::mutex::futex::Mutex>::lock_contended"};
	struct cq_thread_stack ts[9];
	for (size_t t = 0; t < 9; t++)
		ts[t] = (struct cq_thread_stack){
		    .thread = &core->threads[t], .frames = &rust, .nframes = t >= 4 ? 1 : 0};
	struct cq_stacks st = {.threads = ts, .nthreads = 9};
	struct cq_waits *w;
	assert_null(cq_waits_find(core, &st, &w));
	assert_non_null(w);
	assert_int_equal(w->nwaits, 5);
	/* R0: A's stack only (the waiter's own pointer does not count): held by A, inferred. */
	assert_int_equal(w->waits[0].tid, 44);
	assert_int_equal(w->waits[0].owner, CQ_OWNER_THREAD);
	assert_int_equal(w->waits[0].owner_tid, 40);
	assert_true(w->waits[0].owner_inferred);
	assert_string_equal(w->waits[0].owner_from, "stack");
	/* R1: B and C: unknown.  R2: only below D's sp: unknown.  R3: not taken: unknown. */
	for (int i = 1; i <= 3; i++) {
		assert_int_equal(w->waits[i].owner, CQ_OWNER_NONE);
		assert_false(w->waits[i].owner_inferred);
	}
	/* R5: in D's rbx. */
	assert_int_equal(w->waits[4].owner, CQ_OWNER_THREAD);
	assert_int_equal(w->waits[4].owner_tid, 43);
	assert_true(w->waits[4].owner_inferred);
	assert_int_equal(w->ndeadlocks, 0);
	cq_waits_free(w);
	cq_core_close(core);
}

/* Recorded owners, inferred and confirmed, inferred and not: the cycle's verdict. */
static void test_cycle_verdicts(void **state)
{
	(void)state;
	/* 1 and 2 wait for each other; 3 and 4; 5 and 6: three cycles. */
	long owner[] = {-2, 2, 1, 4, 3, 6, 5};
	struct cq_waits *w = calloc(1, sizeof(*w));
	assert_non_null(w);
	w->waits = calloc(6, sizeof(*w->waits));
	assert_non_null(w->waits);
	int32_t t7[7];
	for (size_t i = 0; i < 7; i++)
		t7[i] = (int32_t)(100 + i);
	for (size_t i = 1; i < 7; i++) {
		struct cq_wait *wt = &w->waits[w->nwaits++];
		wt->thread = i;
		wt->tid = t7[i];
		wt->owner = CQ_OWNER_THREAD;
		wt->owner_thread = (size_t)owner[i];
		wt->owner_tid = t7[owner[i]];
	}
	/* 3 -> 4 inferred and confirmed; 5 -> 6 confirmed, 6 -> 5 inferred, unconfirmed. */
	w->waits[2].owner_inferred = true;
	w->waits[2].owner_confirmed_by = "with";
	w->waits[4].owner_inferred = true;
	w->waits[4].owner_confirmed_by = "with";
	w->waits[5].owner_inferred = true;
	w->nthreads = 7;
	assert_null(cq_waits_graph(w, t7, 7));
	assert_int_equal(w->ndeadlocks, 3);
	enum cq_deadlock_verdict by_first[7] = {0};
	for (size_t d = 0; d < 3; d++)
		by_first[w->waits[w->cycle[w->deadlocks[d].first]].thread] =
		    w->deadlocks[d].verdict;
	assert_int_equal(by_first[1], CQ_DEADLOCK_RECORDED);
	assert_int_equal(by_first[3], CQ_DEADLOCK_CONFIRMED);
	assert_int_equal(by_first[5], CQ_DEADLOCK_UNCONFIRMED);
	assert_string_equal(cq_deadlock_verdict_name(CQ_DEADLOCK_RECORDED), "deadlock");
	assert_string_equal(cq_deadlock_verdict_name(CQ_DEADLOCK_CONFIRMED),
	                    "deadlock-inferred-confirmed");
	assert_string_equal(cq_deadlock_verdict_name(CQ_DEADLOCK_UNCONFIRMED), "possible-deadlock");
	cq_waits_free(w);
}

/*
 * Issue 45: Rust Mutex A was taken by a thread that has exited.  Thread 50
 * keeps &A in a local and waits on B; thread 51 holds B (its guard on its
 * stack) and waits on A.  Each lock's one non-waiting referrer is the other
 * thread, so the inference closes a cycle that is not there: it must not be
 * called a deadlock.
 */
static void test_exited_holder_not_a_deadlock(void **state)
{
	(void)state;
	static uint8_t locks[0x100];
	static uint8_t stacks[2][0x100];
	cw_put(locks + 0x00, 2, 4);           /* A at 0x30000: taken, with a waiter */
	cw_put(locks + 0x40, 2, 4);           /* B at 0x30040 */
	cw_put(stacks[0] + 0x60, 0x30000, 8); /* 50: &A, a local */
	cw_put(stacks[1] + 0x60, 0x30040, 8); /* 51: B's guard */
	struct core_writer *cw = calloc(1, sizeof(*cw));
	assert_non_null(cw);
	thread_regs(cw, 50, 202, 0x30040, 0x40040, 0); /* waits on B */
	thread_regs(cw, 51, 202, 0x30000, 0x41040, 0); /* waits on A */
	cw_load(cw, 0x30000, locks, sizeof(locks), PF_R | PF_W);
	for (int i = 0; i < 2; i++)
		cw_load(cw, 0x40000 + 0x1000 * (uint64_t)i, stacks[i], sizeof(stacks[i]),
		        PF_R | PF_W);
	struct cq_core *core = open_written(cw, "_exited");
	struct cq_stack_frame rust = {.function =
	                                  "<std::sys::sync::mutex::futex::Mutex>::lock_contended"};
	struct cq_thread_stack ts[2];
	for (size_t t = 0; t < 2; t++)
		ts[t] = (struct cq_thread_stack){
		    .thread = &core->threads[t], .frames = &rust, .nframes = 1};
	struct cq_stacks st = {.threads = ts, .nthreads = 2};
	struct cq_waits *w;
	assert_null(cq_waits_find(core, &st, &w));
	assert_non_null(w);
	assert_int_equal(w->nwaits, 2);
	for (size_t i = 0; i < 2; i++) {
		assert_true(w->waits[i].owner_inferred);
		assert_null(w->waits[i].owner_confirmed_by); /* a Rust Mutex confirms nothing */
	}
	assert_int_equal(w->ndeadlocks, 1);
	assert_int_equal(w->deadlocks[0].verdict, CQ_DEADLOCK_UNCONFIRMED);
	cq_waits_free(w);
	cq_core_close(core);
}

/*
 * The one reader of an rwlock (wait_reader.c): writers wait behind rwlocks
 * that count one reader (L0, L1, L2) or two (L3).  L0's reader keeps a
 * std::shared_lock that owns it ({&L0, true}) on its stack: the writer's
 * owner, inferred and confirmed.  L1 is only referenced (a bare pointer,
 * then 0): no owner.  L2 has two owning guards on two threads: which one
 * reads is not known.  L3 counts two readers: no one owner.
 */
static void test_one_reader(void **state)
{
	(void)state;
	static uint8_t locks[0x100];
	static uint8_t stacks[5][0x100];
	for (int k = 0; k < 4; k++) /* __readers: WRLOCKED, k == 3 two readers, else one */
		cw_put(locks + 0x40 * k, (k == 3 ? 2u : 1u) << 3 | 2u, 4);
	cw_put(stacks[0] + 0x80, 0x50000, 8); /* A: a shared_lock owning L0 */
	cw_put(stacks[0] + 0x88, 1, 8);
	cw_put(stacks[0] + 0xa0, 0x500c0, 8); /* A: and one owning L3 */
	cw_put(stacks[0] + 0xa8, 1, 8);
	cw_put(stacks[1] + 0x60, 0x50040, 8); /* B: a bare pointer to L1 */
	cw_put(stacks[2] + 0x50, 0x50080, 8); /* C and D: guards owning L2 */
	cw_put(stacks[2] + 0x58, 1, 8);
	cw_put(stacks[3] + 0x50, 0x50080, 8);
	cw_put(stacks[3] + 0x58, 1, 8);
	cw_put(stacks[4] + 0x50, 0x50000, 8); /* W0's own guard of L0: a waiter's, not counted */
	cw_put(stacks[4] + 0x58, 1, 8);
	struct core_writer *cw = calloc(1, sizeof(*cw));
	assert_non_null(cw);
	for (int i = 0; i < 4; i++) /* A, B, C, D: in read() */
		thread_regs(cw, 50 + i, 0, 3, 0x60040 + 0x1000 * (uint64_t)i, 0);
	for (int k = 0; k < 4; k++) /* W0..W3 wait on Lk's __wrphase_futex; W1..W3: an empty word */
		thread_regs(cw, 60 + k, 202, 0x50008 + 0x40 * (uint64_t)k, k ? 0x500f8 : 0x64040,
		            0);
	cw_load(cw, 0x50000, locks, sizeof(locks), PF_R | PF_W);
	for (int i = 0; i < 5; i++)
		cw_load(cw, 0x60000 + 0x1000 * (uint64_t)i, stacks[i], sizeof(stacks[i]),
		        PF_R | PF_W);
	struct cq_core *core = open_written(cw, "_reader");
	assert_int_equal(core->nthreads, 8);
	struct cq_stack_frame wr = {.function = "___pthread_rwlock_wrlock"};
	struct cq_thread_stack ts[8];
	for (size_t t = 0; t < 8; t++)
		ts[t] = (struct cq_thread_stack){
		    .thread = &core->threads[t], .frames = &wr, .nframes = t >= 4 ? 1 : 0};
	struct cq_stacks st = {.threads = ts, .nthreads = 8};
	struct cq_waits *w;
	assert_null(cq_waits_find(core, &st, &w));
	assert_non_null(w);
	assert_int_equal(w->nwaits, 4);
	assert_int_equal(w->waits[0].kind, CQ_WAIT_RWLOCK);
	assert_true(w->waits[0].write);
	assert_int_equal(w->waits[0].object, 0x50000);
	assert_int_equal(w->waits[0].owner, CQ_OWNER_THREAD);
	assert_int_equal(w->waits[0].owner_tid, 50);
	assert_true(w->waits[0].owner_inferred);
	assert_string_equal(w->waits[0].owner_from, "reader");
	assert_string_equal(w->waits[0].owner_confirmed_by, "shared-lock");
	for (int k = 1; k < 4; k++) {
		assert_int_equal(w->waits[k].owner, CQ_OWNER_READERS);
		assert_int_equal(w->waits[k].count, k == 3 ? 2 : 1);
		assert_false(w->waits[k].owner_inferred);
		assert_null(w->waits[k].owner_confirmed_by);
	}
	assert_int_equal(w->ndeadlocks, 0);
	cq_waits_free(w);
	cq_core_close(core);
}

/*
 * parking_lot (waits.c, parking_lot_object): a parked thread sleeps on its
 * own ThreadParker word; its ThreadData's key, 32 bytes before it, is the
 * lock.  A Mutex whose byte has PARKED_BIT is the object; one whose byte
 * does not is not (the futex word stays the object); a writer that parked
 * on an RwLock's key + 1 with WRITER and WRITER_PARKED set waits behind the
 * readers the word counts.
 */
static void test_parking_lot(void **state)
{
	(void)state;
	static uint8_t mem[0x200];
	cw_put(mem + 0x00, 3, 1); /* Mutex M at 0x70000: LOCKED | PARKED */
	cw_put(mem + 0x08, 1, 1); /* Mutex N at 0x70008: LOCKED, nobody parked */
	cw_put(mem + 0x10, 0x10 | 0xa,
	       8); /* RwLock L at 0x70010: one reader, WRITER, WRITER_PARKED */
	cw_put(mem + 0x100, 0x70000, 8); /* ThreadData A (0x70100): key M, parker @0x120 */
	cw_put(mem + 0x140, 0x70008, 8); /* ThreadData B (0x70140): key N, parker @0x160 */
	cw_put(mem + 0x180, 0x70011, 8); /* ThreadData C (0x70180): key L + 1, parker @0x1a0 */
	struct core_writer *cw = calloc(1, sizeof(*cw));
	assert_non_null(cw);
	futex_thread(cw, 70, 0x70120, 0);
	futex_thread(cw, 71, 0x70160, 0);
	futex_thread(cw, 72, 0x701a0, 0);
	cw_load(cw, 0x70000, mem, sizeof(mem), PF_R | PF_W);
	struct cq_core *core = open_written(cw, "_parking");
	struct cq_stack_frame mutex = {.function = "parking_lot::raw_mutex::RawMutex::lock_slow"};
	struct cq_stack_frame rw = {.function =
	                                "parking_lot::raw_rwlock::RawRwLock::lock_exclusive_slow"};
	struct cq_thread_stack ts[3];
	for (size_t t = 0; t < 3; t++)
		ts[t] = (struct cq_thread_stack){
		    .thread = &core->threads[t], .frames = t == 2 ? &rw : &mutex, .nframes = 1};
	struct cq_stacks st = {.threads = ts, .nthreads = 3};
	struct cq_waits *w;
	assert_null(cq_waits_find(core, &st, &w));
	assert_non_null(w);
	assert_int_equal(w->nwaits, 3);
	assert_true(w->waits[0].parking_lot);
	assert_int_equal(w->waits[0].kind, CQ_WAIT_MUTEX);
	assert_int_equal(w->waits[0].object, 0x70000);
	assert_int_equal(w->waits[0].owner, CQ_OWNER_NONE);
	assert_int_equal(w->waits[1].object, 0x70160); /* N is not parked on: the futex word */
	assert_int_equal(w->waits[1].owner, CQ_OWNER_NONE);
	assert_int_equal(w->waits[2].kind, CQ_WAIT_RWLOCK);
	assert_true(w->waits[2].write);
	assert_int_equal(w->waits[2].object, 0x70010);
	assert_int_equal(w->waits[2].owner, CQ_OWNER_READERS);
	assert_int_equal(w->waits[2].count, 1);
	assert_false(w->waits[2].owner_inferred); /* no reader is confirmed for parking_lot */
	assert_int_equal(w->ndeadlocks, 0);
	cq_waits_free(w);
	cq_core_close(core);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_abba),
	    cmocka_unit_test(test_cycle3_and_behind),
	    cmocka_unit_test(test_self_deadlock),
	    cmocka_unit_test(test_chains),
	    cmocka_unit_test(test_one_end_per_object),
	    cmocka_unit_test(test_owner_out_of_range),
	    cmocka_unit_test(test_hundred_thousand_in_one_cycle),
	    cmocka_unit_test(test_find_on_a_core),
	    cmocka_unit_test(test_pi_refused_rust_semaphore),
	    cmocka_unit_test(test_inferred_rust_owner),
	    cmocka_unit_test(test_cycle_verdicts),
	    cmocka_unit_test(test_exited_holder_not_a_deadlock),
	    cmocka_unit_test(test_one_reader),
	    cmocka_unit_test(test_parking_lot),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
