/*
 * wait_text.c - the wait-for graph in text, JSON and DOT (see wait_text.h).
 */
#include "cmd/wait_text.h"

#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "cmd/cmd.h"
#include "libcore/analysis/waits.h"
#include "libcore/base/json.h"
#include "libcore/model/core.h"

/* At most this many deadlocks, and chain ends, in the summary (JSON has all). */
#define SUMMARY_MAX 8

static void thread_ref(FILE *out, const struct cq_core *core, size_t t)
{
	fprintf(out, "thread %d", core->threads[t].tid);
	if (core->threads[t].name)
		fprintf(out, " \"%s\"", cmd_safe(core->threads[t].name));
}

/* "mutex 0x..." / "rwlock 0x..." (to write, to read) / "thread 0x..." */
static void object_ref(FILE *out, const struct cq_wait *w)
{
	if (w->pi_refused && !w->object)
		fprintf(out, "a PI mutex (which one: not known)");
	else
		fprintf(out, "%s 0x%" PRIx64, cq_wait_kind_name(w->kind), w->object);
}

static const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

/* What confirms an inferred owner (waits.h, owner_confirmed_by), in words. */
static const char *confirmation(const char *by)
{
	return !strcmp(by, "rlock-owner") ? "confirmed by the RLock's owner field"
	                                  : "confirmed by the with statement that took it";
}

/* Who holds w's object, as words after it: " held by thread 7", ... */
static void owner_text(FILE *out, const struct cq_core *core, const struct cq_wait *w)
{
	switch (w->owner) {
	case CQ_OWNER_THREAD:
		fprintf(out, " held by ");
		thread_ref(out, core, w->owner_thread);
		if (w->owner_inferred)
			fprintf(
			    out, " (inferred: %s; %s)",
			    w->owner_from && !strcmp(w->owner_from, "python")
			        ? "its Python frames hold the lock object; a semaphore records no "
			          "owner"
			        : "a reference on its stack; Rust's Mutex records no owner",
			    w->owner_confirmed_by ? confirmation(w->owner_confirmed_by)
			                          : "nothing the core records confirms it");
		break;
	case CQ_OWNER_NOT_IN_CORE:
		fprintf(out, " held by tid %d, not a thread of this core", w->owner_tid);
		break;
	case CQ_OWNER_READERS:
		fprintf(out, " held by %u reader%s (readers are not recorded)", w->count,
		        plural(w->count));
		break;
	case CQ_OWNER_NONE:
		if (w->rust_std && w->kind != CQ_WAIT_CONDVAR) {
			fprintf(out, " (Rust std::sync::%s: no owner recorded)",
			        w->kind == CQ_WAIT_MUTEX ? "Mutex" : "RwLock");
			break;
		}
		fprintf(out, w->kind == CQ_WAIT_CONDVAR     ? " (a condvar has no owner)"
		             : w->kind == CQ_WAIT_SEMAPHORE ? " (a semaphore has no owner)"
		                                            : " (no owner recorded)");
		break;
	case CQ_OWNER_UNREADABLE:
		fprintf(out, " (owner unknown: not in the core's memory)");
		break;
	case CQ_OWNER_UNKNOWN:
		fprintf(out, " (owner unknown)");
		break;
	}
	if (w->owner == CQ_OWNER_THREAD || w->owner == CQ_OWNER_NOT_IN_CORE) {
		if (w->mutex_type && w->count > 1)
			fprintf(out, " (%s, %u times)", w->mutex_type, w->count);
		if (w->owner_died)
			fprintf(out, " (robust: a previous owner died; taken with EOWNERDEAD, "
			             "not made consistent)");
	} else if (w->owner_died) {
		fprintf(out, " (robust: the owner died)");
	}
	if (w->pi_refused)
		fprintf(out,
		        " (PI: the kernel refused the lock as a deadlock, EDEADLK, and glibc "
		        "parked the thread for ever%s)",
		        w->object ? "; the mutex is the one its lock frames point to" : "");
}

