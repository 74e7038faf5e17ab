/*
 * lws.c - `coreq lws decode|encode|ingest`: libwebsockets' compressed
 * allocation backtraces ("~m#" lines, lws_backtrace) read, written,
 * symbolized with the ELF they came from, and stored from logs as
 * allocation sites for `coreq list-stacks --source lws`.
 *
 * Each flow is one library call (lws_decode.h, lws_codec.h, lws_ingest.h);
 * here are the options, which argument is a file and which is text, and
 * the output.
 */
#include "cmd/cmd.h"
#include "cmd/options.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "libcore/base/parse.h"
#include "libcore/db/cache.h"
#include "libcore/base/json.h"
#include "libcore/formats/lws_codec.h"
#include "libcore/pipeline/lws_decode.h"
#include "libcore/pipeline/lws_ingest.h"
#include "libcore/store/store.h"

/* What `coreq lws --help` says after each subcommand's usage line. */
static const char lws_about[] =
    "\n"
    "libwebsockets' compressed allocation backtraces (lws_backtrace): a \"~m#\"\n"
    "line holds up to 31 return addresses and an allocation size.\n"
    "\n"
    "  decode   print each record as lws's decoder does (\"~b#size: N, 0x... \"),\n"
    "           with --elf each address also as function at file:line\n"
    "  encode   write one record\n"
    "  ingest   store every record of logs as allocation sites; see them with\n"
    "           `coreq list-stacks --source lws`\n"
    "\n"
    "Run 'coreq lws SUBCOMMAND --help' for its options.\n";

/* What the subcommands' options leave behind. */
struct lws_opts {
	struct cmd_core_opts common; /* --format, --debug-dir */
	const char *elf_path, *db, *cache_path, *size;
	bool no_cache;
};

#define FIELD(f) offsetof(struct lws_opts, f)

/* Every subcommand parses every row, then refuses those that do not apply to it. */
static const struct cmd_opt lws_options[] = {
    {"elf", 0, CMD_OPT_STRING, FIELD(elf_path), "FILE",
     "the executable (or library) the addresses belong to", 0, 0, NULL, NULL},
    {"size", 0, CMD_OPT_STRING, FIELD(size), "N", "the allocation size (required)", 0, 0, NULL,
     NULL},
    CMD_ROW_DB(struct lws_opts, db),
    {"debug-dir", 0, CMD_OPT_CALL, FIELD(common), "D", cmd_help_debug_dir, 0, 0, cmd_opt_debug_dir,
     cmd_more_debug_dir},
    {"cache", 0, CMD_OPT_STRING, FIELD(cache_path), "P",
     "symbol cache (default $COREQ_CACHE, else $XDG_CACHE_HOME/coreq/cache.db)", 0, 0, NULL, NULL},
    {"no-cache", 0, CMD_OPT_FLAG, FIELD(no_cache), NULL, cmd_help_no_cache, 0, 0, NULL, NULL},
    CMD_ROW_FORMAT(struct lws_opts, common.format),
    CMD_OPT_END,
};

static const struct cmd_spec decode_spec = {
    .name = "lws decode",
    .forms = "[OPTIONS] [TEXT... | FILE... | -]",
    .about = "Decode libwebsockets backtrace records.  Each non-blank line of TEXT, of\n"
             "FILE (an argument that names a file, or a path such as ./x or /x), or of\n"
             "standard input\n"
             "(- or no argument) is one record: \"~m#\" and base64\n"
             "(anything before \"~m#\" on the line is ignored), or bare base64; either\n"
             "base64 alphabet (+/ or -_), '=' padding optional, whitespace allowed.\n"
             "Each prints as lws's decoder prints it:\n"
             "    ~b#size: 7520, 0x406651 0x406852 0x406c1b 0x406294 \n"
             "(every address followed by one space).  With --elf, each address follows on\n"
             "its own line as `function at file:line`, with its inlined calls, looked up at\n"
             "address - 1 (they are return addresses) at the ELF's link-time addresses.\n"
             "A malformed record is reported as `coreq: INPUT:LINE: reason` and skipped;\n"
             "the exit status is then 1.\n",
    .opt = lws_options,
    .unlisted = "size db",
};

