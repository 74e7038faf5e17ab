/*
 * test_notes.c - the core note parser (libcore/model/notes.h) on x86_64
 * cores written by hand (core_writer.h): threads and their registers from
 * NT_PRSTATUS, the process from NT_PRPSINFO, the signal from NT_SIGINFO, the
 * auxv up to AT_NULL, and NT_FILE mappings; then hostile notes, each of which
 * must fail the open with a reason rather than be half-believed.
 *
 * Files tested: libcore/model/notes.c, libcore/model/core.c.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/model/core.h"
#include "tests/unit/core_writer.h"

static char path[64];

static void auxv_pair(uint8_t *d, unsigned i, uint64_t type, uint64_t val)
{
	cw_put(d + 16 * i, type, 8);
	cw_put(d + 16 * i + 8, val, 8);
}

/* NT_FILE with the given count, page size and entries (start, end, pgoff). */
static void file_note(struct core_writer *w, uint64_t count, uint64_t page, const uint64_t (*e)[3],
                      unsigned n, const char *names, size_t names_len)
{
	uint8_t d[512] = {0};
	cw_put(d, count, 8);
	cw_put(d + 8, page, 8);
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = 0; j < 3; j++)
			cw_put(d + 16 + 24 * i + 8 * j, e[i][j], 8);
	memcpy(d + 16 + 24 * n, names, names_len);
	cw_note(w, "CORE", NT_FILE, d, 16 + 24 * n + names_len);
}

static struct cq_error *open_written(const struct core_writer *w, uint64_t lie,
                                     struct cq_core **core)
{
	assert_int_equal(cw_write(w, path, lie), 0);
	return cq_core_open(path, NULL, core);
}

static void test_every_note_is_read(void **state)
{
	(void)state;
	static struct core_writer w;
	memset(&w, 0, sizeof(w));
	cw_prstatus(&w, 100, 11, 0x401234, 0x7ffc0000, 0x7f0000001000);
	cw_prstatus(&w, 101, 0, 0x405678, 0x7ffb0000, 0x7f0000002000);
	/* A "LINUX" note of the same type is not a thread. */
	uint8_t regs[336] = {0};
	cw_note(&w, "LINUX", NT_PRSTATUS, regs, sizeof(regs));

	uint8_t ps[136] = {0};
	cw_put(ps + 16, 1000, 4);
	cw_put(ps + 20, 1001, 4);
	cw_put(ps + 24, 100, 4);
	cw_put(ps + 28, 1, 4);
	memcpy(ps + 40, "crashy", 6);
	memcpy(ps + 56, "crashy --flag   ", 16); /* the kernel's trailing separators */
	cw_note(&w, "CORE", NT_PRPSINFO, ps, sizeof(ps));

	uint8_t si[128] = {0};
	cw_put(si, 11, 4);    /* SIGSEGV */
	cw_put(si + 8, 1, 4); /* SEGV_MAPERR: raised by the kernel */
	cw_put(si + 16, 0xdead, 8);
	cw_note(&w, "CORE", NT_SIGINFO, si, sizeof(si));

	uint8_t av[16 * 5] = {0};
	auxv_pair(av, 0, AT_PAGESZ, 4096);
	auxv_pair(av, 1, AT_ENTRY, 0x401000);
	auxv_pair(av, 2, AT_PHDR, 0x400040);
	auxv_pair(av, 3, AT_NULL, 0);
	auxv_pair(av, 4, AT_ENTRY, 0x999999); /* past AT_NULL: ignored */
	cw_note(&w, "CORE", NT_AUXV, av, sizeof(av));

	const uint64_t e[2][3] = {{0x7000, 0x8000, 0}, {0x8000, 0x9000, 2}};
	const char names[] = "/nonexistent/a.so\0/nonexistent/b.so";
	file_note(&w, 2, 4096, e, 2, names, sizeof(names));

	struct cq_core *core;
	struct cq_error *err = open_written(&w, 0, &core);
	assert_null(err);

	assert_int_equal(core->nthreads, 2);
	assert_int_equal(core->threads[0].tid, 100);
	assert_true(core->threads[0].crashed);
	assert_int_equal(core->threads[0].cursig, 11);
	assert_false(core->threads[1].crashed);
	assert_int_equal(core->threads[1].tid, 101);
	/* pr_reg slot 16 is rip (DWARF 16), slot 19 rsp (DWARF 7), 21 fs_base. */
	assert_true(cq_regs_has(&core->threads[1].regs, 16));
	assert_int_equal(core->threads[1].regs.value[16], 0x405678);
	assert_int_equal(core->threads[1].regs.value[7], 0x7ffb0000);
	assert_true(core->threads[1].has_tp);
	assert_int_equal(core->threads[1].tp, 0x7f0000002000);

	assert_true(core->has_psinfo);
	assert_int_equal(core->uid, 1000);
	assert_int_equal(core->gid, 1001);
	assert_int_equal(core->pid, 100);
	assert_int_equal(core->ppid, 1);
	assert_string_equal(core->fname, "crashy");
	assert_string_equal(core->psargs, "crashy --flag");
	/* The thread whose tid is the pid is the main thread, named by psinfo. */
	assert_non_null(core->threads[0].name);
	assert_string_equal(core->threads[0].name, "crashy");
	assert_null(core->threads[1].name);

	assert_true(core->siginfo.present);
	assert_int_equal(core->siginfo.signo, 11);
	assert_true(core->siginfo.has_addr);
	assert_int_equal(core->siginfo.addr, 0xdead);
	assert_int_equal(cq_core_signal(core), 11);

	assert_int_equal(core->at_pagesz, 4096);
	assert_int_equal(core->at_entry, 0x401000);
	assert_int_equal(core->at_phdr, 0x400040);

	assert_int_equal(core->nmappings, 2);
	assert_string_equal(core->mappings[0].path, "/nonexistent/a.so");
	assert_int_equal(core->mappings[1].start, 0x8000);
	assert_int_equal(core->mappings[1].end, 0x9000);
	assert_int_equal(core->mappings[1].file_offset, 2 * 4096);
	assert_string_equal(core->mappings[1].path, "/nonexistent/b.so");
	cq_core_close(core);
}

