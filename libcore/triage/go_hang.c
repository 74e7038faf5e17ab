/*
 * go_hang.c - the hang signature of a Go process killed from outside (see
 * go_hang.h).
 *
 * Which frames are the program's: Go's own split.  The traceback hides
 * the runtime's unexported functions (the rules' hidden kind) and the
 * signal machinery; a package path whose first element has no dot is the
 * standard library's (cmd/go reserves those paths for it), except main.
 */
#include "libcore/triage/go_hang.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/triage/bucket.h"
#include "libcore/triage/frame_names.h"
#include "libcore/triage/rules.h"
#include "unwind/frames.h"

#define NAME_LEN          512
#define FRAMES_PER_THREAD 2   /* program frames a thread gives the signature */
#define THREADS_SHOWN     8   /* threads' texts a signature names */
#define SEARCH_FRAMES     128 /* how deep a thread's program frame is looked for */

static const char hang_prefix[] = "hang: ";

/* The runtime's ways of dying other than a signal it handled (src/runtime/panic.go). */
static bool death_frame(const char *f)
{
	static const char *const names[] = {"runtime.gopanic", "runtime.throw", "runtime.sigpanic"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(f, names[i]) == 0)
			return true;
	return strncmp(f, "runtime.fatal", 13) == 0; /* fatal, fatalthrow, fatalpanic */
}

/* The frame's name as signatures compare it, normalised, into out. */
static void frame_name(struct cq_bucket_namer *nm, const struct cq_stack_frame *f, char *out,
                       size_t cap)
{
	char alt[NAME_LEN];
	const char *name = cq_bucket_alt_name(nm, f, alt, sizeof(alt));
	if (!name)
		name = f->function;
	if (name)
		cq_bucket_normalize_name(name, out, cap);
	else
		out[0] = '\0';
}

bool cq_bucket_go_signalled(const struct cq_thread_stack *crashed)
{
	bool handler = false;
	for (size_t i = 0; crashed && i < crashed->nframes && i < SEARCH_FRAMES; i++) {
		char name[NAME_LEN];
		frame_name(NULL, &crashed->frames[i], name, sizeof(name));
		if (death_frame(name))
			return false;
		if (strcmp(name, "runtime.sighandler") == 0)
			handler = true;
	}
	return handler;
}

/* Whether a Go function's package is the standard library's: no dot in its path's first element. */
static bool standard_library(const char *name)
{
	size_t slash = strcspn(name, "/"), dot = strcspn(name, ".");
	if (slash < dot) /* a path: its first element */
		return memchr(name, '.', slash) == NULL;
	return !(dot == 4 && strncmp(name, "main", 4) == 0);
}

/* "f < g": the thread's first program frames, malloc'd; NULL when it has none. */
static char *thread_text(const struct cq_bucket_rules *r, struct cq_bucket_namer *nm,
                         const struct cq_thread_stack *ts)
{
	char text[FRAMES_PER_THREAD * (NAME_LEN + 3) + 1];
	size_t o = 0;
	unsigned taken = 0;
	for (size_t i = 0; i < ts->nframes && i < SEARCH_FRAMES && taken < FRAMES_PER_THREAD; i++) {
		const struct cq_stack_frame *f = &ts->frames[i];
		if (f->trust == CQ_TRUST_SCAN)
			continue;
		char name[NAME_LEN];
		frame_name(nm, f, name, sizeof(name));
		if (!name[0] || !strchr(name, '.') || name[0] == '<' || name[0] == '[')
			continue; /* C code, a signal frame, an unnamed frame */
		if (cq_bucket_rules_match(r, CQ_RULE_STARTUP, name))
			break;
		if (cq_bucket_rules_match(r, CQ_RULE_MACHINERY, name) ||
		    cq_bucket_rules_match(r, CQ_RULE_HIDDEN, name) ||
		    cq_bucket_rules_match(r, CQ_RULE_SKIP, name) || standard_library(name))
			continue;
		o += (size_t)snprintf(text + o, sizeof(text) - o, "%s%s", taken ? " < " : "", name);
		taken++;
	}
	return taken ? strdup(text) : NULL;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct cq_error *cq_bucket_go_hang_signature(const struct cq_bucket_rules *r,
                                             struct cq_bucket_namer *nm,
                                             const struct cq_stacks *stacks,
                                             struct cq_bucket_signature *out)
{
	char **texts = calloc(stacks->nthreads + stacks->nsuspended + 1, sizeof(*texts));
	if (!texts)
		return &cq_error_nomem;
	struct cq_error *err = NULL;
	size_t n = 0;
	for (size_t i = 0; i < stacks->nthreads; i++) {
		char *t = thread_text(r, nm, &stacks->threads[i]);
		if (t)
			texts[n++] = t;
	}
	/*
	 * No thread was in the program's code (every goroutine parked): the
	 * parked goroutines' program frames say where it hung (the go runtime
	 * lists them as tasks).
	 */
	bool on_threads = n > 0;
	for (size_t i = 0; !on_threads && i < stacks->nsuspended; i++) {
		const struct cq_suspended_stack *ss = &stacks->suspended[i];
		if (!ss->has_task)
			continue;
		struct cq_thread_stack view = {.frames = ss->frames, .nframes = ss->nframes};
		char *t = thread_text(r, nm, &view);
		if (t)
			texts[n++] = t;
	}
	qsort(texts, n, sizeof(*texts), cmp_str);
	size_t len = sizeof(hang_prefix) + 64, shown = 0;
	for (size_t i = 0; i < n; i++)
		len += strlen(texts[i]) + 3;
	char *sig = malloc(len);
	if (!sig) {
		err = &cq_error_nomem;
		goto out;
	}
	char *p = sig + sprintf(sig, "%s", hang_prefix);
	for (size_t i = 0; i < n && shown < THREADS_SHOWN; i++) {
		if (i && strcmp(texts[i], texts[i - 1]) == 0)
			continue; /* threads in the same place: once */
		p += sprintf(p, "%s%s", shown ? " | " : "", texts[i]);
		shown++;
	}
	if (!shown)
		sprintf(p, "no program frame on any thread");
	cq_bucket_signature_free(out);
	out->text = sig;
	cq_bucket_hash_of(sig, out->hash);
	snprintf(out->rules_version, sizeof(out->rules_version), "%s", r->version);
out:
	for (size_t i = 0; i < n; i++)
		free(texts[i]);
	free(texts);
	return err;
}
