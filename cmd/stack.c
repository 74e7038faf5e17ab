/*
 * stack.c - `coreq stack CORE`: every thread's stack, like gdb's
 * `thread apply all bt`, the crashed thread first; or JSON (DESIGN.md).
 */
#include "cmd/cmd.h"
#include "cmd/options.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/json.h"
#include "libcore/model/module.h"
#include "libcore/analysis/stacktrace.h"
#include "libcore/analysis/waits.h"
#include "libcore/capture/capture.h"
#include "libcore/pipeline/analyse.h"
#include "unwind/async/runtime.h"
#include "cmd/frames_memo.h"
#include "cmd/stack_views.h"
#include "cmd/task_groups.h"
#include "cmd/wait_text.h"

/* What stack's options write. */
struct stack_args {
	struct cmd_core_opts o;
	struct cq_stack_options so;
	struct stack_view view;
	const char *cache_path;
	bool no_cache, no_waits;
	bool folded, dot;   /* --format folded, --format dot */
	unsigned max_tasks; /* --max-tasks: the stack options' max_suspended */
};

/* --format: text, json (the core options' format), folded or dot. */
static int format_option(const char *cmd, const char *option, const char *arg, void *field)
{
	(void)option;
	struct stack_args *a = field;
	if (strcmp(arg, "folded") == 0)
		a->folded = true;
	else if (strcmp(arg, "dot") == 0)
		a->dot = true;
	else if (!cmd_parse_format(arg, &a->o.format, cmd))
		return EXIT_USAGE;
	return CMD_OPTS_GO_ON;
}

/* --thread TID, repeatable. */
static int thread_option(const char *cmd, const char *option, const char *arg, void *field)
{
	struct stack_view *view = field;
	unsigned tid;
	if (view->ntids == STACK_VIEW_MAX_TIDS)
		return cmd_usage_error(cmd, "at most %d %s options", STACK_VIEW_MAX_TIDS, option);
	if (!cmd_parse_count(arg, 0, INT32_MAX, &tid, cmd, option))
		return EXIT_USAGE;
	view->tids[view->ntids++] = tid;
	return CMD_OPTS_GO_ON;
}

#define FIELD(f) offsetof(struct stack_args, f)

static const struct cmd_opt stack_options[] = {
    {"format", 0, CMD_OPT_CALL, 0, "text|json|folded|dot",
     "output format (default text); folded: one line per distinct stack, outermost frame "
     "first, ';'-joined, and its thread count, for flame-graph tools; dot: the wait-for graph "
     "for graphviz",
     0, 0, format_option, NULL},
    {"thread", 0, CMD_OPT_CALL, FIELD(view), "TID", "only this thread (repeatable)", 0, 0,
     thread_option, NULL},
    {"crashed", 0, CMD_OPT_FLAG, FIELD(view.crashed_only), NULL, "only the thread that crashed", 0,
     0, NULL, NULL},
    {"group", 0, CMD_OPT_FLAG, FIELD(view.group), NULL,
     "each distinct stack once, with how many threads and which have it (pstack-summary "
     "style); suspended tasks with the same frames and state once, with their count and ids "
     "(panicparse style)",
     0, 0, NULL, NULL},
    CMD_ROWS_CORE_FILES(struct stack_args, o),
    {"max-frames", 0, CMD_OPT_COUNT, FIELD(so.unwind.max_frames), "N",
     "stop each thread after N frames (default 256)", 1, 100000, NULL, NULL},
    {"max-tasks", 0, CMD_OPT_COUNT, FIELD(max_tasks), "N",
     "list at most N suspended stacks of all runtimes (tasks, goroutines, coroutine chains; "
     "default 1024, with --group a million); those over it are counted, not listed",
     1, 10000000, NULL, NULL},
    {"no-scan", 0, CMD_OPT_CLEAR, FIELD(so.unwind.allow_scan), NULL,
     "never guess frames by scanning the stack", 0, 0, NULL, NULL},
    {"no-async", 0, CMD_OPT_CLEAR, FIELD(so.async), NULL,
     "native frames only: no async stacks, no suspended coroutines or futures (nothing "
     "scanned)",
     0, 0, NULL, NULL},
    {"no-waits", 0, CMD_OPT_FLAG, FIELD(no_waits), NULL,
     "no wait-for graph (no blocked thread is examined)", 0, 0, NULL,
     "No\n.BR deadlock: ,\n.BR hung: \" or \" waits\nis reported.\n"},
    CMD_ROWS_CACHE(struct stack_args, cache_path, no_cache),
    CMD_OPT_END,
};

