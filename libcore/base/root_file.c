/*
 * root_file.c - open a file inside a directory taken as its root (see
 * root_file.h): openat2(RESOLVE_IN_ROOT), else the same walk done here.
 */
#include "libcore/base/root_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437 /* the same number on every architecture */
#endif

#define MAX_LINKS 40  /* as the kernel's */
#define MAX_DEPTH 256 /* directories open at once during a walk */

static int fail(int err)
{
	errno = err;
	return -1;
}

static int not_regular(const struct stat *st)
{
	return fail(S_ISDIR(st->st_mode) ? EISDIR : EINVAL);
}

char *cq_root_normalize(const char *name)
{
	size_t n = strlen(name), len = 0;
	char *out = malloc(n + 2);
	if (!out)
		return NULL;
	for (const char *p = name; *p;) {
		while (*p == '/')
			p++;
		const char *end = p;
		while (*end && *end != '/')
			end++;
		size_t k = (size_t)(end - p);
		if (k == 2 && p[0] == '.' && p[1] == '.') {
			while (len > 0 && out[--len] != '/')
				;
		} else if (k > 0 && !(k == 1 && p[0] == '.')) {
			out[len++] = '/';
			memcpy(out + len, p, k);
			len += k;
		}
		p = end;
	}
	if (len == 0)
		out[len++] = '/';
	out[len] = '\0';
	return out;
}

/* The directories a walk went through: fds[0] is the root (not owned). */
struct walk {
	int fds[MAX_DEPTH + 1];
	size_t at[MAX_DEPTH + 1]; /* where fds[i]'s component starts in path */
	size_t depth;
	char *path; /* "/a/b" of fds[depth], from the root */
	size_t len;
};

static void pop(struct walk *w)
{
	if (w->depth == 0)
		return;
	close(w->fds[w->depth]);
	w->len = w->at[w->depth--];
	w->path[w->len] = '\0';
}

/* Appends "/comp" to w->path; false when out of memory. */
static bool append(struct walk *w, const char *comp)
{
	size_t k = strlen(comp);
	char *p = realloc(w->path, w->len + k + 2);
	if (!p)
		return false;
	w->path = p;
	w->path[w->len] = '/';
	memcpy(w->path + w->len + 1, comp, k + 1);
	w->len += k + 1;
	return true;
}

/* rest becomes "target/rest+pos" (a link's text in place of the link). */
static char *link_spliced(const char *target, const char *rest)
{
	char *out;
	if (asprintf(&out, "%s/%s", target, rest) < 0)
		return NULL;
	return out;
}

/*
 * The last component, comp in w's directory, whose O_PATH fd says it is a
 * regular file: opened for reading without following a link, and checked to
 * be the file that was looked at.
 */
static int open_last(struct walk *w, const char *comp, const struct stat *seen)
{
	int fd = openat(w->fds[w->depth], comp,
	                O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_dev != seen->st_dev ||
	    st.st_ino != seen->st_ino) {
		close(fd);
		return fail(EINVAL); /* swapped between the two looks */
	}
	return fd;
}

/*
 * One step of the walk on component comp (last: nothing follows it): 1 with
 * the file's fd in *out, 0 to go on (rest may have been replaced by a
 * link's text, from *pos), -1 with errno.
 */
static int step(struct walk *w, const char *comp, bool last, char **rest, size_t *pos, int *links,
                int *out)
{
	if (strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0) {
		if (comp[1] == '.')
			pop(w); /* never above the root: fds[0] */
		return last ? fail(EISDIR) : 0;
	}
	int fd = openat(w->fds[w->depth], comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		return fail(e);
	}
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(fd, "", target, sizeof(target) - 1);
		close(fd);
		if (n < 0)
			return -1;
		if (n == 0)
			return fail(ENOENT);
		if (++*links > MAX_LINKS)
			return fail(ELOOP);
		target[n] = '\0';
		if (target[0] == '/')
			while (w->depth > 0)
				pop(w); /* an absolute link starts again from the root */
		char *next = link_spliced(target, *rest + *pos);
		if (!next)
			return fail(ENOMEM);
		free(*rest);
		*rest = next;
		*pos = 0;
		return 0;
	}
	if (S_ISDIR(st.st_mode) && !last) {
		if (w->depth == MAX_DEPTH) {
			close(fd);
			return fail(ENAMETOOLONG);
		}
		size_t at = w->len;
		if (!append(w, comp)) {
			close(fd);
			return fail(ENOMEM);
		}
		w->fds[++w->depth] = fd;
		w->at[w->depth] = at;
		return 0;
	}
	close(fd);
	if (!last)
		return fail(ENOTDIR);
	if (!S_ISREG(st.st_mode))
		return not_regular(&st);
	int file = open_last(w, comp, &st);
	if (file < 0)
		return -1;
	if (!append(w, comp)) {
		close(file);
		return fail(ENOMEM);
	}
	*out = file;
	return 1;
}

