/*
 * common.c - option handling and error reporting shared by the subcommands.
 */
#include "cmd/cmd.h"

#include <stdarg.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "libcore/analysis/unwind_target.h"
#include "libcore/base/arch.h"
#include "libcore/db/cache.h"
#include "libcore/pipeline/analyse.h"
#include "libcore/base/json.h"
#include "libcore/base/text.h"
#include "libcore/capture/capture.h"
#include "libcore/model/module.h"
#include "libcore/model/si_code.h"
#include "libcore/analysis/stacktrace.h"
#include "libcore/store/store.h"
#include "libcore/triage/rules.h"

void cmd_core_opts_init(struct cmd_core_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->format = CMD_FORMAT_TEXT;
}

bool cmd_parse_format(const char *arg, enum cmd_format *out, const char *cmd)
{
	if (strcmp(arg, "text") == 0)
		*out = CMD_FORMAT_TEXT;
	else if (strcmp(arg, "json") == 0)
		*out = CMD_FORMAT_JSON;
	else {
		cmd_usage_error(cmd, "--format must be text or json, not '%s'", arg);
		return false;
	}
	return true;
}

bool cmd_parse_bytes(const char *arg, uint64_t *out, const char *cmd, const char *option)
{
	static const char suffixes[] = "KMGT";
	char *end;
	errno = 0;
	unsigned long long v = strtoull(arg, &end, 10);
	unsigned shift = 0;
	const char *s = *end ? strchr(suffixes, *end) : NULL;
	if (s && *s) {
		shift = 10 * (unsigned)(s - suffixes + 1);
		end++;
		if (*end == 'i' && end[1] == 'B')
			end += 2;
		else if (*end == 'B')
			end++;
	}
	if (errno || end == arg || *end || arg[0] == '-' || (shift && v > (UINT64_MAX >> shift))) {
		cmd_usage_error(cmd, "%s takes a byte count (e.g. 4096, 512M, 8G), not '%s'",
		                option, arg);
		return false;
	}
	*out = (uint64_t)v << shift;
	return true;
}

const char *cmd_safe(const char *s)
{
	static struct {
		char *buf;
		size_t cap;
	} ring[8];
	static unsigned next;
	if (!s || cq_text_is_safe(s))
		return s;
	unsigned i = next++ % (sizeof(ring) / sizeof(ring[0]));
	return cq_text_escape(s, &ring[i].buf, &ring[i].cap);
}

int cmd_fail(const char *path, struct cq_error *err)
{
	cmd_print_error(path, err);
	cq_error_free(err);
	return EXIT_INPUT;
}

void cmd_print_error(const char *path, const struct cq_error *err)
{
	fprintf(stderr, "coreq: %s: %s\n", cmd_safe(path), cmd_safe(err ? err->message : "failed"));
}

void cmd_warn(const char *path, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *message = NULL;
	if (vasprintf(&message, fmt, ap) < 0)
		message = NULL;
	va_end(ap);
	fprintf(stderr, "coreq: %s: warning: %s\n", cmd_safe(path),
	        message ? cmd_safe(message) : "(out of memory)");
	free(message);
}

int cmd_option_error(const char *cmd, int opt, char **argv)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "?";
	if (opt == ':')
		return cmd_usage_error(cmd, "option '%s' needs a value", arg);
	if (optopt && optopt < 0x100 && strncmp(arg, "--", 2) != 0)
		return cmd_usage_error(cmd, "unknown option '-%c'", optopt);
	return cmd_usage_error(cmd, "unknown option '%s'", arg);
}

int cmd_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "coreq %s: ", cmd);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\nTry 'coreq %s --help'.\n", cmd);
	va_end(ap);
	return EXIT_USAGE;
}

/* The analysis's opened: warn about a damaged core. */
static struct cq_error *analysis_opened(void *arg, const char *path, const struct cq_analysis *a,
                                        bool *stop)
{
	(void)arg;
	(void)stop;
	cmd_warn_damaged_core(path, a->core);
	return NULL;
}

/* The analysis's open_cache: the cache as chosen, opened when first needed. */
static struct cq_cache *analysis_open_cache(void *arg)
{
	const struct cmd_cache_choice *cache = arg;
	return cache->use ? cmd_open_cache(cache->path) : NULL;
}