static const struct cmd_spec encode_spec = {
    .name = "lws encode",
    .forms = "--size N [OPTIONS] ADDR...",
    .about = "Write the \"~m#\" record lws would write for these return addresses\n"
             "(innermost first, at most 31) and allocation size: the same bytes, the same\n"
             "base64.  Numbers are decimal, or hex with 0x.  A value of 2^63 or more cannot\n"
             "be written (the format's bit counts stop at 63) and is refused.\n",
    .opt = lws_options,
    .unlisted = "elf db debug-dir cache no-cache",
};

static const struct cmd_spec ingest_spec = {
    .name = "lws ingest",
    .forms = "--elf FILE [OPTIONS] LOGFILE... | -",
    .about = "Find every \"~m#\" record in the logs (anywhere in a line; other lines are\n"
             "ignored), decode it, name its addresses with the ELF's symbols (as lws\n"
             "decode --elf) and store it in the database: each distinct stack once, with\n"
             "frames relative to the ELF, and per (stack, size) how many records had it.\n"
             "`coreq list-stacks --source lws` then lists the heaviest allocation sites.\n"
             "\n"
             "Each log is one transaction.  A log is identified by its content and the\n"
             "ELF's build-id: ingesting the same log again (under any name, or from\n"
             "standard input) stores nothing, so nothing is counted twice.  A log that has\n"
             "changed since, for example grown, is a new log and all its records count.\n"
             "A malformed record is reported as `coreq: LOG:LINE: warning: reason` and\n"
             "skipped; a log that cannot be read or stored makes the exit status 1.\n",
    .opt = lws_options,
    .unlisted = "size",
};

/* Parses the options of `coreq lws SUB`; returns -1 to go on, else an exit status. */
static int parse_options(int argc, char **argv, const struct cmd_spec *spec, struct lws_opts *o)
{
	cmd_core_opts_init(&o->common);
	return cmd_opts_parse(spec, argc, argv, o);
}

/* Refuses the options that a subcommand does not take. */
static int refuse(const char *cmd, bool given, const char *option)
{
	return given ? cmd_usage_error(cmd, "%s does not apply here", option) : -1;
}

/* Opens --elf (with its symbolizer and the cache) for decode and ingest. */
static int open_elf(const struct lws_opts *o, struct cq_cache **cache, struct cq_lws_elf **elf)
{
	*cache = NULL;
	*elf = NULL;
	if (!o->elf_path)
		return EXIT_OK;
	*cache = o->no_cache ? NULL : cmd_open_cache(o->cache_path);
	struct cq_error *err = cq_lws_elf_open(o->elf_path, o->common.debug_dirs, *cache, elf);
	if (err) {
		cmd_close_cache(*cache);
		*cache = NULL;
		return cmd_fail(o->elf_path, err);
	}
	return EXIT_OK;
}

/* ---- decode ---------------------------------------------------------------------- */

struct decoder {
	enum cmd_format format;
	const char *input; /* what is being decoded, for messages */
	struct cq_lws_elf *elf;
	struct cq_json j;
	bool failed;
};

static void print_symbol_text(const struct cq_stack_frame *f, bool first)
{
	if (first)
		printf("    0x%" PRIx64 ": ", f->pc);
	else
		printf("     (inlined by) ");
	printf("%s at %s:%d\n", f->function ? cmd_safe(f->function) : "??",
	       f->file ? cmd_safe(f->file) : "??", f->file ? f->line : 0);
}

static void print_frames_text(const struct cq_stack_frame *frames, size_t n)
{
	for (size_t i = 0; i < n; i++)
		print_symbol_text(&frames[i], i == 0 || frames[i - 1].kind == CQ_FRAME_NATIVE);
}