static const struct cmd_spec stack_spec = {
    .name = "stack",
    .forms = "[OPTIONS] CORE",
    .about = "Print every thread's stack, the crashed thread first.  Frames are unwound\n"
             "with DWARF CFI (.eh_frame, .debug_frame), else frame pointers, else a\n"
             "bounded stack scan; text output marks frames not found through CFI with\n"
             "[fp] or [scan].  Inlined calls appear as their own frames, marked [inline].\n"
             "A header first says what crashed: pid, executable, signal, its si_code by\n"
             "name, and the fault address or who sent the signal; or, for a snapshot of\n"
             "a live process (gdb's gcore), `snapshot (gcore)`, with no thread crashed.\n"
             "\n"
             "Threads blocked on a lock (a futex wait under pthread_mutex_lock,\n"
             "pthread_rwlock_*lock, pthread_cond_wait or pthread_join) make a wait-for\n"
             "graph: the header says which threads are deadlocked (a cycle) and which\n"
             "thread the others wait for, and each blocked thread says what it waits\n"
             "for and who holds it (the owner glibc records in the mutex, the rwlock's\n"
             "writer, the joined thread; an rwlock's readers and a condvar have none).\n"
             "\n"
             "In programs that use folly's async stacks (folly::coro, libunifex), each\n"
             "thread's coroutine chain is spliced into its stack (frames marked [async]),\n"
             "across threads where a thread blocks on work another one runs (its first\n"
             "frame marked [thread TID]), each coroutine once even when it is also on\n"
             "the native stack (-O0), consecutive async frames in one function as one\n"
             "with a count (\u00d74), and the chains of suspended coroutines are listed\n"
             "after the threads.  In Rust programs built with -C debuginfo=2, the\n"
             "suspended futures are listed too: each task's await chain, innermost\n"
             "first, with the state and line of every await.  In CPython 3.11, each\n"
             "thread's Python frames (function, file, line) are spliced in front of\n"
             "the interpreter frame that runs them, marked [py], and pending asyncio\n"
             "tasks are listed with their await chains.\n",
    .opt = stack_options,
};

/*
 * Whether ss's runtime lists tasks (an executor's tasks, goroutines): --group folds
 * those (task_groups.h); chains (folly, C++, Rust futures) keep their own listing.
 */
static bool listed_as_task(const struct cq_suspended_stack *ss)
{
	size_t n;
	const struct cq_async_runtime *const *rts = cq_async_runtimes(&n);
	for (size_t r = 0; r < n; r++)
		for (size_t k = 0; rts[r]->kinds && rts[r]->kinds[k]; k++)
			if (strcmp(rts[r]->kinds[k], ss->kind) == 0)
				return rts[r]->listing == CQ_ASYNC_LIST_TASKS;
	return false;
}

/* Frames of a stack on thread tid (0: on none, a suspended chain), rendered through memo. */
static void json_frames(struct cq_json *j, struct frames_memo *memo,
                        const struct cq_stack_frame *frames, size_t n, enum cq_unwind_end end,
                        int64_t tid)
{
	cq_json_key(j, "frames");
	cq_json_array_begin(j);
	int64_t few[64];
	int64_t *tids = n <= 64 ? few : malloc(n * sizeof(*tids));
	for (size_t i = 0; i < n; i++) {
		if (frames[i].thread_switch)
			tid = frames[i].thread_switch;
		if (tids)
			tids[i] = tid;
		else
			cmd_json_frame(j, &frames[i], i, tid);
	}
	if (tids)
		frames_memo_json(memo, j, frames, n, tids);
	if (tids != few)
		free(tids);
	cq_json_array_end(j);
	cq_json_key(j, "end");
	cq_json_string(j, cq_unwind_end_name(end));
}

