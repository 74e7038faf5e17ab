/*
 * options.h - the declarative option table every subcommand reads its
 * command line with, in Redis's manner: one row per option saying its
 * name, its type, the field of the command's argument struct it writes and
 * its help text.  getopt_long's table, `coreq CMD --help` and the OPTIONS
 * and SYNOPSIS sections of the man pages (`coreq CMD --help-man`, read by
 * the Makefile's man page rule) are all made from the rows, so they cannot
 * drift.  The options several commands share (the core options, the store
 * filters, --db, --format, the cache) are row macros defined once here.
 *
 * Parsing goes in command-line order and stops at the first error, as
 * getopt_long's loops did: an error message names the option as given and
 * ends with the --help hint (cmd_usage_error), exit status EXIT_USAGE.
 */
#ifndef CQ_CMD_OPTIONS_H
#define CQ_CMD_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cmd/cmd.h"

/* What parsing returns when the command should go on (else: an exit status). */
#define CMD_OPTS_GO_ON (-1)

enum cmd_opt_type {
	CMD_OPT_FLAG,    /* no value; the bool field becomes true */
	CMD_OPT_CLEAR,   /* no value; the bool field becomes false (--no-X) */
	CMD_OPT_STRING,  /* the const char * field points at the value */
	CMD_OPT_COUNT,   /* an unsigned field, a whole number in [min, max] */
	CMD_OPT_COUNT64, /* the same, into an int64_t field */
	CMD_OPT_TIME,    /* an int64_t field, unix seconds (cmd_parse_time's forms) */
	CMD_OPT_FORMAT,  /* an enum cmd_format field: text or json */
	CMD_OPT_CALL,    /* call parses the value into the field */
};

/*
 * Parses arg, the value of option ("--name") of command cmd, into field; CMD_OPTS_GO_ON,
 * or the exit status to stop with (EXIT_USAGE after a usage error).
 */
typedef int cmd_opt_fn(const char *cmd, const char *option, const char *arg, void *field);

struct cmd_opt {
	const char *name; /* the long name, without "--"; NULL: a short option only */
	char letter;      /* the short option, 0: none */
	enum cmd_opt_type type;
	size_t field;      /* offset of the field in the command's argument struct */
	const char *value; /* the value's name in help ("P", "TIME"); NULL: takes none;
	                      "[=FILE]": an optional value */
	const char *help;  /* one paragraph, no newline: --help wraps it, the man page flows it */
	unsigned min, max; /* CMD_OPT_COUNT, CMD_OPT_COUNT64: the accepted range */
	cmd_opt_fn *call;  /* CMD_OPT_CALL */
	const char *more;  /* roff for the man page only, after help: details; may be NULL */
};

enum {
	CMD_SPEC_NO_ARGS = 1,  /* a positional argument is "unexpected argument 'X'" */
	CMD_SPEC_IN_ORDER = 2, /* options stop at the first positional argument */
};

/* A subcommand's command line: its forms, what it does, its options. */
struct cmd_spec {
	const char *name;          /* "stack", "lws decode" */
	const char *forms;         /* what follows "coreq NAME", one form a line */
	const char *about;         /* --help's description, wrapped, paragraphs "\n\n"-separated */
	const struct cmd_opt *opt; /* the rows, ended by a row with neither name nor letter */
	const char *after;         /* --help's text after the options, or NULL */
	/*
	 * Long names of rows parsed but not listed: the command refuses them
	 * once parsed ("--size does not apply here"), as one table serves
	 * several commands (lws decode, encode, ingest).  NULL: none.
	 */
	const char *unlisted;
	unsigned flags; /* CMD_SPEC_* */
};

/*
 * Parses argv (argv[0] is the command's name) into args by spec's rows;
 * -h/--help prints the usage and returns EXIT_OK; an unknown option or a
 * missing value is a usage error.  `--help-man synopsis|options` as the
 * first argument prints that man page section as roff instead.  Returns
 * CMD_OPTS_GO_ON with optind at the first positional argument.
 */
int cmd_opts_parse(const struct cmd_spec *spec, int argc, char **argv, void *args);

/* --help's text: the usage forms, the description, every option (with --help). */
void cmd_opts_usage(const struct cmd_spec *spec, FILE *out);

/* ---- shared options: callbacks and help text ---------------------------------------- */

/* A list of directories (--debug-dir) whose paths are not checked here. */
struct cmd_dir_list {
	const char *v[CMD_MAX_DEBUG_DIRS + 1];
	size_t n;
};

cmd_opt_fn cmd_opt_exe_file;      /* cmd_core_opts: an existing regular file */
cmd_opt_fn cmd_opt_sysroot;       /* cmd_core_opts: an existing directory */
cmd_opt_fn cmd_opt_debug_dir;     /* cmd_core_opts: one more existing directory */
cmd_opt_fn cmd_opt_max_core_size; /* cmd_core_opts: a byte count above 0 */
cmd_opt_fn cmd_opt_dir_list;      /* struct cmd_dir_list: one more, unchecked */
cmd_opt_fn cmd_opt_bucket;        /* const char *: a bucket's hash or id */