static void print_frames_json(struct cq_json *j, const struct cq_stack_frame *frames, size_t n)
{
	cq_json_key(j, "frames");
	cq_json_array_begin(j);
	for (size_t i = 0, index = 0; i < n; i++) {
		cmd_json_frame(j, &frames[i], index, 0);
		if (frames[i].kind == CQ_FRAME_NATIVE)
			index++;
	}
	cq_json_array_end(j);
}

/* Prints one line's outcome: the record, or `coreq: INPUT:LINE: reason`. */
static void print_decoded(void *ctx, const struct cq_lws_decoded *r)
{
	struct decoder *d = ctx;
	if (r->error) {
		d->failed = true;
		fprintf(stderr, "coreq: %s:%" PRIu64 ": %s\n", d->input, r->line,
		        r->error->message);
		return;
	}
	if (d->format == CMD_FORMAT_TEXT) {
		printf("%s\n", r->text);
		if (d->elf)
			print_frames_text(r->frames, r->nframes);
		return;
	}
	struct cq_json *j = &d->j;
	cq_json_object_begin(j);
	cq_json_key(j, "input");
	cq_json_string(j, d->input);
	cq_json_key(j, "line");
	cq_json_uint(j, r->line);
	cq_json_key(j, "size");
	cq_json_uint(j, r->stack->size);
	cq_json_key(j, "decoded");
	cq_json_string(j, r->text);
	print_frames_json(j, r->frames, r->nframes);
	cq_json_object_end(j);
}

static void decode_stream(struct decoder *d, const char *input, FILE *in)
{
	d->input = input;
	struct cq_error *err = cq_lws_decode_lines(in, d->elf, print_decoded, d);
	if (err) {
		d->failed = true;
		cmd_fail(input, err);
	}
}

/* One argument of lws decode: - (standard input), a file of records, or a record's text. */
static void decode_argument(struct decoder *d, const char *a)
{
	if (strcmp(a, "-") == 0) {
		decode_stream(d, "-", stdin);
		return;
	}
	/* A path (it exists, or has a '/') is a file of records; else the text itself. */
	struct stat st;
	bool pathlike = (a[0] == '/' || strncmp(a, "./", 2) == 0 || strncmp(a, "../", 3) == 0) &&
	                !strpbrk(a, " \t") && !strstr(a, "~m#");
	bool is_file = stat(a, &st) == 0 || pathlike;
	if (is_file && (stat(a, &st) != 0 || !S_ISREG(st.st_mode))) {
		d->failed = true;
		cmd_fail(a, stat(a, &st) != 0
		                ? cq_error_errno(errno, "cannot read")
		                : cq_error_create(CQ_ERR_USAGE, "not a regular file"));
		return;
	}
	FILE *in = is_file ? fopen(a, "r") : fmemopen((void *)a, strlen(a), "r");
	if (!in) {
		d->failed = true;
		cmd_fail(is_file ? a : "argument", cq_error_errno(errno, "cannot read"));
		return;
	}
	decode_stream(d, is_file ? a : "argument", in);
	fclose(in);
}

static int lws_decode(int argc, char **argv)
{
	struct lws_opts o = {0};
	int rc = parse_options(argc, argv, &decode_spec, &o);
	if (rc < 0)
		rc = refuse("lws decode", o.size, "--size");
	if (rc < 0)
		rc = refuse("lws decode", o.db, "--db");
	if (rc >= 0)
		return rc;
	struct decoder d = {.format = o.common.format};
	struct cq_cache *cache;
	if ((rc = open_elf(&o, &cache, &d.elf)) != EXIT_OK)
		return rc;
	if (d.format == CMD_FORMAT_JSON) {
		cq_json_init(&d.j, stdout);
		cq_json_object_begin(&d.j);
		cq_json_key(&d.j, "elf");
		cq_json_string(&d.j, o.elf_path);
		cq_json_key(&d.j, "records");
		cq_json_array_begin(&d.j);
	}
	if (optind == argc)
		decode_stream(&d, "-", stdin);
	for (int i = optind; i < argc; i++)
		decode_argument(&d, argv[i]);
	if (d.format == CMD_FORMAT_JSON) {
		cq_json_array_end(&d.j);
		cq_json_object_end(&d.j);
		cq_json_finish(&d.j);
	}
	cq_lws_elf_close(d.elf);
	cmd_close_cache(cache);
	return d.failed ? EXIT_INPUT : EXIT_OK;
}

