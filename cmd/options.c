/*
 * options.c - the option table's parser and its two renderings: --help
 * text and man page roff (options.h).  getopt_long's table is built from
 * the rows on each call; a row's getopt id is its letter when it has one,
 * else 0x100 + its index, so a row is found from what getopt returns.
 */
#include "cmd/options.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <sys/stat.h>

#include "libcore/store/store_query.h"

#define MAX_ROWS  64
#define HELP_ID   0xff /* --help's getopt id: above ASCII, below the rows' */
#define ROW_ID    0x100
#define WIDTH     79 /* --help's lines */
#define HELP_COL  22 /* where an option's help starts */
#define LABEL_MAX 96

static size_t count_rows(const struct cmd_opt *opt)
{
	size_t n = 0;
	while (opt[n].name || opt[n].letter)
		n++;
	return n;
}

static bool optional_value(const struct cmd_opt *o)
{
	return o->value && o->value[0] == '[';
}

/* The option as error messages name it: "--since", or "-n" for a short one. */
static const char *option_name(const struct cmd_opt *o, char buf[LABEL_MAX])
{
	if (o->name)
		snprintf(buf, LABEL_MAX, "--%s", o->name);
	else
		snprintf(buf, LABEL_MAX, "-%c", o->letter);
	return buf;
}

/* Stores arg (NULL for a flag or an absent optional value) into the row's field. */
static int apply(const char *cmd, const struct cmd_opt *o, const char *arg, void *field)
{
	char name[LABEL_MAX];
	unsigned v;
	switch (o->type) {
	case CMD_OPT_FLAG:
		*(bool *)field = true;
		return CMD_OPTS_GO_ON;
	case CMD_OPT_CLEAR:
		*(bool *)field = false;
		return CMD_OPTS_GO_ON;
	case CMD_OPT_STRING:
		*(const char **)field = arg;
		return CMD_OPTS_GO_ON;
	case CMD_OPT_COUNT:
		return cmd_parse_count(arg, o->min, o->max, field, cmd, option_name(o, name))
		           ? CMD_OPTS_GO_ON
		           : EXIT_USAGE;
	case CMD_OPT_COUNT64:
		if (!cmd_parse_count(arg, o->min, o->max, &v, cmd, option_name(o, name)))
			return EXIT_USAGE;
		*(int64_t *)field = v;
		return CMD_OPTS_GO_ON;
	case CMD_OPT_TIME:
		return cmd_time_option(cmd, option_name(o, name), arg, field) ? EXIT_USAGE
		                                                              : CMD_OPTS_GO_ON;
	case CMD_OPT_FORMAT:
		return cmd_parse_format(arg, field, cmd) ? CMD_OPTS_GO_ON : EXIT_USAGE;
	case CMD_OPT_CALL:
		return o->call(cmd, option_name(o, name), arg, field);
	}
	return EXIT_USAGE;
}

/* getopt_long's table and option string for spec's rows, and --help/-h. */
static void getopt_table(const struct cmd_spec *spec, size_t n, struct option *longopts,
                         char *shorts)
{
	char *s = shorts;
	if (spec->flags & CMD_SPEC_IN_ORDER)
		*s++ = '+';
	*s++ = ':';
	*s++ = 'h';
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const struct cmd_opt *o = &spec->opt[i];
		assert(o->letter != 'h' && o->help && (o->type != CMD_OPT_CALL || o->call));
		int has = !o->value           ? no_argument
		          : optional_value(o) ? optional_argument
		                              : required_argument;
		int id = o->letter ? o->letter : ROW_ID + (int)i;
		if (o->letter) {
			*s++ = o->letter;
			if (has == required_argument)
				*s++ = ':';
		}
		if (o->name)
			longopts[k++] = (struct option){o->name, has, NULL, id};
	}
	longopts[k++] = (struct option){"help", no_argument, NULL, HELP_ID};
	longopts[k] = (struct option){NULL, 0, NULL, 0};
	*s = '\0';
}

static const struct cmd_opt *row_of(const struct cmd_spec *spec, size_t n, int id)
{
	if (id >= ROW_ID && (size_t)(id - ROW_ID) < n)
		return &spec->opt[id - ROW_ID];
	for (size_t i = 0; id < ROW_ID && i < n; i++)
		if (spec->opt[i].letter && spec->opt[i].letter == id)
			return &spec->opt[i];
	return NULL;
}