/* How w's thread waits on its object, as words before it: "to write ", "on ", "for ". */
static const char *wait_verb(const struct cq_wait *w)
{
	if (w->kind == CQ_WAIT_RWLOCK)
		return w->write ? "to write " : "to read ";
	return w->kind == CQ_WAIT_CONDVAR || w->kind == CQ_WAIT_SEMAPHORE ? "on " : "for ";
}

static void wait_text(FILE *out, const struct cq_core *core, const struct cq_wait *w)
{
	if (w->kind == CQ_WAIT_JOIN) {
		fprintf(out, "waits for ");
		if (w->owner == CQ_OWNER_THREAD)
			thread_ref(out, core, w->owner_thread);
		else if (w->owner == CQ_OWNER_NOT_IN_CORE)
			fprintf(out, "tid %d (not a thread of this core)", w->owner_tid);
		else
			fprintf(out, "a thread (tid unknown)");
		fprintf(out, " to exit (pthread_join)");
		return;
	}
	fprintf(out, "waits %s", wait_verb(w));
	object_ref(out, w);
	owner_text(out, core, w);
}

/*
 * Of an end's waiters, how many wait on it directly (the thread or the
 * object the chain ends at); the others wait behind them, on locks those
 * hold.  Sets *one to a direct waiter.
 */
static size_t direct_waiters(const struct cq_waits *w, size_t e, const struct cq_wait **one)
{
	const struct cq_wait_end *end = &w->ends[e];
	const struct cq_wait *at = end->is_thread ? NULL : &w->waits[end->wait];
	size_t n = 0;
	for (size_t i = 0; i < w->nwaits; i++) {
		const struct cq_wait *wt = &w->waits[i];
		if (wt->end != e)
			continue;
		bool direct = end->is_thread
		                  ? wt->owner == CQ_OWNER_THREAD && wt->owner_thread == end->thread
		                  : wt->object == at->object && wt->kind == at->kind;
		if (direct && n++ == 0)
			*one = wt;
	}
	return n;
}

/*
 * Whether an end is news above the threads.  A process stopped from outside
 * (a watchdog's signal, a snapshot) was hung: every end says where.  In a
 * crash the crash is the story: a thread waiting for a lock another thread
 * holds still is, threads idle on a condvar, a semaphore or a bare futex
 * (no owner) are not, nor are threads the crashed thread itself held up.
 */
static bool end_is_news(const struct cq_core *core, const struct cq_waits *w, size_t e)
{
	const struct cq_wait_end *end = &w->ends[e];
	if (cq_core_stopped_from_outside(core))
		return true;
	if (end->is_thread)
		return !(end->thread < core->nthreads && core->threads[end->thread].crashed);
	return w->waits[end->wait].owner != CQ_OWNER_NONE;
}

/* One end of the summary: who waits on what, and how many behind them. */
static void end_text(FILE *out, const struct cq_core *core, const struct cq_waits *w, size_t e)
{
	const struct cq_wait_end *end = &w->ends[e];
	const struct cq_wait *one = NULL;
	size_t direct = direct_waiters(w, e, &one);
	/* A condvar or a bare futex is waited on, not held: not by itself a hang. */
	bool ownerless = !end->is_thread && w->waits[end->wait].owner == CQ_OWNER_NONE;
	fprintf(out, "%s: ", ownerless ? "waiting" : "hung");
	if (direct == 1) {
		fprintf(out, "thread %d waits ", one->tid);
	} else {
		if (!direct) /* a graph whose chains name no direct waiter: say them all */
			direct = end->waiters;
		fprintf(out, "%zu threads wait ", direct);
	}
	if (end->is_thread) {
		fprintf(out, "for ");
		thread_ref(out, core, end->thread);
		if (end->syscall)
			fprintf(out, ", blocked in %s()", end->syscall);
	} else {
		const struct cq_wait *wt = &w->waits[end->wait];
		fprintf(out, "%s", wait_verb(wt));
		object_ref(out, wt);
		owner_text(out, core, wt);
	}
	size_t behind = end->waiters > direct ? end->waiters - direct : 0;
	if (behind)
		fprintf(out, "; %zu more thread%s wait%s behind %s", behind, plural(behind),
		        behind == 1 ? "s" : "", direct == 1 ? "it" : "them");
	fputc('\n', out);
}

