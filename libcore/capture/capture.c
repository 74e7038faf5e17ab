/*
 * capture.c - a crash's metadata from outside the core: systemd-coredump
 * file names and xattrs, and reconciling them with the core's notes (see
 * capture.h).
 */
#include "libcore/capture/capture.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "libcore/base/paths.h"
#include "libcore/model/core.h"
#include "libcore/model/module.h"

char *cq_capture_default_store(void)
{
	return cq_path_default(NULL, "store", "XDG_STATE_HOME", ".local/state", "cores");
}

void cq_capture_init(struct cq_capture *c)
{
	memset(c, 0, sizeof(*c));
	c->source = "file";
}

/* A whole decimal number (optionally negative) in s[0..len). */
static bool parse_int(const char *s, size_t len, int64_t *out)
{
	if (len == 0 || len > 20)
		return false;
	char buf[24];
	memcpy(buf, s, len);
	buf[len] = 0;
	char *end;
	errno = 0;
	long long v = strtoll(buf, &end, 10);
	if (errno == ERANGE && buf[0] != '-') {
		/* RLIM_INFINITY is written as 18446744073709551615. */
		errno = 0;
		unsigned long long u = strtoull(buf, &end, 10);
		if (errno || *end || u != ~0ull)
			return false;
		*out = -1;
		return true;
	}
	if (errno || *end || end == buf)
		return false;
	*out = v;
	return true;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Undoes systemd's xescape(comm, "./ "): \xNN becomes the byte NN. */
static bool unescape(const char *s, size_t len, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c == '\\' && i + 4 <= len && s[i + 1] == 'x' && hex_digit(s[i + 2]) >= 0 &&
		    hex_digit(s[i + 3]) >= 0) {
			c = (char)(hex_digit(s[i + 2]) * 16 + hex_digit(s[i + 3]));
			i += 3;
		}
		if (c == 0 || o + 1 >= cap)
			return false;
		out[o++] = c;
	}
	out[o] = 0;
	return o > 0;
}

static bool is_hex(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (hex_digit(s[i]) < 0)
			return false;
	return true;
}

bool cq_capture_parse_systemd_name(const char *name, struct cq_capture *c)
{
	const char *slash = strrchr(name, '/');
	if (slash)
		name = slash + 1;
	if (strncmp(name, "core.", 5) != 0)
		return false;
	/* comm.uid.bootid.pid.usec[.ext]: comm has its dots escaped. */
	const char *field[7];
	size_t flen[7], nf = 0;
	for (const char *p = name + 5;; nf++) {
		const char *dot = strchr(p, '.');
		if (nf == 7)
			return false;
		field[nf] = p;
		flen[nf] = dot ? (size_t)(dot - p) : strlen(p);
		if (!dot)
			break;
		p = dot + 1;
	}
	nf++;
	int64_t uid, pid, usec, ext;
	if ((nf != 5 && nf != 6) || (nf == 6 && parse_int(field[5], flen[5], &ext)) ||
	    !parse_int(field[1], flen[1], &uid) || !parse_int(field[3], flen[3], &pid) ||
	    !parse_int(field[4], flen[4], &usec) || flen[2] != 32 || !is_hex(field[2], 32) ||
	    uid < 0 || pid <= 0 || usec < 0)
		return false;
	struct cq_capture t = *c;
	if (!unescape(field[0], flen[0], t.comm, sizeof(t.comm)))
		return false;
	memcpy(t.boot_id, field[2], 32);
	t.boot_id[32] = 0;
	t.pid = pid;
	t.uid = uid;
	t.timestamp_us = usec;
	t.known |= CQ_CAPTURE_PID | CQ_CAPTURE_UID | CQ_CAPTURE_TIMESTAMP;
	t.source = "systemd";
	*c = t;
	return true;
}

/* Reads one xattr as a NUL-terminated string; false if absent. */
static bool get_xattr(const char *path, const char *key, char *buf, size_t cap)
{
	ssize_t n = getxattr(path, key, buf, cap - 1);
	if (n < 0)
		return false;
	buf[n] = 0;
	/* systemd writes no terminator; tolerate one. */
	while (n > 0 && (buf[n - 1] == 0 || buf[n - 1] == '\n'))
		buf[--n] = 0;
	return true;
}

