/*
 * info.c - `coreq info CORE`: what the core says about the process, its
 * threads and its modules, as text or JSON (shape in DESIGN.md).
 */
#include "cmd/cmd.h"
#include "cmd/options.h"
#include "libcore/capture/capture.h"
#include "libcore/analysis/stacktrace.h"
#include "libcore/analysis/waits.h"
#include "libcore/pipeline/analyse.h"
#include "cmd/wait_text.h"

#include <inttypes.h>
#include <string.h>

#include "libcore/base/json.h"
#include "libcore/model/module.h"

struct info_args {
	struct cmd_core_opts o;
};

static const struct cmd_opt info_options[] = {
    CMD_ROWS_CORE(struct info_args, o),
    CMD_OPT_END,
};

static const struct cmd_spec info_spec = {
    .name = "info",
    .forms = "[OPTIONS] CORE",
    .about = "Print what a core file records: pid, executable, command line, signal\n"
             "(name, si_code and its kernel name, fault address, or the pid and uid of\n"
             "the process that sent it), the crashing thread, every thread (tid, pc, sp)\n"
             "and every mapped module (path, build-id, address range, and whether the\n"
             "file on this host is found, missing, or has a different build-id), and\n"
             "how the core's bytes were read (mapped, seekable frames, stream, spooled:\n"
             "the compression, the bytes held, whether a stream needed a second pass).\n"
             "When threads are blocked on locks, a summary of the wait-for graph\n"
             "(deadlocks, the threads the others wait for; see coreq stack).\n"
             "\n"
             "CORE is a path, '-' for standard input, or a zstd/lz4/xz/gzip/bzip2 file.\n",
    .opt = info_options,
};
static void json_modules(struct cq_json *j, const struct cq_core *core)
{
	char hex[2 * CQ_BUILD_ID_MAX + 1];
	cq_json_key(j, "modules");
	cq_json_array_begin(j);
	for (size_t i = 0; i < core->nmodules; i++) {
		const struct cq_module *m = &core->modules[i];
		cq_module_build_id_hex(m, hex, sizeof(hex));
		cq_json_object_begin(j);
		cq_json_key(j, "path");
		cq_json_string(j, m->name);
		cq_json_key(j, "build_id");
		cq_json_string(j, hex[0] ? hex : NULL);
		cq_json_key(j, "start");
		cq_json_hex(j, m->start);
		cq_json_key(j, "end");
		cq_json_hex(j, m->end);
		cq_json_key(j, "status");
		cq_json_string(j, cq_module_status_name(m->status));
		cq_json_key(j, "file");
		cq_json_string(j, m->file_path);
		cq_json_object_end(j);
	}
	cq_json_array_end(j);
}

static void json_mappings(struct cq_json *j, const struct cq_core *core)
{
	cq_json_key(j, "mappings");
	cq_json_array_begin(j);
	for (size_t i = 0; i < core->nmappings; i++) {
		const struct cq_core_mapping *m = &core->mappings[i];
		cq_json_object_begin(j);
		cq_json_key(j, "start");
		cq_json_hex(j, m->start);
		cq_json_key(j, "end");
		cq_json_hex(j, m->end);
		cq_json_key(j, "offset");
		cq_json_hex(j, m->file_offset);
		cq_json_key(j, "path");
		cq_json_string(j, m->path);
		cq_json_object_end(j);
	}
	cq_json_array_end(j);
}

/* What the capture says beside the notes: crash time and host (NULL/0 when unknown). */
struct capture_facts {
	char time[32];
	const char *hostname;
	const struct cq_capture *cap;
	const char *conflicts; /* where it disagrees with the notes; NULL: nowhere */
};

static void capture_facts(const struct cq_capture *cap, struct capture_facts *f)
{
	f->cap = cap;
	f->time[0] = '\0';
	if (cap->known & CQ_CAPTURE_TIMESTAMP)
		cmd_iso_time(cap->timestamp_us / 1000000, f->time);
	f->hostname = cap->hostname[0] ? cap->hostname : NULL;
	f->conflicts = cap->conflicts[0] ? cap->conflicts : NULL;
}

/* How the core's bytes were read (the "read" member). */
static void json_read(struct cq_json *j, const struct cq_core *core)
{
	struct cq_source_read rd = cq_source_read(&core->source);
	cq_json_key(j, "read");
	cq_json_object_begin(j);
	cq_json_key(j, "how");
	cq_json_string(j, rd.how);
	cq_json_key(j, "compression");
	cq_json_string(j, rd.compression);
	cq_json_key(j, "bytes");
	cq_json_uint(j, rd.size);
	cq_json_key(j, "held_bytes");
	cq_json_uint(j, rd.held);
	cq_json_key(j, "second_pass");
	cq_json_bool(j, rd.second_pass);
	cq_json_key(j, "heap_hint");
	cq_json_bool(j, rd.heap_hint);
	cq_json_key(j, "scan_hint");
	cq_json_bool(j, rd.scan_hint);
	cq_json_key(j, "scan_kept_bytes");
	cq_json_uint(j, rd.scan_kept_bytes);
	cq_json_key(j, "scan_gave_up");
	cq_json_bool(j, rd.scan_gave_up);
	cq_json_object_end(j);
}

