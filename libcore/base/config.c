/*
 * config.c - the system configuration file (see config.h).
 */
#include "libcore/base/config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "libcore/base/regular_file.h"

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
static struct cq_error *load_error;
static const char *loaded_path;
static bool read_once;

/* The text of the file at path into *text (malloc'd), refusing what is not a small regular file. */
static struct cq_error *read_config(const char *path, char **text, size_t *len)
{
	*text = NULL;
	*len = 0;
	struct stat st;
	if (stat(path, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3))
		return NULL; /* /dev/null, as git takes it: no configuration */
	int fd = cq_open_regular(path);
	if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
		return NULL; /* no configuration: the defaults */
	if (fd < 0 && errno == EACCES && strcmp(path, CQ_CONFIG_PATH) == 0)
		return NULL; /* the system's file, kept from this user: as if absent */
	if (fd < 0)
		return errno == EINVAL ? cq_error_create(CQ_ERR_USAGE, "not a regular file")
		                       : cq_error_errno(errno, "cannot read the configuration");
	struct cq_error *err = NULL;
	char *buf = malloc(CQ_CONFIG_MAX + 1);
	size_t got = 0;
	if (!buf)
		err = &cq_error_nomem;
	/* One byte more than allowed is read, so a file that grew is caught too. */
	while (!err && got <= CQ_CONFIG_MAX) {
		ssize_t n = read(fd, buf + got, CQ_CONFIG_MAX + 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = cq_error_errno(errno, "cannot read the configuration");
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (!err && got > CQ_CONFIG_MAX)
		err = cq_error_create(CQ_ERR_LIMIT, "configuration over %d bytes; not read",
		                      CQ_CONFIG_MAX);
	if (err) {
		free(buf);
		return err;
	}
	*text = buf;
	*len = got;
	return NULL;
}

static void load(void)
{
	read_once = true;
	loaded_path = getenv("COREQ_CONFIG");
	if (!loaded_path || !*loaded_path)
		loaded_path = CQ_CONFIG_PATH;
	char *text;
	size_t len;
	load_error = read_config(loaded_path, &text, &len);
	if (text)
		cq_config_parse(text, len, &loaded);
	free(text);
}

struct cq_error *cq_config_check(void)
{
	if (!read_once)
		load();
	struct cq_error *err = load_error;
	load_error = NULL;
	return err;
}

const char *cq_config_path(void)
{
	if (!read_once)
		load();
	return loaded_path;
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