/* A goroutine's wait object, wait start and creator, where its runtime records them. */
static void json_goroutine(struct cq_json *j, const struct cq_suspended_stack *ss)
{
	if (ss->wait_object) {
		cq_json_key(j, "wait_object");
		cq_json_hex(j, ss->wait_object);
	}
	if (ss->wait_since) {
		cq_json_key(j, "wait_since");
		cq_json_int(j, ss->wait_since);
	}
	const struct cq_stack_frame *c = ss->created_by;
	if (c) {
		cq_json_key(j, "created_by");
		cq_json_object_begin(j);
		cq_json_key(j, "pc");
		cq_json_hex(j, c->pc);
		cq_json_key(j, "function");
		if (c->function)
			cq_json_string(j, c->function);
		else
			cq_json_null(j);
		if (c->file) {
			cq_json_key(j, "file");
			cq_json_string(j, c->file);
			cq_json_key(j, "line");
			cq_json_int(j, c->line);
		}
		cq_json_object_end(j);
	}
}

/* What the async-stack search found and did (the "async" member): each runtime's statistics. */
static void json_async(struct cq_json *j, const struct cq_stats *async)
{
	cq_json_key(j, "async");
	cq_json_object_begin(j);
	cq_stats_json(async, j);
	cq_json_object_end(j);
}

static void json_groups(struct cq_json *j, struct frames_memo *memo, const struct stack_view *v,
                        const struct cq_stacks *stacks)
{
	size_t n;
	struct stack_group *g = stack_view_groups(v, stacks, &n);
	cq_json_key(j, "groups");
	cq_json_array_begin(j);
	for (size_t k = 0; g && k < n; k++) {
		cq_json_object_begin(j);
		cq_json_key(j, "threads");
		cq_json_uint(j, g[k].n);
		cq_json_key(j, "tids");
		cq_json_array_begin(j);
		for (size_t i = 0; i < g[k].n; i++)
			cq_json_int(j, g[k].tids[i]);
		cq_json_array_end(j);
		cq_json_key(j, "crashed");
		cq_json_bool(j, g[k].crashed);
		json_frames(j, memo, g[k].first->frames, g[k].first->nframes, g[k].first->end,
		            g[k].first->thread->tid);
		cq_json_object_end(j);
	}
	cq_json_array_end(j);
	stack_view_groups_free(g, n);
}

/*
 * --group: the suspended stacks of runtimes that list tasks folded into
 * groups (task_groups.h), as "suspended_groups"; frames are the first
 * member's (its futures' addresses).
 */
static void json_task_groups(struct cq_json *j, struct frames_memo *memo,
                             const struct cq_stacks *stacks)
{
	struct task_groups g;
	bool made = task_groups_make(stacks, listed_as_task, &g);
	cq_json_key(j, "suspended_groups");
	cq_json_array_begin(j);
	for (size_t k = 0; made && k < g.n; k++) {
		const struct task_group *t = &g.v[k];
		cq_json_object_begin(j);
		cq_json_key(j, "kind");
		cq_json_string(j, t->first->kind);
		cq_json_key(j, "count");
		cq_json_uint(j, t->n);
		cq_json_key(j, "task_state");
		if (t->first->task_state)
			cq_json_string(j, t->first->task_state);
		else
			cq_json_null(j);
		cq_json_key(j, "task_ids");
		cq_json_array_begin(j);
		for (size_t i = 0; i < t->nids; i++)
			cq_json_uint(j, t->ids[i]);
		cq_json_array_end(j);
		cq_json_key(j, "without_id");
		cq_json_uint(j, t->n - t->nids);
		cq_json_key(j, "threads");
		cq_json_array_begin(j);
		for (size_t i = 0; i < t->nthreads; i++)
			cq_json_int(j, t->threads[i]);
		cq_json_array_end(j);
		json_frames(j, memo, t->first->frames, t->first->nframes, t->first->end, 0);
		cq_json_object_end(j);
	}
	cq_json_array_end(j);
	task_groups_free(&g);
}