/* ---- encode ---------------------------------------------------------------------- */

/* A decimal or 0x-hex number of up to 64 bits; prints a usage error if not. */
static bool parse_u64(const char *arg, const char *what, uint64_t *out)
{
	switch (cq_parse_u64(arg, true, out)) {
	case CQ_PARSE_OK:
		return true;
	case CQ_PARSE_RANGE:
		cmd_usage_error("lws encode", "%s '%s' does not fit in 64 bits", what, arg);
		return false;
	default:
		cmd_usage_error("lws encode", "%s '%s' is not a decimal or 0x-hex number", what,
		                arg);
		return false;
	}
}

static int lws_encode(int argc, char **argv)
{
	struct lws_opts o = {0};
	int rc = parse_options(argc, argv, &encode_spec, &o);
	if (rc < 0)
		rc = refuse("lws encode", o.elf_path || o.db || o.common.ndebug_dirs,
		            "--elf, --db or --debug-dir");
	if (rc >= 0)
		return rc;
	if (!o.size)
		return cmd_usage_error("lws encode", "--size N is required");
	if (argc - optind > CQ_LWS_MAX_DEPTH)
		return cmd_usage_error("lws encode", "%d addresses, the format holds at most %d",
		                       argc - optind, CQ_LWS_MAX_DEPTH);
	struct cq_lws_stack s = {.depth = (unsigned)(argc - optind)};
	if (!parse_u64(o.size, "size", &s.size))
		return EXIT_USAGE;
	for (unsigned i = 0; i < s.depth; i++)
		if (!parse_u64(argv[optind + (int)i], "address", &s.addr[i]))
			return EXIT_USAGE;
	char text[CQ_LWS_MAX_TEXT];
	struct cq_error *err = cq_lws_encode_text(&s, text, sizeof(text));
	if (err)
		return cmd_fail("lws encode", err);
	if (o.common.format == CMD_FORMAT_JSON) {
		struct cq_json j;
		cq_json_init(&j, stdout);
		cq_json_object_begin(&j);
		cq_json_key(&j, "text");
		cq_json_string(&j, text);
		cq_json_object_end(&j);
		cq_json_finish(&j);
	} else {
		puts(text);
	}
	return EXIT_OK;
}

/* ---- ingest ---------------------------------------------------------------------- */

struct ingest_run {
	const char *path; /* the log being read, for warnings */
	enum cmd_format format;
	struct cq_json j;
};

static void warn_record(void *ctx, uint64_t line, const char *message)
{
	const struct ingest_run *run = ctx;
	fprintf(stderr, "coreq: %s:%" PRIu64 ": warning: %s\n", run->path, line, message);
}

static void report_log(struct ingest_run *run, const struct cq_lws_ingest_result *r)
{
	if (run->format == CMD_FORMAT_TEXT) {
		if (r->duplicate)
			printf("%s: already ingested as lws log %lld\n", run->path,
			       (long long)r->log_id);
		else
			printf("%s: lws log %lld: %" PRIu64 " records, %zu sites, %zu stacks "
			       "(%zu new), %" PRIu64 " malformed records skipped\n",
			       run->path, (long long)r->log_id, r->records, r->sites, r->stacks,
			       r->new_stacks, r->malformed);
		return;
	}
	struct cq_json *j = &run->j;
	cq_json_object_begin(j);
	cq_json_key(j, "path");
	cq_json_string(j, run->path);
	cq_json_key(j, "log_id");
	cq_json_int(j, r->log_id);
	cq_json_key(j, "duplicate");
	cq_json_bool(j, r->duplicate);
	cq_json_key(j, "lines");
	cq_json_uint(j, r->lines);
	cq_json_key(j, "records");
	cq_json_uint(j, r->records);
	cq_json_key(j, "malformed");
	cq_json_uint(j, r->malformed);
	cq_json_key(j, "sites");
	cq_json_uint(j, r->sites);
	cq_json_key(j, "stacks");
	cq_json_uint(j, r->stacks);
	cq_json_key(j, "new_stacks");
	cq_json_uint(j, r->new_stacks);
	cq_json_object_end(j);
}

