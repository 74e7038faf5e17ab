/*
 * bucket.c - crash signatures (see bucket.h).
 *
 * The rules are data (rules.h; the defaults in dist/coreq.rules): which
 * frames are how a program dies rather than where (the signature starts
 * below the outermost of them), where threads start (it ends above the
 * first), which frames never count, which modules are the program's own,
 * which frames a language's own traceback hides (Go's runtime).
 */
#include "libcore/triage/bucket.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/hash.h"
#include "libcore/triage/frame_names.h"
#include "libcore/triage/rules.h"
#include "libcore/model/core.h"
#include "libcore/model/module.h"
#include "libcore/analysis/stacktrace.h"
#include "libcore/analysis/waits.h"
#include "libcore/symbols/demangle.h"
#include "libcore/symbols/go_names.h"

#define NAME_MAX_LEN 512
/* The pseudo-frame of a signal trampoline (analysis/frame_list.c names it). */
#define SIGNAL_FRAME "<signal handler called>"

/* ---- name normalisation ------------------------------------------------- */

/* Cuts s's compiler clone suffixes (symbols/demangle.h), and a " [clone" left inside. */
static void strip_suffix_clone(char *s)
{
	char *c = strstr(s, " [clone ");
	if (c)
		*c = '\0';
	s[cq_name_unclone(s)] = '\0';
}

/* Copies src into dst, cutting the parameter list and collapsing <...> to <T>. */
static void shape(const char *src, char *dst, size_t cap)
{
	size_t o = 0;
	int angle = 0, paren = 0;
	for (size_t i = 0; src[i] && o + 4 < cap; i++) {
		char c = src[i];
		bool op = i >= 8 && strncmp(src + i - 8, "operator", 8) == 0;
		/* Go's method receiver, main.(*T).M, is no parameter list. */
		bool receiver = c == '(' && i > 0 && src[i - 1] == '.';
		if (angle == 0 && paren == 0 && c == '(' && !op && !receiver) {
			if (strncmp(src + i, "(anonymous namespace)", 21) == 0) {
				i += 20;
				const char *anon = "{anon}";
				for (; *anon && o + 4 < cap; anon++)
					dst[o++] = *anon;
				continue;
			}
			break; /* the parameter list */
		}
		if (c == '<' && !op) {
			if (angle++ == 0 && paren == 0) {
				dst[o++] = '<';
				dst[o++] = 'T';
			}
			continue;
		}
		if (c == '>' && angle > 0 && !op) {
			if (--angle == 0 && paren == 0)
				dst[o++] = '>';
			continue;
		}
		if (angle > 0)
			continue;
		if (c == '(')
			paren++;
		else if (c == ')' && paren > 0)
			paren--;
		dst[o++] = c;
	}
	dst[o] = '\0';
}

/* Drops a leading return type: the text before the last top-level space. */
static void drop_return_type(char *s)
{
	char *space = NULL;
	for (char *p = s; *p; p++)
		if (*p == ' ' && (p < s + 8 || strncmp(p - 8, "operator", 8) != 0))
			space = p;
	if (space && strncmp(space + 1, "operator", 8) != 0)
		memmove(s, space + 1, strlen(space + 1) + 1);
}