/* One suspended stack, an element of "suspended". */
static void json_suspended(struct cq_json *j, struct frames_memo *memo,
                           const struct cq_suspended_stack *ss)
{
	cq_json_object_begin(j);
	cq_json_key(j, "kind");
	cq_json_string(j, ss->kind);
	cq_json_key(j, "leaf");
	cq_json_hex(j, ss->leaf);
	if (ss->has_task) {
		cq_json_key(j, "task_id");
		if (ss->task_id)
			cq_json_uint(j, ss->task_id);
		else
			cq_json_null(j);
		cq_json_key(j, "task_state");
		cq_json_string(j, ss->task_state);
		cq_json_key(j, "thread");
		if (ss->thread)
			cq_json_int(j, ss->thread);
		else
			cq_json_null(j);
		json_goroutine(j, ss);
	}
	json_frames(j, memo, ss->frames, ss->nframes, ss->end, 0);
	cq_json_object_end(j);
}

static void print_json(const struct cq_core *core, const struct cq_capture *cap,
                       const struct cq_stacks *stacks, const struct cq_waits *waits,
                       const struct stack_view *v)
{
	struct cq_json j;
	struct frames_memo memo;
	frames_memo_init(&memo);
	cq_json_init(&j, stdout);
	cq_json_object_begin(&j);
	cmd_json_core(&j, core, cap);
	if (v->group)
		json_groups(&j, &memo, v, stacks);
	cq_json_key(&j, "threads");
	cq_json_array_begin(&j);
	for (size_t t = 0; t < stacks->nthreads && !v->group; t++) {
		const struct cq_thread_stack *ts = &stacks->threads[t];
		if (!stack_view_selected(v, ts))
			continue;
		cq_json_object_begin(&j);
		cmd_json_thread_id(&j, ts->thread->tid, ts->thread->name, ts->thread->crashed);
		json_frames(&j, &memo, ts->frames, ts->nframes, ts->end, ts->thread->tid);
		cq_json_object_end(&j);
	}
	cq_json_array_end(&j);
	if (v->group && !v->ntids && !v->crashed_only)
		json_task_groups(&j, &memo, stacks);
	cq_json_key(&j, "suspended");
	cq_json_array_begin(&j);
	for (size_t i = 0; i < stacks->nsuspended && !v->ntids && !v->crashed_only; i++) {
		const struct cq_suspended_stack *ss = &stacks->suspended[i];
		if (v->group && listed_as_task(ss))
			continue;
		json_suspended(&j, &memo, ss);
	}
	cq_json_array_end(&j);
	if (stacks->crash_message) {
		cq_json_key(&j, "crash_message");
		cq_json_string(&j, stacks->crash_message);
	}
	json_async(&j, &stacks->async);
	cmd_waits_json(&j, core, waits);
	cq_json_object_end(&j);
	cq_json_finish(&j);
	frames_memo_free(&memo);
}

/* True when a suspended stack's kind is one the runtime reports. */
static bool runtime_kind(const struct cq_async_runtime *rt, const char *kind)
{
	for (size_t k = 0; rt->kinds && rt->kinds[k]; k++)
		if (strcmp(rt->kinds[k], kind) == 0)
			return true;
	return false;
}

/*
 * A runtime's suspended chains, under its heading ("Suspended async stacks"
 * for folly's coroutines, "Suspended futures" for Rust's), each numbered
 * from 1 within its kind.
 */
static void print_chains_text(const struct cq_stacks *stacks, const struct cq_async_runtime *rt)
{
	size_t shown = 0;
	for (size_t k = 0; rt->kinds && rt->kinds[k]; k++) {
		size_t n = 0;
		for (size_t s = 0; s < stacks->nsuspended; s++) {
			const struct cq_suspended_stack *ss = &stacks->suspended[s];
			if (strcmp(ss->kind, rt->kinds[k]) != 0)
				continue;
			if (shown++ == 0)
				printf("\n%s:\n", rt->heading);
			printf("\nSuspended %s %s %zu (%s 0x%" PRIx64, ss->kind, rt->noun, ++n,
			       rt->leaf, ss->leaf);
			/* A chain being polled at the crash (rust.c): running, on its thread. */
			if (ss->has_task && ss->task_state && ss->thread)
				printf("; %s on thread %" PRId64, ss->task_state, ss->thread);
			else if (ss->has_task && ss->task_state)
				printf("; %s", ss->task_state);
			printf("):\n");
			for (size_t i = 0; i < ss->nframes; i++)
				cmd_print_frame_text(stdout, &ss->frames[i], i);
			if (ss->end != CQ_END_OUTERMOST)
				printf("     (stack ends: %s)\n", cq_unwind_end_name(ss->end));
		}
	}
}