struct cq_error *cmd_analyse(const char *path, const struct cmd_core_opts *o,
                             const struct cq_stack_options *so,
                             const struct cmd_cache_choice *cache, bool waits,
                             struct cq_analysis *out)
{
	struct cq_stack_options stacks = *so;
	stacks.cache = NULL;
	stacks.debug_dirs = o->core.debug_dirs;
	struct cq_analyse_options ao = {.core = &o->core,
	                                .stacks = &stacks,
	                                .waits = waits,
	                                .open_cache = analysis_open_cache,
	                                .open_cache_arg = (void *)cache,
	                                .opened = analysis_opened};
	return cq_analyse(path, &ao, out);
}

void cmd_analysis_free(struct cq_analysis *a)
{
	struct cq_cache *cache = a->opened_cache;
	a->opened_cache = NULL;
	cq_analysis_free(a);
	cmd_close_cache(cache); /* after the stacks: their symbolizer reads it */
}

void cmd_warn_damaged_core(const char *path, const struct cq_core *core)
{
	if (core->memory_missing)
		cmd_warn(path, "core is truncated: %llu of %llu bytes of dumped memory are missing",
		         (unsigned long long)core->memory_missing,
		         (unsigned long long)core->memory_dumped);
	if (core->source.cut_at)
		cmd_warn(path,
		         "decompressed core cut at %llu bytes (--max-core-size, or the free space "
		         "where it is spooled): the rest of the stream was not read",
		         (unsigned long long)core->source.cut_at);
	const struct cq_module *main_mod = cq_core_main_module(core);
	if (main_mod && main_mod->status == CQ_MODULE_MISSING && core->options.sysroot &&
	    !core->options.exe)
		cmd_warn(path,
		         "%s: not under --sysroot %s (its file at that path is not used: give it "
		         "with --exe)",
		         main_mod->name, core->options.sysroot);
	else if (!main_mod && core->mappings_from_link_map)
		cmd_warn(path,
		         "%s: no file for the executable here (--exe, under --sysroot, or at "
		         "that path without --sysroot): its frames are not named; its libraries "
		         "come from the dynamic loader's list",
		         core->execfn[0] ? core->execfn : core->fname);
	for (size_t m = 0; m < core->nmodules; m++) {
		const struct cq_module *mod = &core->modules[m];
		if (mod->status == CQ_MODULE_MISMATCH)
			cmd_warn(
			    path,
			    "%s: build-id differs from the core's (rebuilt after the crash?): its "
			    "frames are not named",
			    mod->is_main && core->options.exe ? core->options.exe : mod->name);
	}
	if (core->duplicate_tids)
		cmd_warn(path,
		         "%zu thread%s repeat%s another thread's tid (a damaged or forged core?): "
		         "every thread is kept, in note order",
		         core->duplicate_tids, core->duplicate_tids == 1 ? "" : "s",
		         core->duplicate_tids == 1 ? "s" : "");
}

bool cmd_parse_count(const char *arg, unsigned min, unsigned max, unsigned *out, const char *cmd,
                     const char *name)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v < min || v > max) {
		cmd_usage_error(cmd, "%s takes a whole number from %u to %u, not '%s'", name, min,
		                max, arg);
		return false;
	}
	*out = (unsigned)v;
	return true;
}

struct cq_cache *cmd_open_cache(const char *path)
{
	char *def = path ? NULL : cq_cache_default_path();
	const char *use = path ? path : def;
	struct cq_cache *cache = NULL;
	if (use) {
		struct cq_error *err = cq_cache_open(use, &cache);
		if (err) {
			cmd_warn(use, "cache unavailable, continuing without it: %s", err->message);
			cq_error_free(err);
		}
	}
	free(def);
	return cache;
}

int cmd_open_rules_and_store(const char *rules_path, const char *db, struct cq_bucket_rules **rules,
                             struct cq_store **store)
{
	struct cq_error *err = cq_bucket_rules_load(rules_path, rules);
	if (err)
		return cmd_fail(rules_path ? rules_path : "rules", err);
	if ((err = cmd_open_store(db, store))) {
		cq_bucket_rules_free(*rules);
		*rules = NULL;
		return cmd_fail(db ? db : "database", err);
	}
	return EXIT_OK;
}

void cmd_close_cache(struct cq_cache *cache)
{
	if (!cache)
		return;
	size_t n = cq_cache_rejected(cache);
	char *path = strdup(cq_cache_path(cache));
	if (n)
		cmd_warn(path ? path : "cache",
		         "%zu damaged cache entr%s ignored and rebuilt from the modules", n,
		         n == 1 ? "y" : "ies");
	struct cq_error *err = cq_cache_close(cache);
	if (err)
		cmd_warn(path ? path : "cache", "%s", err->message);
	cq_error_free(err);
	free(path);
}

