/*
 * debug.c - `coreq debug ID|CORE` starts gdb on a core and the executable
 * that produced it; `coreq dump ID -o FILE` writes a stored core out.  A
 * compressed core is decompressed once into an unlinked temporary file that
 * gdb reads through /proc/self/fd (nothing is left behind).
 *
 * What a core or a database names is data, never a gdb option: the
 * executable goes to gdb as --se=PATH and the core as --core=/proc/self/fd/N,
 * forms whose value cannot be read as another option (a path such as
 * "--eval-command=shell ..." stays a file name).  A stored core is read only
 * from a regular file (a row may point at a FIFO or /dev/zero) and only up
 * to the raw size its row records.
 */
#include "cmd/cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libcore/base/output_file.h"
#include "libcore/base/write_all.h"
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
    "standard output), as coredumpctl dump does: a fresh file of mode 0600\n"
    "renamed over FILE; a FILE that is a link, FIFO or device is refused.\n"
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
	int64_t size; /* raw bytes, as the database recorded them */
};

static void stored_free(struct stored *s)
{
	free(s->path);
	free(s->exe);
	memset(s, 0, sizeof(*s));
}

static void remember(void *ctx, const struct cq_store_core_row *c)
{
	struct stored *s = ctx;
	stored_free(s); /* one row is asked for; a second would replace it */
	/* The hook's copy when there is one: the original may be gone. */
	const char *p =
	    c->stored_path && access(c->stored_path, R_OK) == 0 ? c->stored_path : c->path;
	s->path = p ? strdup(p) : NULL;
	s->exe = c->exe ? strdup(c->exe) : NULL;
	s->size = c->size;
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
	if (s->size <= 0) {
		fprintf(stderr, "coreq: %s: the database records no size for it\n", what);
		return EXIT_INPUT;
	}
	return EXIT_OK;
}

/*
 * Opens stored core s: a regular file only, decompressed to at most the
 * size its row records; a file that holds more is refused.
 */
static struct cq_error *open_stored(const struct stored *s, const char *exe, struct cq_core **core)
{
	struct cq_core_options co = {
	    .exe = exe, .max_spool = (uint64_t)s->size, .regular_only = true};
	struct cq_error *err = cq_core_open(s->path, &co, core);
	if (err)
		return err;
	if ((*core)->source.cut_at || (*core)->source.size > (uint64_t)s->size) {
		cq_core_close(*core);
		*core = NULL;
		return cq_error_create(CQ_ERR_FORMAT,
		                       "holds more than the %lld bytes the database records",
		                       (long long)s->size);
	}
	return NULL;
}

static bool is_id(const char *arg)
{
	return *arg && strspn(arg, "0123456789") == strlen(arg);
}

/* "--name=value" as one malloc'd argument. */
static char *option_with_value(const char *name, const char *value)
{
	char *out;
	return asprintf(&out, "--%s=%s", name, value) < 0 ? NULL : out;
}

/*
 * Runs gdb with the user's arguments, then the executable (if known) and
 * the core fd: gdb ARGS... [--se=EXE] --core=/proc/self/fd/N.  Returns only
 * when gdb could not be started.
 */
static struct cq_error *exec_gdb(char **user_args, size_t nuser, const char *exe, int core_fd)
{
	char fdpath[64];
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", core_fd);
	char *exe_arg = exe && *exe ? option_with_value("se", exe) : NULL;
	char *core_arg = option_with_value("core", fdpath);
	char **gdb = calloc(nuser + 4, sizeof(*gdb));
	if (!gdb || !core_arg || (exe && *exe && !exe_arg)) {
		free(gdb);
		free(exe_arg);
		free(core_arg);
		return &cq_error_nomem;
	}
	size_t n = 0;
	gdb[n++] = "gdb";
	for (size_t i = 0; i < nuser; i++)
		gdb[n++] = user_args[i];
	if (exe_arg)
		gdb[n++] = exe_arg;
	gdb[n++] = core_arg;
	gdb[n] = NULL;
	fflush(NULL);
	execvp("gdb", gdb);
	int e = errno;
	free(gdb);
	free(exe_arg);
	free(core_arg);
	return cq_error_errno(e, "cannot start");
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
	struct cq_core *core;
	struct cq_error *err;
	if (is_id(arg) && access(arg, F_OK) != 0) {
		int rc = stored_core(db, (unsigned)strtoul(arg, NULL, 10), &s);
		if (rc != EXIT_OK) {
			stored_free(&s);
			return rc;
		}
		path = s.path;
		err = open_stored(&s, exe, &core);
	} else {
		/* Opened as coreq does: decompressed into an fd, and its executable named. */
		struct cq_core_options co = {.exe = exe};
		err = cq_core_open(path, &co, &core);
	}
	if (err) {
		int rc = cmd_fail(path, err);
		stored_free(&s);
		return rc;
	}
	const char *core_exe = exe ? exe : cq_core_exe(core, NULL);
	char *exe_copy = core_exe ? strdup(core_exe) : s.exe ? strdup(s.exe) : NULL;
	int fd = dup(core->source.fd); /* without O_CLOEXEC: gdb inherits it */
	cq_core_close(core);
	if (optind < argc && strcmp(argv[optind], "--") == 0)
		optind++;
	err = fd < 0 ? cq_error_errno(errno, "cannot keep the core open for gdb")
	             : exec_gdb(argv + optind, (size_t)(argc - optind), exe_copy, fd);
	int rc = cmd_fail(err->code == CQ_ERR_NOMEM || fd < 0 ? path : "gdb", err);
	if (fd >= 0)
		close(fd);
	free(exe_copy);
	stored_free(&s);
	return rc;
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
	struct stored s;
	int rc = stored_core(db, (unsigned)strtoul(argv[optind], NULL, 10), &s);
	if (rc != EXIT_OK) {
		stored_free(&s);
		return rc;
	}
	struct cq_core *core;
	struct cq_error *err = open_stored(&s, NULL, &core);
	if (err) {
		rc = cmd_fail(s.path, err);
		stored_free(&s);
		return rc;
	}
	if (strcmp(out, "-") == 0) {
		err = copy_core(core, STDOUT_FILENO);
	} else {
		/* A fresh 0600 file renamed over FILE: never through a link, never another's mode.
		 */
		struct cq_output_file f;
		if (!(err = cq_output_file_create(out, 0600, &f))) {
			if ((err = copy_core(core, f.fd)))
				cq_output_file_discard(&f);
			else
				err = cq_output_file_commit(&f);
		}
	}
	cq_core_close(core);
	rc = err ? cmd_fail(out, err) : EXIT_OK;
	stored_free(&s);
	return rc;
}
