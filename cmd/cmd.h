/*
 * cmd.h - what the coreq subcommands share: the command table entry type,
 * output format, the core-locating options, and error reporting in the
 * one-line `coreq: PATH: reason` form.  No analysis happens in cmd/.
 */
#ifndef CQ_CMD_H
#define CQ_CMD_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "libcore/model/core.h"
#include "libcore/base/error.h"

struct cq_cache;
struct cq_capture;
struct cq_json;
struct cq_store;

enum {
	EXIT_OK = 0,
	EXIT_INPUT = 1, /* an input could not be analysed */
	EXIT_USAGE = 2,
};

enum cmd_format {
	CMD_FORMAT_TEXT,
	CMD_FORMAT_JSON,
};

#define CMD_MAX_DEBUG_DIRS 16

/* Options that say where a core's files are, shared by info/stack/ingest/flame (options.h). */
struct cmd_core_opts {
	enum cmd_format format;
	struct cq_core_options core;
	const char *debug_dirs[CMD_MAX_DEBUG_DIRS + 1];
	size_t ndebug_dirs;
};

void cmd_core_opts_init(struct cmd_core_opts *o);

/*
 * Parses a byte count: digits with an optional binary suffix K, M, G or T
 * (KiB...).  Returns false (after a usage error naming option) otherwise.
 */
bool cmd_parse_bytes(const char *arg, uint64_t *out, const char *cmd, const char *option);

/*
 * Unix seconds from an absolute time or one relative to now (CMD_TIME_FORMS);
 * false if it is neither.
 */
bool cmd_parse_time(const char *s, int64_t *out);
/* Parses a time option's value; EXIT_OK, or EXIT_USAGE after the usage error. */
int cmd_time_option(const char *cmd, const char *option, const char *arg, int64_t *out);
#define CMD_TIME_FORMS                                                                             \
	"YYYY-MM-DD, YYYY-MM-DDTHH:MM:SS (UTC), unix seconds, -7d, 2h ago, today or yesterday"

/* Parses "text" / "json". Returns false (after printing) on anything else. */
bool cmd_parse_format(const char *arg, enum cmd_format *out, const char *cmd);

/*
 * s as text output may show it: control bytes and invalid UTF-8 escaped
 * (text.h).  The result lives until eight more calls; NULL stays NULL.
 */
const char *cmd_safe(const char *s);

/* Prints `coreq: PATH: message`, frees err, returns EXIT_INPUT. */
int cmd_fail(const char *path, struct cq_error *err);
/* Prints `coreq: PATH: message` for an error the caller keeps. */
void cmd_print_error(const char *path, const struct cq_error *err);

