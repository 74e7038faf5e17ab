/*
 * corpus.h - unit tests that read the corpus of crashing programs
 * (corpus/, built by `make corpus`): where it is ($CORPUS, which
 * tests/run exports; else build/corpus), a case's core and what its expect
 * file says (the program's own account of its crash, written when the
 * corpus was built, never by coreq), and a scratch directory.  A test whose
 * case is missing returns at once with a message (cmocka's skip() prints
 * "not ok # SKIP", which tests/run would count as a failure).
 */
#ifndef CQ_TEST_CORPUS_H
#define CQ_TEST_CORPUS_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct corpus_case {
	char core[512];      /* the core file */
	char exe[512];       /* exe= */
	char debug_dir[512]; /* debug_dir= (may be empty) */
	long pid, signal, threads;
	char chain[16][64]; /* crash_chain=, innermost first */
	size_t nchain;
};

static inline const char *corpus_root(void)
{
	const char *c = getenv("CORPUS");
	return c && *c ? c : "build/corpus";
}

/* Reads case name's expect file; false (and a message) when the corpus lacks it. */
static inline bool corpus_case(const char *name, struct corpus_case *c)
{
	memset(c, 0, sizeof(*c));
	char path[600], line[1024];
	snprintf(path, sizeof(path), "%s/cores/%s/expect", corpus_root(), name);
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "# no corpus case %s (%s): skipped\n", name, path);
		return false;
	}
	snprintf(c->core, sizeof(c->core), "%s/cores/%s/core", corpus_root(), name);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq++ = 0;
		if (strcmp(line, "exe") == 0)
			snprintf(c->exe, sizeof(c->exe), "%s", eq);
		else if (strcmp(line, "debug_dir") == 0)
			snprintf(c->debug_dir, sizeof(c->debug_dir), "%s", eq);
		else if (strcmp(line, "pid") == 0)
			c->pid = atol(eq);
		else if (strcmp(line, "signal") == 0)
			c->signal = atol(eq);
		else if (strcmp(line, "threads") == 0)
			c->threads = atol(eq);
		else if (strcmp(line, "crash_chain") == 0) {
			char *s = eq + (*eq == '"');
			s[strcspn(s, "\"")] = 0;
			for (char *tok = strtok(s, " "); tok && c->nchain < 16;
			     tok = strtok(NULL, " "))
				snprintf(c->chain[c->nchain++], sizeof(c->chain[0]), "%s", tok);
		}
	}
	fclose(f);
	FILE *core = fopen(c->core, "rb");
	if (!core) {
		fprintf(stderr, "# corpus case %s has no core: skipped\n", name);
		return false;
	}
	fclose(core);
	return true;
}

/* Returns from the calling test unless case name exists. */
#define CORPUS_CASE(name, c)                                                                       \
	do {                                                                                       \
		if (!corpus_case(name, c))                                                         \
			return;                                                                    \
	} while (0)

/* A scratch directory; removed with everything in it by scratch_remove. */
static inline bool scratch_make(char *dir, size_t cap, const char *what)
{
	snprintf(dir, cap, "/tmp/coreq-test-%s-XXXXXX", what);
	return mkdtemp(dir) != NULL;
}

static inline void scratch_remove(const char *dir)
{
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "# could not remove %s\n", dir);
}

#endif
