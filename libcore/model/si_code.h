/*
 * si_code.h - what a siginfo's si_code says about the signal that killed a
 * process: the kernel header's name for it (SEGV_MAPERR, SI_TKILL, ...),
 * its meaning in words, whether si_pid/si_uid then name the process that
 * sent it, and whether only the kernel writes them when another process does.
 *
 * Codes 1..0x7f mean something per signal (SIGILL, SIGFPE, SIGSEGV, SIGBUS,
 * SIGTRAP, SIGIO, SIGSYS: the fault or event the kernel saw); SI_KERNEL
 * (0x80) and the codes <= 0 (SI_USER, SI_QUEUE, SI_TKILL, ...) mean the same
 * for every signal.  The values are Linux's (include/uapi/asm-generic/
 * siginfo.h), the same on x86_64 and aarch64, so a core is read the same way
 * on any host.
 */
#ifndef CQ_SI_CODE_H
#define CQ_SI_CODE_H

#include <stdbool.h>
#include <stdint.h>

struct cq_si_code {
	int signo;               /* 0: every signal (SI_KERNEL and the codes <= 0) */
	int code;                /* the si_code value */
	const char *name;        /* the kernel header's constant: "SEGV_MAPERR" */
	const char *description; /* its comment there: "address not mapped to object" */
	bool has_sender;         /* si_pid@16 and si_uid@20 name the sending process */
	/*
	 * Sent by another process, the signal's si_pid and si_uid are the
	 * kernel's (SI_USER: kill, SI_TKILL: tkill/tgkill); the kernel refuses
	 * these codes from rt_sigqueueinfo to any process but the caller
	 * itself, which may queue itself one naming any sender.  False: whoever
	 * queues the signal writes them (SI_QUEUE, SI_MESGQ, ...).
	 */
	bool kernel_fills_sender;
};

/*
 * The entry for si_code `code` of signal `signo`, or NULL when Linux defines
 * none.  64-bit arguments, so that any stored number can be asked about.
 */
const struct cq_si_code *cq_si_code_find(int64_t signo, int64_t code);

#endif