void cmd_print_si_code(int64_t signo, int64_t code, const struct cmd_sender *sender)
{
	const struct cq_si_code *what = cq_si_code_find(signo, code);
	printf(", si_code %lld", (long long)code);
	if (what)
		printf(" (%s: %s)", what->name, what->description);
	if (!sender)
		return;
	if (sender->self && !sender->claimed) {
		printf(", raised by the process itself");
		return;
	}
	if (sender->self)
		printf(", sent by the process itself (uid %lld)", (long long)sender->uid);
	else
		printf(", sent by pid %lld (uid %lld)", (long long)sender->pid,
		       (long long)sender->uid);
	if (sender->claimed)
		printf(" as the signal claims (%s)",
		       what && what->kernel_fills_sender
		           ? "a process can queue itself a signal that names any sender"
		           : "whoever queued it wrote these");
}

void cmd_print_conflicts(const char *conflicts)
{
	if (conflicts)
		printf("conflicts:   %s (the core's values are shown)\n", cmd_safe(conflicts));
}

void cmd_json_conflicts(struct cq_json *j, const char *conflicts)
{
	cq_json_key(j, "meta_conflicts");
	cq_json_string(j, conflicts);
}

void cmd_json_sender(struct cq_json *j, const struct cq_si_code *what,
                     const struct cmd_sender *sender)
{
	cq_json_key(j, "si_code_name");
	cq_json_string(j, what ? what->name : NULL);
	cq_json_key(j, "sender_pid");
	if (sender)
		cq_json_int(j, sender->pid);
	else
		cq_json_null(j);
	cq_json_key(j, "sender_uid");
	if (sender)
		cq_json_int(j, sender->uid);
	else
		cq_json_null(j);
	cq_json_key(j, "sender_claimed");
	if (sender)
		cq_json_bool(j, sender->claimed);
	else
		cq_json_null(j);
}

static void json_signal(struct cq_json *j, const struct cq_core *core)
{
	int sig = cq_core_signal(core);
	cq_json_key(j, "signal");
	cq_json_int(j, sig);
	cq_json_key(j, "signal_name");
	cq_json_string(j, cq_core_signal_name(sig));
	const struct cq_core_siginfo *si = &core->siginfo;
	cq_json_key(j, "si_code");
	if (si->present)
		cq_json_int(j, si->code);
	else
		cq_json_null(j);
	cmd_json_sender(j, si->present ? cq_si_code_find(si->signo, si->code) : NULL,
	                si->has_sender ? &(struct cmd_sender){si->sender_pid, si->sender_uid, false,
	                                                      cq_core_sender_claimed(core)}
	                               : NULL);
	cq_json_key(j, "fault_address");
	if (core->siginfo.has_addr)
		cq_json_hex(j, core->siginfo.addr);
	else
		cq_json_null(j);
}

/* The "core" object shared by every command's JSON (shape in DESIGN.md). */
void cmd_json_core(struct cq_json *j, const struct cq_core *core, const struct cq_capture *cap)
{
	struct cq_capture_ids ids;
	cq_capture_ids(core, cap, &ids);
	cq_json_key(j, "core");
	cq_json_object_begin(j);
	cq_json_key(j, "path");
	cq_json_string(j, core->path);
	cq_json_key(j, "pid");
	cq_json_int(j, ids.pid);
	cq_json_key(j, "exe");
	cq_json_string(j, cq_core_exe(core, NULL));
	cq_json_key(j, "cmdline");
	cq_json_string(j, core->has_psinfo ? core->psargs : NULL);
	cq_json_key(j, "arch");
	cq_json_string(j, core->arch->name);
	json_signal(j, core);
	cq_json_key(j, "snapshot");
	cq_json_string(j, cq_core_snapshot_name(core->snapshot));
	cq_json_key(j, "crashed_tid");
	const struct cq_core_thread *crashed = cq_core_crashed_thread(core);
	if (crashed)
		cq_json_int(j, crashed->tid);
	else
		cq_json_null(j);
	cq_json_key(j, "truncated");
	cq_json_bool(j, core->memory_missing > 0 || core->source.cut_at ||
	                    cq_source_frame_stats(&core->source).bad > 0 ||
	                    cq_source_read(&core->source).bad_chunks > 0);
	cq_json_key(j, "cut_at");
	if (core->source.cut_at)
		cq_json_uint(j, core->source.cut_at);
	else
		cq_json_null(j);
	cq_json_key(j, "memory_missing");
	cq_json_uint(j, core->memory_missing);
	if (cap && cap->conflicts[0])
		cmd_json_conflicts(j, cap->conflicts);
	cq_json_object_end(j);
}