bool cmd_waits_summary_says(const struct cq_core *core, const struct cq_waits *w)
{
	if (!w)
		return false;
	if (w->ndeadlocks)
		return true;
	for (size_t e = 0; e < w->nends; e++)
		if (end_is_news(core, w, e))
			return true;
	return false;
}

/*
 * A cycle's verdict: "deadlock:" when the locks record every owner;
 * "deadlock (rests on an inferred owner, confirmed by ...):" when each
 * inferred owner is confirmed; else "possible deadlock (...):".
 */
static void deadlock_verdict(FILE *out, const struct cq_waits *w, const struct cq_deadlock *d)
{
	if (d->verdict == CQ_DEADLOCK_RECORDED) {
		fprintf(out, "deadlock:");
		return;
	}
	if (d->verdict == CQ_DEADLOCK_UNCONFIRMED) {
		fprintf(out, "possible deadlock (rests on an inferred owner that nothing the core "
		             "records confirms):");
		return;
	}
	bool with = false, rlock = false;
	for (size_t k = 0; k < d->n; k++) {
		const char *by = w->waits[w->cycle[d->first + k]].owner_confirmed_by;
		with |= by && strcmp(by, "rlock-owner") != 0;
		rlock |= by && !strcmp(by, "rlock-owner");
	}
	fprintf(out,
	        "deadlock (rests on an inferred owner, %s%s%s):", with ? confirmation("with") : "",
	        with && rlock ? ", and " : "", rlock ? confirmation("rlock-owner") : "");
}

void cmd_waits_summary(FILE *out, const struct cq_core *core, const struct cq_waits *w)
{
	if (!w)
		return;
	for (size_t d = 0; d < w->ndeadlocks && d < SUMMARY_MAX; d++) {
		deadlock_verdict(out, w, &w->deadlocks[d]);
		for (size_t k = 0; k < w->deadlocks[d].n; k++) {
			const struct cq_wait *wt = &w->waits[w->cycle[w->deadlocks[d].first + k]];
			fprintf(out, "%s thread %d waits for ", k ? ";" : "", wt->tid);
			object_ref(out, wt);
			fprintf(out, " (held by %d%s)", wt->owner_tid,
			        !wt->owner_inferred      ? ""
			        : wt->owner_confirmed_by ? ", inferred, confirmed"
			                                 : ", inferred, unconfirmed");
		}
		fputc('\n', out);
	}
	if (w->ndeadlocks > SUMMARY_MAX)
		fprintf(out, "... and %zu more deadlocks\n", w->ndeadlocks - SUMMARY_MAX);
	size_t behind = 0;
	for (size_t i = 0; i < w->nwaits; i++)
		behind += w->waits[i].behind != 0;
	if (behind)
		fprintf(out, "%zu more thread%s wait%s behind the deadlock%s\n", behind,
		        plural(behind), behind == 1 ? "s" : "", plural(w->ndeadlocks));
	size_t shown = 0, news = 0;
	for (size_t e = 0; e < w->nends; e++) {
		if (!end_is_news(core, w, e))
			continue;
		if (news++ < SUMMARY_MAX) {
			end_text(out, core, w, e);
			shown++;
		}
	}
	if (news > shown)
		fprintf(out, "... and %zu more\n", news - shown);
}

