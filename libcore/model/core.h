/*
 * core.h - the model of one ELF core file.
 *
 * cq_core_open turns a path (or "-", or a compressed file) into a struct
 * cq_core: every thread with its registers, the process facts from the notes
 * (pid, command, signal), the files that were mapped, the modules (mapped
 * ELF objects with build-ids), and a memory reader over the process's address
 * space that falls back to the module files on disk for pages the core does
 * not hold.
 *
 * A core whose notes are intact but whose memory is cut short still opens:
 * memory_missing says how many dumped bytes are absent, and reads of them fail.
 * A core whose headers or notes are damaged does not open.
 *
 * Layer: model (libcore/model/): the core file and the process it describes; above base,
 * unwind and formats. The layer order is in docs/internals.md (Layout) and tests/check-layers.
 */
#ifndef CQ_CORE_H
#define CQ_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/arch.h"
#include "libcore/base/error.h"
#include "libcore/base/memory.h"
#include "libcore/model/source.h"

struct cq_module;

struct cq_core_thread {
	int32_t tid;
	int cursig;          /* pr_cursig: the signal this thread was handling */
	bool crashed;        /* first NT_PRSTATUS: the thread that took the signal */
	struct cq_regs regs; /* by DWARF number */
	uint64_t tp;         /* thread pointer (fs_base / TPIDR_EL0) */
	bool has_tp;
	bool tp_recovered; /* tp found from its struct pthread, not read from a note */
	const char *name;  /* known only for the main thread (from NT_PRPSINFO) */
	/* The system-call registers as NT_PRSTATUS has them (arch->syscall says
	 * which slots); whether the thread was in a call is analysis/waits.h's. */
	int64_t syscall_nr;
	uint64_t syscall_args[2];
	int64_t syscall_ret;
};

/* One NT_FILE entry: a file-backed mapping. */
struct cq_core_mapping {
	uint64_t start, end;
	uint64_t file_offset; /* bytes */
	const char *path;     /* points into the core image's note, NUL-terminated */
};

/*
 * Who wrote a core that is a snapshot of a live process rather than a
 * crash's (see cq_core.snapshot).
 */
enum cq_core_snapshot {
	CQ_SNAPSHOT_NONE,  /* a crash's core: the first thread took the signal */
	CQ_SNAPSHOT_GCORE, /* gdb's gcore (or `generate-core-file`) of a process nothing crashed */
};

struct cq_core_siginfo {
	bool present; /* NT_SIGINFO was found */
	int signo, code, errno_value;
	bool has_addr; /* si_addr is meaningful (SIGSEGV/SIGBUS/SIGILL/SIGFPE/SIGTRAP fault) */
	uint64_t addr;
	/* si_pid and si_uid: the process that sent the signal, when si_code says a
	 * process did (SI_USER, SI_TKILL, SI_QUEUE, ...: see si_code.h). */
	bool has_sender;
	int32_t sender_pid;
	uint32_t sender_uid;
};

/* How to find files that belong to the core on this host. */
struct cq_core_options {
	const char *exe;               /* use this file for the main executable */
	const char *sysroot;           /* prefix for every module path */
	const char *const *debug_dirs; /* NULL-terminated list of build-id tree roots */
	uint64_t max_spool;            /* cap on decompressed size, 0 = from free space */
	bool regular_only; /* path comes from a database: a regular file only (cq_source_open) */
	bool want_fd;      /* source.fd is needed (handed to a debugger): no lazy image */
	/* Whether a one-stream core's analysis will read its heap (stream_image.h); may be NULL. */
	const struct cq_stream_hint *stream_hint;
};

struct cq_core {
	char *path; /* as given */
	struct cq_source source;
	void *elf;            /* Elf * over source.fd */
	const uint8_t *image; /* the mmapped core */
	uint64_t image_size;
	const struct cq_arch *arch;

	/* NT_PRPSINFO */
	uint64_t pac_insn_mask; /* NT_ARM_PAC_MASK: bits signed return addresses carry; 0: none */

	bool has_psinfo;
	int32_t pid, ppid;
	uint32_t uid, gid;
	char fname[17];
	char psargs[81];

	struct cq_core_siginfo siginfo;
	/*
	 * A snapshot (notes.c): gdb wrote the core (its "GDB" note, or
	 * NT_PRPSINFO before the first NT_PRSTATUS, where the kernel writes it
	 * after) and no thread was handling a signal other than a stop (every
	 * pr_cursig 0 or SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU: gcore attaches with
	 * SIGSTOP and writes a NT_SIGINFO of SIGSTOP, SI_KERNEL per thread).  No
	 * thread of a snapshot is crashed.
	 */
	enum cq_core_snapshot snapshot;

	struct cq_core_thread *threads; /* crashing thread first */
	size_t nthreads;
	/* Threads whose tid an earlier thread already has (a damaged or forged
	 * core); every one is kept, told apart by its place in the notes. */
	size_t duplicate_tids;