static void test_user_signal_has_no_address(void **state)
{
	(void)state;
	static struct core_writer w;
	memset(&w, 0, sizeof(w));
	cw_prstatus(&w, 7, 6, 1, 2, 3);
	uint8_t si[128] = {0};
	cw_put(si, 6, 4);                         /* SIGABRT */
	cw_put(si + 8, (uint64_t)(int32_t)-6, 4); /* SI_TKILL: sent by a process */
	cw_put(si + 16, 4321, 4);                 /* si_pid */
	cw_put(si + 20, 1001, 4);                 /* si_uid */
	cw_note(&w, "CORE", NT_SIGINFO, si, sizeof(si));
	struct cq_core *core;
	assert_null(open_written(&w, 0, &core));
	assert_true(core->siginfo.present);
	assert_int_equal(core->siginfo.code, -6);
	assert_false(core->siginfo.has_addr);
	assert_true(core->siginfo.has_sender);
	assert_int_equal(core->siginfo.sender_pid, 4321);
	assert_int_equal(core->siginfo.sender_uid, 1001);
	assert_false(cq_core_signal_from_self(core));
	assert_false(core->has_psinfo);
	assert_int_equal(core->nmappings, 0);
	cq_core_close(core);
}

/* One SIGINFO note of signo and code with bytes 16..23 set to pid, uid; opened. */
static struct cq_core *open_siginfo(int signo, int32_t code, uint32_t pid, uint32_t uid,
                                    bool psinfo_pid)
{
	static struct core_writer w;
	memset(&w, 0, sizeof(w));
	cw_prstatus(&w, 7, signo, 1, 2, 3);
	cw_prstatus(&w, 9, 0, 1, 2, 3);
	if (psinfo_pid) {
		uint8_t ps[136] = {0};
		cw_put(ps + 24, 77, 4); /* pr_pid */
		cw_note(&w, "CORE", NT_PRPSINFO, ps, sizeof(ps));
	}
	uint8_t si[128] = {0};
	cw_put(si, (uint64_t)signo, 4);
	cw_put(si + 8, (uint64_t)code, 4);
	cw_put(si + 16, pid, 4);
	cw_put(si + 20, uid, 4);
	cw_note(&w, "CORE", NT_SIGINFO, si, sizeof(si));
	struct cq_core *core;
	assert_null(open_written(&w, 0, &core));
	return core;
}

