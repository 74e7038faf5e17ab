/*
 * arch.c - the architecture tables described in arch.h.
 *
 * Sources: the kernel's struct user_regs_struct (x86_64) and struct
 * user_pt_regs (aarch64); DWARF numbers from the psABI documents.
 */
#include "libcore/base/arch.h"

#include <elf.h>

/* x86_64 pr_reg: r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi
 * orig_rax rip cs eflags rsp ss fs_base gs_base ds es fs gs. */
static const int8_t x86_64_prstatus_dwarf[27] = {
    15, 14, 13, 12, 6,  3, 11, 10, 9,  8,  0,  2,  1,  4,
    5,  -1, 16, -1, -1, 7, -1, -1, -1, -1, -1, -1, -1,
};

static const char *const x86_64_reg_names[CQ_REGS_MAX] = {
    "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8",
    "r9",  "r10", "r11", "r12", "r13", "r14", "r15", "rip",
};

/* ModRM with reg field 2: the "call" form of opcode 0xff. */
static bool modrm_is_call(uint8_t modrm)
{
	return (modrm & 0x38) == 0x10;
}

/*
 * x86_64: call rel32 (e8 + 4), or ff /2 in its register (2 bytes), disp8
 * (3, 4 with SIB), disp32 or rip-relative (6, 7 with SIB) forms.
 */
static bool x86_64_ends_with_call(const uint8_t *b)
{
	return b[2] == 0xe8 || (b[5] == 0xff && modrm_is_call(b[6]) && b[6] >= 0xc0) ||
	       (b[4] == 0xff && modrm_is_call(b[5])) || (b[3] == 0xff && modrm_is_call(b[4])) ||
	       (b[1] == 0xff && modrm_is_call(b[2])) || (b[0] == 0xff && modrm_is_call(b[1]));
}

/* aarch64: BL imm26 or BLR Xn as the instruction before the return address. */
static bool aarch64_ends_with_call(const uint8_t *b)
{
	uint32_t insn =
	    (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	return (insn & 0xfc000000u) == 0x94000000u || (insn & 0xfffffc1fu) == 0xd63f0000u;
}

/* From the kernel's arch/x86/entry/syscalls/syscall_64.tbl. */
static const struct cq_arch_syscall x86_64_syscalls[] = {
    {0, "read"},         {1, "write"},         {7, "poll"},
    {23, "select"},      {34, "pause"},        {35, "nanosleep"},
    {42, "connect"},     {43, "accept"},       {45, "recvfrom"},
    {47, "recvmsg"},     {61, "wait4"},        {72, "fcntl"},
    {73, "flock"},       {202, "futex"},       {230, "clock_nanosleep"},
    {232, "epoll_wait"}, {257, "openat"},      {270, "pselect6"},
    {271, "ppoll"},      {281, "epoll_pwait"}, {288, "accept4"},
    {247, "waitid"},
};

/*
 * mov $15, %rax (rt_sigreturn); syscall - glibc's __restore_rt (which its
 * CFI marks as a signal frame) and Go's runtime.sigreturn (which Go's CFI
 * does not), the sa_restorer of a Go program not linked with libc.
 */
static const uint8_t x86_64_sigreturn[9] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};

/* struct sigcontext's first 17 slots: r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip. */
static const int8_t x86_64_sigframe_dwarf[17] = {8, 9, 10, 11, 12, 13, 14, 15, 5,
                                                 4, 6, 3,  1,  0,  2,  7,  16};

const struct cq_arch cq_arch_x86_64 = {
    .name = "x86_64",
    .e_machine = EM_X86_64,
    .prstatus_size = 336,
    .prstatus_reg_offset = 112,
    .prstatus_nregs = 27,
    .prstatus_dwarf = x86_64_prstatus_dwarf,
    .reg_names = x86_64_reg_names,
    .nregs = 17,
    .pc_reg = 16,
    .sp_reg = 7,
    .fp_reg = 6,
    .ra_reg = 16,
    /* rbx rbp r12 r13 r14 r15 */
    .callee_saved = 1ull << 3 | 1ull << 6 | 1ull << 12 | 1ull << 13 | 1ull << 14 | 1ull << 15,
    .tp_source = CQ_ARCH_TP_PRSTATUS_SLOT,
    .tp_name = "fs_base",
    .tp_slot = 21,
    .tp_pthread_adjust = 0,
    .call_max_len = 7,
    .leaf_may_keep_sp = false,
    .interp_path = "/lib64/ld-linux-x86-64.so.2",
    .red_zone = 128,
    .frame_ra_offset = 8,
    .frame_record_size = 16,
    .glibc_specific_offset = 1296, /* FACTS.md section 3 */
    .glibc_sizeof_pthread = 2368,
    /* orig_rax, rdi, rsi, rax */
    .syscall = {.nr_slot = 15,
                .arg_slots = {14, 13},
                .ret_slot = 10,
                .nr_is_orig = true,
                .futex = 202,
                .names = x86_64_syscalls,
                .nnames = sizeof(x86_64_syscalls) / sizeof(x86_64_syscalls[0])},
    .ends_with_call = x86_64_ends_with_call,
    .sigreturn_code = x86_64_sigreturn,
    .sigreturn_len = sizeof(x86_64_sigreturn),
    /* At the trampoline, sp is the rt_sigframe's ucontext: uc_flags, uc_link,
     * uc_stack (24), then uc_mcontext (struct sigcontext). */
    .sigframe_regs_offset = 8 + 8 + 24,
    .sigframe_dwarf = x86_64_sigframe_dwarf,
    .sigframe_nregs = 17,
};