/* One task of a task listing: its id and state, its frames, who created it. */
static void print_task_text(const struct cq_suspended_stack *ss, const struct cq_async_runtime *rt)
{
	const char *state = ss->task_state ? ss->task_state : "?";
	if (ss->task_id)
		printf("\n%s %" PRIu64 " (%s", rt->noun ? rt->noun : "Task", ss->task_id, state);
	else
		printf("\n%s future (%s", ss->kind, state);
	if (ss->thread)
		printf(" on thread %" PRId64, ss->thread);
	if (ss->wait_object)
		printf(" on 0x%" PRIx64, ss->wait_object);
	printf("):\n");
	for (size_t i = 0; i < ss->nframes; i++)
		cmd_print_frame_text(stdout, &ss->frames[i], i);
	if (ss->end != CQ_END_OUTERMOST)
		printf("     (stack ends: %s)\n", cq_unwind_end_name(ss->end));
	const struct cq_stack_frame *c = ss->created_by;
	if (c && c->file)
		printf("     created by %s at %s:%d\n", c->function ? cmd_safe(c->function) : "??",
		       cmd_safe(c->file), c->line);
	else if (c)
		printf("     created by %s (0x%" PRIx64 ")\n",
		       c->function ? cmd_safe(c->function) : "??", c->pc);
}

/*
 * A runtime's tasks, like a task console's list: one line per task (id,
 * state, thread, the leaf it waits on, its future: the frame inside the
 * executor's own wrapper frames), then each task's await chain, innermost
 * first.  A task without an id (the future a block_on drives) goes by its
 * kind.
 */
static void print_tasks_text(const struct cq_stacks *stacks, const struct cq_async_runtime *rt)
{
	size_t n = 0;
	int width = 9; /* the STATE column: as wide as its longest ("GC scavenge wait") */
	for (size_t s = 0; s < stacks->nsuspended; s++) {
		const struct cq_suspended_stack *ss = &stacks->suspended[s];
		if (runtime_kind(rt, ss->kind) && ss->task_state &&
		    strlen(ss->task_state) > (size_t)width && strlen(ss->task_state) < 40)
			width = (int)strlen(ss->task_state);
	}
	for (size_t s = 0; s < stacks->nsuspended; s++) {
		const struct cq_suspended_stack *ss = &stacks->suspended[s];
		if (!runtime_kind(rt, ss->kind))
			continue;
		if (n++ == 0)
			printf("\n%s:\n%8s  %-*s  %8s  %-24s  %s\n", rt->heading, "ID", width,
			       "STATE", "THREAD", "WAITS ON", "FUTURE");
		const struct cq_stack_frame *leaf = &ss->frames[0];
		size_t outer = ss->executor_frames < ss->nframes ? ss->executor_frames : 0;
		const struct cq_stack_frame *root = &ss->frames[ss->nframes - 1 - outer];
		const char *state = ss->task_state ? ss->task_state : "?";
		/* A future never polled (Unresumed) waits on nothing yet. */
		bool waits = strcmp(state, "running") != 0 && strcmp(state, "complete") != 0 &&
		             ss->nframes > 1 + outer &&
		             !(leaf->state && strcmp(leaf->state, "Unresumed") == 0);
		char thread[24] = "-", id[24];
		snprintf(id, sizeof(id), "%s", ss->kind);
		if (ss->thread)
			snprintf(thread, sizeof(thread), "%" PRId64, ss->thread);
		if (ss->task_id)
			snprintf(id, sizeof(id), "%" PRIu64, ss->task_id);
		char object[24];
		snprintf(object, sizeof(object), "0x%" PRIx64, ss->wait_object);
		printf("%8s  %-*s  %8s  %-24s  %s\n", id, width, state, thread,
		       ss->wait_object           ? object
		       : waits && leaf->function ? cmd_safe(leaf->function)
		                                 : "-",
		       root->function ? cmd_safe(root->function) : "??");
	}
	for (size_t s = 0; s < stacks->nsuspended; s++)
		if (runtime_kind(rt, stacks->suspended[s].kind))
			print_task_text(&stacks->suspended[s], rt);
}