/*
 * Who sent the signal: si_pid/si_uid only where si_code says a process did;
 * the process itself when si_pid is its pid (NT_PRPSINFO) or, without one,
 * one of its threads; a fault's bytes 16.. are its address, never a sender.
 */
static void test_signal_sender(void **state)
{
	(void)state;
	struct cq_core *core = open_siginfo(SIGABRT, SI_USER, 77, 0, true);
	assert_true(core->siginfo.has_sender);
	assert_true(cq_core_signal_from_self(core));
	cq_core_close(core);
	/* pid 7 is a thread of the core, but NT_PRPSINFO says the process is 77. */
	core = open_siginfo(SIGABRT, SI_QUEUE, 7, 5, true);
	assert_true(core->siginfo.has_sender);
	assert_false(cq_core_signal_from_self(core));
	cq_core_close(core);
	core = open_siginfo(SIGABRT, SI_TKILL, 9, 5, false);
	assert_true(cq_core_signal_from_self(core));
	cq_core_close(core);
	/* SI_TIMER's bytes 16.. are a timer id, SI_SIGIO's a band. */
	core = open_siginfo(SIGALRM, SI_TIMER, 77, 0, true);
	assert_false(core->siginfo.has_sender);
	assert_false(cq_core_signal_from_self(core));
	cq_core_close(core);
	core = open_siginfo(SIGIO, SI_SIGIO, 77, 0, true);
	assert_false(core->siginfo.has_sender);
	cq_core_close(core);
	/* A fault: the address, no sender. */
	core = open_siginfo(SIGSEGV, SEGV_MAPERR, 77, 0, true);
	assert_false(core->siginfo.has_sender);
	assert_true(core->siginfo.has_addr);
	assert_int_equal(core->siginfo.addr, 77);
	cq_core_close(core);
	/* The kernel's own signal (a general protection fault's SIGSEGV): neither. */
	core = open_siginfo(SIGSEGV, SI_KERNEL, 0, 0, true);
	assert_false(core->siginfo.has_sender);
	assert_false(core->siginfo.has_addr);
	cq_core_close(core);
	/* A negative code Linux does not define: the bytes are not believed. */
	core = open_siginfo(SIGSEGV, -1000, 77, 0, true);
	assert_false(core->siginfo.has_sender);
	assert_false(core->siginfo.has_addr);
	cq_core_close(core);
}

/*
 * Whether the sender is only the signal's claim: a process may queue itself
 * any si_code <= 0 naming anyone, so only an SI_USER or SI_TKILL naming the
 * process's own pid and uid (NT_PRPSINFO's, here 77 and 0) is proven.
 */
static void test_sender_claimed(void **state)
{
	(void)state;
	static const struct {
		int32_t code;
		uint32_t pid, uid;
		bool psinfo, claimed;
	} cases[] = {
	    {SI_USER, 77, 0, true, false},  /* kill(getpid()) */
	    {SI_TKILL, 77, 0, true, false}, /* abort(), raise() */
	    {SI_USER, 1, 0, true, true},    /* a watchdog's kill, or the process's forgery */
	    {SI_TKILL, 4321, 1000, true, true},
	    {SI_USER, 77, 5, true, true},  /* its own pid, another uid: forged */
	    {SI_QUEUE, 77, 0, true, true}, /* any sender may write any pid into SI_QUEUE */
	    {SI_MESGQ, 77, 0, true, true},
	    {SI_TKILL, 9, 0, false, true},     /* a thread's tid, but no NT_PRPSINFO to check */
	    {SI_TKILL, 0, 0, true, true},      /* from an ancestor pid namespace */
	    {SEGV_MAPERR, 77, 0, true, false}, /* no sender at all */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int signo = cases[i].code == SEGV_MAPERR ? SIGSEGV : SIGABRT;
		struct cq_core *core =
		    open_siginfo(signo, cases[i].code, cases[i].pid, cases[i].uid, cases[i].psinfo);
		if (cq_core_sender_claimed(core) != cases[i].claimed)
			fail_msg("case %zu (si_code %d, pid %u, uid %u): claimed %d", i,
			         cases[i].code, cases[i].pid, cases[i].uid, !cases[i].claimed);
		cq_core_close(core);
	}
}