/* Prints `coreq: PATH: warning: message`. */
void cmd_warn(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * The usage error for what getopt_long just refused (opt ':' for a missing
 * value, '?' for an unknown option; optstrings start with ':' and getopt's
 * own messages are off), as one line plus the --help hint.
 */
int cmd_option_error(const char *cmd, int opt, char **argv);

/* Prints `coreq CMD: message` and a hint to use --help; returns EXIT_USAGE. */
int cmd_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

struct cq_analysis;
struct cq_stack_options;

/* Which cache an analysis uses: path (NULL: the default), unless use is false. */
struct cmd_cache_choice {
	const char *path;
	bool use;
};

/*
 * Analyses a core (the one library call, cq_analyse) with the shared
 * options and so (its debug directories are o's), warning about a damaged
 * core and opening the chosen cache only when the analysis needs it;
 * waits: find the wait-for graph too.  On error out->core is set when only
 * the stacks failed.  Free with cmd_analysis_free, which closes the cache.
 */
struct cq_error *cmd_analyse(const char *path, const struct cmd_core_opts *o,
                             const struct cq_stack_options *so,
                             const struct cmd_cache_choice *cache, bool waits,
                             struct cq_analysis *out);
void cmd_analysis_free(struct cq_analysis *a);

/* Parses a whole number in [min, max] for option name; prints a usage error if not. */
bool cmd_parse_count(const char *arg, unsigned min, unsigned max, unsigned *out, const char *cmd,
                     const char *name);

/* Warns about what is wrong with an opened core: truncation, repeated tids. */
void cmd_warn_damaged_core(const char *path, const struct cq_core *core);

/*
 * Opens the cache at path (NULL: the default path).  On failure warns once
 * and returns NULL: the cache only makes coreq faster.
 */
struct cq_cache *cmd_open_cache(const char *path);
/* Closes the cache, first warning once if damaged entries were dropped. */
void cmd_close_cache(struct cq_cache *cache);

struct cq_stack_frame;

/* Writes a thread's "tid", "name" and "crashed" members (a thread of an
 * open core, or one stored in the database). */
void cmd_json_thread_id(struct cq_json *j, int64_t tid, const char *name, bool crashed);

/* Writes one frame of a live stack as DESIGN.md's JSON frame object. */
/*
 * The options every command takes (terminal.c): --no-pager and
 * --color=auto|always|never, removed from argv; returns the new argc, or -1
 * after a usage error.  cmd_pager_start sends standard output through
 * $PAGER when it is a terminal; cmd_pager_end waits for the pager.
 */
int cmd_terminal_options(int argc, char **argv);
bool cmd_colour(void);
const char *cmd_sgr(const char *code); /* code when colour is on, else "" */
void cmd_pager_start(void);
void cmd_pager_end(void);

/* One frame as a line of text (frame_text.c). */
void cmd_print_frame_text(FILE *out, const struct cq_stack_frame *f, size_t index);
/* The same for a frame a group of tasks shares: an object frame without its object's address. */
void cmd_print_group_frame_text(FILE *out, const struct cq_stack_frame *f, size_t index);

/*
 * One frame as JSON; thread is the tid of the thread whose stack it is on
 * (a merged async stack moves to the thread that blocks on it), 0 for none.
 */
void cmd_json_frame(struct cq_json *j, const struct cq_stack_frame *f, size_t index,
                    int64_t thread);
/* Every member of a frame object but the last, "thread": what cmd_json_frame writes between them.
 */
void cmd_json_frame_fields(struct cq_json *j, const struct cq_stack_frame *f, size_t index);

/*
 * The process that sent a signal (si_pid, si_uid), whether it is the crashed
 * one, and whether that is only what the signal claims (cq_core_sender_claimed).
 */
struct cmd_sender {
	int64_t pid, uid;
	bool self;
	bool claimed;
};

/*
 * The si_code part of a signal line, for info, stack and show:
 * ", si_code 1 (SEGV_MAPERR: address not mapped to object)", then, when
 * sender is not NULL, ", raised by the process itself" (proven) or
 * ", sent by pid N (uid U) as the signal claims (why it proves nothing)".
 */
void cmd_print_si_code(int64_t signo, int64_t code, const struct cmd_sender *sender);

struct cq_si_code;
/*
 * The JSON members si_code_name, sender_pid, sender_uid and sender_claimed
 * (null where absent).
 */
void cmd_json_sender(struct cq_json *j, const struct cq_si_code *what,
                     const struct cmd_sender *sender);

/*
 * Where the capture disagrees with the core's notes (cq_capture_reconcile:
 * "pid: core 12, systemd 13; ..."), as show, info and stack give it: the
 * text line "conflicts:   ... (the core's values are shown)", none when
 * conflicts is NULL; the JSON member meta_conflicts (null then).
 */
void cmd_print_conflicts(const char *conflicts);
void cmd_json_conflicts(struct cq_json *j, const char *conflicts);

/*
 * Writes the "core" member shared by every command's JSON output; with
 * meta_conflicts last when the capture (may be NULL) has any.
 */
void cmd_json_core(struct cq_json *j, const struct cq_core *core, const struct cq_capture *cap);

struct cq_stacks;

/*
 * Warns about what made the analysis partial: a module whose unwind table
 * could not be built, async roots read with a guessed glibc layout.
 */
void cmd_warn_analysis(const char *path, const struct cq_core *core,
                       const struct cq_stacks *stacks);

/*
 * Opens the database for a query command (path NULL: the default path): it
 * must exist, and is only read (never migrated, its journal mode never
 * changed).  On failure prints one `coreq: PATH: reason` line and returns
 * EXIT_INPUT; EXIT_OK otherwise.
 */
int cmd_open_store_query(const char *path, struct cq_store **out);
/* The same for a command that changes what is stored: migrated where writable. */
int cmd_open_store_existing(const char *path, struct cq_store **out);
/* Opens the database at path (NULL: the default path), creating it if missing. */
struct cq_error *cmd_open_store(const char *path, struct cq_store **out);

/*
 * The bucketing rules (rules_path, else the configured or default ones) and
 * the database to write, for ingest and rebucket; EXIT_OK, or the exit
 * status after one line naming what could not be opened.
 */
struct cq_bucket_rules;
int cmd_open_rules_and_store(const char *rules_path, const char *db, struct cq_bucket_rules **rules,
                             struct cq_store **store);

/* Formats unix seconds as "YYYY-MM-DDTHH:MM:SSZ" into buf (21 bytes). */
void cmd_iso_time(long long secs, char buf[32]);

int cmd_info(int argc, char **argv);
int cmd_ingest(int argc, char **argv);
int cmd_list_stacks(int argc, char **argv);
int cmd_cores(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_buckets(int argc, char **argv);
int cmd_rebucket(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_debug(int argc, char **argv);
int cmd_flame(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_push(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_resymbolize(int argc, char **argv);
int cmd_cache(int argc, char **argv);
int cmd_hook(int argc, char **argv);
int cmd_stack(int argc, char **argv);
int cmd_lws(int argc, char **argv);

#endif
