/*
 * stored_core.c - a core of the crash database read back whole: found by
 * its row, opened within the row's bounds, written out or handed to a
 * debugger (stored_core.h).
 */
#include "libcore/store/stored_core.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "libcore/base/output_file.h"
#include "libcore/base/write_all.h"
#include "libcore/model/core.h"
#include "libcore/store/store_query.h"

static void remember(void *ctx, const struct cq_store_core_row *c)
{
	struct cq_stored_core *s = ctx;
	free(s->path); /* one row is asked for; a second would replace it */
	free(s->exe);
	/* The hook's copy when there is one: the original may be gone. */
	const char *p =
	    c->stored_path && access(c->stored_path, R_OK) == 0 ? c->stored_path : c->path;
	s->path = p ? strdup(p) : NULL;
	s->exe = c->exe ? strdup(c->exe) : NULL;
	s->size = c->size;
}

/* Finds row id: its file (readable) and its recorded size. */
static struct cq_error *find_row(struct cq_store *store, int64_t id, struct cq_stored_core *s)
{
	struct cq_store_core_filter one = {.id = id};
	struct cq_error *err = cq_store_each_core(store, &one, remember, s);
	if (err)
		return err;
	if (!s->path || access(s->path, R_OK) != 0)
		return cq_error_create(CQ_ERR_NOT_FOUND, "its file %s is gone",
		                       s->path ? s->path : "?");
	if (s->size <= 0)
		return cq_error_create(CQ_ERR_FORMAT, "the database records no size for it");
	return NULL;
}

/* Opens s's file: a regular file only, decompressed to at most its recorded size. */
static struct cq_error *open_bounded(struct cq_stored_core *s, const char *exe)
{
	struct cq_core_options co = {
	    .exe = exe, .max_spool = (uint64_t)s->size, .regular_only = true, .want_fd = true};
	struct cq_error *err = cq_core_open(s->path, &co, &s->core);
	if (err) {
		s->core = NULL;
		return err;
	}
	if (s->core->source.cut_at || s->core->source.size > (uint64_t)s->size) {
		cq_core_close(s->core);
		s->core = NULL;
		return cq_error_create(CQ_ERR_FORMAT,
		                       "holds more than the %lld bytes the database records",
		                       (long long)s->size);
	}
	return NULL;
}

struct cq_error *cq_stored_core_open(struct cq_store *store, int64_t id, const char *exe,
                                     struct cq_stored_core *out)
{
	memset(out, 0, sizeof(*out));
	out->blame = CQ_STORED_CORE_ROW;
	struct cq_error *err = find_row(store, id, out);
	if (err)
		return err;
	out->blame = CQ_STORED_CORE_FILE;
	return open_bounded(out, exe);
}

void cq_stored_core_close(struct cq_stored_core *s)
{
	if (s->core)
		cq_core_close(s->core);
	free(s->path);
	free(s->exe);
	memset(s, 0, sizeof(*s));
}

/* Copies the core's raw bytes (at most its source size) to fd. */
static struct cq_error *copy_core(const struct cq_core *core, int to)
{
	char buf[1 << 16];
	for (uint64_t at = 0; at < core->source.size;) {
		uint64_t want =
		    core->source.size - at < sizeof(buf) ? core->source.size - at : sizeof(buf);
		ssize_t got = pread(core->source.fd, buf, (size_t)want, (off_t)at);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return cq_error_errno(errno, "cannot read %s", core->path);
		if (got == 0)
			break;
		if (!cq_write_all(to, buf, (size_t)got, -1))
			return cq_error_errno(errno, "cannot write");
		at += (uint64_t)got;
	}
	return NULL;
}

struct cq_error *cq_stored_core_write(struct cq_store *store, int64_t id, const char *target,
                                      int fd, struct cq_stored_core *s)
{
	struct cq_error *err = cq_stored_core_open(store, id, NULL, s);
	if (err)
		return err;
	s->blame = CQ_STORED_CORE_OUTPUT;
	if (!target)
		return copy_core(s->core, fd);
	/* A fresh 0600 file renamed over target: never through a link, never another's mode. */
	struct cq_output_file f;
	if ((err = cq_output_file_create(target, 0600, &f)))
		return err;
	if ((err = copy_core(s->core, f.fd))) {
		cq_output_file_discard(&f);
		return err;
	}
	return cq_output_file_commit(&f);
}

/* Fills h from the open core: an inheritable copy of its descriptor, its executable. */
static struct cq_error *hand_off(const struct cq_core *core, const char *exe, const char *row_exe,
                                 struct cq_stored_core_handoff *h)
{
	const char *core_exe = exe ? exe : cq_core_exe(core, NULL);
	if (!core_exe)
		core_exe = row_exe;
	if (core_exe && !(h->exe = strdup(core_exe)))
		return &cq_error_nomem;
	h->fd = dup(core->source.fd); /* without O_CLOEXEC: the debugger inherits it */
	if (h->fd < 0)
		return cq_error_errno(errno, "cannot keep the core open for gdb");
	return NULL;
}

struct cq_error *cq_stored_core_for_debugger(struct cq_store *store, int64_t id, const char *exe,
                                             struct cq_stored_core_handoff *out)
{
	memset(out, 0, sizeof(*out));
	out->fd = -1;
	struct cq_stored_core s;
	struct cq_error *err = cq_stored_core_open(store, id, exe, &s);
	out->blame = s.blame;
	if (s.path && !(out->path = strdup(s.path)) && !err)
		err = &cq_error_nomem;
	if (!err)
		err = hand_off(s.core, exe, s.exe, out);
	cq_stored_core_close(&s);
	return err;
}

struct cq_error *cq_stored_core_file_for_debugger(const char *path, const char *exe,
                                                  struct cq_stored_core_handoff *out)
{
	memset(out, 0, sizeof(*out));
	out->fd = -1;
	out->blame = CQ_STORED_CORE_FILE;
	if (!(out->path = strdup(path)))
		return &cq_error_nomem;
	/* Opened as coreq opens a core: decompressed into an fd, its executable named. */
	struct cq_core_options co = {.exe = exe, .want_fd = true};
	struct cq_core *core;
	struct cq_error *err = cq_core_open(path, &co, &core);
	if (err)
		return err;
	err = hand_off(core, exe, NULL, out);
	cq_core_close(core);
	return err;
}

void cq_stored_core_handoff_free(struct cq_stored_core_handoff *h)
{
	if (h->fd >= 0)
		close(h->fd);
	free(h->exe);
	free(h->path);
	memset(h, 0, sizeof(*h));
	h->fd = -1;
}