/* aarch64 pr_reg: x0..x30, sp, pc, pstate. DWARF: x0..x30 = 0..30, sp = 31, pc = 32. */
static const int8_t aarch64_prstatus_dwarf[34] = {
    0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
    17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, -1,
};

static const char *const aarch64_reg_names[CQ_REGS_MAX] = {
    "x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",  "x7",  "x8",  "x9",  "x10",
    "x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21",
    "x22", "x23", "x24", "x25", "x26", "x27", "x28", "x29", "x30", "sp",  "pc",
};

/* mov x8, #139 (rt_sigreturn); svc #0 - the kernel's and qemu-user's trampoline. */
static const uint8_t aarch64_sigreturn[8] = {0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4};

/* From the kernel's include/uapi/asm-generic/unistd.h. */
static const struct cq_arch_syscall aarch64_syscalls[] = {
    {22, "epoll_pwait"}, {25, "fcntl"},    {32, "flock"},      {56, "openat"},
    {63, "read"},        {64, "write"},    {72, "pselect6"},   {73, "ppoll"},
    {95, "waitid"},      {98, "futex"},    {101, "nanosleep"}, {115, "clock_nanosleep"},
    {202, "accept"},     {203, "connect"}, {207, "recvfrom"},  {212, "recvmsg"},
    {242, "accept4"},    {260, "wait4"},
};

const struct cq_arch cq_arch_aarch64 = {
    .name = "aarch64",
    .e_machine = EM_AARCH64,
    .prstatus_size = 392,
    .prstatus_reg_offset = 112,
    .prstatus_nregs = 34,
    .prstatus_dwarf = aarch64_prstatus_dwarf,
    .reg_names = aarch64_reg_names,
    .nregs = 33,
    .pc_reg = 32,
    .sp_reg = 31,
    .fp_reg = 29,
    .ra_reg = 30,
    .callee_saved = 0x7ff80000ull | 1ull << 29 | 1ull << 30, /* x19..x30 */
    .tp_source = CQ_ARCH_TP_NOTE,
    .tp_name = "NT_ARM_TLS note",
    .tp_note_type = 0x401,  /* NT_ARM_TLS */
    .pac_mask_note = 0x406, /* NT_ARM_PAC_MASK */
    .tp_pthread_adjust = 1,
    .call_max_len = 4,
    .leaf_may_keep_sp = true,
    .interp_path = "/lib/ld-linux-aarch64.so.1",
    .red_zone = 0,
    .frame_ra_offset = 8,
    .frame_record_size = 16,
    .sigreturn_code = aarch64_sigreturn,
    .sigreturn_len = sizeof(aarch64_sigreturn),
    /* rt_sigframe: siginfo (128), then ucontext, whose uc_mcontext (16-aligned,
     * at 176) starts with fault_address, then regs[31], sp, pc, pstate. */
    .sigframe_regs_offset = 128 + 176 + 8,
    /* x8, x0, x1, x0; svc #0 */
    .syscall = {.nr_slot = 8,
                .arg_slots = {0, 1},
                .ret_slot = 0,
                .svc_insn = 0xd4000001u,
                .futex = 98,
                .names = aarch64_syscalls,
                .nnames = sizeof(aarch64_syscalls) / sizeof(aarch64_syscalls[0])},
    .ends_with_call = aarch64_ends_with_call,
};

const struct cq_arch *cq_arch_from_machine(uint16_t e_machine)
{
	static const struct cq_arch *const all[] = {&cq_arch_x86_64, &cq_arch_aarch64};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (all[i]->e_machine == e_machine)
			return all[i];
	return NULL;
}