/* Every runtime's suspended stacks, in the runtimes' order, as each lists them. */
static void print_suspended_text(const struct cq_stacks *stacks)
{
	size_t n;
	const struct cq_async_runtime *const *rts = cq_async_runtimes(&n);
	for (size_t r = 0; r < n; r++) {
		if (rts[r]->listing == CQ_ASYNC_LIST_TASKS)
			print_tasks_text(stacks, rts[r]);
		else
			print_chains_text(stacks, rts[r]);
	}
}

/* One group of a runtime's suspended stacks: its size, state, threads and ids, then its frames. */
static void print_task_group_text(const struct task_group *t, const struct cq_async_runtime *rt)
{
	const struct cq_suspended_stack *ss = t->first;
	/* A task runtime's own noun ("Goroutine"), in lower case; else "task". */
	const char *noun = rt->noun                             ? rt->noun
	                   : rt->listing == CQ_ASYNC_LIST_TASKS ? "task"
	                                                        : "chain";
	printf("\n%zu %c%s%s", t->n, noun[0] | 0x20, noun + 1, t->n == 1 ? "" : "s");
	if (ss->task_state || t->nthreads)
		printf(" (%s", ss->task_state ? ss->task_state : "?");
	for (size_t i = 0; i < t->nthreads; i++)
		printf("%s%" PRId64,
		       i                  ? ", "
		       : t->nthreads == 1 ? " on thread "
		                          : " on threads ",
		       t->threads[i]);
	if (ss->task_state || t->nthreads)
		printf(")");
	if (t->nids) {
		char ids[4096];
		task_group_ids_text(t, ids, sizeof(ids));
		printf(": %s", ids);
	} else if (rt->listing == CQ_ASYNC_LIST_TASKS && t->n == 1) {
		printf(": %s", ss->kind);
	}
	printf("\n");
	/* A group of several shows no future's address: each member has its own. */
	for (size_t i = 0; i < ss->nframes; i++)
		if (t->n == 1)
			cmd_print_frame_text(stdout, &ss->frames[i], i);
		else
			cmd_print_group_frame_text(stdout, &ss->frames[i], i);
	if (ss->end != CQ_END_OUTERMOST)
		printf("     (stack ends: %s)\n", cq_unwind_end_name(ss->end));
}

/*
 * --group: the suspended stacks of every runtime that lists tasks folded
 * into groups of the same frames and state (task_groups.h), largest first,
 * under the runtime's heading; chains as without --group; every stack in
 * full when out of memory.
 */
static void print_task_groups_text(const struct cq_stacks *stacks)
{
	struct task_groups g;
	if (!task_groups_make(stacks, listed_as_task, &g)) {
		print_suspended_text(stacks);
		return;
	}
	size_t n;
	const struct cq_async_runtime *const *rts = cq_async_runtimes(&n);
	for (size_t r = 0; r < n; r++) {
		if (rts[r]->listing != CQ_ASYNC_LIST_TASKS) {
			print_chains_text(stacks, rts[r]);
			continue;
		}
		size_t groups = 0, members = 0;
		for (size_t k = 0; k < g.n; k++)
			if (runtime_kind(rts[r], g.v[k].first->kind)) {
				groups++;
				members += g.v[k].n;
			}
		if (!groups)
			continue;
		printf("\n%s: %zu in %zu group%s\n", rts[r]->heading, members, groups,
		       groups == 1 ? "" : "s");
		for (size_t k = 0; k < g.n; k++)
			if (runtime_kind(rts[r], g.v[k].first->kind))
				print_task_group_text(&g.v[k], rts[r]);
	}
	task_groups_free(&g);
}