void cmd_waits_thread_line(FILE *out, const struct cq_core *core, const struct cq_waits *w,
                           size_t t)
{
	if (!w)
		return;
	const struct cq_wait *wt = cq_waits_of_thread(w, t);
	if (wt) {
		fprintf(out, "    ");
		wait_text(out, core, wt);
		if (wt->deadlock)
			fprintf(out, " [%s]",
			        w->deadlocks[wt->deadlock - 1].verdict == CQ_DEADLOCK_UNCONFIRMED
			            ? "possible deadlock"
			            : "deadlock");
		fputc('\n', out);
		return;
	}
	if (t < w->nthreads && w->thread_ends && w->thread_ends[t] != SIZE_MAX) {
		const struct cq_wait_end *end = &w->ends[w->thread_ends[t]];
		fprintf(out, "    %zu thread%s wait%s for this thread", end->waiters,
		        plural(end->waiters), end->waiters == 1 ? "s" : "");
		if (end->syscall)
			fprintf(out, ", blocked in %s()", end->syscall);
		fputc('\n', out);
	}
}

static void json_owner(struct cq_json *j, const struct cq_wait *w)
{
	static const char *const names[] = {"thread", "not_in_core", "readers",
	                                    "none",   "unreadable",  "unknown"};
	cq_json_key(j, "owner");
	cq_json_string(j, names[w->owner]);
	cq_json_key(j, "owner_tid");
	if (w->owner == CQ_OWNER_THREAD || w->owner == CQ_OWNER_NOT_IN_CORE)
		cq_json_int(j, w->owner_tid);
	else
		cq_json_null(j);
	/* A lock that records no owner: the one thread referencing it (waits.h). */
	cq_json_key(j, "owner_inferred");
	cq_json_bool(j, w->owner_inferred);
	cq_json_key(j, "owner_inferred_from");
	cq_json_string(j, w->owner_inferred ? w->owner_from : NULL);
	/* What the core records that confirms it ("with", "rlock-owner"); null: nothing. */
	cq_json_key(j, "owner_confirmed_by");
	cq_json_string(j, w->owner_inferred ? w->owner_confirmed_by : NULL);
}

/* One blocked thread's wait as a JSON object. */
static void json_wait(struct cq_json *j, const struct cq_wait *wt)
{
	cq_json_object_begin(j);
	cq_json_key(j, "tid");
	cq_json_int(j, wt->tid);
	cq_json_key(j, "kind");
	cq_json_string(j, cq_wait_kind_name(wt->kind));
	cq_json_key(j, "access");
	cq_json_string(j, wt->kind != CQ_WAIT_RWLOCK ? NULL : wt->write ? "write" : "read");
	cq_json_key(j, "object");
	cq_json_hex(j, wt->object);
	cq_json_key(j, "futex");
	cq_json_hex(j, wt->futex);
	cq_json_key(j, "function");
	cq_json_string(j, wt->function);
	json_owner(j, wt);
	cq_json_key(j, "count");
	if (wt->count)
		cq_json_uint(j, wt->count);
	else
		cq_json_null(j);
	cq_json_key(j, "mutex_type");
	cq_json_string(j, wt->mutex_type);
	cq_json_key(j, "robust");
	cq_json_bool(j, wt->robust);
	cq_json_key(j, "pi");
	cq_json_bool(j, wt->pi);
	cq_json_key(j, "owner_died");
	cq_json_bool(j, wt->owner_died);
	cq_json_key(j, "pi_refused");
	cq_json_bool(j, wt->pi_refused);
	cq_json_key(j, "rust_std");
	cq_json_bool(j, wt->rust_std);
	cq_json_key(j, "deadlock");
	if (wt->deadlock)
		cq_json_uint(j, wt->deadlock - 1);
	else
		cq_json_null(j);
	cq_json_object_end(j);
}