/* Opens w and expects an error whose message contains want. */
static void expect_refused(const struct core_writer *w, uint64_t lie, const char *want)
{
	struct cq_core *core = (struct cq_core *)1;
	struct cq_error *err = open_written(w, lie, &core);
	assert_non_null(err);
	assert_null(core);
	if (!strstr(err->message, want))
		fail_msg("error \"%s\" does not say \"%s\"", err->message, want);
	cq_error_free(err);
}

/* A SIGINFO note of signo and code (no sender, no address). */
static void siginfo_note(struct core_writer *w, int signo, int32_t code)
{
	uint8_t si[128] = {0};
	cw_put(si, (uint64_t)signo, 4);
	cw_put(si + 8, (uint64_t)code, 4);
	cw_note(w, "CORE", NT_SIGINFO, si, sizeof(si));
}

/*
 * Notes as gdb's gcore writes them: NT_PRPSINFO first, each thread's
 * NT_PRSTATUS (pr_cursig cursig[i]) followed by its own NT_SIGINFO
 * (signo[i], code[i]), then a "GDB" note when gdb_note.
 */
static struct cq_core *open_gdb_notes(const int *cursig, const int *signo, const int32_t *code,
                                      bool gdb_note)
{
	static struct core_writer w;
	memset(&w, 0, sizeof(w));
	uint8_t ps[136] = {0};
	cw_put(ps + 24, 50, 4); /* pr_pid */
	memcpy(ps + 40, "sleeper", 7);
	cw_note(&w, "CORE", NT_PRPSINFO, ps, sizeof(ps));
	for (int i = 0; i < 2; i++) {
		cw_prstatus(&w, 50 + i, cursig[i], 0x401000, 0x7ffc0000, 0x7f0000001000);
		siginfo_note(&w, signo[i], code[i]);
	}
	if (gdb_note)
		cw_note(&w, "GDB", 0xff000000, "<target/>", 10);
	struct cq_core *core;
	assert_null(open_written(&w, 0, &core));
	return core;
}

/*
 * gcore of a live process: gdb attached with SIGSTOP (SI_KERNEL), so no
 * thread handles a signal: a snapshot, with no crashed thread.  gdb's marks
 * are its "GDB" note or NT_PRPSINFO before the first NT_PRSTATUS.
 */
static void test_gcore_of_a_live_process_is_a_snapshot(void **state)
{
	(void)state;
	const int cursig[2] = {0, 0}, signo[2] = {SIGSTOP, SIGSTOP};
	const int32_t code[2] = {128, 128};
	for (int gdb_note = 0; gdb_note < 2; gdb_note++) {
		struct cq_core *core = open_gdb_notes(cursig, signo, code, gdb_note);
		assert_int_equal(core->snapshot, CQ_SNAPSHOT_GCORE);
		assert_string_equal(cq_core_snapshot_name(core->snapshot), "gcore");
		assert_null(cq_core_crashed_thread(core));
		assert_false(core->threads[0].crashed);
		assert_false(core->threads[1].crashed);
		assert_int_equal(core->siginfo.signo, SIGSTOP);
		cq_core_close(core);
	}
}

/*
 * gcore of a process stopped at its fatal signal under gdb (corpus/lib.sh's
 * fallback): the first thread's pr_cursig and NT_SIGINFO are the fault, the
 * others' a stop.  Not a snapshot; the first NT_SIGINFO is the signal.
 */