struct cq_error *cmd_open_store(const char *path, struct cq_store **out)
{
	char *def = path ? NULL : cq_store_default_path();
	if (!path && !def)
		return cq_error_create(CQ_ERR_USAGE, "no database path: use --db or set COREQ_DB");
	struct cq_error *err = cq_store_open(path ? path : def, out);
	free(def);
	return err;
}

static int open_store_mode(const char *path, enum cq_store_open_how how, struct cq_store **out)
{
	char *def = path ? NULL : cq_store_default_path();
	if (!path && !def) {
		fprintf(stderr, "coreq: no database path: use --db or set COREQ_DB\n");
		return EXIT_INPUT;
	}
	const char *use = path ? path : def;
	struct cq_error *err = cq_store_open_mode(use, how, out);
	int rc = err ? cmd_fail(use, err) : EXIT_OK;
	free(def);
	return rc;
}

int cmd_open_store_query(const char *path, struct cq_store **out)
{
	return open_store_mode(path, CQ_STORE_READ_ONLY, out);
}

int cmd_open_store_existing(const char *path, struct cq_store **out)
{
	return open_store_mode(path, CQ_STORE_EXISTING, out);
}

/* Seconds in a unit of a relative time ("7d", "2 hours"), or 0. */
static int64_t unit_seconds(const char *u, size_t n)
{
	static const struct {
		const char *name;
		int64_t secs;
	} units[] = {{"s", 1},     {"sec", 1},     {"second", 1},    {"m", 60},
	             {"min", 60},  {"minute", 60}, {"h", 3600},      {"hour", 3600},
	             {"d", 86400}, {"day", 86400}, {"w", 7 * 86400}, {"week", 7 * 86400}};
	if (n > 1 && u[n - 1] == 's' && n > 3)
		n--; /* plural */
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strlen(units[i].name) == n && strncmp(u, units[i].name, n) == 0)
			return units[i].secs;
	return 0;
}

/* Midnight (local time) days days after today's. */
static int64_t local_midnight(int days)
{
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
	tm.tm_mday += days;
	tm.tm_isdst = -1;
	return (int64_t)mktime(&tm);
}

/*
 * Unix seconds from an absolute time ("YYYY-MM-DD", "YYYY-MM-DDTHH:MM:SS"
 * UTC, or digits) or one relative to now, as coredumpctl takes them: "-7d",
 * "-2h", "2h ago", "3 days ago", "now", "today", "yesterday" (local midnight).
 */
bool cmd_parse_time(const char *s, int64_t *out)
{
	char *end;
	int64_t now = (int64_t)time(NULL);
	if (strcmp(s, "now") == 0) {
		*out = now;
		return true;
	}
	if (strcmp(s, "today") == 0 || strcmp(s, "yesterday") == 0) {
		*out = local_midnight(s[0] == 'y' ? -1 : 0);
		return true;
	}
	if (strspn(s, "0123456789") == strlen(s) && *s) {
		*out = strtoll(s, &end, 10);
		return true;
	}
	/* "-7d", "7d ago", "7 days ago" */
	const char *p = s[0] == '-' ? s + 1 : s;
	if (*p >= '0' && *p <= '9') {
		errno = 0;
		long long v = strtoll(p, &end, 10);
		while (*end == ' ')
			end++;
		size_t n = strcspn(end, " ");
		int64_t unit = unit_seconds(end, n);
		const char *rest = end + n;
		while (*rest == ' ')
			rest++;
		bool ago = strcmp(rest, "ago") == 0;
		if (!errno && unit && v >= 0 && v <= INT64_MAX / unit / 2 &&
		    ((s[0] == '-' && !*rest) || (s[0] != '-' && ago))) {
			*out = now - (int64_t)v * unit;
			return true;
		}
	}
	struct tm tm = {0};
	end = strptime(s, "%Y-%m-%d", &tm);
	if (end && *end == 'T')
		end = strptime(end + 1, "%H:%M:%S", &tm);
	if (!end || *end)
		return false;
	*out = (int64_t)timegm(&tm);
	return true;
}

int cmd_time_option(const char *cmd, const char *option, const char *arg, int64_t *out)
{
	if (cmd_parse_time(arg, out))
		return EXIT_OK;
	return cmd_usage_error(cmd, "%s takes %s, not '%s'", option, CMD_TIME_FORMS, arg);
}

