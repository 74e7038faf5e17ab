/*
 * test_si_code.c - the si_code table (libcore/model/si_code.h) against the
 * constants of this host's <signal.h> (glibc's copy of Linux's
 * asm-generic/siginfo.h): every name maps to its number, codes 1..0x7f are
 * the signal's own, and only the codes a process sends carry a sender.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/model/si_code.h"

struct want {
	int signo, code;
	const char *name;
};

#define W(sig, c)                                                                                  \
	{                                                                                          \
		sig, c, #c                                                                         \
	}

static const struct want every[] = {
    W(0, SI_USER),
    W(0, SI_KERNEL),
    W(0, SI_QUEUE),
    W(0, SI_TIMER),
    W(0, SI_MESGQ),
    W(0, SI_ASYNCIO),
    W(0, SI_SIGIO),
    W(0, SI_TKILL),
    W(0, SI_DETHREAD),
    W(0, SI_ASYNCNL),
    W(SIGILL, ILL_ILLOPC),
    W(SIGILL, ILL_ILLOPN),
    W(SIGILL, ILL_ILLADR),
    W(SIGILL, ILL_ILLTRP),
    W(SIGILL, ILL_PRVOPC),
    W(SIGILL, ILL_PRVREG),
    W(SIGILL, ILL_COPROC),
    W(SIGILL, ILL_BADSTK),
    W(SIGILL, ILL_BADIADDR),
    W(SIGFPE, FPE_INTDIV),
    W(SIGFPE, FPE_INTOVF),
    W(SIGFPE, FPE_FLTDIV),
    W(SIGFPE, FPE_FLTOVF),
    W(SIGFPE, FPE_FLTUND),
    W(SIGFPE, FPE_FLTRES),
    W(SIGFPE, FPE_FLTINV),
    W(SIGFPE, FPE_FLTSUB),
    W(SIGFPE, FPE_FLTUNK),
    W(SIGFPE, FPE_CONDTRAP),
    W(SIGSEGV, SEGV_MAPERR),
    W(SIGSEGV, SEGV_ACCERR),
    W(SIGSEGV, SEGV_BNDERR),
    W(SIGSEGV, SEGV_PKUERR),
    W(SIGSEGV, SEGV_ACCADI),
    W(SIGSEGV, SEGV_ADIDERR),
    W(SIGSEGV, SEGV_ADIPERR),
    W(SIGSEGV, SEGV_MTEAERR),
    W(SIGSEGV, SEGV_MTESERR),
    W(SIGBUS, BUS_ADRALN),
    W(SIGBUS, BUS_ADRERR),
    W(SIGBUS, BUS_OBJERR),
    W(SIGBUS, BUS_MCEERR_AR),
    W(SIGBUS, BUS_MCEERR_AO),
    W(SIGTRAP, TRAP_BRKPT),
    W(SIGTRAP, TRAP_TRACE),
    W(SIGTRAP, TRAP_BRANCH),
    W(SIGTRAP, TRAP_HWBKPT),
    W(SIGTRAP, TRAP_UNK),
    W(SIGIO, POLL_IN),
    W(SIGIO, POLL_OUT),
    W(SIGIO, POLL_MSG),
    W(SIGIO, POLL_ERR),
    W(SIGIO, POLL_PRI),
    W(SIGIO, POLL_HUP),
};

static void test_names_follow_the_headers(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(every) / sizeof(every[0]); i++) {
		const struct want *w = &every[i];
		/* The generic codes mean the same for any signal. */
		int signo = w->signo ? w->signo : SIGABRT;
		const struct cq_si_code *got = cq_si_code_find(signo, w->code);
		if (!got)
			fail_msg("%s (%d) of signal %d: not found", w->name, w->code, signo);
		if (strcmp(got->name, w->name) != 0)
			fail_msg("%s (%d) of signal %d: named %s", w->name, w->code, signo,
			         got->name);
		assert_non_null(got->description);
		assert_true(got->description[0] != '\0');
	}
}

