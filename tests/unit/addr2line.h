/*
 * addr2line.h - an address's source-level frames as elfutils'
 * eu-addr2line -i prints them (the oracle of `eu-stack -i`), and a search
 * of an executable's functions (readelf -s) for an address with inlined
 * calls, for the tests of frame naming (test_frame_list.c,
 * test_lws_ingest.c).  Uses cmocka's assertions.
 *
 * The innermost level's line is gdb's (`info line *ADDR`): where several
 * line-table rows share an address, gdb (and coreq) take a statement row,
 * libdw's dwarf_getsrc_die (and so eu-addr2line) the last row.  The call
 * sites further out are eu-addr2line's.
 */
#ifndef CQ_TEST_ADDR2LINE_H
#define CQ_TEST_ADDR2LINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LEVELS 16

/* One address as eu-addr2line -a -i -f -C prints it: its levels, innermost first. */
struct a2l {
	uint64_t addr;
	size_t n;
	char function[MAX_LEVELS][256]; /* up to the first '(' or " inlined at" */
	int line[MAX_LEVELS];
	bool inlined[MAX_LEVELS];
};

static inline void short_name(char *s)
{
	char *cut = strstr(s, " inlined at ");
	if (cut)
		*cut = 0;
	s[strcspn(s, "(\n")] = 0;
}

/* The line gdb gives addr in exe (`info line *addr`); 0 when it gives none. */
static inline int gdb_line(const char *exe, uint64_t addr)
{
	char cmd[1024], line[2048];
	snprintf(cmd, sizeof(cmd), "gdb -nx -batch -ex 'info line *0x%llx' '%s' 2>/dev/null",
	         (unsigned long long)addr, exe);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	int n = 0;
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, "Line %d of", &n) == 1)
			break;
	pclose(p);
	return n;
}

/* Runs eu-addr2line over [lo, hi) a step at a time; the first address with inlined levels. */
static inline bool first_inlined(const char *exe, uint64_t lo, uint64_t hi, struct a2l *out)
{
	char cmd[8192], line[2048];
	int len = snprintf(cmd, sizeof(cmd), "eu-addr2line -a -i -f -C -e '%s'", exe);
	for (uint64_t a = lo; a < hi && len < (int)sizeof(cmd) - 32; a += 1)
		len += snprintf(cmd + len, sizeof(cmd) - (size_t)len, " 0x%llx",
		                (unsigned long long)a);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	struct a2l cur = {0};
	bool found = false, in_name = true;
	while (fgets(line, sizeof(line), p)) {
		if (strncmp(line, "0x", 2) == 0) { /* a new address */
			if (!found && cur.n > 1) {
				*out = cur;
				found = true;
			}
			memset(&cur, 0, sizeof(cur));
			cur.addr = strtoull(line, NULL, 16);
			in_name = true;
			continue;
		}
		if (in_name && cur.n < MAX_LEVELS) {
			cur.inlined[cur.n] = strstr(line, " inlined at ") != NULL;
			snprintf(cur.function[cur.n], sizeof(cur.function[0]), "%.255s", line);
			short_name(cur.function[cur.n]);
			in_name = false;
		} else if (!in_name) { /* "FILE:LINE:COL" */
			char *colon = strrchr(line, ':');
			if (colon) {
				*colon = 0;
				char *l = strrchr(line, ':');
				if (l && cur.n < MAX_LEVELS)
					cur.line[cur.n] = atoi(l + 1);
			}
			cur.n++;
			in_name = true;
		}
	}
	if (!found && cur.n > 1) {
		*out = cur;
		found = true;
	}
	pclose(p);
	if (found)
		out->line[0] = gdb_line(exe, out->addr);
	return found;
}

/* Finds an address with inlined calls in one of exe's functions (readelf -s). */
static inline bool find_inlined(const char *exe, struct a2l *out)
{
	char cmd[700], line[1024];
	snprintf(cmd, sizeof(cmd), "readelf -s -W '%s'", exe);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	bool found = false;
	while (!found && fgets(line, sizeof(line), p)) {
		unsigned long long value, size;
		char type[32], bind[32], vis[32], ndx[32];
		if (sscanf(line, " %*[0-9]: %llx %llu %31s %31s %31s %31s", &value, &size, type,
		           bind, vis, ndx) != 6 ||
		    strcmp(type, "FUNC") != 0 || strcmp(ndx, "UND") == 0 || size < 16 || size > 600)
			continue;
		found = first_inlined(exe, value, value + size, out);
	}
	pclose(p);
	return found;
}

/* A function's value in exe, from readelf -s; 0 when absent. */
static inline uint64_t readelf_function(const char *exe, const char *want)
{
	char cmd[700], line[512];
	snprintf(cmd, sizeof(cmd), "readelf -s -W '%s'", exe);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	uint64_t at = 0;
	while (fgets(line, sizeof(line), p)) {
		unsigned long long v;
		char name[256];
		if (sscanf(line, " %*[0-9]: %llx %*u FUNC %*s %*s %*s %255s", &v, name) == 2 &&
		    strcmp(name, want) == 0)
			at = v;
	}
	pclose(p);
	return at;
}

#endif