/* Rust legacy symbols end in ::h followed by 16 hex digits. */
static void strip_rust_hash(char *s)
{
	size_t n = strlen(s);
	if (n < 19 || strncmp(s + n - 19, "::h", 3) != 0)
		return;
	for (size_t i = n - 16; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return;
	s[n - 19] = '\0';
}

static void strip_prefix(char *s, const char *prefix)
{
	size_t p = strlen(prefix);
	if (strncmp(s, prefix, p) == 0 && s[p])
		memmove(s, s + p, strlen(s + p) + 1);
}

void cq_bucket_normalize_name(const char *name, char *out, size_t cap)
{
	if (name[0] == '<') { /* a pseudo-frame such as <signal handler called> */
		snprintf(out, cap, "%s", name);
		return;
	}
	char tmp[NAME_MAX_LEN];
	if (!cq_name_go_printed(name, tmp, sizeof(tmp))) /* runtime.raise.abi0: runtime.raise */
		snprintf(tmp, sizeof(tmp), "%s", name);
	char *at = strchr(tmp, '@'); /* a symbol version that slipped through */
	if (at && at != tmp)
		*at = '\0';
	strip_suffix_clone(tmp);
	shape(tmp, out, cap);
	drop_return_type(out);
	strip_rust_hash(out);
	strip_prefix(out, "__GI_");
}

/* ---- the signature -------------------------------------------------------- */

/* One frame as the rules see it. */
struct named {
	char name[NAME_MAX_LEN];
	bool symbolized; /* a function's name: rules of every kind apply */
	bool weak;       /* a placeholder: does not count toward the N frames */
	bool in_app;
};

static void name_frame(const struct cq_bucket_rules *r, const struct cq_bucket_frame *f,
                       struct named *n)
{
	memset(n, 0, sizeof(*n));
	if (f->python) { /* the interpreted code's own name, as Python spells it */
		snprintf(n->name, sizeof(n->name), "%s", f->function ? f->function : "??");
		n->symbolized = f->function != NULL;
		n->weak = f->function == NULL;
		n->in_app = !f->file || cq_bucket_rules_in_app(r, f->file);
		return;
	}
	n->in_app = f->module && cq_bucket_rules_in_app(r, f->module);
	const char *name = f->alt_name ? f->alt_name : f->function;
	if (name && name[0] == '[') { /* a placeholder for a library frame nothing names */
		snprintf(n->name, sizeof(n->name), "%s", name);
		n->weak = true;
	} else if (name) {
		cq_bucket_normalize_name(name, n->name, sizeof(n->name));
		/* The trampoline by its symbol where debuginfo names it (glibc's x86_64
		 * __restore_rt, the aarch64 vdso's): one name, with debuginfo or not. */
		if (!strcmp(n->name, "__restore_rt") || !strcmp(n->name, "__kernel_rt_sigreturn") ||
		    !strncmp(n->name, "runtime.sigreturn", 17)) /* Go's, without libc */
			snprintf(n->name, sizeof(n->name), "%s", SIGNAL_FRAME);
		n->symbolized = true;
	} else if (f->module && f->main) {
		const char *base = strrchr(f->module, '/');
		snprintf(n->name, sizeof(n->name), "%s+0x%llx", base ? base + 1 : f->module,
		         (unsigned long long)f->offset);
	} else if (f->module) {
		char so[256];
		cq_frame_soname(NULL, f->module, so, sizeof(so));
		snprintf(n->name, sizeof(n->name), "[%s]", so);
		n->weak = true;
	} else {
		snprintf(n->name, sizeof(n->name), "[??]");
		n->weak = true;
	}
}

static bool is_kind(const struct cq_bucket_rules *r, const struct named *n, enum cq_rule_kind k)
{
	return cq_bucket_rules_match(r, k, n->name);
}

/* A signal trampoline's frame (name_frame names every one alike). */
static bool is_signal_frame(const struct named *n)
{
	return strcmp(n->name, SIGNAL_FRAME) == 0;
}

/*
 * When names[0 .. upto) is a crash handler that ended the process (its
 * innermost frame is machinery: kill, raise, abort) running on a signal
 * frame, the index just below the innermost signal frame; else 0.
 */
static size_t reraised_below(const struct cq_bucket_rules *r, const struct named *names,
                             size_t upto)
{
	if (upto == 0 || !is_kind(r, &names[0], CQ_RULE_MACHINERY))
		return 0;
	for (size_t i = 1; i + 1 < upto; i++)
		if (is_signal_frame(&names[i]))
			return i + 1;
	return 0;
}

#define MAX_INTERPRETERS 4 /* modules running Python frames in one stack */

static bool in_list(const char *const *list, size_t n, const char *s)
{
	for (size_t i = 0; s && i < n; i++)
		if (!strcmp(list[i], s))
			return true;
	return false;
}

/*
 * A stack with Python frames (names[first_py] the innermost): keeps the
 * native frames inside it up to the first that counts or is a library's
 * placeholder (the fault's frame), leaving out the
 * interpreter's (the module of the native frame each run of Python frames
 * is spliced in front of), then only the Python frames.  How many remain.
 */
static size_t python_frames_only(const struct cq_bucket_rules *r,
                                 const struct cq_bucket_frame *frames, const size_t *src,
                                 struct named *names, size_t n, size_t first_py)
{
	const char *interp[MAX_INTERPRETERS];
	size_t ninterp = 0;
	for (size_t i = first_py; i + 1 < n; i++) {
		const struct cq_bucket_frame *next = &frames[src[i + 1]];
		if (frames[src[i]].python && !next->python && next->module &&
		    !in_list(interp, ninterp, next->module) && ninterp < MAX_INTERPRETERS)
			interp[ninterp++] = next->module;
	}
	/* The fault's frame is below the crash machinery (abort, raise), whatever names them. */
	size_t below = 0;
	for (size_t i = 0; i < first_py; i++)
		if (is_kind(r, &names[i], CQ_RULE_MACHINERY))
			below = i + 1;
	size_t k = 0;
	for (size_t i = 0; i < first_py; i++) {
		if (in_list(interp, ninterp, frames[src[i]].module))
			continue;
		names[k++] = names[i];
		if (i >= below && (names[i].weak || (!is_kind(r, &names[i], CQ_RULE_PREFIX) &&
		                                     !is_kind(r, &names[i], CQ_RULE_MACHINERY))))
			break; /* the fault's frame (a library's placeholder without debuginfo) */
	}
	for (size_t i = first_py; i < n; i++)
		if (frames[src[i]].python)
			names[k++] = names[i];
	return k;
}

struct cq_error *cq_bucket_signature_of(const struct cq_bucket_rules *r,
                                        const struct cq_bucket_frame *frames, size_t nf, int signo,
                                        unsigned nframes, struct cq_bucket_signature *out)
{
	memset(out, 0, sizeof(*out));
	struct named *names = calloc(nf ? nf : 1, sizeof(*names));
	size_t *src = calloc(nf ? nf : 1, sizeof(*src)); /* names[i] is frames[src[i]] */
	if (!names || !src) {
		free(names);
		free(src);
		return &cq_error_nomem;
	}
	size_t n = 0, first_py = SIZE_MAX;
	for (size_t i = 0; i < nf; i++) {
		if (frames[i].scanned)
			continue;
		name_frame(r, &frames[i], &names[n]);
		src[n] = i;
		if (frames[i].python && first_py == SIZE_MAX)
			first_py = n;
		if (frames[i].python || !is_kind(r, &names[n], CQ_RULE_SKIP))
			n++;
	}
	if (first_py < n)
		n = python_frames_only(r, frames, src, names, n, first_py);
	free(src);
	/* Start-up: the first frame where threads begin ends the search. */
	size_t startup = 0;
	while (startup < n && !is_kind(r, &names[startup], CQ_RULE_STARTUP))
		startup++;
	/* Top: below the outermost machinery frame, or at the innermost sentinel. */
	size_t start = 0;
	for (size_t i = 0; i < startup; i++)
		if (is_kind(r, &names[i], CQ_RULE_MACHINERY))
			start = i + 1;
	for (size_t i = 0; i < startup; i++) {
		if (is_kind(r, &names[i], CQ_RULE_SENTINEL)) {
			start = i;
			break;
		}
	}
	if (start >= startup)
		start = 0; /* nothing but machinery (or no start-up at all): keep it all */
	/*
	 * A crash handler that reports and then ends the process (re-raises the
	 * signal, aborts): the crashed thread's innermost frame is machinery and
	 * a signal frame lies above start-up.  The crash is where the signal
	 * interrupted, below the innermost signal frame, not in the handler.  A
	 * handler that faults itself has its own frame innermost: it stays.
	 * Machinery further below still goes (Go's runtime re-raises its
	 * SIGABRT through its own handler; the panic lies below that).
	 */
	size_t handler = reraised_below(r, names, startup);
	if (handler > start)
		start = handler;
	/*
	 * Frames the language's own traceback hides (Go's runtime.mapassign
	 * between a panic and the program's frame): the signature starts at the
	 * first frame below them, when one is left above start-up.
	 */
	size_t shown = start;
	while (shown < startup && is_kind(r, &names[shown], CQ_RULE_HIDDEN))
		shown++;
	if (shown < startup)
		start = shown;
	size_t end = start;
	while (end < n && !is_kind(r, &names[end], CQ_RULE_STARTUP))
		end++;
	/* Below the first in-app frame, only in-app frames. */
	size_t first_app = start;
	while (first_app < end && !names[first_app].in_app)
		first_app++;
	char signame[32];
	const char *sn = cq_core_signal_name(signo);
	if (sn)
		snprintf(signame, sizeof(signame), "%s", sn);
	else
		snprintf(signame, sizeof(signame), "SIG%d", signo);
	/* Upper bound of the text: every candidate frame, its separator, the signal. */
	size_t len = strlen(signame) + 1;
	for (size_t i = start; i < end; i++)
		len += strlen(names[i].name) + 3;
	out->text = malloc(len);
	if (!out->text) {
		free(names);
		return &cq_error_nomem;
	}
	char *p = out->text;
	const char *prev = NULL;
	for (size_t i = start, counted = 0; i < end && counted < nframes; i++) {
		const struct named *x = &names[i];
		if (i > first_app && first_app < end && !x->in_app)
			continue;
		if (prev && strcmp(prev, x->name) == 0)
			continue; /* recursion, or one coroutine seen twice: once */
		p += sprintf(p, "%s | ", x->name);
		prev = x->name;
		if (!x->weak && !is_kind(r, x, CQ_RULE_PREFIX))
			counted++;
	}
	strcpy(p, signame);
	cq_bucket_hash_of(out->text, out->hash);
	snprintf(out->rules_version, sizeof(out->rules_version), "%s", r->version);
	free(names);
	return NULL;
}

void cq_bucket_hash_of(const char *text, char out[CQ_BUCKET_HASH_LEN + 1])
{
	snprintf(out, CQ_BUCKET_HASH_LEN + 1, "%016llx",
	         (unsigned long long)cq_fnv1a(CQ_FNV_OFFSET, text, strlen(text)));
}

struct cq_error *cq_bucket_signature(const struct cq_bucket_rules *r, struct cq_bucket_namer *nm,
                                     const struct cq_thread_stack *ts, int signo, unsigned nframes,
                                     struct cq_bucket_signature *out)
{
	struct cq_bucket_frame *f = calloc(ts->nframes ? ts->nframes : 1, sizeof(*f));
	char(*alt)[NAME_MAX_LEN] = calloc(ts->nframes ? ts->nframes : 1, sizeof(*alt));
	struct cq_error *err = NULL;
	if (!f || !alt) {
		err = &cq_error_nomem;
		goto out;
	}
	for (size_t i = 0; i < ts->nframes; i++) {
		const struct cq_stack_frame *sf = &ts->frames[i];
		f[i] = (struct cq_bucket_frame){
		    .function = sf->function,
		    .alt_name = cq_bucket_alt_name(nm, sf, alt[i], sizeof(alt[i])),
		    .module = sf->module ? sf->module->name : NULL,
		    .offset = sf->offset,
		    .main = sf->module && sf->module->is_main,
		    .scanned = sf->trust == CQ_TRUST_SCAN,
		    .python = sf->kind == CQ_FRAME_PYTHON,
		    .file = sf->kind == CQ_FRAME_PYTHON ? sf->file : NULL};
	}
	err = cq_bucket_signature_of(r, f, ts->nframes, signo, nframes, out);
out:
	free(f);
	free(alt);
	return err;
}

void cq_bucket_signature_free(struct cq_bucket_signature *sig)
{
	free(sig->text);
	sig->text = NULL;
}

/* ---- hangs: deadlocks and the thread everyone waits for -------------------- */

#define LOCK_SEARCH_FRAMES 64 /* how deep a lock-taking frame is looked for */
#define LOCK_TAKER_FRAMES  1  /* frames per thread of a cycle in its signature */
#define AWAITED_FRAMES     2  /* frames of the thread a hang waits for */
#define CYCLE_SHOWN        16 /* threads of one cycle a signature names */
#define CYCLES_SHOWN       8  /* cycles a signature names */

static const char deadlock_prefix[] = "deadlock: ";
static const char hang_prefix[] = "hang: ";
/* A cycle that rests on inferred owners says so (waits.h, enum cq_deadlock_verdict). */
static const char confirmed_prefix[] = "deadlock (inferred, confirmed): ";
static const char possible_prefix[] = "possible deadlock: ";

const char *cq_bucket_wait_kind(const char *signature)
{
	if (!signature)
		return NULL;
	if (strncmp(signature, deadlock_prefix, sizeof(deadlock_prefix) - 1) == 0 ||
	    strncmp(signature, confirmed_prefix, sizeof(confirmed_prefix) - 1) == 0)
		return "deadlock";
	if (strncmp(signature, possible_prefix, sizeof(possible_prefix) - 1) == 0)
		return "possible-deadlock";
	if (strncmp(signature, hang_prefix, sizeof(hang_prefix) - 1) == 0)
		return "hang";
	return NULL;
}

/* The C library and the lock wrappers between a program and its futex wait. */
static bool lock_machinery(const struct cq_stack_frame *sf, const char *name)
{
	static const char *const prefixes[] = {
	    "std::",  "__gthread", "__gthrw", "pthread_", "__pthread", "___pthread",
	    "__lll_", "lll_",      "__futex", "futex_",   "__GI_",
	};
	if (sf->module) {
		const char *base = strrchr(sf->module->name, '/');
		base = base ? base + 1 : sf->module->name;
		if (strncmp(base, "libc.so", 7) == 0 || strncmp(base, "libc-", 5) == 0 ||
		    strncmp(base, "libpthread", 10) == 0)
			return true;
	}
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

/*
 * "KIND f < g": from frame `from` (the one whose function is from_fn, else
 * the innermost) outwards, the first `want` named frames outside the lock
 * machinery and the C library; malloc'd.
 */
static char *program_frames(const struct cq_bucket_rules *r, struct cq_bucket_namer *nm,
                            const struct cq_thread_stack *ts, const char *from_fn, const char *kind,
                            unsigned want)
{
	char text[2 * NAME_MAX_LEN + 64];
	int o = snprintf(text, sizeof(text), "%s", kind);
	size_t n = ts && ts->nframes < LOCK_SEARCH_FRAMES ? ts->nframes : LOCK_SEARCH_FRAMES;
	size_t i = 0;
	for (size_t k = 0; from_fn && k < n; k++)
		if (ts->frames[k].function == from_fn)
			i = k;
	unsigned taken = 0;
	char alt[NAME_MAX_LEN];
	for (; i < n && taken < want; i++) {
		const struct cq_stack_frame *sf = &ts->frames[i];
		if (sf->trust == CQ_TRUST_SCAN)
			continue;
		struct cq_bucket_frame f = {.function = sf->function,
		                            .alt_name =
		                                cq_bucket_alt_name(nm, sf, alt, sizeof(alt)),
		                            .module = sf->module ? sf->module->name : NULL,
		                            .offset = sf->offset,
		                            .main = sf->module && sf->module->is_main};
		struct named x;
		name_frame(r, &f, &x);
		if (x.weak || lock_machinery(sf, x.name) || is_kind(r, &x, CQ_RULE_SKIP))
			continue; /* an unnamed library frame is not the program's either */
		if (is_kind(r, &x, CQ_RULE_STARTUP))
			break;
		o += snprintf(text + o, sizeof(text) - (size_t)o, "%s%s", taken ? " < " : " ",
		              x.name);
		if ((size_t)o >= sizeof(text))
			o = (int)sizeof(text) - 1;
		taken++;
	}
	if (!taken)
		snprintf(text + o, sizeof(text) - (size_t)o, " ??");
	return strdup(text);
}

/* "mutex f < g": the kind of lock and the frames that take it, malloc'd. */
static char *lock_taker(const struct cq_bucket_rules *r, struct cq_bucket_namer *nm,
                        const struct cq_thread_stack *ts, const struct cq_wait *w)
{
	char kind[32];
	snprintf(kind, sizeof(kind), "%s%s", cq_wait_kind_name(w->kind),
	         w->kind == CQ_WAIT_RWLOCK ? (w->write ? "-write" : "-read") : "");
	return program_frames(r, nm, ts, w->function, kind, LOCK_TAKER_FRAMES);
}

static int cmp_text(const void *a, const void *b)
{
	return strcmp(**(char *const *const *)a, **(char *const *const *)b);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Booth's algorithm: the start of the rotation of s[0..n) that sorts first. */
static size_t least_rotation(const size_t *s, size_t n, long *f)
{
	size_t k = 0;
	for (size_t j = 0; j < 2 * n; j++)
		f[j] = -1;
	for (size_t j = 1; j < 2 * n; j++) {
		size_t sj = s[j % n];
		long i = f[j - k - 1];
		while (i != -1 && sj != s[(k + (size_t)i + 1) % n]) {
			if (sj < s[(k + (size_t)i + 1) % n])
				k = j - (size_t)i - 1;
			i = f[i];
		}
		if (sj != s[(k + (size_t)i + 1) % n]) { /* i == -1 */
			if (sj < s[k % n])
				k = j;
			f[j - k] = -1;
		} else {
			f[j - k] = i + 1;
		}
	}
	return k % n;
}

/* One cycle's text, its threads' lock takers in their least rotation; malloc'd. */
static char *cycle_text(const struct cq_bucket_rules *r, struct cq_bucket_namer *nm,
                        const struct cq_stacks *stacks, const struct cq_waits *w,
                        const struct cq_deadlock *d)
{
	size_t n = d->n;
	char **texts = calloc(n, sizeof(*texts));
	char ***order = calloc(n, sizeof(*order));
	size_t *rank = calloc(n, sizeof(*rank));
	long *f = calloc(2 * n, sizeof(*f));
	char *out = NULL;
	if (!texts || !order || !rank || !f)
		goto done;
	for (size_t i = 0; i < n; i++) {
		const struct cq_wait *wt = &w->waits[w->cycle[d->first + i]];
		const struct cq_thread_stack *ts =
		    stacks && wt->thread < stacks->nthreads ? &stacks->threads[wt->thread] : NULL;
		if (!(texts[i] = lock_taker(r, nm, ts, wt)))
			goto done;
		order[i] = &texts[i];
	}
	qsort(order, n, sizeof(*order), cmp_text);
	for (size_t i = 0, v = 0; i < n; i++) {
		if (i && strcmp(*order[i], *order[i - 1]) != 0)
			v++;
		rank[order[i] - texts] = v;
	}
	size_t start = least_rotation(rank, n, f);
	size_t shown = n < CYCLE_SHOWN ? n : CYCLE_SHOWN, len = 64;
	for (size_t i = 0; i < shown; i++)
		len += strlen(texts[(start + i) % n]) + 3;
	if (!(out = malloc(len)))
		goto done;
	char *p = out;
	for (size_t i = 0; i < shown; i++)
		p += sprintf(p, "%s%s", i ? " | " : "", texts[(start + i) % n]);
	if (shown < n)
		sprintf(p, " | ... (%zu threads)", n);
done:
	for (size_t i = 0; texts && i < n; i++)
		free(texts[i]);
	free(texts);
	free(order);
	free(rank);
	free(f);
	return out;
}

static struct cq_error *deadlock_signature(const struct cq_bucket_rules *r,
                                           struct cq_bucket_namer *nm,
                                           const struct cq_stacks *stacks, const struct cq_waits *w,
                                           struct cq_bucket_signature *out)
{
	size_t nc = w->ndeadlocks < CYCLES_SHOWN ? w->ndeadlocks : CYCLES_SHOWN;
	char **cycles = calloc(nc, sizeof(*cycles));
	struct cq_error *err = NULL;
	if (!cycles)
		return &cq_error_nomem;
	/* The prefix is the strongest verdict of the core's cycles. */
	enum cq_deadlock_verdict v = CQ_DEADLOCK_UNCONFIRMED;
	for (size_t i = 0; i < w->ndeadlocks; i++)
		if (w->deadlocks[i].verdict < v)
			v = w->deadlocks[i].verdict;
	const char *prefix = v == CQ_DEADLOCK_RECORDED    ? deadlock_prefix
	                     : v == CQ_DEADLOCK_CONFIRMED ? confirmed_prefix
	                                                  : possible_prefix;
	size_t len = strlen(prefix) + 64;
	for (size_t i = 0; i < nc; i++) {
		if (!(cycles[i] = cycle_text(r, nm, stacks, w, &w->deadlocks[i]))) {
			err = &cq_error_nomem;
			goto done;
		}
		len += strlen(cycles[i]) + 3;
	}
	/* Which cycle the graph found first depends on thread order: sort them. */
	qsort(cycles, nc, sizeof(*cycles), cmp_str);
	if (!(out->text = malloc(len))) {
		err = &cq_error_nomem;
		goto done;
	}
	char *p = out->text + sprintf(out->text, "%s", prefix);
	for (size_t i = 0; i < nc; i++)
		p += sprintf(p, "%s%s", i ? " + " : "", cycles[i]);
	if (nc < w->ndeadlocks)
		sprintf(p, " + ... (%zu deadlocks)", w->ndeadlocks);
done:
	for (size_t i = 0; i < nc; i++)
		free(cycles[i]);
	free(cycles);
	return err;
}

struct cq_error *cq_bucket_wait_signature(const struct cq_bucket_rules *r,
                                          struct cq_bucket_namer *nm,
                                          const struct cq_stacks *stacks, const struct cq_waits *w,
                                          struct cq_bucket_signature *out, bool *made)
{
	*made = false;
	if (!w || !stacks)
		return NULL;
	struct cq_bucket_signature sig = {0};
	if (w->ndeadlocks) {
		struct cq_error *err = deadlock_signature(r, nm, stacks, w, &sig);
		if (err)
			return err;
	} else {
		/* The thread most others wait for, when it is a thread (not an ownerless object).
		 */
		const struct cq_wait_end *end = w->nends ? &w->ends[0] : NULL;
		if (!end || !end->is_thread || !end->waiters || end->thread >= stacks->nthreads)
			return NULL;
		char call[96];
		if (end->syscall)
			snprintf(call, sizeof(call), "%sin %s() from", hang_prefix, end->syscall);
		else
			snprintf(call, sizeof(call), "%srunning in", hang_prefix);
		if (!(sig.text = program_frames(r, nm, &stacks->threads[end->thread], NULL, call,
		                                AWAITED_FRAMES)))
			return &cq_error_nomem;
	}
	cq_bucket_hash_of(sig.text, sig.hash);
	snprintf(sig.rules_version, sizeof(sig.rules_version), "%s", r->version);
	cq_bucket_signature_free(out);
	*out = sig;
	*made = true;
	return NULL;
}