/* One deadlock: its threads, the objects they wait on, the verdict. */
static void json_deadlock(struct cq_json *j, const struct cq_waits *w, const struct cq_deadlock *dl)
{
	cq_json_object_begin(j);
	cq_json_key(j, "tids");
	cq_json_array_begin(j);
	for (size_t k = 0; k < dl->n; k++)
		cq_json_int(j, w->waits[w->cycle[dl->first + k]].tid);
	cq_json_array_end(j);
	cq_json_key(j, "objects");
	cq_json_array_begin(j);
	for (size_t k = 0; k < dl->n; k++)
		cq_json_hex(j, w->waits[w->cycle[dl->first + k]].object);
	cq_json_array_end(j);
	cq_json_key(j, "verdict");
	cq_json_string(j, cq_deadlock_verdict_name(dl->verdict));
	cq_json_object_end(j);
}

/* One end of the waits: a thread others wait for, or an object none holds. */
static void json_waited_for(struct cq_json *j, const struct cq_waits *w,
                            const struct cq_wait_end *end)
{
	cq_json_object_begin(j);
	cq_json_key(j, "tid");
	if (end->is_thread)
		cq_json_int(j, end->tid);
	else
		cq_json_null(j);
	cq_json_key(j, "syscall");
	cq_json_string(j, end->is_thread ? end->syscall : NULL);
	cq_json_key(j, "object");
	if (end->is_thread)
		cq_json_null(j);
	else
		cq_json_hex(j, w->waits[end->wait].object);
	cq_json_key(j, "waiters");
	cq_json_uint(j, end->waiters);
	cq_json_object_end(j);
}

void cmd_waits_json(struct cq_json *j, const struct cq_core *core, const struct cq_waits *w)
{
	cq_json_key(j, "waits");
	cq_json_array_begin(j);
	for (size_t i = 0; w && i < w->nwaits; i++) {
		json_wait(j, &w->waits[i]);
	}
	cq_json_array_end(j);
	cq_json_key(j, "deadlocks");
	cq_json_array_begin(j);
	for (size_t d = 0; w && d < w->ndeadlocks; d++) {
		json_deadlock(j, w, &w->deadlocks[d]);
	}
	cq_json_array_end(j);
	cq_json_key(j, "waited_for");
	cq_json_array_begin(j);
	for (size_t e = 0; w && e < w->nends; e++) {
		json_waited_for(j, w, &w->ends[e]);
	}
	cq_json_array_end(j);
	(void)core;
}

void cmd_waits_dot(FILE *out, const struct cq_core *core, const struct cq_waits *w)
{
	fprintf(out, "digraph waits {\n\tnode [shape=box];\n");
	for (size_t i = 0; w && i < w->nwaits; i++) {
		const struct cq_wait *wt = &w->waits[i];
		const char *color = wt->deadlock ? " color=red" : "";
		fprintf(out, "\tt%d [label=\"thread %d\"];\n", wt->tid, wt->tid);
		const char *kind = cq_wait_kind_name(wt->kind);
		fprintf(out, "\t%s_%" PRIx64 " [shape=ellipse label=\"%s 0x%" PRIx64 "\"];\n", kind,
		        wt->object, kind, wt->object);
		fprintf(out, "\tt%d -> %s_%" PRIx64 " [label=\"waits\"%s];\n", wt->tid, kind,
		        wt->object, color);
		if (wt->owner == CQ_OWNER_THREAD || wt->owner == CQ_OWNER_NOT_IN_CORE) {
			fprintf(out, "\tt%d [label=\"thread %d%s\"];\n", wt->owner_tid,
			        wt->owner_tid,
			        wt->owner == CQ_OWNER_THREAD ? "" : " (not in core)");
			fprintf(out, "\t%s_%" PRIx64 " -> t%d [label=\"%s\"%s];\n", kind,
			        wt->object, wt->owner_tid,
			        wt->owner_inferred ? "held by (inferred)" : "held by", color);
		}
	}
	fprintf(out, "}\n");
	(void)core;
}