void cq_capture_read_xattrs(const char *path, struct cq_capture *c)
{
	static const struct {
		const char *key;
		unsigned bit;
		size_t field;
	} nums[] = {
	    {"user.coredump.pid", CQ_CAPTURE_PID, offsetof(struct cq_capture, pid)},
	    {"user.coredump.uid", CQ_CAPTURE_UID, offsetof(struct cq_capture, uid)},
	    {"user.coredump.gid", CQ_CAPTURE_GID, offsetof(struct cq_capture, gid)},
	    {"user.coredump.signal", CQ_CAPTURE_SIGNAL, offsetof(struct cq_capture, signal)},
	    {"user.coredump.timestamp", CQ_CAPTURE_TIMESTAMP,
	     offsetof(struct cq_capture, timestamp_us)},
	    {"user.coredump.rlimit", CQ_CAPTURE_RLIMIT, offsetof(struct cq_capture, rlimit)},
	};
	static const struct {
		const char *key;
		size_t field, cap;
	} strs[] = {
	    {"user.coredump.comm", offsetof(struct cq_capture, comm), sizeof(c->comm)},
	    {"user.coredump.hostname", offsetof(struct cq_capture, hostname), sizeof(c->hostname)},
	    {"user.coredump.exe", offsetof(struct cq_capture, exe), sizeof(c->exe)},
	};
	char buf[1024];
	bool any = false;
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		int64_t v;
		if (get_xattr(path, nums[i].key, buf, sizeof(buf)) &&
		    parse_int(buf, strlen(buf), &v)) {
			*(int64_t *)((char *)c + nums[i].field) = v;
			c->known |= nums[i].bit;
			any = true;
		}
	}
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		if (get_xattr(path, strs[i].key, buf, sizeof(buf)) && buf[0]) {
			snprintf((char *)c + strs[i].field, strs[i].cap, "%s", buf);
			any = true;
		}
	if (any && strcmp(c->source, "file") == 0)
		c->source = "systemd";
}

void cq_capture_from_file(const char *path, struct cq_capture *c)
{
	cq_capture_parse_systemd_name(path, c);
	cq_capture_read_xattrs(path, c);
	struct stat st;
	if (stat(path, &st) == 0 && st.st_mtime > 0)
		c->file_mtime = (int64_t)st.st_mtime;
}