/* A code 1..0x7f belongs to its signal: SIGSEGV's 1 is not SIGBUS's 1. */
static void test_codes_belong_to_their_signal(void **state)
{
	(void)state;
	assert_string_equal(cq_si_code_find(SIGSEGV, 1)->name, "SEGV_MAPERR");
	assert_string_equal(cq_si_code_find(SIGBUS, 1)->name, "BUS_ADRALN");
	assert_null(cq_si_code_find(SIGABRT, 1));
	assert_null(cq_si_code_find(SIGSEGV, 10));
	assert_null(cq_si_code_find(SIGSEGV, 0x81));
	assert_null(cq_si_code_find(SIGSEGV, -8));
	assert_null(cq_si_code_find(SIGSEGV, INT64_MIN));
	assert_null(cq_si_code_find(INT64_MAX, 1));
	assert_string_equal(cq_si_code_find(SIGSEGV, 0x80)->name, "SI_KERNEL");
	assert_string_equal(cq_si_code_find(INT64_MAX, 0)->name, "SI_USER");
}

/* si_pid and si_uid name a process for kill, tkill/tgkill, sigqueue and the like only. */
static void test_senders(void **state)
{
	(void)state;
	static const int with[] = {SI_USER, SI_QUEUE, SI_TKILL, SI_MESGQ, SI_ASYNCIO, SI_ASYNCNL};
	static const int without[] = {SI_KERNEL, SI_TIMER, SI_SIGIO, SI_DETHREAD};
	for (size_t i = 0; i < sizeof(with) / sizeof(with[0]); i++)
		assert_true(cq_si_code_find(SIGTERM, with[i])->has_sender);
	for (size_t i = 0; i < sizeof(without) / sizeof(without[0]); i++)
		assert_false(cq_si_code_find(SIGTERM, without[i])->has_sender);
	for (int code = 1; code < 0x80; code++) {
		const struct cq_si_code *c = cq_si_code_find(SIGSEGV, code);
		assert_true(!c || !c->has_sender);
	}
}

/*
 * Only kill's and tkill/tgkill's sender is the kernel's when another process
 * sends them: rt_sigqueueinfo refuses SI_USER and SI_TKILL to others.
 */
static void test_kernel_fills_sender(void **state)
{
	(void)state;
	for (int64_t code = -128; code <= 0x80; code++) {
		const struct cq_si_code *c = cq_si_code_find(SIGABRT, code);
		bool want = code == SI_USER || code == SI_TKILL;
		assert_true(want ? c && c->has_sender && c->kernel_fills_sender
		                 : !c || !c->kernel_fills_sender);
	}
}

/* The signal whose codes a kernel header constant named `name` is, or -1 for none. */
static int signal_of(const char *name)
{
	static const struct {
		const char *prefix;
		int signo;
	} prefixes[] = {{"SI_", 0},       {"ILL_", SIGILL},   {"FPE_", SIGFPE}, {"SEGV_", SIGSEGV},
	                {"BUS_", SIGBUS}, {"TRAP_", SIGTRAP}, {"POLL_", SIGIO}, {"SYS_", SIGSYS}};
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(name, prefixes[i].prefix, strlen(prefixes[i].prefix)) == 0)
			return prefixes[i].signo;
	return -1;
}

/*
 * Every si_code the kernel's own header defines (its uapi copy in
 * /usr/include/asm-generic/siginfo.h) is in the table under its name,
 * including those glibc's <signal.h> lacks (TRAP_PERF, SYS_SECCOMP).
 */
static void test_every_kernel_constant(void **state)
{
	(void)state;
	FILE *f = fopen("/usr/include/asm-generic/siginfo.h", "r");
	if (!f)
		skip();
	char line[256];
	unsigned checked = 0;
	while (fgets(line, sizeof(line), f)) {
		char name[64], value[32];
		if (sscanf(line, "#define %63s %31s", name, value) != 2 &&
		    sscanf(line, "# define %63s %31s", name, value) != 2)
			continue;
		int signo = signal_of(name);
		char *end;
		long code = strtol(value, &end, 0);
		/* Macros (SI_FROMUSER(x)), flags ("(1u << 0)") and sizes are not codes. */
		if (signo < 0 || *end || strchr(name, '(') || strstr(name, "_FLAG_") ||
		    strstr(name, "_SIZE"))
			continue;
		const struct cq_si_code *got = cq_si_code_find(signo ? signo : SIGTERM, code);
		if (!got || strcmp(got->name, name) != 0)
			fail_msg("the kernel's %s = %ld: table has %s", name, code,
			         got ? got->name : "nothing");
		checked++;
	}
	fclose(f);
	assert_true(checked >= 57); /* the table's every entry, when the header is Linux 6.x's */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names_follow_the_headers),
	    cmocka_unit_test(test_codes_belong_to_their_signal),
	    cmocka_unit_test(test_senders),
	    cmocka_unit_test(test_kernel_fills_sender),
	    cmocka_unit_test(test_every_kernel_constant),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
