/*
 * si_code.c - the table of Linux si_codes (see si_code.h).
 *
 * Transcribed from include/uapi/asm-generic/siginfo.h (Linux 6.x), names and
 * comments alike; tests/unit/test_si_code.c checks every entry against the
 * constants of this host's <signal.h> and of its kernel header copy
 * (/usr/include/asm-generic/siginfo.h).  Which codes carry a sender follows
 * the kernel's siginfo_layout() (kernel/signal.c): SI_USER and SI_KERNEL
 * use the _kill layout and every other code <= 0 the _rt layout, both
 * {pid, uid} at offset 16, except SI_TIMER (_timer) and SI_SIGIO (_sigpoll).
 * Of those, SI_KERNEL's are zero, and SI_DETHREAD is the kernel's own
 * SIGKILL to the threads an execve ends.  The kernel fills si_pid and si_uid
 * for kill (SI_USER) and tkill/tgkill (SI_TKILL) and for a message queue's
 * notification (SI_MESGQ); a sigqueue()-style sender (SI_QUEUE, and glibc's
 * SI_ASYNCIO and SI_ASYNCNL) writes them itself, and the kernel refuses any
 * code >= 0 or SI_TKILL from such a sender to another process.
 */
#include "libcore/model/si_code.h"

#include <signal.h>
#include <stddef.h>

/* Linux's numbers, spelled out: they are the core's, not this host's. */
static const struct cq_si_code si_codes[] = {
    /* Every signal: where it came from (SI_FROMUSER: code <= 0). */
    {0, 0, "SI_USER", "sent by kill", true},
    {0, 0x80, "SI_KERNEL", "sent by the kernel", false},
    {0, -1, "SI_QUEUE", "sent by sigqueue", true},
    {0, -2, "SI_TIMER", "sent by timer expiration", false},
    {0, -3, "SI_MESGQ", "sent by real time mesq state change", true},
    {0, -4, "SI_ASYNCIO", "sent by AIO completion", true},
    {0, -5, "SI_SIGIO", "sent by queued SIGIO", false},
    {0, -6, "SI_TKILL", "sent by tkill/tgkill", true},
    {0, -7, "SI_DETHREAD", "sent by execve() killing subsidiary threads", false},
    {0, -60, "SI_ASYNCNL", "sent by glibc async name lookup completion", true},

    {SIGILL, 1, "ILL_ILLOPC", "illegal opcode", false},
    {SIGILL, 2, "ILL_ILLOPN", "illegal operand", false},
    {SIGILL, 3, "ILL_ILLADR", "illegal addressing mode", false},
    {SIGILL, 4, "ILL_ILLTRP", "illegal trap", false},
    {SIGILL, 5, "ILL_PRVOPC", "privileged opcode", false},
    {SIGILL, 6, "ILL_PRVREG", "privileged register", false},
    {SIGILL, 7, "ILL_COPROC", "coprocessor error", false},
    {SIGILL, 8, "ILL_BADSTK", "internal stack error", false},
    {SIGILL, 9, "ILL_BADIADDR", "unimplemented instruction address", false},

    {SIGFPE, 1, "FPE_INTDIV", "integer divide by zero", false},
    {SIGFPE, 2, "FPE_INTOVF", "integer overflow", false},
    {SIGFPE, 3, "FPE_FLTDIV", "floating point divide by zero", false},
    {SIGFPE, 4, "FPE_FLTOVF", "floating point overflow", false},
    {SIGFPE, 5, "FPE_FLTUND", "floating point underflow", false},
    {SIGFPE, 6, "FPE_FLTRES", "floating point inexact result", false},
    {SIGFPE, 7, "FPE_FLTINV", "floating point invalid operation", false},
    {SIGFPE, 8, "FPE_FLTSUB", "subscript out of range", false},
    {SIGFPE, 14, "FPE_FLTUNK", "undiagnosed floating-point exception", false},
    {SIGFPE, 15, "FPE_CONDTRAP", "trap on condition", false},

    {SIGSEGV, 1, "SEGV_MAPERR", "address not mapped to object", false},
    {SIGSEGV, 2, "SEGV_ACCERR", "invalid permissions for mapped object", false},
    {SIGSEGV, 3, "SEGV_BNDERR", "failed address bound checks", false},
    {SIGSEGV, 4, "SEGV_PKUERR", "failed protection key checks", false},
    {SIGSEGV, 5, "SEGV_ACCADI", "ADI not enabled for mapped object", false},
    {SIGSEGV, 6, "SEGV_ADIDERR", "disrupting MCD error", false},
    {SIGSEGV, 7, "SEGV_ADIPERR", "precise MCD exception", false},
    {SIGSEGV, 8, "SEGV_MTEAERR", "asynchronous ARM MTE error", false},
    {SIGSEGV, 9, "SEGV_MTESERR", "synchronous ARM MTE exception", false},

    {SIGBUS, 1, "BUS_ADRALN", "invalid address alignment", false},
    {SIGBUS, 2, "BUS_ADRERR", "non-existent physical address", false},
    {SIGBUS, 3, "BUS_OBJERR", "object specific hardware error", false},
    {SIGBUS, 4, "BUS_MCEERR_AR",
     "hardware memory error consumed on a machine check: action required", false},
    {SIGBUS, 5, "BUS_MCEERR_AO",
     "hardware memory error detected in process but not consumed: action optional", false},

    {SIGTRAP, 1, "TRAP_BRKPT", "process breakpoint", false},
    {SIGTRAP, 2, "TRAP_TRACE", "process trace trap", false},
    {SIGTRAP, 3, "TRAP_BRANCH", "process taken branch trap", false},
    {SIGTRAP, 4, "TRAP_HWBKPT", "hardware breakpoint/watchpoint", false},
    {SIGTRAP, 5, "TRAP_UNK", "undiagnosed trap", false},
    {SIGTRAP, 6, "TRAP_PERF", "perf event with sigtrap=1", false},

    {SIGIO, 1, "POLL_IN", "data input available", false},
    {SIGIO, 2, "POLL_OUT", "output buffers available", false},
    {SIGIO, 3, "POLL_MSG", "input message available", false},
    {SIGIO, 4, "POLL_ERR", "i/o error", false},
    {SIGIO, 5, "POLL_PRI", "high priority input available", false},
    {SIGIO, 6, "POLL_HUP", "device disconnected", false},

    {SIGSYS, 1, "SYS_SECCOMP", "seccomp triggered", false},
    {SIGSYS, 2, "SYS_USER_DISPATCH", "syscall user dispatch triggered", false},
};

const struct cq_si_code *cq_si_code_find(int64_t signo, int64_t code)
{
	/* Codes 1..0x7f belong to the signal; SI_KERNEL and the rest to all. */
	int64_t want_signo = code > 0 && code < 0x80 ? signo : 0;
	if (want_signo == 0 && code > 0 && code != 0x80)
		return NULL;
	for (size_t i = 0; i < sizeof(si_codes) / sizeof(si_codes[0]); i++)
		if (si_codes[i].signo == want_signo && si_codes[i].code == code)
			return &si_codes[i];
	return NULL;
}