void cmd_iso_time(long long secs, char buf[32])
{
	time_t t = (time_t)secs;
	struct tm tm;
	if (!gmtime_r(&t, &tm) || !strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, 32, "%lld", secs);
}

void cmd_warn_analysis(const char *path, const struct cq_core *core, const struct cq_stacks *stacks)
{
	for (size_t m = 0; m < core->nmodules; m++) {
		const struct cq_error *e = cq_core_target_cfi_error(&core->modules[m]);
		if (e)
			cmd_warn(path, "%s: unwind table unusable, frame pointers used instead: %s",
			         core->modules[m].name, e->message);
	}
	for (size_t i = 0; i < stacks->warnings.n; i++)
		if (stacks->warnings.v[i].type == CQ_STAT_STRING && stacks->warnings.v[i].s)
			cmd_warn(path, "%s", stacks->warnings.v[i].s);
	struct cq_source_frame_stats fs = cq_source_frame_stats(&core->source);
	if (fs.bad)
		cmd_warn(path,
		         "%llu of the %llu frames of the compressed core would not decompress to "
		         "the size its seek table gives: their bytes read as zeros",
		         (unsigned long long)fs.bad, (unsigned long long)fs.frames);
	struct cq_source_read rd = cq_source_read(&core->source);
	if (rd.bad_chunks)
		cmd_warn(
		    path,
		    "%llu chunks of 2 MiB of the compressed core could not be read again (no "
		    "room to spool it for the pages the first pass dropped): they read as zeros",
		    (unsigned long long)rd.bad_chunks);
}

void cmd_json_frame(struct cq_json *j, const struct cq_stack_frame *f, size_t index, int64_t thread)
{
	cq_json_object_begin(j);
	cmd_json_frame_fields(j, f, index);
	cq_json_key(j, "thread");
	if (thread > 0)
		cq_json_int(j, thread);
	else
		cq_json_null(j);
	cq_json_object_end(j);
}

void cmd_json_frame_fields(struct cq_json *j, const struct cq_stack_frame *f, size_t index)
{
	char hex[2 * CQ_BUILD_ID_MAX + 1] = "";
	if (f->module)
		cq_module_build_id_hex(f->module, hex, sizeof(hex));
	bool code = f->object == 0; /* a suspended future has no code address */
	cq_json_key(j, "index");
	cq_json_uint(j, index);
	cq_json_key(j, "pc");
	if (code)
		cq_json_hex(j, f->pc);
	else
		cq_json_null(j);
	cq_json_key(j, "kind");
	cq_json_string(j, cq_frame_kind_name(f->kind));
	cq_json_key(j, "trust");
	cq_json_string(j, cq_unwind_trust_name(f->trust));
	cq_json_key(j, "module");
	cq_json_string(j, f->module ? f->module->name : NULL);
	cq_json_key(j, "build_id");
	cq_json_string(j, hex[0] ? hex : NULL);
	cq_json_key(j, "offset");
	if (f->module && code)
		cq_json_hex(j, f->offset);
	else
		cq_json_null(j);
	cq_json_key(j, "function");
	cq_json_string(j, f->function);
	cq_json_key(j, "symbol");
	cq_json_string(j, f->symbol);
	cq_json_key(j, "file");
	cq_json_string(j, f->file);
	cq_json_key(j, "line");
	if (f->line > 0)
		cq_json_int(j, f->line);
	else
		cq_json_null(j);
	cq_json_key(j, "state");
	cq_json_string(j, f->state);
	cq_json_key(j, "object");
	if (f->object)
		cq_json_hex(j, f->object);
	else
		cq_json_null(j);
	cq_json_key(j, "repeat");
	cq_json_uint(j, f->repeat > 1 ? f->repeat : 1);
	cq_json_key(j, "joined_async");
	cq_json_string(j, f->joined);
	cq_json_key(j, "thread_switch");
	if (f->thread_switch)
		cq_json_int(j, f->thread_switch);
	else
		cq_json_null(j);
	cq_json_key(j, "module_status");
	cq_json_string(j, f->module ? cq_module_status_name(f->module->status) : NULL);
}

void cmd_json_thread_id(struct cq_json *j, int64_t tid, const char *name, bool crashed)
{
	cq_json_key(j, "tid");
	cq_json_int(j, tid);
	cq_json_key(j, "name");
	cq_json_string(j, name);
	cq_json_key(j, "crashed");
	cq_json_bool(j, crashed);
}