static int print_man(const struct cmd_spec *spec, const char *section);

/* Whether spec's help leaves row o out (cmd_spec.unlisted). */
static bool unlisted(const struct cmd_spec *spec, const struct cmd_opt *o)
{
	size_t len = o->name ? strlen(o->name) : 0;
	for (const char *p = spec->unlisted; p && len && *p;) {
		size_t n = strcspn(p, " ");
		if (n == len && strncmp(p, o->name, n) == 0)
			return true;
		p += n + strspn(p + n, " ");
	}
	return false;
}

int cmd_opts_parse(const struct cmd_spec *spec, int argc, char **argv, void *args)
{
	if (argc >= 2 && strcmp(argv[1], "--help-man") == 0)
		return print_man(spec, argc > 2 ? argv[2] : "options");
	size_t n = count_rows(spec->opt);
	struct option longopts[MAX_ROWS + 2];
	char shorts[3 * MAX_ROWS + 4];
	assert(n <= MAX_ROWS); /* a table is written here, not read from input */
	getopt_table(spec, n, longopts, shorts);
	int id;
	while ((id = getopt_long(argc, argv, shorts, longopts, NULL)) != -1) {
		if (id == 'h' || id == HELP_ID) {
			cmd_opts_usage(spec, stdout);
			return EXIT_OK;
		}
		const struct cmd_opt *o = row_of(spec, n, id);
		if (!o)
			return cmd_option_error(spec->name, id, argv);
		int rc = apply(spec->name, o, optarg, (char *)args + o->field);
		if (rc != CMD_OPTS_GO_ON)
			return rc;
	}
	if ((spec->flags & CMD_SPEC_NO_ARGS) && optind != argc)
		return cmd_usage_error(spec->name, "unexpected argument '%s'", argv[optind]);
	return CMD_OPTS_GO_ON;
}

/* ---- --help ----------------------------------------------------------------------- */

/* "-o, --output FILE", "--rules[=FILE]", "--db P", "-n N". */
static void label_of(const struct cmd_opt *o, char buf[LABEL_MAX])
{
	const char *value = o->value ? o->value : "";
	const char *sep = optional_value(o) || !o->value ? "" : " ";
	if (o->letter && o->name)
		snprintf(buf, LABEL_MAX, "-%c, --%s%s%s", o->letter, o->name, sep, value);
	else if (o->name)
		snprintf(buf, LABEL_MAX, "--%s%s%s", o->name, sep, value);
	else
		snprintf(buf, LABEL_MAX, "-%c%s%s", o->letter, sep, value);
}

/* text's words, from column col, lines broken before WIDTH and indented to HELP_COL. */
static void print_wrapped(FILE *out, const char *text, size_t col)
{
	const char *p = text;
	while (*p) {
		size_t word = strcspn(p, " ");
		if (col > HELP_COL && col + 1 + word > WIDTH) {
			fprintf(out, "\n%*s", HELP_COL, "");
			col = HELP_COL;
		} else if (col > HELP_COL) {
			fputc(' ', out);
			col++;
		}
		fwrite(p, 1, word, out);
		col += word;
		p += word;
		p += strspn(p, " ");
	}
	fputc('\n', out);
}

static void print_option(FILE *out, const char *label, const char *help)
{
	int len = fprintf(out, "  %s", label);
	if (len + 2 > HELP_COL) {
		fputs("  ", out);
		len += 2;
	} else {
		fprintf(out, "%*s", HELP_COL - len, "");
		len = HELP_COL;
	}
	/* the first word goes right after the label, whatever its length */
	size_t word = strcspn(help, " ");
	fwrite(help, 1, word, out);
	const char *rest = help + word + strspn(help + word, " ");
	if (*rest) {
		print_wrapped(out, rest, (size_t)len + word);
	} else {
		fputc('\n', out);
	}
}

