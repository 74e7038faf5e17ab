/*
 * debug.c - `coreq debug ID|CORE` starts gdb on a core and the executable
 * that produced it; `coreq dump ID -o FILE` writes a stored core out.  A
 * compressed core is decompressed once into an unlinked temporary file that
 * gdb reads through /proc/self/fd (nothing is left behind).
 */
#include "cmd/cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcore/model/core.h"
#include "libcore/store/store.h"
#include "libcore/store/store_query.h"

static const char debug_usage[] =
    "Usage: coreq debug [--db P] [--exe P] ID|CORE [-- GDB-ARGS...]\n"
    "\n"
    "Start gdb on a core and the executable that produced it: a stored core by\n"
    "its ID (`coreq cores`), or a core file.  A compressed core (the hook's .zst)\n"
    "is decompressed first, into a temporary file that is gone when gdb exits.\n"
    "Arguments after -- go to gdb (e.g. -- -batch -ex bt).\n"
    "\n"
    "  --db P              database (default $COREQ_DB, else db in\n"
    "                      /etc/coreq/coreq.conf, else $XDG_STATE_HOME/coreq/\n"
    "                      coreq.db, else /var/lib/coreq/coreq.db for root)\n"
    "  --exe P             the executable (default: the one the core names)\n"
    "  --help              show this help\n";

static const char dump_usage[] =
    "Usage: coreq dump [--db P] ID -o FILE\n"
    "\n"
    "Write the stored core ID (`coreq cores`), decompressed, to FILE (- for\n"
    "standard output), as coredumpctl dump does.\n"
    "\n"
    "  --db P              database (default $COREQ_DB, else db in\n"
    "                      /etc/coreq/coreq.conf, else $XDG_STATE_HOME/coreq/\n"
    "                      coreq.db, else /var/lib/coreq/coreq.db for root)\n"
    "  -o, --output FILE   where to write it (required)\n"
    "  --help              show this help\n";

enum {
	OPT_DB = OPT_FIRST_COMMAND_SPECIFIC,
	OPT_EXE_PATH,
};

struct stored {
	char *path, *exe;
	bool found;
};

static void remember(void *ctx, const struct cq_store_core_row *c)
{
	struct stored *s = ctx;
	s->found = true;
	/* The hook's copy when there is one: the original may be gone. */
	const char *p =
	    c->stored_path && access(c->stored_path, R_OK) == 0 ? c->stored_path : c->path;
	s->path = p ? strdup(p) : NULL;
	s->exe = c->exe ? strdup(c->exe) : NULL;
}

/* The file of stored core id; one error line and EXIT_INPUT when there is none. */
static int stored_core(const char *db, unsigned id, struct stored *s)
{
	memset(s, 0, sizeof(*s));
	struct cq_store *store;
	int rc = cmd_open_store_query(db, &store);
	if (rc != EXIT_OK)
		return rc;
	struct cq_store_core_filter one = {.id = id};
	struct cq_error *err = cq_store_each_core(store, &one, remember, s);
	cq_store_close(store);
	char what[32];
	snprintf(what, sizeof(what), "core %u", id);
	if (err)
		return cmd_fail(what, err);
	if (!s->path || access(s->path, R_OK) != 0) {
		fprintf(stderr, "coreq: %s: its file %s is gone\n", what,
		        s->path ? cmd_safe(s->path) : "?");
		return EXIT_INPUT;
	}
	return EXIT_OK;
}

static bool is_id(const char *arg)
{
	return *arg && strspn(arg, "0123456789") == strlen(arg);
}

