/*
 * bucket.c - crash signatures (see bucket.h).
 *
 * The rules are data: MACHINERY lists the frames that are how a program
 * dies rather than where (dropped from the top of the stack, keeping the
 * frame that called them); STARTUP lists the frames every thread starts in
 * (dropped from the bottom).  An entry ending in '*' is a prefix.
 */
#include "libcore/triage/bucket.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/hash.h"
#include "libcore/model/core.h"
#include "libcore/model/module.h"
#include "libcore/analysis/stacktrace.h"

#define NAME_MAX_LEN 512

static const char *const MACHINERY[] = {
    "raise",
    "abort",
    "gsignal",
    "__pthread_kill*",
    "pthread_kill*",
    "__assert_fail*",
    "__assert_perror_fail",
    "__chk_fail",
    "__fortify_fail*",
    "__stack_chk_fail",
    "malloc_printerr",
    "__libc_message",
    "__libc_fatal",
    "std::terminate",
    "std::__terminate*",
    "__cxa_throw",
    "__cxa_rethrow",
    "__cxa_call_terminate",
    "__gxx_personality_v0",
    "__cxxabiv1::*",
    "__gnu_cxx::__verbose_terminate_handler",
    "_Unwind_*",
    "rust_panic",
    "__rust_start_panic",
    "__rust_panic*",
    "core::panicking::*",
    "std::panicking::*",
    "core::panic::*",
    "core::result::unwrap_failed",
    "core::option::unwrap_failed",
    "core::option::expect_failed",
};

static const char *const STARTUP[] = {
    "_start", "__libc_start_main*", "__libc_start_call_main", "start_thread",         "clone",
    "clone3", "__clone*",           "_dl_start_user",         "std::rt::lang_start*", "std::sys::*",
};

/* Pattern match: exact, or a prefix when the pattern ends in '*'. */
static bool matches(const char *name, const char *pattern)
{
	size_t n = strlen(pattern);
	if (n > 0 && pattern[n - 1] == '*')
		return strncmp(name, pattern, n - 1) == 0;
	return strcmp(name, pattern) == 0;
}

static bool in_list(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (matches(name, list[i]))
			return true;
	return false;
}

/* __*_chk: the fortified libc functions that abort on overflow. */
static bool is_chk(const char *name)
{
	size_t n = strlen(name);
	return n > 6 && strncmp(name, "__", 2) == 0 && strcmp(name + n - 4, "_chk") == 0;
}

/* ---- name normalisation ------------------------------------------------- */

static void strip_suffix_clone(char *s)
{
	char *c = strstr(s, " [clone ");
	if (c)
		*c = '\0';
	/* .cold .isra.N .constprop.N .part.N .lto_priv.N, possibly chained */
	for (char *dot; (dot = strrchr(s, '.'));) {
		char *word = dot + 1;
		if (isdigit((unsigned char)*word)) {
			*dot = '\0';
			continue;
		}
		if (strcmp(word, "cold") && strcmp(word, "isra") && strcmp(word, "constprop") &&
		    strcmp(word, "part") && strcmp(word, "lto_priv"))
			break;
		*dot = '\0';
	}
}

/* Copies src into dst, cutting the parameter list and collapsing <...> to <T>. */
static void shape(const char *src, char *dst, size_t cap)
{
	size_t o = 0;
	int angle = 0, paren = 0;
	for (size_t i = 0; src[i] && o + 4 < cap; i++) {
		char c = src[i];
		bool op = i >= 8 && strncmp(src + i - 8, "operator", 8) == 0;
		if (angle == 0 && paren == 0 && c == '(' && !op) {
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

struct named {
	char name[NAME_MAX_LEN];
	bool symbolized;
	bool transparent; /* unnamed code in the C++ runtime or libgcc */
};

static bool in_runtime(const struct cq_module *m)
{
	if (!m)
		return false;
	const char *base = cq_module_basename(m);
	return strncmp(base, "libstdc++", 9) == 0 || strncmp(base, "libgcc_s", 8) == 0;
}

static void name_frame(const struct cq_stack_frame *f, struct named *n)
{
	n->symbolized = f->function != NULL;
	n->transparent = !f->function && in_runtime(f->module);
	if (f->function)
		cq_bucket_normalize_name(f->function, n->name, sizeof(n->name));
	else if (f->module)
		snprintf(n->name, sizeof(n->name), "%s+0x%llx", cq_module_basename(f->module),
		         (unsigned long long)f->offset);
	else
		snprintf(n->name, sizeof(n->name), "0x%llx", (unsigned long long)f->pc);
}

static bool is_machinery(const struct named *n)
{
	return n->symbolized &&
	       (in_list(n->name, MACHINERY, sizeof(MACHINERY) / sizeof(*MACHINERY)) ||
	        is_chk(n->name));
}

static bool is_startup(const struct named *n)
{
	return n->symbolized && in_list(n->name, STARTUP, sizeof(STARTUP) / sizeof(*STARTUP));
}

struct cq_error *cq_bucket_signature(const struct cq_thread_stack *ts, int signo, unsigned nframes,
                                     struct cq_bucket_signature *out)
{
	memset(out, 0, sizeof(*out));
	struct named *names = calloc(ts->nframes ? ts->nframes : 1, sizeof(*names));
	if (!names)
		return &cq_error_nomem;
	size_t n = 0;
	for (size_t i = 0; i < ts->nframes; i++)
		if (ts->frames[i].trust != CQ_TRUST_SCAN)
			name_frame(&ts->frames[i], &names[n++]);
	/* Top: skip the leading run of machinery (and unnamed runtime code inside it). */
	size_t start = 0;
	for (size_t i = 0; i < n && (is_machinery(&names[i]) || names[i].transparent); i++)
		if (is_machinery(&names[i]))
			start = i + 1;
	if (start == n)
		start = 0; /* nothing but machinery: keep it all */
	/* Bottom: cut at the first process or thread start-up frame. */
	size_t end = start;
	while (end < n && !is_startup(&names[end]))
		end++;
	char signame[32];
	const char *sn = cq_core_signal_name(signo);
	snprintf(signame, sizeof(signame), "%s", sn ? sn : "");
	if (!sn)
		snprintf(signame, sizeof(signame), "SIG%d", signo);
	size_t len = strlen(signame) + 1;
	for (size_t i = start, k = 0; i < end && k < nframes; i++, k++)
		len += strlen(names[i].name) + 3;
	out->text = malloc(len);
	if (!out->text) {
		free(names);
		return &cq_error_nomem;
	}
	char *p = out->text;
	for (size_t i = start, k = 0; i < end && k < nframes; i++, k++)
		p += sprintf(p, "%s | ", names[i].name);
	strcpy(p, signame);
	snprintf(out->hash, sizeof(out->hash), "%016llx",
	         (unsigned long long)cq_fnv1a(CQ_FNV_OFFSET, out->text, strlen(out->text)));
	free(names);
	return NULL;
}

void cq_bucket_signature_free(struct cq_bucket_signature *sig)
{
	free(sig->text);
	sig->text = NULL;
}