void cmd_opts_usage(const struct cmd_spec *spec, FILE *out)
{
	const char *f = spec->forms;
	for (bool first = true; *f; first = false) {
		size_t len = strcspn(f, "\n");
		fprintf(out, "%s coreq %s %.*s\n", first ? "Usage:" : "      ", spec->name,
		        (int)len, f);
		f += len + (f[len] == '\n');
	}
	fprintf(out, "\n%s\n", spec->about);
	char label[LABEL_MAX];
	for (const struct cmd_opt *o = spec->opt; o->name || o->letter; o++) {
		if (unlisted(spec, o))
			continue;
		label_of(o, label);
		print_option(out, label, o->help);
	}
	print_option(out, "-h, --help", "show this help");
	if (spec->after)
		fprintf(out, "\n%s", spec->after);
}

/* ---- man page sections -------------------------------------------------------------- */

/* text as roff running text: backslashes and hyphens escaped, a leading control character
 * made plain. */
static void put_roff(FILE *out, const char *text)
{
	if (*text == '.' || *text == '\'')
		fputs("\\&", out);
	for (const char *c = text; *c; c++) {
		if (*c == '\\')
			fputs("\\e", out);
		else if (*c == '-')
			fputs("\\-", out);
		else
			fputc(*c, out);
	}
}

static void put_man_label(FILE *out, const struct cmd_opt *o)
{
	if (o->letter) {
		fprintf(out, "\\fB\\-%c\\fR", o->letter);
		if (o->name)
			fputs(", ", out);
	}
	if (o->name) {
		fputs("\\fB\\-\\-", out);
		put_roff(out, o->name);
		fputs("\\fR", out);
	}
	if (o->value && optional_value(o)) {
		/* "[=NAME]": NAME in italics inside the brackets */
		fprintf(out, "[=\\fI%.*s\\fR]", (int)strlen(o->value) - 3, o->value + 2);
	} else if (o->value) {
		fputs(" \\fI", out);
		put_roff(out, o->value);
		fputs("\\fR", out);
	}
}

static void put_man_option(FILE *out, const struct cmd_opt *o)
{
	fputs(".TP\n", out);
	put_man_label(out, o);
	fputc('\n', out);
	fputc(toupper((unsigned char)o->help[0]), out); /* a sentence in the page */
	put_roff(out, o->help + 1);
	fputs(".\n", out);
	if (o->more)
		fputs(o->more, out);
}

/*
 * `coreq CMD --help-man synopsis`: each form as a SYNOPSIS entry; `options`:
 * each row as a tagged paragraph, its help a sentence, then its details.
 */
static int print_man(const struct cmd_spec *spec, const char *section)
{
	if (strcmp(section, "synopsis") == 0) {
		for (const char *f = spec->forms; *f;) {
			size_t len = strcspn(f, "\n");
			char form[512];
			snprintf(form, sizeof(form), "%.*s", (int)len, f);
			fputs(".B coreq ", stdout);
			put_roff(stdout, spec->name);
			fputc('\n', stdout);
			put_roff(stdout, form);
			fputs("\n.br\n", stdout);
			f += len + (f[len] == '\n');
		}
		return EXIT_OK;
	}
	if (strcmp(section, "options") != 0)
		return cmd_usage_error(spec->name, "--help-man takes synopsis or options");
	for (const struct cmd_opt *o = spec->opt; o->name || o->letter; o++)
		if (!unlisted(spec, o))
			put_man_option(stdout, o);
	static const struct cmd_opt help = {"help", 'h', CMD_OPT_FLAG, 0,   NULL, "Show this help",
	                                    0,      0,   NULL,         NULL};
	put_man_option(stdout, &help);
	return EXIT_OK;
}

/* ---- shared options ----------------------------------------------------------------- */

/* A path given as an option must exist and be of type (S_IFREG, S_IFDIR). */
static bool path_is(const char *arg, mode_t type, const char *option, const char *cmd)
{
	struct stat st;
	if (stat(arg, &st) != 0) {
		cmd_usage_error(cmd, "%s %s: %s", option, cmd_safe(arg), strerror(errno));
		return false;
	}
	if ((st.st_mode & S_IFMT) != type) {
		cmd_usage_error(cmd, "%s %s: not a %s", option, cmd_safe(arg),
		                type == S_IFDIR ? "directory" : "regular file");
		return false;
	}
	return true;
}

int cmd_opt_exe_file(const char *cmd, const char *option, const char *arg, void *field)
{
	struct cmd_core_opts *o = field;
	if (!path_is(arg, S_IFREG, option, cmd))
		return EXIT_USAGE;
	o->core.exe = arg;
	return CMD_OPTS_GO_ON;
}