static void test_gcore_at_a_crash_is_a_crash(void **state)
{
	(void)state;
	const int cursig[2] = {SIGSEGV, 0}, signo[2] = {SIGSEGV, SIGSTOP};
	const int32_t code[2] = {1, 128};
	struct cq_core *core = open_gdb_notes(cursig, signo, code, true);
	assert_int_equal(core->snapshot, CQ_SNAPSHOT_NONE);
	assert_null(cq_core_snapshot_name(core->snapshot));
	assert_true(core->threads[0].crashed);
	assert_ptr_equal(cq_core_crashed_thread(core), &core->threads[0]);
	assert_int_equal(core->siginfo.signo, SIGSEGV);
	assert_int_equal(core->siginfo.code, 1);
	assert_int_equal(cq_core_signal(core), SIGSEGV);
	cq_core_close(core);
}

/* The kernel's order (NT_PRSTATUS first), no signal: not gdb's, not a snapshot. */
static void test_kernel_order_is_no_snapshot(void **state)
{
	(void)state;
	static struct core_writer w;
	memset(&w, 0, sizeof(w));
	cw_prstatus(&w, 7, 0, 1, 2, 3);
	uint8_t ps[136] = {0};
	cw_note(&w, "CORE", NT_PRPSINFO, ps, sizeof(ps));
	struct cq_core *core;
	assert_null(open_written(&w, 0, &core));
	assert_int_equal(core->snapshot, CQ_SNAPSHOT_NONE);
	assert_true(core->threads[0].crashed);
	cq_core_close(core);
}

static void test_hostile_notes_are_refused(void **state)
{
	(void)state;
	static struct core_writer w;

	memset(&w, 0, sizeof(w));
	expect_refused(&w, 0, "no NT_PRSTATUS");

	memset(&w, 0, sizeof(w));
	uint8_t short_regs[200] = {0};
	cw_note(&w, "CORE", NT_PRSTATUS, short_regs, sizeof(short_regs));
	expect_refused(&w, 0, "NT_PRSTATUS note is 200 bytes");

	const uint64_t e[1][3] = {{0x7000, 0x8000, 0}};
	memset(&w, 0, sizeof(w));
	cw_prstatus(&w, 1, 11, 0, 0, 0);
	file_note(&w, 1ull << 40, 4096, e, 1, "/x", 3); /* count far beyond the note */
	expect_refused(&w, 0, "NT_FILE note claims");

	memset(&w, 0, sizeof(w));
	cw_prstatus(&w, 1, 11, 0, 0, 0);
	file_note(&w, 1, 4095, e, 1, "/x", 3);
	expect_refused(&w, 0, "NT_FILE page size 4095");

	memset(&w, 0, sizeof(w));
	cw_prstatus(&w, 1, 11, 0, 0, 0);
	file_note(&w, 1, 4096, e, 1, "/x", 2); /* the name's NUL is missing */
	expect_refused(&w, 0, "NT_FILE entry 0 is malformed");

	const uint64_t wrap[1][3] = {{0x7000, 0x8000, UINT64_MAX / 4096 + 1}};
	memset(&w, 0, sizeof(w));
	cw_prstatus(&w, 1, 11, 0, 0, 0);
	file_note(&w, 1, 4096, wrap, 1, "/x", 3); /* pgoff * page overflows */
	expect_refused(&w, 0, "NT_FILE entry 0 is malformed");

	memset(&w, 0, sizeof(w));
	cw_prstatus(&w, 1, 11, 0, 0, 0);
	expect_refused(&w, 4096, "core truncated inside its notes");
}

static int make_path(void **state)
{
	(void)state;
	snprintf(path, sizeof(path), "/tmp/cq_test_notes.%d", (int)getpid());
	return 0;
}

static int remove_path(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_note_is_read),
	    cmocka_unit_test(test_user_signal_has_no_address),
	    cmocka_unit_test(test_signal_sender),
	    cmocka_unit_test(test_gcore_of_a_live_process_is_a_snapshot),
	    cmocka_unit_test(test_gcore_at_a_crash_is_a_crash),
	    cmocka_unit_test(test_kernel_order_is_no_snapshot),
	    cmocka_unit_test(test_sender_claimed),
	    cmocka_unit_test(test_hostile_notes_are_refused),
	};
	return cmocka_run_group_tests(tests, make_path, remove_path);
}