/* The crashed thread first, then by tid. */
static int thread_order(const void *a, const void *b)
{
	const struct cq_thread_stack *x = *(const struct cq_thread_stack *const *)a;
	const struct cq_thread_stack *y = *(const struct cq_thread_stack *const *)b;
	if (x->thread->crashed != y->thread->crashed)
		return x->thread->crashed ? -1 : 1;
	return (x->thread->tid > y->thread->tid) - (x->thread->tid < y->thread->tid);
}

/*
 * What crashed, before the threads: like the head of gdb's and coredumpctl's
 * output.  A snapshot (gcore) says so instead of naming the stop signal.
 */
static void print_header(const char *path, const struct cq_core *core, const struct cq_capture *cap)
{
	int sig = cq_core_signal(core);
	const char *name = cq_core_signal_name(sig);
	const char *exe = cq_core_exe(core, NULL);
	struct cq_capture_ids ids;
	cq_capture_ids(core, cap, &ids);
	printf("Core %s: pid %lld", cmd_safe(path), (long long)ids.pid);
	if (exe)
		printf(" (%s)", cmd_safe(exe));
	if (core->snapshot)
		printf(", snapshot (%s)", cq_core_snapshot_name(core->snapshot));
	else
		printf(", signal %d (%s)", sig, name ? name : "unknown");
	if (core->siginfo.present && !core->snapshot) {
		const struct cq_core_siginfo *si = &core->siginfo;
		struct cmd_sender sender = {si->sender_pid, si->sender_uid,
		                            cq_core_signal_from_self(core),
		                            cq_core_sender_claimed(core)};
		cmd_print_si_code(si->signo, si->code, si->has_sender ? &sender : NULL);
	}
	if (core->siginfo.has_addr && !core->snapshot)
		printf(", fault address 0x%" PRIx64, core->siginfo.addr);
	if (cap->known & CQ_CAPTURE_TIMESTAMP) {
		char when[32];
		cmd_iso_time(cap->timestamp_us / 1000000, when);
		printf(", at %s", when);
	}
	printf("\n");
	cmd_print_conflicts(cap->conflicts[0] ? cap->conflicts : NULL);
	printf("\n");
}

/* Frames in text, with a line where the stack moves to a blocked thread. */
static void render_frames_text(FILE *out, const struct cq_stack_frame *frames, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct cq_stack_frame *f = &frames[i];
		if (f->thread_switch)
			fprintf(out, "     --- blocked thread %" PRId64 " (%s waits here) ---\n",
			        f->thread_switch, f->function ? cmd_safe(f->function) : "??");
		cmd_print_frame_text(out, f, i);
	}
}

/* One stack's frames in text (rendered through memo), and where it ends. */
static void print_stack_text(struct frames_memo *memo, const struct cq_thread_stack *ts)
{
	frames_memo_text(memo, stdout, ts->frames, ts->nframes, render_frames_text);
	if (ts->end != CQ_END_OUTERMOST)
		printf("     (stack ends: %s)\n", cq_unwind_end_name(ts->end));
}

static void print_groups_text(struct frames_memo *memo, const struct stack_view *v,
                              const struct cq_stacks *stacks)
{
	size_t n;
	struct stack_group *g = stack_view_groups(v, stacks, &n);
	for (size_t k = 0; g && k < n; k++) {
		char tids[4096];
		stack_view_tid_ranges(g[k].tids, g[k].n, tids, sizeof(tids));
		printf("%s%zu thread%s%s: %s\n", k ? "\n" : "", g[k].n, g[k].n == 1 ? "" : "s",
		       g[k].crashed ? " (one crashed)" : "", tids);
		print_stack_text(memo, g[k].first);
	}
	stack_view_groups_free(g, n);
}