	/* NT_AUXV */
	uint64_t at_entry, at_phdr, at_phnum, at_base, at_execfn, at_sysinfo_ehdr, at_pagesz;
	char execfn[256];

	struct cq_core_mapping *mappings; /* NT_FILE, in note order (else link_map.h's) */
	size_t nmappings;
	bool mappings_from_link_map; /* no NT_FILE: mappings come from the loader's list */
	char *mapping_paths;         /* owns the paths of link_map mappings */

	struct cq_module *modules;
	size_t nmodules;

	struct cq_mem mem;
	uint64_t memory_dumped;  /* bytes the PT_LOAD headers say the core holds */
	uint64_t memory_missing; /* of those, bytes past the end of the file */

	struct cq_core_options options;
};

/* Opens and parses a core.  On error *out is NULL and nothing leaks. */
struct cq_error *cq_core_open(const char *path, const struct cq_core_options *opts,
                              struct cq_core **out);
void cq_core_close(struct cq_core *core);

/*
 * Unmaps the pages of the core that reads have touched so far; they fault in
 * again from the page cache when next read.  Walks over thousands of threads
 * call this now and then: each scattered read otherwise leaves the kernel's
 * fault-around pages (up to 64 KiB per touch) in our resident set.
 */
void cq_core_trim(struct cq_core *core);

/*
 * madvise() for the whole pages of [p, p + len) that belong to the mmapped
 * core image (MADV_WILLNEED to read ahead, MADV_POPULATE_READ to map them in
 * one call, MADV_DONTNEED to drop them from our resident set); bytes outside
 * the image are left alone.  madvise's result (0 when nothing was asked).
 */
int cq_core_advise(const struct cq_core *core, const uint8_t *p, uint64_t len, int advice);

/* The thread that took the fatal signal (first NT_PRSTATUS), or NULL (a snapshot). */
const struct cq_core_thread *cq_core_crashed_thread(const struct cq_core *core);

/* The signal that killed the process: NT_SIGINFO's, else the crashed thread's cursig. */
int cq_core_signal(const struct cq_core *core);

/*
 * The process sent its fatal signal to itself (abort(), raise(), kill of its
 * own pid): the siginfo names a sender whose pid is the core's (NT_PRPSINFO)
 * or one of its threads' (NT_PRSTATUS).  Both are in the process's own pid
 * namespace, as si_pid is.
 */
bool cq_core_signal_from_self(const struct cq_core *core);

/*
 * The process was stopped from outside rather than crashing: a snapshot
 * (core->snapshot, or no siginfo, or SIGSTOP), a signal another process sent (a
 * watchdog's SIGABRT, kill -QUIT), or a non-fault signal the kernel sent on
 * behalf of no fault (SIGQUIT from a terminal).  A fault (SIGSEGV, SIGBUS,
 * SIGILL, SIGFPE, SIGTRAP, SIGSYS from the kernel) and a signal the process
 * sent itself (abort(), a crash handler that re-raises) are crashes.  The
 * sender is only what the siginfo claims (see cq_core_siginfo).
 */
bool cq_core_stopped_from_outside(const struct cq_core *core);

/* "gcore" for a snapshot gdb wrote, NULL for a crash's core. */
const char *cq_core_snapshot_name(enum cq_core_snapshot snapshot);

/*
 * The siginfo's sender (si_pid, si_uid) is only what the signal claims: a
 * process may queue itself (rt_sigqueueinfo, rt_tgsigqueueinfo) a signal of
 * any si_code <= 0 naming any pid and uid, and any process may queue another
 * one of a code whose sender it writes itself (SI_QUEUE, SI_MESGQ, ...).
 * The kernel alone writes the sender of an SI_USER or SI_TKILL another
 * process sends, so such a signal naming the process's own pid (NT_PRPSINFO)
 * and real uid is true whoever wrote it: only then is the sender not
 * claimed.  Any other pid is either the kernel's or the process's forgery,
 * which a core cannot tell apart.  False when no process sent the signal.
 */
bool cq_core_sender_claimed(const struct cq_core *core);

/* "SIGSEGV" etc., or NULL for an unknown number. */
const char *cq_core_signal_name(int signo);

/* The module containing addr, or NULL. */
struct cq_module *cq_core_module_at(const struct cq_core *core, uint64_t addr);

/* The main executable's module (the one mapping AT_PHDR), or NULL. */
struct cq_module *cq_core_main_module(const struct cq_core *core);

/*
 * The crashed program's path, by one rule for every command and the store:
 * the main module's path, else AT_EXECFN, else outside_exe (e.g. what
 * systemd-coredump recorded; may be NULL or empty), else the command name
 * from the notes, else NULL.
 */
const char *cq_core_exe(const struct cq_core *core, const char *outside_exe);

#endif
