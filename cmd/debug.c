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
 *
 * Finding, opening and copying a core are the library's
 * (libcore/store/stored_core.h): here are the options, the name each error
 * goes under, and gdb's argument vector.
 */
#include "cmd/cmd.h"
#include "cmd/options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcore/store/store.h"
#include "libcore/store/stored_core.h"

/* What debug's and dump's options write. */
struct debug_args {
	const char *db, *exe, *out;
};

static const struct cmd_opt debug_options[] = {
    CMD_ROW_DB(struct debug_args, db),
    {"exe", 0, CMD_OPT_STRING, offsetof(struct debug_args, exe), "P",
     "the executable (default: the one the core names)", 0, 0, NULL, NULL},
    CMD_OPT_END,
};

static const struct cmd_spec debug_spec = {
    .name = "debug",
    .forms = "[OPTIONS] ID|CORE [-- GDB-ARGS...]",
    .about = "Start gdb on a core and the executable that produced it: a stored core by\n"
             "its ID (`coreq cores`), or a core file.  A compressed core (the hook's .zst)\n"
             "is decompressed first, into a temporary file that is gone when gdb exits.\n"
             "Arguments after -- go to gdb (e.g. -- -batch -ex bt).\n",
    .opt = debug_options,
};

static const struct cmd_opt dump_options[] = {
    CMD_ROW_DB(struct debug_args, db),
    {"output", 'o', CMD_OPT_STRING, offsetof(struct debug_args, out), "FILE",
     "where to write it (required; - for standard output)", 0, 0, NULL, NULL},
    CMD_OPT_END,
};

static const struct cmd_spec dump_spec = {
    .name = "dump",
    .forms = "[OPTIONS] ID -o FILE",
    .about = "Write the stored core ID (`coreq cores`), decompressed, to FILE (- for\n"
             "standard output), as coredumpctl dump does: a fresh file of mode 0600\n"
             "renamed over FILE; a FILE that is a link, FIFO or device is refused.\n",
    .opt = dump_options,
};

/* The name an error of a stored core goes under (stored_core.h). */
static const char *blamed(enum cq_stored_core_blame blame, unsigned id, const char *path,
                          const char *output, char *buf, size_t cap)
{
	if (blame == CQ_STORED_CORE_FILE)
		return path;
	if (blame == CQ_STORED_CORE_OUTPUT)
		return output;
	snprintf(buf, cap, "core %u", id);
	return buf;
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

/* The stored core id, or the core file arg, handed over for gdb. */
static struct cq_error *handoff(const char *arg, const struct debug_args *a,
                                struct cq_stored_core_handoff *h, unsigned *id, int *rc)
{
	if (!is_id(arg) || access(arg, F_OK) == 0)
		return cq_stored_core_file_for_debugger(arg, a->exe, h);
	struct cq_store *store;
	*id = (unsigned)strtoul(arg, NULL, 10);
	if ((*rc = cmd_open_store_query(a->db, &store)) != EXIT_OK)
		return NULL;
	struct cq_error *err = cq_stored_core_for_debugger(store, *id, a->exe, h);
	cq_store_close(store);
	return err;
}

int cmd_debug(int argc, char **argv)
{
	struct debug_args a = {NULL};
	int rc = cmd_opts_parse(&debug_spec, argc, argv, &a);
	if (rc != CMD_OPTS_GO_ON)
		return rc;
	if (optind >= argc)
		return cmd_usage_error("debug", "expected a core ID or a CORE file");
	const char *arg = argv[optind++];
	struct cq_stored_core_handoff h;
	unsigned id = 0;
	rc = EXIT_OK;
	struct cq_error *err = handoff(arg, &a, &h, &id, &rc);
	if (rc != EXIT_OK)
		return rc;
	if (err) {
		char what[32];
		rc = cmd_fail(blamed(h.blame, id, h.path ? h.path : arg, NULL, what, sizeof(what)),
		              err);
		cq_stored_core_handoff_free(&h);
		return rc;
	}
	if (optind < argc && strcmp(argv[optind], "--") == 0)
		optind++;
	err = exec_gdb(argv + optind, (size_t)(argc - optind), h.exe, h.fd);
	rc = cmd_fail(err->code == CQ_ERR_NOMEM ? h.path : "gdb", err);
	cq_stored_core_handoff_free(&h);
	return rc;
}

int cmd_dump(int argc, char **argv)
{
	struct debug_args a = {NULL};
	int rc = cmd_opts_parse(&dump_spec, argc, argv, &a);
	if (rc != CMD_OPTS_GO_ON)
		return rc;
	if (optind + 1 != argc || !is_id(argv[optind]))
		return cmd_usage_error("dump", "expected exactly one core ID");
	if (!a.out)
		return cmd_usage_error("dump", "-o FILE is required (- for standard output)");
	struct cq_store *store;
	if ((rc = cmd_open_store_query(a.db, &store)) != EXIT_OK)
		return rc;
	unsigned id = (unsigned)strtoul(argv[optind], NULL, 10);
	struct cq_stored_core s;
	struct cq_error *err = cq_stored_core_write(
	    store, id, strcmp(a.out, "-") == 0 ? NULL : a.out, STDOUT_FILENO, &s);
	cq_store_close(store);
	char what[32];
	rc = err ? cmd_fail(blamed(s.blame, id, s.path, a.out, what, sizeof(what)), err) : EXIT_OK;
	cq_stored_core_close(&s);
	return rc;
}
