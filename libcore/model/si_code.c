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
 * SI_ASYNCIO and SI_ASYNCNL) writes them itself.  rt_sigqueueinfo,
 * rt_tgsigqueueinfo and pidfd_send_signal refuse any code >= 0 or SI_TKILL
 * to another process (do_rt_sigqueueinfo), so only SI_USER's and SI_TKILL's
 * sender is the kernel's (kernel_fills_sender) -- unless the process queued
 * the signal to itself, which may carry any code and any sender.
 */
#include "libcore/model/si_code.h"

#include <signal.h>
#include <stddef.h>

/* Linux's numbers, spelled out: they are the core's, not this host's. */
static const struct cq_si_code si_codes[] = {
    /* Every signal: where it came from (SI_FROMUSER: code <= 0). */
    {0, 0, "SI_USER", "sent by kill", true, true},
    {0, 0x80, "SI_KERNEL", "sent by the kernel", false, false},
    {0, -1, "SI_QUEUE", "sent by sigqueue", true, false},
    {0, -2, "SI_TIMER", "sent by timer expiration", false, false},
    {0, -3, "SI_MESGQ", "sent by real time mesq state change", true, false},
    {0, -4, "SI_ASYNCIO", "sent by AIO completion", true, false},
    {0, -5, "SI_SIGIO", "sent by queued SIGIO", false, false},
    {0, -6, "SI_TKILL", "sent by tkill/tgkill", true, true},
    {0, -7, "SI_DETHREAD", "sent by execve() killing subsidiary threads", false, false},
    {0, -60, "SI_ASYNCNL", "sent by glibc async name lookup completion", true, false},

    {SIGILL, 1, "ILL_ILLOPC", "illegal opcode", false, false},
    {SIGILL, 2, "ILL_ILLOPN", "illegal operand", false, false},
    {SIGILL, 3, "ILL_ILLADR", "illegal addressing mode", false, false},
    {SIGILL, 4, "ILL_ILLTRP", "illegal trap", false, false},
    {SIGILL, 5, "ILL_PRVOPC", "privileged opcode", false, false},
    {SIGILL, 6, "ILL_PRVREG", "privileged register", false, false},
    {SIGILL, 7, "ILL_COPROC", "coprocessor error", false, false},
    {SIGILL, 8, "ILL_BADSTK", "internal stack error", false, false},
    {SIGILL, 9, "ILL_BADIADDR", "unimplemented instruction address", false, false},

    {SIGFPE, 1, "FPE_INTDIV", "integer divide by zero", false, false},
    {SIGFPE, 2, "FPE_INTOVF", "integer overflow", false, false},
    {SIGFPE, 3, "FPE_FLTDIV", "floating point divide by zero", false, false},
    {SIGFPE, 4, "FPE_FLTOVF", "floating point overflow", false, false},
    {SIGFPE, 5, "FPE_FLTUND", "floating point underflow", false, false},
    {SIGFPE, 6, "FPE_FLTRES", "floating point inexact result", false, false},
    {SIGFPE, 7, "FPE_FLTINV", "floating point invalid operation", false, false},
    {SIGFPE, 8, "FPE_FLTSUB", "subscript out of range", false, false},
    {SIGFPE, 14, "FPE_FLTUNK", "undiagnosed floating-point exception", false, false},
    {SIGFPE, 15, "FPE_CONDTRAP", "trap on condition", false, false},

    {SIGSEGV, 1, "SEGV_MAPERR", "address not mapped to object", false, false},
    {SIGSEGV, 2, "SEGV_ACCERR", "invalid permissions for mapped object", false, false},
    {SIGSEGV, 3, "SEGV_BNDERR", "failed address bound checks", false, false},
    {SIGSEGV, 4, "SEGV_PKUERR", "failed protection key checks", false, false},
    {SIGSEGV, 5, "SEGV_ACCADI", "ADI not enabled for mapped object", false, false},
    {SIGSEGV, 6, "SEGV_ADIDERR", "disrupting MCD error", false, false},
    {SIGSEGV, 7, "SEGV_ADIPERR", "precise MCD exception", false, false},
    {SIGSEGV, 8, "SEGV_MTEAERR", "asynchronous ARM MTE error", false, false},
    {SIGSEGV, 9, "SEGV_MTESERR", "synchronous ARM MTE exception", false, false},

    {SIGBUS, 1, "BUS_ADRALN", "invalid address alignment", false, false},
    {SIGBUS, 2, "BUS_ADRERR", "non-existent physical address", false, false},
    {SIGBUS, 3, "BUS_OBJERR", "object specific hardware error", false, false},
    {SIGBUS, 4, "BUS_MCEERR_AR",
     "hardware memory error consumed on a machine check: action required", false, false},
    {SIGBUS, 5, "BUS_MCEERR_AO",
     "hardware memory error detected in process but not consumed: action optional", false, false},

    {SIGTRAP, 1, "TRAP_BRKPT", "process breakpoint", false, false},
    {SIGTRAP, 2, "TRAP_TRACE", "process trace trap", false, false},
    {SIGTRAP, 3, "TRAP_BRANCH", "process taken branch trap", false, false},
    {SIGTRAP, 4, "TRAP_HWBKPT", "hardware breakpoint/watchpoint", false, false},
    {SIGTRAP, 5, "TRAP_UNK", "undiagnosed trap", false, false},
    {SIGTRAP, 6, "TRAP_PERF", "perf event with sigtrap=1", false, false},

    {SIGIO, 1, "POLL_IN", "data input available", false, false},
    {SIGIO, 2, "POLL_OUT", "output buffers available", false, false},
    {SIGIO, 3, "POLL_MSG", "input message available", false, false},
    {SIGIO, 4, "POLL_ERR", "i/o error", false, false},
    {SIGIO, 5, "POLL_PRI", "high priority input available", false, false},
    {SIGIO, 6, "POLL_HUP", "device disconnected", false, false},

    {SIGSYS, 1, "SYS_SECCOMP", "seccomp triggered", false, false},
    {SIGSYS, 2, "SYS_USER_DISPATCH", "syscall user dispatch triggered", false, false},
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