int cmd_debug(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"help", no_argument, NULL, OPT_HELP},
	    {"db", required_argument, NULL, OPT_DB},
	    {"exe", required_argument, NULL, OPT_EXE_PATH},
	    {NULL, 0, NULL, 0},
	};
	const char *db = NULL, *exe = NULL;
	int opt;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (opt == 'h' || opt == OPT_HELP) {
			fputs(debug_usage, stdout);
			return EXIT_OK;
		} else if (opt == OPT_DB) {
			db = optarg;
		} else if (opt == OPT_EXE_PATH) {
			exe = optarg;
		} else {
			return cmd_option_error("debug", opt, argv);
		}
	}
	if (optind >= argc)
		return cmd_usage_error("debug", "expected a core ID or a CORE file");
	const char *arg = argv[optind++];
	struct stored s = {0};
	const char *path = arg;
	if (is_id(arg) && access(arg, F_OK) != 0) {
		unsigned id = (unsigned)strtoul(arg, NULL, 10);
		int rc = stored_core(db, id, &s);
		if (rc != EXIT_OK) {
			free(s.path);
			free(s.exe);
			return rc;
		}
		path = s.path;
	}
	/* Open it as coreq does: decompressed into an fd, and its executable named. */
	struct cq_core_options co = {.exe = exe};
	struct cq_core *core;
	struct cq_error *err = cq_core_open(path, &co, &core);
	if (err) {
		int rc = cmd_fail(path, err);
		free(s.path);
		free(s.exe);
		return rc;
	}
	const char *core_exe = exe ? exe : cq_core_exe(core, NULL);
	char *exe_copy = core_exe ? strdup(core_exe) : s.exe ? strdup(s.exe) : NULL;
	int fd = dup(core->source.fd); /* without O_CLOEXEC: gdb inherits it */
	cq_core_close(core);
	char fdpath[64];
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	size_t extra = 0;
	if (optind < argc && strcmp(argv[optind], "--") == 0)
		optind++;
	extra = (size_t)(argc - optind);
	char **gdb = calloc(extra + 5, sizeof(*gdb));
	if (!gdb || fd < 0) {
		free(gdb);
		return cmd_fail(path, &cq_error_nomem);
	}
	size_t n = 0;
	gdb[n++] = "gdb";
	for (int i = optind; i < argc; i++)
		gdb[n++] = argv[i];
	if (exe_copy)
		gdb[n++] = exe_copy;
	gdb[n++] = "-c";
	gdb[n++] = fdpath;
	gdb[n] = NULL;
	fflush(NULL);
	execvp("gdb", gdb);
	int e = errno;
	free(gdb);
	free(exe_copy);
	free(s.path);
	free(s.exe);
	return cmd_fail("gdb", cq_error_errno(e, "cannot start"));
}

int cmd_dump(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"help", no_argument, NULL, OPT_HELP},
	    {"db", required_argument, NULL, OPT_DB},
	    {"output", required_argument, NULL, 'o'},
	    {NULL, 0, NULL, 0},
	};
	const char *db = NULL, *out = NULL;
	int opt;
	while ((opt = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
		if (opt == 'h' || opt == OPT_HELP) {
			fputs(dump_usage, stdout);
			return EXIT_OK;
		} else if (opt == OPT_DB) {
			db = optarg;
		} else if (opt == 'o') {
			out = optarg;
		} else {
			return cmd_option_error("dump", opt, argv);
		}
	}
	if (optind + 1 != argc || !is_id(argv[optind]))
		return cmd_usage_error("dump", "expected exactly one core ID");
	if (!out)
		return cmd_usage_error("dump", "-o FILE is required (- for standard output)");
	unsigned id = (unsigned)strtoul(argv[optind], NULL, 10);
	struct stored s;
	int rc = stored_core(db, id, &s);
	if (rc != EXIT_OK) {
		free(s.path);
		free(s.exe);
		return rc;
	}
	struct cq_core *core;
	struct cq_error *err = cq_core_open(s.path, NULL, &core);
	if (err) {
		rc = cmd_fail(s.path, err);
		free(s.path);
		free(s.exe);
		return rc;
	}
	int to =
	    strcmp(out, "-") == 0 ? STDOUT_FILENO : open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	err = to < 0 ? cq_error_errno(errno, "cannot create") : NULL;
	char buf[1 << 16];
	for (off_t at = 0; !err;) {
		ssize_t got = pread(core->source.fd, buf, sizeof(buf), at);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			err = cq_error_errno(errno, "cannot read %s", s.path);
			break;
		}
		if (got == 0)
			break;
		for (ssize_t done = 0; done < got && !err;) {
			ssize_t w = write(to, buf + done, (size_t)(got - done));
			if (w < 0 && errno != EINTR)
				err = cq_error_errno(errno, "cannot write");
			else if (w > 0)
				done += w;
		}
		at += got;
	}
	if (to >= 0 && to != STDOUT_FILENO && close(to) != 0 && !err)
		err = cq_error_errno(errno, "cannot write");
	cq_core_close(core);
	rc = err ? cmd_fail(out, err) : EXIT_OK;
	free(s.path);
	free(s.exe);
	return rc;
}