/* Ingests one log; returns whether it was read and stored. */
static bool ingest_one(struct ingest_run *run, struct cq_store *store, struct cq_lws_elf *elf,
                       const char *path)
{
	run->path = path;
	FILE *in = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	if (!in) {
		cmd_fail(path, cq_error_errno(errno, "cannot open"));
		return false;
	}
	struct cq_lws_ingest_result r;
	struct cq_error *err = cq_lws_ingest_log(store, elf, in, path, warn_record, run, &r);
	if (in != stdin)
		fclose(in);
	if (err) {
		cmd_fail(path,
		         r.lines ? cq_error_prefix(err, "after line %" PRIu64, r.lines) : err);
		return false;
	}
	report_log(run, &r);
	return true;
}

static int lws_ingest(int argc, char **argv)
{
	struct lws_opts o = {0};
	int rc = parse_options(argc, argv, &ingest_spec, &o);
	if (rc < 0)
		rc = refuse("lws ingest", o.size, "--size");
	if (rc >= 0)
		return rc;
	if (!o.elf_path)
		return cmd_usage_error("lws ingest", "--elf FILE is required");
	if (optind == argc)
		return cmd_usage_error("lws ingest", "no log given (use - for standard input)");
	struct cq_store *store;
	struct cq_error *err = cmd_open_store(o.db, &store);
	if (err)
		return cmd_fail(o.db ? o.db : "database", err);
	struct cq_cache *cache;
	struct cq_lws_elf *elf;
	if ((rc = open_elf(&o, &cache, &elf)) != EXIT_OK) {
		cq_store_close(store);
		return rc;
	}
	struct ingest_run run = {.format = o.common.format};
	if (run.format == CMD_FORMAT_JSON) {
		cq_json_init(&run.j, stdout);
		cq_json_object_begin(&run.j);
		cq_json_key(&run.j, "logs");
		cq_json_array_begin(&run.j);
	}
	bool failed = false;
	for (int i = optind; i < argc; i++)
		failed |= !ingest_one(&run, store, elf, argv[i]);
	if (run.format == CMD_FORMAT_JSON) {
		cq_json_array_end(&run.j);
		cq_json_object_end(&run.j);
		cq_json_finish(&run.j);
	}
	cq_lws_elf_close(elf);
	cmd_close_cache(cache);
	cq_store_close(store);
	return failed ? EXIT_INPUT : EXIT_OK;
}

/* ---- dispatch -------------------------------------------------------------------- */

/* The subcommands' usage lines, from their tables, then what lws is. */
static void lws_usage(FILE *out)
{
	const struct cmd_spec *specs[] = {&decode_spec, &encode_spec, &ingest_spec};
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
		fprintf(out, "%s coreq %s %s\n", i ? "      " : "Usage:", specs[i]->name,
		        specs[i]->forms);
	fputs(lws_about, out);
}

int cmd_lws(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(int argc, char **argv);
	} subcommands[] = {
	    {"decode", lws_decode},
	    {"encode", lws_encode},
	    {"ingest", lws_ingest},
	};
	if (argc < 2) {
		lws_usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		lws_usage(stdout);
		return EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++) {
		if (strcmp(argv[1], subcommands[i].name) == 0) {
			optind = 1;
			return subcommands[i].run(argc - 1, argv + 1);
		}
	}
	return cmd_usage_error("lws", "unknown subcommand '%s' (decode, encode or ingest)",
	                       argv[1]);
}