static void print_json(const struct cq_core *core, const struct capture_facts *cf,
                       const struct cq_thread_stack *crashed_stack, const struct cq_waits *waits)
{
	const struct cq_arch *arch = core->arch;
	struct cq_json j;
	cq_json_init(&j, stdout);
	cq_json_object_begin(&j);
	cmd_json_core(&j, core, cf->cap);
	struct cq_capture_ids ids;
	cq_capture_ids(core, cf->cap, &ids);
	cq_json_key(&j, "uid");
	if (ids.has_uid)
		cq_json_uint(&j, (uint64_t)ids.uid);
	else
		cq_json_null(&j);
	cq_json_key(&j, "gid");
	if (ids.has_gid)
		cq_json_uint(&j, (uint64_t)ids.gid);
	else
		cq_json_null(&j);
	cq_json_key(&j, "time");
	cq_json_string(&j, cf->time[0] ? cf->time : NULL);
	cq_json_key(&j, "hostname");
	cq_json_string(&j, cf->hostname);
	json_read(&j, core);
	cq_json_key(&j, "crashed_stack");
	cq_json_array_begin(&j);
	for (size_t i = 0; crashed_stack && i < crashed_stack->nframes; i++)
		cmd_json_frame(&j, &crashed_stack->frames[i], i, crashed_stack->thread->tid);
	cq_json_array_end(&j);

	cq_json_key(&j, "threads");
	cq_json_array_begin(&j);
	for (size_t i = 0; i < core->nthreads; i++) {
		const struct cq_core_thread *t = &core->threads[i];
		cq_json_object_begin(&j);
		cmd_json_thread_id(&j, t->tid, t->name, t->crashed);
		cq_json_key(&j, "pc");
		cq_json_hex(&j, t->regs.value[arch->pc_reg]);
		cq_json_key(&j, "sp");
		cq_json_hex(&j, t->regs.value[arch->sp_reg]);
		cq_json_object_end(&j);
	}
	cq_json_array_end(&j);
	json_modules(&j, core);
	json_mappings(&j, core);
	cmd_waits_json(&j, core, waits);
	cq_json_object_end(&j);
	cq_json_finish(&j);
}

/* Who the process was, and what the capture adds: the lines before the read. */
static void print_process_text(const struct cq_core *core, const struct capture_facts *cf)
{
	const char *exe = cq_core_exe(core, NULL);
	printf("core:        %s\n", cmd_safe(core->path));
	struct cq_capture_ids ids;
	cq_capture_ids(core, cf->cap, &ids);
	printf("pid:         %lld\n", (long long)ids.pid);
	printf("exe:         %s\n", exe ? cmd_safe(exe) : "-");
	printf("cmdline:     %s\n", core->has_psinfo ? cmd_safe(core->psargs) : "-");
	if (ids.has_uid || ids.has_gid) {
		char uid[24] = "-", gid[24] = "-";
		if (ids.has_uid)
			snprintf(uid, sizeof(uid), "%lld", (long long)ids.uid);
		if (ids.has_gid)
			snprintf(gid, sizeof(gid), "%lld", (long long)ids.gid);
		printf("uid/gid:     %s/%s\n", uid, gid);
	}
	printf("time:        %s\n", cf->time[0] ? cf->time : "unknown (not captured)");
	if (cf->hostname)
		printf("hostname:    %s\n", cmd_safe(cf->hostname));
	cmd_print_conflicts(cf->conflicts);
	printf("arch:        %s\n", core->arch->name);
}

/* The read: line, how the core's bytes were read. */
static void print_read_text(const struct cq_core *core)
{
	struct cq_source_read rd = cq_source_read(&core->source);
	printf("read:        %s", rd.how);
	if (strcmp(rd.compression, "none") != 0)
		printf(", %s", rd.compression);
	if (strcmp(rd.how, "mapped") != 0)
		printf(", %.1f of %.1f MiB held%s", rd.held / 1048576.0, rd.size / 1048576.0,
		       rd.second_pass ? " (a page not kept was read: spooled too)"
		       : rd.heap_hint
		           ? " (an earlier core of this build had its heap read: kept whole)"
		           : "");
	if (rd.scan_hint)
		printf(rd.scan_gave_up
		           ? "; the heap scan's words an earlier core of this build noted "
		             "were looked for, in vain (too many pages hold them, or the "
		             "stream did not let every word be seen)"
		           : "; the heap scan's words an earlier core of this build noted "
		             "were looked for: %.0f KiB of pages hold them",
		       rd.scan_kept_bytes / 1024.0);
	printf("\n");
}