int cq_open_in_root_walk(int root_fd, const char *name, char **in_root)
{
	struct walk w = {.fds = {root_fd}, .path = calloc(1, 1)};
	char *rest = strdup(name);
	int links = 0, fd = -1, err = 0;
	size_t pos = 0;
	if (!w.path || !rest)
		err = ENOMEM;
	while (!err) {
		while (rest[pos] == '/')
			pos++;
		if (!rest[pos]) {
			err = name[0] ? EISDIR : ENOENT; /* the name ends at a directory */
			break;
		}
		size_t end = pos;
		while (rest[end] && rest[end] != '/')
			end++;
		char comp[NAME_MAX + 1];
		if (end - pos > NAME_MAX) {
			err = ENAMETOOLONG;
			break;
		}
		memcpy(comp, rest + pos, end - pos);
		comp[end - pos] = '\0';
		pos = end;
		while (rest[pos] == '/')
			pos++;
		int r = step(&w, comp, !rest[pos], &rest, &pos, &links, &fd);
		if (r < 0)
			err = errno;
		if (r != 0)
			break;
	}
	for (size_t i = 1; i <= w.depth; i++)
		close(w.fds[i]);
	free(rest);
	if (fd >= 0 && in_root) {
		*in_root = w.path;
		return fd;
	}
	free(w.path);
	return fd >= 0 ? fd : fail(err);
}

static int openat2_in_root(int root_fd, const char *name, int flags)
{
	struct open_how how = {.flags = (unsigned)(flags | O_CLOEXEC),
	                       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	return (int)syscall(SYS_openat2, root_fd, name, &how, sizeof(how));
}

/* What fd is open on, as the kernel names it (malloc'd), or NULL. */
static char *fd_path(int fd)
{
	char link[64], buf[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, buf, sizeof(buf) - 1);
	if (n <= 0 || buf[0] != '/')
		return NULL;
	buf[n] = '\0';
	return strdup(buf);
}

/*
 * The path from the root of the file openat2 opened, from the kernel's
 * names of both; NULL when they cannot be read (no /proc) or do not agree.
 * Never the name as given: links on its way would make it another file.
 */
static char *resolved_path(int root_fd, int fd)
{
	char *root = fd_path(root_fd), *file = fd_path(fd), *out = NULL;
	if (root && file) {
		size_t rl = strcmp(root, "/") == 0 ? 0 : strlen(root);
		if (strncmp(file, root, rl) == 0 && file[rl] == '/')
			out = strdup(file + rl);
	}
	free(root);
	free(file);
	return out;
}

static int open_in_root_fd(int root_fd, const char *name, char **in_root)
{
	/* Looked at first through O_PATH, so that a device or a FIFO is never opened. */
	int look = openat2_in_root(root_fd, name, O_PATH);
	if (look < 0 && (errno == ENOSYS || errno == EPERM))
		return cq_open_in_root_walk(root_fd, name, in_root);
	if (look < 0)
		return -1;
	struct stat before, st;
	int r = fstat(look, &before), e = errno;
	close(look);
	if (r != 0)
		return fail(e);
	if (!S_ISREG(before.st_mode))
		return not_regular(&before);
	int fd = openat2_in_root(root_fd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_dev != before.st_dev ||
	    st.st_ino != before.st_ino) {
		close(fd);
		return fail(EINVAL); /* swapped between the two looks */
	}
	if (in_root && !(*in_root = resolved_path(root_fd, fd))) {
		/* The kernel's names are not to be had: the walk says where it went. */
		close(fd);
		return cq_open_in_root_walk(root_fd, name, in_root);
	}
	return fd;
}

int cq_open_in_root(const char *root, const char *name, char **in_root)
{
	int root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0)
		return -1;
	int fd = open_in_root_fd(root_fd, name, in_root);
	int e = errno;
	close(root_fd);
	errno = e;
	return fd;
}