static void print_text(const char *path, const struct cq_core *core, const struct cq_capture *cap,
                       const struct cq_stacks *stacks, const struct cq_waits *waits,
                       const struct stack_view *v)
{
	print_header(path, core, cap);
	if (stacks->crash_message)
		printf("%s\n\n", cmd_safe(stacks->crash_message));
	if (cmd_waits_summary_says(core, waits)) {
		cmd_waits_summary(stdout, core, waits);
		putchar('\n');
	}
	struct frames_memo memo;
	frames_memo_init(&memo);
	if (v->group) {
		print_groups_text(&memo, v, stacks);
	} else {
		const struct cq_thread_stack **order =
		    malloc((stacks->nthreads ? stacks->nthreads : 1) * sizeof(*order));
		for (size_t t = 0; order && t < stacks->nthreads; t++)
			order[t] = &stacks->threads[t];
		if (order)
			qsort(order, stacks->nthreads, sizeof(*order), thread_order);
		size_t shown = 0;
		for (size_t t = 0; t < stacks->nthreads; t++) {
			const struct cq_thread_stack *ts = order ? order[t] : &stacks->threads[t];
			if (!stack_view_selected(v, ts))
				continue;
			if (shown++)
				putchar('\n');
			printf("%sThread %d", cmd_sgr("\033[1m"), ts->thread->tid);
			if (ts->thread->name)
				printf(" \"%s\"", cmd_safe(ts->thread->name));
			if (ts->thread->crashed)
				printf(" %s(crashed)", cmd_sgr("\033[31m"));
			printf(":%s\n", cmd_sgr("\033[0m"));
			cmd_waits_thread_line(stdout, core, waits,
			                      (size_t)(ts->thread - core->threads));
			print_stack_text(&memo, ts);
		}
		free(order);
		if (!shown && v->crashed_only && core->snapshot)
			printf(
			    "No thread crashed: the core is a snapshot of a live process (%s).\n",
			    cq_core_snapshot_name(core->snapshot));
	}
	frames_memo_free(&memo);
	if (v->ntids || v->crashed_only)
		return;
	if (v->group)
		print_task_groups_text(stacks);
	else
		print_suspended_text(stacks);
}

/* What --format asks for: stack's own folded and dot, beside text and json. */
enum stack_format { STACK_TEXT, STACK_JSON, STACK_FOLDED, STACK_DOT };

/* Prints the analysed core in format, as v selects. */
static int print_analysis(const char *path, const struct cq_analysis *a, const struct stack_view *v,
                          enum stack_format format)
{
	cmd_warn_analysis(path, a->core, a->stacks);
	int64_t missing;
	if (stack_view_missing(v, a->stacks, &missing)) {
		fprintf(stderr, "coreq: %s: no thread %" PRId64 " in this core\n", cmd_safe(path),
		        missing);
		return EXIT_INPUT;
	}
	if (format == STACK_FOLDED)
		stack_view_print_folded(stdout, v, a->stacks);
	else if (format == STACK_DOT)
		cmd_waits_dot(stdout, a->core, a->waits);
	else if (format == STACK_JSON)
		print_json(a->core, &a->capture, a->stacks, a->waits, v);
	else
		print_text(path, a->core, &a->capture, a->stacks, a->waits, v);
	return EXIT_OK;
}

int cmd_stack(int argc, char **argv)
{
	struct stack_args s = {.view = {.ntids = 0}};
	cmd_core_opts_init(&s.o);
	cq_stack_options_default(&s.so);
	int rc = cmd_opts_parse(&stack_spec, argc, argv, &s);
	if (rc != CMD_OPTS_GO_ON)
		return rc;
	if (optind + 1 != argc)
		return cmd_usage_error("stack", "expected exactly one CORE argument");
	/* --group makes many tasks readable: it lists up to a million unless told */
	if (s.max_tasks)
		s.so.max_suspended = s.max_tasks;
	else if (s.view.group)
		s.so.max_suspended = 1000000;
	enum stack_format format = s.folded                        ? STACK_FOLDED
	                           : s.dot                         ? STACK_DOT
	                           : s.o.format == CMD_FORMAT_JSON ? STACK_JSON
	                                                           : STACK_TEXT;
	struct cmd_cache_choice cache = {.path = s.cache_path, .use = !s.no_cache};
	struct cq_analysis a;
	struct cq_error *err = cmd_analyse(argv[optind], &s.o, &s.so, &cache, !s.no_waits, &a);
	rc = err ? cmd_fail(argv[optind], err) : print_analysis(argv[optind], &a, &s.view, format);
	cmd_analysis_free(&a);
	return rc;
}