/* The signal (or the snapshot), the crashed thread, and what is missing. */
static void print_signal_text(const struct cq_core *core)
{
	const struct cq_core_thread *crashed = cq_core_crashed_thread(core);
	int sig = cq_core_signal(core);
	const char *signame = cq_core_signal_name(sig);
	if (core->snapshot)
		printf("snapshot:    %s (a live process: no thread crashed)\n",
		       cq_core_snapshot_name(core->snapshot));
	else
		printf("signal:      %d (%s)", sig, signame ? signame : "unknown");
	if (core->siginfo.present && !core->snapshot) {
		const struct cq_core_siginfo *si = &core->siginfo;
		struct cmd_sender sender = {si->sender_pid, si->sender_uid,
		                            cq_core_signal_from_self(core),
		                            cq_core_sender_claimed(core)};
		cmd_print_si_code(si->signo, si->code, si->has_sender ? &sender : NULL);
	}
	if (core->siginfo.has_addr && !core->snapshot)
		printf(", fault address 0x%" PRIx64, core->siginfo.addr);
	if (crashed)
		printf("\ncrashed tid: %d\n", crashed->tid);
	if (core->memory_missing)
		printf("truncated:   %" PRIu64 " of %" PRIu64 " bytes of memory missing\n",
		       core->memory_missing, core->memory_dumped);
}

/* The tables: threads, modules, mapped files. */
static void print_tables_text(const struct cq_core *core)
{
	const struct cq_arch *arch = core->arch;
	printf("\nthreads (%zu):\n", core->nthreads);
	printf("  %-3s%-10s %-18s %-18s %s\n", "", "TID", "PC", "SP", "NAME");
	for (size_t i = 0; i < core->nthreads; i++) {
		const struct cq_core_thread *t = &core->threads[i];
		printf("  %-3s%-10d 0x%016" PRIx64 " 0x%016" PRIx64 " %s\n", t->crashed ? "*" : "",
		       t->tid, t->regs.value[arch->pc_reg], t->regs.value[arch->sp_reg],
		       t->name ? cmd_safe(t->name) : "");
	}
	printf("\nmodules (%zu):\n", core->nmodules);
	printf("  %-18s %-18s %-9s %-40s %s\n", "START", "END", "STATUS", "BUILD-ID", "PATH");
	char hex[2 * CQ_BUILD_ID_MAX + 1];
	for (size_t i = 0; i < core->nmodules; i++) {
		const struct cq_module *m = &core->modules[i];
		cq_module_build_id_hex(m, hex, sizeof(hex));
		printf("  0x%016" PRIx64 " 0x%016" PRIx64 " %-9s %-40s %s\n", m->start, m->end,
		       cq_module_status_name(m->status), hex[0] ? hex : "-", cmd_safe(m->name));
	}
	printf("\nmapped files (%zu):\n", core->nmappings);
	for (size_t i = 0; i < core->nmappings; i++) {
		const struct cq_core_mapping *m = &core->mappings[i];
		printf("  0x%016" PRIx64 " 0x%016" PRIx64 " %08" PRIx64 " %s\n", m->start, m->end,
		       m->file_offset, cmd_safe(m->path));
	}
}

static void print_text(const struct cq_core *core, const struct capture_facts *cf,
                       const struct cq_thread_stack *crashed_stack, const struct cq_waits *waits)
{
	print_process_text(core, cf);
	print_read_text(core);
	print_signal_text(core);
	if (cmd_waits_summary_says(core, waits)) {
		printf("\nwaits (threads blocked on locks):\n");
		cmd_waits_summary(stdout, core, waits);
	}
	print_tables_text(core);
	if (crashed_stack) {
		printf("\nstack of the crashed thread %d:\n", crashed_stack->thread->tid);
		for (size_t i = 0; i < crashed_stack->nframes; i++)
			cmd_print_frame_text(stdout, &crashed_stack->frames[i], i);
	}
}

int cmd_info(int argc, char **argv)
{
	struct info_args i;
	cmd_core_opts_init(&i.o);
	int rc = cmd_opts_parse(&info_spec, argc, argv, &i);
	if (rc != CMD_OPTS_GO_ON)
		return rc;
	if (optind + 1 != argc)
		return cmd_usage_error("info", "expected exactly one CORE argument");
	const char *path = argv[optind];
	/* The crashed thread's stack, as coredumpctl info shows it (native frames only). */
	struct cq_stack_options so;
	cq_stack_options_default(&so);
	so.async = false;
	struct cmd_cache_choice cache = {.use = true};
	struct cq_analysis a;
	struct cq_error *err = cmd_analyse(path, &i.o, &so, &cache, true, &a);
	if (err && (!a.core || a.stacks)) { /* no core, or only the wait-for graph failed */
		cmd_analysis_free(&a);
		return cmd_fail(path, err);
	}
	if (err) { /* the facts of the notes still stand without it */
		cmd_warn(path, "no stack for the crashed thread: %s", err->message);
		cq_error_free(err);
	}
	struct capture_facts cf;
	capture_facts(&a.capture, &cf);
	const struct cq_thread_stack *crashed =
	    a.stacks && a.stacks->nthreads && !a.core->snapshot ? &a.stacks->threads[0] : NULL;
	if (i.o.format == CMD_FORMAT_JSON)
		print_json(a.core, &cf, crashed, a.waits);
	else
		print_text(a.core, &cf, crashed, a.waits);
	cmd_analysis_free(&a);
	return EXIT_OK;
}