int cmd_opt_sysroot(const char *cmd, const char *option, const char *arg, void *field)
{
	struct cmd_core_opts *o = field;
	if (!path_is(arg, S_IFDIR, option, cmd))
		return EXIT_USAGE;
	o->core.sysroot = arg;
	return CMD_OPTS_GO_ON;
}

int cmd_opt_debug_dir(const char *cmd, const char *option, const char *arg, void *field)
{
	struct cmd_core_opts *o = field;
	if (!path_is(arg, S_IFDIR, option, cmd))
		return EXIT_USAGE;
	if (o->ndebug_dirs == CMD_MAX_DEBUG_DIRS)
		return cmd_usage_error(cmd, "at most %d %s options", CMD_MAX_DEBUG_DIRS, option);
	o->debug_dirs[o->ndebug_dirs++] = arg;
	o->debug_dirs[o->ndebug_dirs] = NULL;
	o->core.debug_dirs = o->debug_dirs;
	return CMD_OPTS_GO_ON;
}

int cmd_opt_max_core_size(const char *cmd, const char *option, const char *arg, void *field)
{
	struct cmd_core_opts *o = field;
	if (!cmd_parse_bytes(arg, &o->core.max_spool, cmd, option))
		return EXIT_USAGE;
	if (o->core.max_spool == 0)
		return cmd_usage_error(cmd, "--max-core-size must be above 0");
	return CMD_OPTS_GO_ON;
}

int cmd_opt_dir_list(const char *cmd, const char *option, const char *arg, void *field)
{
	struct cmd_dir_list *l = field;
	if (l->n == CMD_MAX_DEBUG_DIRS)
		return cmd_usage_error(cmd, "at most %d %s options", CMD_MAX_DEBUG_DIRS, option);
	l->v[l->n++] = arg;
	l->v[l->n] = NULL;
	return CMD_OPTS_GO_ON;
}

int cmd_opt_bucket(const char *cmd, const char *option, const char *arg, void *field)
{
	(void)option;
	if (!cq_store_bucket_key_valid(arg))
		return cmd_usage_error(cmd,
		                       "--bucket takes a bucket's 16-hex-digit hash or its id, "
		                       "not '%s'",
		                       arg);
	*(const char **)field = arg;
	return CMD_OPTS_GO_ON;
}

/* ---- shared help text ---------------------------------------------------------------- */

const char cmd_help_format[] = "output format (default text)";
const char cmd_help_exe[] = "the executable that produced the core";
const char cmd_help_sysroot[] =
    "look for every module path inside D, as if D were / (nothing outside D is looked at)";
const char cmd_help_debug_dir[] = "add a build-id tree of debuginfo (repeatable)";
const char cmd_help_max_core_size[] =
    "cut a compressed or piped core at BYTES once decompressed (K, M, G, T suffixes; "
    "default: the free space of $TMPDIR less 1 GiB); a cut core is truncated";
const char cmd_help_db[] = "database (default $COREQ_DB, else db in /etc/coreq/coreq.conf, else "
                           "$XDG_STATE_HOME/coreq/coreq.db, else /var/lib/coreq/coreq.db for root)";
const char cmd_help_since[] =
    "only cores that crashed at or after TIME: YYYY-MM-DD, YYYY-MM-DDTHH:MM:SS (UTC), unix "
    "seconds, or relative: -7d, 2h ago, 3 days ago, today, yesterday";
const char cmd_help_until[] = "only cores that crashed before TIME (same forms)";
const char cmd_help_exe_name[] = "only cores of this executable (full path or basename)";
const char cmd_help_cache[] =
    "per-build-id cache of unwind tables, symbols, Rust types and C++ coroutine types "
    "(default $COREQ_CACHE, else cache in /etc/coreq/coreq.conf, else "
    "$XDG_CACHE_HOME/coreq/cache.db, else /var/lib/coreq/cache.db for root)";
const char cmd_help_no_cache[] = "do not read or write the cache";
const char cmd_help_signature_frames[] = "frames in a crash signature (default 5)";
const char cmd_help_rules[] =
    "bucketing rules (default $COREQ_RULES, else rules in /etc/coreq/coreq.conf, else "
    "/etc/coreq/rules, else the built-in ones: see `coreq buckets --rules`)";