static void add_conflict(struct cq_capture *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void add_conflict(struct cq_capture *c, const char *fmt, ...)
{
	size_t used = strlen(c->conflicts);
	if (used + 3 >= sizeof(c->conflicts))
		return;
	if (used) {
		memcpy(c->conflicts + used, "; ", 3);
		used += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->conflicts + used, sizeof(c->conflicts) - used, fmt, ap);
	va_end(ap);
}

static void compare_num(struct cq_capture *c, unsigned bit, const char *what, int64_t outside,
                        int64_t core)
{
	if ((c->known & bit) && outside != core)
		add_conflict(c, "%s: core %lld, %s %lld", what, (long long)core, c->source,
		             (long long)outside);
}

void cq_capture_reconcile(const struct cq_core *core, struct cq_capture *c)
{
	c->conflicts[0] = 0;
	if (core->has_psinfo) {
		compare_num(c, CQ_CAPTURE_PID, "pid", c->pid, core->pid);
		compare_num(c, CQ_CAPTURE_UID, "uid", c->uid, core->uid);
		compare_num(c, CQ_CAPTURE_GID, "gid", c->gid, core->gid);
		/* The kernel's comm is 15 characters; compare what both can hold. */
		if (c->comm[0] && core->fname[0] && strncmp(c->comm, core->fname, 15) != 0)
			add_conflict(c, "comm: core %s, %s %s", core->fname, c->source, c->comm);
	}
	int sig = cq_core_signal(core);
	if (sig)
		compare_num(c, CQ_CAPTURE_SIGNAL, "signal", c->signal, sig);
	const struct cq_module *main_mod = cq_core_main_module(core);
	if (c->exe[0] && main_mod && main_mod->name && strcmp(c->exe, main_mod->name) != 0)
		add_conflict(c, "exe: core %s, %s %s", main_mod->name, c->source, c->exe);
}

struct cq_error *cq_capture_systemd_name(const struct cq_capture *c, unsigned serial, char *buf,
                                         size_t cap, const char *ext)
{
	unsigned need = CQ_CAPTURE_PID | CQ_CAPTURE_UID | CQ_CAPTURE_TIMESTAMP;
	if ((c->known & need) != need)
		return cq_error_create(CQ_ERR_USAGE, "pid, uid and time are needed to name a core");
	char comm[4 * sizeof(c->comm)];
	size_t o = 0;
	for (const char *p = c->comm[0] ? c->comm : "unknown"; *p && o + 5 < sizeof(comm); p++) {
		unsigned char ch = (unsigned char)*p;
		if (ch == '.' || ch == '/' || ch == ' ' || ch == '\\' || ch < 0x20 || ch >= 0x7f)
			o += (size_t)snprintf(comm + o, sizeof(comm) - o, "\\x%02x", ch);
		else
			comm[o++] = (char)ch;
	}
	comm[o] = 0;
	const char *boot = c->boot_id[0] ? c->boot_id : "00000000000000000000000000000000";
	int n = snprintf(buf, cap, "core.%s.%lld.%s.%lld.%lld%s", comm, (long long)c->uid, boot,
	                 (long long)c->pid, (long long)(c->timestamp_us + serial), ext);
	if (n < 0 || (size_t)n >= cap)
		return cq_error_create(CQ_ERR_LIMIT, "core file name too long");
	return NULL;
}

struct cq_error *cq_capture_write_xattrs(int fd, const struct cq_capture *c)
{
	struct {
		const char *key;
		unsigned bit;
		int64_t v;
	} nums[] = {
	    {"user.coredump.pid", CQ_CAPTURE_PID, c->pid},
	    {"user.coredump.uid", CQ_CAPTURE_UID, c->uid},
	    {"user.coredump.gid", CQ_CAPTURE_GID, c->gid},
	    {"user.coredump.signal", CQ_CAPTURE_SIGNAL, c->signal},
	    {"user.coredump.timestamp", CQ_CAPTURE_TIMESTAMP, c->timestamp_us},
	    {"user.coredump.rlimit", CQ_CAPTURE_RLIMIT, c->rlimit},
	};
	char buf[32];
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		if (!(c->known & nums[i].bit))
			continue;
		int n = nums[i].v == -1 && nums[i].bit == CQ_CAPTURE_RLIMIT
		            ? snprintf(buf, sizeof(buf), "%llu", ~0ull)
		            : snprintf(buf, sizeof(buf), "%lld", (long long)nums[i].v);
		if (fsetxattr(fd, nums[i].key, buf, (size_t)n, 0) != 0)
			return cq_error_errno(errno, "cannot set %s", nums[i].key);
	}
	const struct {
		const char *key, *v;
	} strs[] = {
	    {"user.coredump.comm", c->comm},
	    {"user.coredump.hostname", c->hostname},
	    {"user.coredump.exe", c->exe},
	};
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		if (strs[i].v[0] &&
		    fsetxattr(fd, strs[i].key, strs[i].v, strlen(strs[i].v), 0) != 0)
			return cq_error_errno(errno, "cannot set %s", strs[i].key);
	return NULL;
}

void cq_capture_ids(const struct cq_core *core, const struct cq_capture *cap,
                    struct cq_capture_ids *out)
{
	*out = (struct cq_capture_ids){0};
	if (core->has_psinfo) {
		*out = (struct cq_capture_ids){.pid = core->pid,
		                               .has_uid = true,
		                               .has_gid = true,
		                               .uid = core->uid,
		                               .gid = core->gid};
		return;
	}
	unsigned known = cap ? cap->known : 0;
	const struct cq_core_thread *crashed = cq_core_crashed_thread(core);
	out->pid = known & CQ_CAPTURE_PID ? cap->pid : crashed ? crashed->tid : 0;
	out->has_uid = known & CQ_CAPTURE_UID;
	out->uid = out->has_uid ? cap->uid : 0;
	out->has_gid = known & CQ_CAPTURE_GID;
	out->gid = out->has_gid ? cap->gid : 0;
}
