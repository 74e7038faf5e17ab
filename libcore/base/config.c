/*
 * config.c - the system configuration file (see config.h).
 */
#include "libcore/base/config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CONFIG (64 * 1024)

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* s[0..n) without leading and trailing blanks, as a malloc'd string. */
static char *trimmed(const char *s, size_t n)
{
	while (n && blank(*s))
		s++, n--;
	while (n && blank(s[n - 1]))
		n--;
	char *out = malloc(n + 1);
	if (out) {
		memcpy(out, s, n);
		out[n] = '\0';
	}
	return out;
}

void cq_config_parse(const char *text, size_t len, struct cq_config *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t at = 0; at < len;) {
		const char *line = text + at, *nl = memchr(line, '\n', len - at);
		size_t n = nl ? (size_t)(nl - line) : len - at;
		at += n + 1;
		const char *hash = memchr(line, '#', n);
		if (hash)
			n = (size_t)(hash - line);
		const char *eq = memchr(line, '=', n);
		char *key = trimmed(line, eq ? (size_t)(eq - line) : n);
		if (!key)
			continue;
		char **slot = strcmp(key, "db") == 0      ? &out->db
		              : strcmp(key, "cache") == 0 ? &out->cache
		              : strcmp(key, "store") == 0 ? &out->store
		              : strcmp(key, "rules") == 0 ? &out->rules
		                                          : NULL;
		bool empty_line = key[0] == '\0' && !eq;
		free(key);
		if (empty_line)
			continue;
		char *value = eq ? trimmed(eq + 1, n - (size_t)(eq + 1 - line)) : NULL;
		if (!slot || !value || !value[0] ||
		    memchr(line, '\0', n)) { /* a NUL cuts a value short */
			out->bad_lines++;
			free(value);
			continue;
		}
		free(*slot); /* the last line for a key wins */
		*slot = value;
	}
}

void cq_config_free(struct cq_config *c)
{
	free(c->db);
	free(c->cache);
	free(c->store);
	free(c->rules);
	memset(c, 0, sizeof(*c));
}

static struct cq_config loaded;
static bool read_once;

static void load(void)
{
	read_once = true;
	const char *path = getenv("COREQ_CONFIG");
	if (!path || !*path)
		path = CQ_CONFIG_PATH;
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	char *buf = malloc(MAX_CONFIG);
	size_t n = buf ? fread(buf, 1, MAX_CONFIG, f) : 0;
	fclose(f);
	if (buf)
		cq_config_parse(buf, n, &loaded);
	free(buf);
}

const char *cq_config_get(const char *key)
{
	if (!read_once)
		load();
	return strcmp(key, "db") == 0      ? loaded.db
	       : strcmp(key, "cache") == 0 ? loaded.cache
	       : strcmp(key, "store") == 0 ? loaded.store
	       : strcmp(key, "rules") == 0 ? loaded.rules
	                                   : NULL;
}