extern const char cmd_help_format[], cmd_help_exe[], cmd_help_sysroot[], cmd_help_debug_dir[],
    cmd_help_max_core_size[], cmd_help_db[], cmd_help_since[], cmd_help_until[],
    cmd_help_exe_name[], cmd_help_cache[], cmd_help_no_cache[], cmd_help_signature_frames[],
    cmd_help_rules[], cmd_help_bucket[];
extern const char cmd_more_exe[], cmd_more_sysroot[], cmd_more_debug_dir[],
    cmd_more_max_core_size[], cmd_more_cache[], cmd_more_db[];

#define CMD_OPT_END                                                                                \
	{                                                                                          \
		NULL, 0, CMD_OPT_FLAG, 0, NULL, NULL, 0, 0, NULL, NULL                             \
	}

/* --format text|json into the enum cmd_format member f of T. */
#define CMD_ROW_FORMAT(T, f)                                                                       \
	{                                                                                          \
		"format", 0, CMD_OPT_FORMAT, offsetof(T, f), "text|json", cmd_help_format, 0, 0,   \
		    NULL, NULL                                                                     \
	}

/* The options that say where a core's files are, into the struct cmd_core_opts member f of T. */
#define CMD_ROWS_CORE_FILES(T, f)                                                                  \
	{"exe", 0, CMD_OPT_CALL,     offsetof(T, f), "P", cmd_help_exe,                            \
	 0,     0, cmd_opt_exe_file, cmd_more_exe},                                                \
	    {"sysroot", 0, CMD_OPT_CALL,    offsetof(T, f),  "D", cmd_help_sysroot,                \
	     0,         0, cmd_opt_sysroot, cmd_more_sysroot},                                     \
	    {"debug-dir", 0, CMD_OPT_CALL,      offsetof(T, f),    "D", cmd_help_debug_dir,        \
	     0,           0, cmd_opt_debug_dir, cmd_more_debug_dir},                               \
	{                                                                                          \
		"max-core-size", 0, CMD_OPT_CALL, offsetof(T, f), "BYTES", cmd_help_max_core_size, \
		    0, 0, cmd_opt_max_core_size, cmd_more_max_core_size                            \
	}

/* The core options: --format and the core files (cmd_core_opts at f). */
#define CMD_ROWS_CORE(T, f) CMD_ROW_FORMAT(T, f.format), CMD_ROWS_CORE_FILES(T, f)

/* --db P into the const char * member f of T. */
#define CMD_ROW_DB(T, f)                                                                           \
	{                                                                                          \
		"db", 0, CMD_OPT_STRING, offsetof(T, f), "P", cmd_help_db, 0, 0, NULL, cmd_more_db \
	}

/* The store filters --since/--until (int64_t) and --exe NAME (const char *). */
#define CMD_ROW_SINCE(T, f)                                                                        \
	{                                                                                          \
		"since", 0, CMD_OPT_TIME, offsetof(T, f), "TIME", cmd_help_since, 0, 0, NULL, NULL \
	}
#define CMD_ROW_UNTIL(T, f)                                                                        \
	{                                                                                          \
		"until", 0, CMD_OPT_TIME, offsetof(T, f), "TIME", cmd_help_until, 0, 0, NULL, NULL \
	}
#define CMD_ROW_EXE_NAME(T, f)                                                                     \
	{                                                                                          \
		"exe", 0, CMD_OPT_STRING, offsetof(T, f), "NAME", cmd_help_exe_name, 0, 0, NULL,   \
		    NULL                                                                           \
	}
#define CMD_ROWS_STORE_FILTER(T, since, until, exe)                                                \
	CMD_ROW_SINCE(T, since), CMD_ROW_UNTIL(T, until), CMD_ROW_EXE_NAME(T, exe)

/* --bucket ID (a const char *, checked to be a hash or an id). */
#define CMD_ROW_BUCKET(T, f)                                                                       \
	{                                                                                          \
		"bucket", 0, CMD_OPT_CALL, offsetof(T, f), "ID", cmd_help_bucket, 0, 0,            \
		    cmd_opt_bucket, NULL                                                           \
	}

/* --cache P and --no-cache, into a const char * and a bool of T. */
#define CMD_ROWS_CACHE(T, path, off)                                                               \
	{"cache", 0, CMD_OPT_STRING, offsetof(T, path), "P", cmd_help_cache,                       \
	 0,       0, NULL,           cmd_more_cache},                                              \
	{                                                                                          \
		"no-cache", 0, CMD_OPT_FLAG, offsetof(T, off), NULL, cmd_help_no_cache, 0, 0,      \
		    NULL, NULL                                                                     \
	}

/* --signature-frames N (unsigned) and --rules FILE (const char *), for the bucketing commands. */
#define CMD_ROWS_BUCKETING(T, frames, rules)                                                       \
	{"signature-frames",                                                                       \
	 0,                                                                                        \
	 CMD_OPT_COUNT,                                                                            \
	 offsetof(T, frames),                                                                      \
	 "N",                                                                                      \
	 cmd_help_signature_frames,                                                                \
	 1,                                                                                        \
	 64,                                                                                       \
	 NULL,                                                                                     \
	 NULL},                                                                                    \
	{                                                                                          \
		"rules", 0, CMD_OPT_STRING, offsetof(T, rules), "FILE", cmd_help_rules, 0, 0,      \
		    NULL, NULL                                                                     \
	}

#endif
