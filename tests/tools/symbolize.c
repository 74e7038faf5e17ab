/*
 * symbolize.c - test helper: symbolize addresses of a core with libcore's
 * symbolizer alone, without unwinding, so end-to-end tests can check names,
 * lines and inline frames against eu-addr2line and gdb.
 *
 *   symbolize [--debug-dir D]... CORE ADDR...
 *
 * ADDR is hex (0x...) and may end in "r" to mark a return address.  "crash"
 * stands for the crashed thread's pc.  One line per frame, tab-separated:
 *   ADDR  MODULE  FUNCTION  FILE  LINE  inline|real
 * with "-" for unknown values.  Built with
 * `make build/asan/tests/tools/symbolize`.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/model/core.h"
#include "libcore/model/module.h"
#include "libcore/symbols/symbolizer.h"

#define MAX_DEBUG_DIRS 16

static int usage(void)
{
	fprintf(stderr, "usage: symbolize [--debug-dir D]... CORE ADDR[r]|crash...\n");
	return 2;
}

static const char *or_dash(const char *s)
{
	return s ? s : "-";
}

static bool parse_address(const struct cq_core *core, const char *arg, uint64_t *pc,
                          bool *is_return)
{
	*is_return = false;
	if (strcmp(arg, "crash") == 0) {
		const struct cq_core_thread *t = cq_core_crashed_thread(core);
		if (!t)
			return false;
		*pc = t->regs.value[core->arch->pc_reg];
		return true;
	}
	char *end;
	*pc = strtoull(arg, &end, 16);
	if (*end == 'r') {
		*is_return = true;
		end++;
	}
	return end != arg && *end == '\0';
}

static void print_frames(struct cq_core *core, struct cq_symbolizer *sym, uint64_t pc,
                         bool is_return)
{
	const struct cq_symbol_frame *frames;
	size_t n = cq_symbolizer_lookup(sym, pc, is_return, &frames);
	const struct cq_module *mod = cq_core_module_at(core, pc);
	for (size_t i = 0; i < n; i++)
		printf("0x%" PRIx64 "\t%s\t%s\t%s\t%d\t%s\t%s\n", pc, mod ? mod->name : "-",
		       or_dash(frames[i].function), or_dash(frames[i].file), frames[i].line,
		       frames[i].inlined ? "inline" : "real", or_dash(frames[i].symbol));
}

int main(int argc, char **argv)
{
	const char *dirs[MAX_DEBUG_DIRS + 1] = {NULL};
	size_t ndirs = 0;
	int i = 1;
	for (; i + 1 < argc && strcmp(argv[i], "--debug-dir") == 0 && ndirs < MAX_DEBUG_DIRS;
	     i += 2)
		dirs[ndirs++] = argv[i + 1];
	if (i >= argc)
		return usage();
	struct cq_core_options opts = {.debug_dirs = dirs};
	struct cq_core *core;
	struct cq_symbolizer *sym = NULL;
	struct cq_error *err = cq_core_open(argv[i], &opts, &core);
	if (!err)
		err = cq_symbolizer_create(core, dirs, NULL, &sym);
	if (err) {
		fprintf(stderr, "symbolize: %s: %s\n", argv[i], err->message);
		cq_error_free(err);
		if (!sym && core)
			cq_core_close(core);
		return 1;
	}
	int status = 0;
	for (i++; i < argc; i++) {
		uint64_t pc;
		bool is_return;
		if (!parse_address(core, argv[i], &pc, &is_return)) {
			fprintf(stderr, "symbolize: bad address %s\n", argv[i]);
			status = 2;
			continue;
		}
		print_frames(core, sym, pc, is_return);
	}
	cq_symbolizer_destroy(sym);
	cq_core_close(core);
	return status;
}
