/*
 * rules.c - parse and apply bucketing rules (see rules.h).
 */
#include "libcore/triage/rules.h"

#include "libcore/base/config.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcore/base/hash.h"
#include "libcore/base/regular_file.h"

#define MAX_RULES_FILE (1u << 20)
#define MAX_LINE       4096
#define MAX_RULES      65536
#define SYSTEM_RULES   "/etc/coreq/rules"

static const char *const kind_names[CQ_RULE_KINDS] = {
    [CQ_RULE_MACHINERY] = "machinery",
    [CQ_RULE_STARTUP] = "startup",
    [CQ_RULE_SKIP] = "skip",
    [CQ_RULE_PREFIX] = "prefix",
    [CQ_RULE_SENTINEL] = "sentinel",
    [CQ_RULE_IN_APP] = "in-app",
    [CQ_RULE_NOT_IN_APP] = "not-in-app",
    [CQ_RULE_HIDDEN] = "hidden",
};

void cq_bucket_rules_free(struct cq_bucket_rules *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nrules; i++)
		free(r->rules[i].pattern);
	free(r->rules);
	free(r->version);
	free(r->origin);
	free(r->text);
	free(r);
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

/* Parses one line (NUL-terminated, may be modified) into r. */
static struct cq_error *parse_line(struct cq_bucket_rules *r, char *line, size_t *cap)
{
	line = trim(line);
	if (!line[0] || line[0] == '#')
		return NULL;
	char *arg = line + strcspn(line, " \t");
	if (*arg)
		*arg++ = '\0';
	arg = trim(arg);
	if (strcmp(line, "version") == 0) {
		if (!arg[0])
			return cq_error_create(CQ_ERR_FORMAT, "version needs a value");
		free(r->version);
		return (r->version = strdup(arg)) ? NULL : &cq_error_nomem;
	}
	for (int k = 0; k < CQ_RULE_KINDS; k++) {
		if (strcmp(line, kind_names[k]) != 0)
			continue;
		if (!arg[0])
			return cq_error_create(CQ_ERR_FORMAT, "%s needs a pattern", line);
		if (r->nrules == MAX_RULES)
			return cq_error_create(CQ_ERR_LIMIT, "more than %u rules", MAX_RULES);
		if (r->nrules == *cap) {
			size_t ncap = *cap ? *cap * 2 : 64;
			struct cq_rule *p = realloc(r->rules, ncap * sizeof(*p));
			if (!p)
				return &cq_error_nomem;
			r->rules = p;
			*cap = ncap;
		}
		char *pattern = strdup(arg);
		if (!pattern)
			return &cq_error_nomem;
		r->rules[r->nrules++] =
		    (struct cq_rule){.kind = (enum cq_rule_kind)k, .pattern = pattern};
		return NULL;
	}
	return cq_error_create(CQ_ERR_FORMAT,
	                       "unknown rule '%s' (machinery, startup, skip, prefix, "
	                       "sentinel, in-app, not-in-app, hidden or version)",
	                       line);
}

struct cq_error *cq_bucket_rules_parse(const char *text, size_t len, const char *origin,
                                       struct cq_bucket_rules **out)
{
	*out = NULL;
	if (len > MAX_RULES_FILE)
		return cq_error_create(CQ_ERR_LIMIT, "%s: rules file over %u bytes", origin,
		                       MAX_RULES_FILE);
	struct cq_bucket_rules *r = calloc(1, sizeof(*r));
	if (!r || !(r->origin = strdup(origin)) || !(r->text = malloc(len + 1))) {
		cq_bucket_rules_free(r);
		return &cq_error_nomem;
	}
	memcpy(r->text, text, len);
	r->text[len] = '\0';
	size_t cap = 0, lineno = 0;
	char line[MAX_LINE + 1];
	struct cq_error *err = NULL;
	for (size_t at = 0; at < len && !err;) {
		const char *nl = memchr(text + at, '\n', len - at);
		size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
		lineno++;
		if (n > MAX_LINE)
			err = cq_error_create(CQ_ERR_LIMIT, "line longer than %u bytes", MAX_LINE);
		else if (memchr(text + at, '\0', n))
			err = cq_error_create(CQ_ERR_FORMAT, "a NUL byte");
		else {
			memcpy(line, text + at, n);
			line[n] = '\0';
			err = parse_line(r, line, &cap);
		}
		at += n + 1;
	}
	if (err) {
		struct cq_error *e = cq_error_prefix(err, "%s:%zu", origin, lineno);
		cq_bucket_rules_free(r);
		return e;
	}
	if (!r->version) {
		char v[32];
		snprintf(v, sizeof(v), "sha:%016llx",
		         (unsigned long long)cq_fnv1a(CQ_FNV_OFFSET, text, len));
		if (!(r->version = strdup(v))) {
			cq_bucket_rules_free(r);
			return &cq_error_nomem;
		}
	}
	*out = r;
	return NULL;
}

static struct cq_error *load_file(const char *path, struct cq_bucket_rules **out)
{
	int fd = cq_open_regular(path);
	if (fd < 0)
		return cq_error_errno(errno, "%s: cannot open the rules file", path);
	struct stat st;
	char *buf = NULL;
	struct cq_error *err = NULL;
	if (fstat(fd, &st) != 0)
		err = cq_error_errno(errno, "%s: cannot stat the rules file", path);
	else if ((uint64_t)st.st_size > MAX_RULES_FILE)
		err = cq_error_create(CQ_ERR_LIMIT, "%s: rules file over %u bytes", path,
		                      MAX_RULES_FILE);
	else if (!(buf = malloc((size_t)st.st_size + 1)))
		err = &cq_error_nomem;
	size_t got = 0;
	while (!err && got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = cq_error_errno(n < 0 ? errno : EIO, "%s: cannot read the rules file",
			                     path);
			break;
		}
		got += (size_t)n;
	}
	close(fd);
	if (!err)
		err = cq_bucket_rules_parse(buf, got, path, out);
	free(buf);
	return err;
}

struct cq_error *cq_bucket_rules_load(const char *path, struct cq_bucket_rules **out)
{
	if (path)
		return load_file(path, out);
	const char *env = getenv("COREQ_RULES");
	if (env && env[0])
		return load_file(env, out);
	const char *conf = cq_config_get("rules");
	if (conf)
		return load_file(conf, out);
	if (access(SYSTEM_RULES, F_OK) == 0)
		return load_file(SYSTEM_RULES, out);
	return cq_bucket_rules_parse(cq_bucket_default_rules, strlen(cq_bucket_default_rules),
	                             "built-in", out);
}

bool cq_bucket_rules_match(const struct cq_bucket_rules *r, enum cq_rule_kind kind,
                           const char *name)
{
	for (size_t i = 0; i < r->nrules; i++)
		if (r->rules[i].kind == kind && fnmatch(r->rules[i].pattern, name, 0) == 0)
			return true;
	return false;
}

bool cq_bucket_rules_in_app(const struct cq_bucket_rules *r, const char *path)
{
	bool in_app = true;
	for (size_t i = 0; i < r->nrules; i++) {
		enum cq_rule_kind k = r->rules[i].kind;
		if ((k == CQ_RULE_IN_APP || k == CQ_RULE_NOT_IN_APP) &&
		    fnmatch(r->rules[i].pattern, path, 0) == 0)
			in_app = k == CQ_RULE_IN_APP;
	}
	return in_app;
}
