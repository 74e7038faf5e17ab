/*
 * arch.h - per-architecture facts, as data.
 *
 * Everything coreq needs to know about a CPU architecture lives in one
 * struct cq_arch: the layout of the register set in NT_PRSTATUS, the mapping
 * of those slots to DWARF register numbers, which DWARF registers are the
 * program counter, stack pointer and frame pointer, and where the thread
 * pointer comes from.  Callers never test for an architecture by name; they
 * read these fields.  Register sets are kept indexed by DWARF number
 * (struct cq_regs) so the CFI unwinder can use them directly.
 */
#ifndef CQ_ARCH_H
#define CQ_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Enough DWARF register numbers for x86_64 (0..16) and aarch64 (0..32). */
#define CQ_REGS_MAX 34

/* A register set indexed by DWARF register number; valid is a bitmask. */
struct cq_regs {
	uint64_t value[CQ_REGS_MAX];
	uint64_t valid;
};

static inline bool cq_regs_has(const struct cq_regs *r, unsigned regno)
{
	return regno < CQ_REGS_MAX && (r->valid >> regno & 1);
}

static inline void cq_regs_set(struct cq_regs *r, unsigned regno, uint64_t v)
{
	if (regno < CQ_REGS_MAX) {
		r->value[regno] = v;
		r->valid |= 1ull << regno;
	}
}

/* Where a thread's thread pointer (TLS base) is found in a core. */
enum cq_arch_tp_source {
	CQ_ARCH_TP_PRSTATUS_SLOT, /* a pr_reg slot (x86_64: fs_base) */
	CQ_ARCH_TP_NOTE,          /* first 8 bytes of a per-thread note (aarch64: NT_ARM_TLS) */
};

/* A system call number and the name coreq prints for it ("read"). */
struct cq_arch_syscall {
	int64_t nr;
	const char *name;
};

/*
 * How a thread stopped in a system call shows in its NT_PRSTATUS registers.
 * x86_64 keeps the call's number in orig_rax and its arguments in rdi, rsi;
 * an interrupted call leaves -ERESTART* in rax (the kernel dumps the core
 * before it rewinds the call).  aarch64's user_pt_regs has no orig_x0 nor
 * syscallno: the number stays in x8, and the kernel, before it handles the
 * fatal signal, puts orig_x0 back in x0 and rewinds pc onto the svc
 * instruction (arch/arm64/kernel/signal.c, do_signal), so x0 holds the
 * first argument again and the instruction at pc is svc #0.
 */
struct cq_arch_syscall_regs {
	unsigned nr_slot;      /* pr_reg slot of the call's number */
	unsigned arg_slots[2]; /* pr_reg slots of its first two arguments */
	unsigned ret_slot;     /* pr_reg slot of its result */
	bool nr_is_orig;       /* nr_slot holds -1 outside a call (orig_rax) */
	uint32_t svc_insn;     /* aarch64: the instruction a rewound pc points at; 0: none */
	int64_t futex;         /* the futex call's number */
	const struct cq_arch_syscall *names; /* calls a thread commonly blocks in */
	size_t nnames;
};

struct cq_arch {
	const char *name;             /* "x86_64", as printed */
	uint16_t e_machine;           /* ELF machine number */
	size_t prstatus_size;         /* sizeof(struct elf_prstatus) */
	size_t prstatus_reg_offset;   /* offsetof(struct elf_prstatus, pr_reg) */
	unsigned prstatus_nregs;      /* 64-bit slots in pr_reg */
	const int8_t *prstatus_dwarf; /* per pr_reg slot: DWARF number, or -1 */
	const char *const *reg_names; /* by DWARF number, CQ_REGS_MAX entries */
	unsigned nregs;               /* DWARF registers 0..nregs-1 are tracked */
	unsigned pc_reg;              /* DWARF number holding the pc (x86_64: RA column) */
	unsigned sp_reg;              /* stack pointer */
	unsigned fp_reg;              /* frame pointer */
	unsigned ra_reg;              /* DWARF return-address column */
	uint64_t callee_saved;        /* bitmask of DWARF numbers preserved across calls */
	enum cq_arch_tp_source tp_source;
	const char *tp_name;    /* where the core keeps it, as a person is told: "fs_base" */
	unsigned tp_slot;       /* pr_reg slot, for CQ_ARCH_TP_PRSTATUS_SLOT */
	uint32_t tp_note_type;  /* note type, for CQ_ARCH_TP_NOTE */
	uint32_t pac_mask_note; /* note holding {data_mask, insn_mask} (NT_ARM_PAC_MASK); 0: none */
	uint64_t tp_pthread_adjust; /* 0: struct pthread at tp; else at tp - sizeof(pthread) */
	unsigned call_max_len;      /* longest call instruction, in bytes */
	/*
	 * A call leaves the return address in a register (aarch64's link
	 * register), not on the stack: a frame that calls nothing may keep no
	 * stack at all, so its CFA, its caller's sp, equals its own sp.  On
	 * x86_64 the call pushes the return address, and every caller's sp is
	 * above its callee's.
	 */
	bool leaf_may_keep_sp;
	/* The dynamic loader's standard path (glibc's PT_INTERP string). */
	const char *interp_path;
	uint64_t red_zone; /* bytes below sp a leaf function may use (ABI) */
	/*
	 * The frame record a frame pointer points at: the caller's frame pointer
	 * at fp, the return address at fp + frame_ra_offset, and the caller's sp
	 * is fp + frame_record_size (x86_64's push rbp after the call; aarch64's
	 * stp x29, x30 pair).
	 */
	uint64_t frame_ra_offset;
	uint64_t frame_record_size;
	/*
	 * A signal trampoline with no CFI (qemu-user's, on aarch64): its code,
	 * and where the saved registers sit from the sp the handler was entered
	 * with, laid out as pr_reg is (prstatus_dwarf maps them).  0: none.
	 */
	const uint8_t *sigreturn_code;
	unsigned sigreturn_len;
	uint64_t sigframe_regs_offset;
	/*
	 * The DWARF number of each 64-bit slot of the signal frame's registers
	 * from sigframe_regs_offset, sigframe_nregs of them; NULL: the slots are
	 * pr_reg's (prstatus_dwarf).
	 */
	const int8_t *sigframe_dwarf;
	unsigned sigframe_nregs;
	/*
	 * glibc's struct pthread, for cores whose libc lacks the _thread_db_*
	 * descriptors: offset of specific[] and sizeof(struct pthread) as
	 * glibc 2.36 (Debian 12) has them; 0 when not known for this arch.
	 */
	uint64_t glibc_specific_offset;
	uint64_t glibc_sizeof_pthread;
	struct cq_arch_syscall_regs syscall;
	/* True if the call_max_len bytes ending at a return address end in a call. */
	bool (*ends_with_call)(const uint8_t *before);
};

extern const struct cq_arch cq_arch_x86_64;
extern const struct cq_arch cq_arch_aarch64;

/* Returns the architecture for an ELF e_machine, or NULL if unsupported. */
const struct cq_arch *cq_arch_from_machine(uint16_t e_machine);

#endif