const char cmd_help_bucket[] = "only the cores in crash bucket ID: its hash or its id";

/* ---- the man pages' details of the shared options (roff) ---------------------------- */

const char cmd_more_exe[] =
    "A path given to\n"
    ".BR \\-\\-exe ,\n"
    ".B \\-\\-sysroot\n"
    "or\n"
    ".B \\-\\-debug\\-dir\n"
    "must exist (a file, a directory, a directory), else it is a usage error.\n"
    "A module file whose build-id differs from the core's (a program rebuilt\n"
    "after the crash, a wrong\n"
    ".BR \\-\\-exe )\n"
    "is never used: one warning names it, and its frames are marked\n"
    ".B build\\-id mismatch\n"
    "(JSON module_status \"mismatch\").\n";

const char cmd_more_sysroot[] =
    "Paths are resolved as if D were\n"
    ".I /\n"
    "(openat2's RESOLVE_IN_ROOT, or the same walk where the kernel lacks it):\n"
    ".BR .. ,\n"
    "absolute paths and symbolic links, absolute or relative, never leave D, and\n"
    "nothing outside D is looked at.\n"
    "When D has no file for the executable, it is not looked for at its recorded\n"
    "path; a warning says so: name it with\n"
    ".B \\-\\-exe\n"
    "(a program built on this host and run under qemu\\-user).\n";

const char cmd_more_debug_dir[] =
    "Its files are D/.build\\-id/xx/rest.debug.\n"
    "/usr/lib/debug and .gnu_debuglink locations are always searched.\n";

const char cmd_more_max_core_size[] =
    "Suffixes K, M, G, T are KiB to TiB.\n"
    "The default is the free space of the file system of\n"
    ".B $TMPDIR\n"
    "(where the core is spooled) less 1 GiB, at most 64 GiB, so a decompression\n"
    "bomb cannot fill the disk. A cut core is analysed as a truncated one: a\n"
    "warning says where it was cut, JSON's\n"
    ".B core.cut_at\n"
    "gives the cap, and ingest stores it as partial.\n";

const char cmd_more_cache[] =
    "It is SQLite. Where none of these is set the default is\n"
    ".BR ~/.cache/coreq/cache.db .\n"
    "It holds only what can be computed again, so it is written without fsync;\n"
    "if a power cut damages it, coreq warns and runs without it until it is\n"
    "deleted.\n"
    "Its entries are believed as they stand, so it must be the caller's own:\n"
    "owned by the effective uid (or by root), writable by neither group nor\n"
    "others, and so must its directory (symbolic links resolved) and its\n"
    "\\-wal and \\-shm files. A cache that is not (someone else's file, given as\n"
    ".B \\-\\-cache\n"
    "or found by default, root's\n"
    ".B \\-\\-cache\n"
    "naming a user's file included, or one directly in /tmp) is not opened:\n"
    "one warning line says why, and the analysis runs without a cache\n"
    ".RB ( \"cache warm\"\n"
    "fails instead).\n";

const char cmd_more_db[] =
    "It is SQLite, in WAL mode.\n"
    "Root's default is the file the service and the hook write (sudo clears XDG_*);\n"
    "where none of these is set the default is\n"
    ".BR ~/.local/state/coreq/coreq.db .\n"
    "The cache follows the same rule\n"
    ".RB ( $COREQ_CACHE ,\n"
    ".BR cache ,\n"
    ".BR $XDG_CACHE_HOME ,\n"
    ".BR /var/lib/coreq/cache.db ,\n"
    ".BR ~/.cache/coreq/cache.db ).\n"
    ".BR ingest \" and \" hook\n"
    "create it (and its directories); the query commands\n"
    ".RB ( cores \", \" show \", \" buckets \", \" list\\-stacks )\n"
    "never do: a missing file is the error\n"
    ".IR \"no such database\" ,\n"
    "and a database they cannot write (a read-only file or directory) is opened\n"
    "read-only. A damaged database is reported in one line with how to recover\n"
    "it\n"
    ".RB ( \"sqlite3 FILE .recover\" )\n"
    "or to move it aside.\n";
