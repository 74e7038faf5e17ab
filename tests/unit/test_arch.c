/*
 * test_arch.c - the per-architecture tables (libcore/base/arch.h), checked
 * against independent sources: this host's kernel ABI headers for its
 * own NT_PRSTATUS layout (struct elf_prstatus, struct user_regs_struct;
 * x86_64 on x86_64, aarch64 on aarch64, and the other written out from the
 * kernel's headers), <elf.h> for machine and note numbers, the psABI
 * DWARF register numbers written out here by register name, and
 * instruction encodings from the Intel and Arm manuals for the
 * "ends with a call" test on return addresses.
 */
#include <elf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/procfs.h>
#include <sys/user.h>

#include <cmocka.h>

#include "libcore/base/arch.h"

static void test_machine_lookup(void **state)
{
	(void)state;
	assert_ptr_equal(cq_arch_from_machine(EM_X86_64), &cq_arch_x86_64);
	assert_ptr_equal(cq_arch_from_machine(EM_AARCH64), &cq_arch_aarch64);
	assert_null(cq_arch_from_machine(EM_386));
	assert_null(cq_arch_from_machine(EM_ARM));
	assert_null(cq_arch_from_machine(EM_NONE));
	assert_string_equal(cq_arch_x86_64.name, "x86_64");
	assert_string_equal(cq_arch_aarch64.name, "aarch64");
}

#if defined(__x86_64__)
/* This host's own headers describe the x86_64 layout. */
#define X86_64_SLOT(reg)     (offsetof(struct user_regs_struct, reg) / 8)
#define X86_64_PRSTATUS_SIZE sizeof(struct elf_prstatus)
#define X86_64_PR_REG_OFFSET offsetof(struct elf_prstatus, pr_reg)
#define X86_64_NREGS         (sizeof(struct user_regs_struct) / 8)
#else
/*
 * Another host (an aarch64 build): the x86_64 layout written out from the
 * kernel's arch/x86/include/asm/user_64.h, struct user_regs_struct: r15
 * r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs
 * eflags rsp ss fs_base gs_base ds es fs gs; elf_prstatus on LP64 puts
 * pr_reg at 112 and pads the 27 registers and pr_fpvalid to 336 bytes.
 */
enum x86_64_slot {
	x86_r15,
	x86_r14,
	x86_r13,
	x86_r12,
	x86_rbp,
	x86_rbx,
	x86_r11,
	x86_r10,
	x86_r9,
	x86_r8,
	x86_rax,
	x86_rcx,
	x86_rdx,
	x86_rsi,
	x86_rdi,
	x86_orig_rax,
	x86_rip,
	x86_cs,
	x86_eflags,
	x86_rsp,
	x86_ss,
	x86_fs_base,
	x86_gs_base,
	x86_ds,
	x86_es,
	x86_fs,
	x86_gs,
	x86_nregs
};
#define X86_64_SLOT(reg)     ((size_t)x86_##reg)
#define X86_64_PRSTATUS_SIZE 336
#define X86_64_PR_REG_OFFSET 112
#define X86_64_NREGS         ((size_t)x86_nregs)
#endif

/* The DWARF number of the x86_64 register in pr_reg slot of user_regs_struct. */
static int x86_64_dwarf_of_slot(unsigned slot)
{
	/* System V AMD64 psABI, figure "DWARF Register Number Mapping". */
	static const struct {
		size_t slot;
		int dwarf;
	} map[] = {
	    {X86_64_SLOT(rax), 0},  {X86_64_SLOT(rdx), 1},  {X86_64_SLOT(rcx), 2},
	    {X86_64_SLOT(rbx), 3},  {X86_64_SLOT(rsi), 4},  {X86_64_SLOT(rdi), 5},
	    {X86_64_SLOT(rbp), 6},  {X86_64_SLOT(rsp), 7},  {X86_64_SLOT(r8), 8},
	    {X86_64_SLOT(r9), 9},   {X86_64_SLOT(r10), 10}, {X86_64_SLOT(r11), 11},
	    {X86_64_SLOT(r12), 12}, {X86_64_SLOT(r13), 13}, {X86_64_SLOT(r14), 14},
	    {X86_64_SLOT(r15), 15}, {X86_64_SLOT(rip), 16},
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (map[i].slot == slot)
			return map[i].dwarf;
	return -1;
}

static void test_x86_64_prstatus_layout(void **state)
{
	(void)state;
	const struct cq_arch *a = &cq_arch_x86_64;
	assert_int_equal(a->e_machine, EM_X86_64);
	assert_int_equal(a->prstatus_size, X86_64_PRSTATUS_SIZE);
	assert_int_equal(a->prstatus_reg_offset, X86_64_PR_REG_OFFSET);
	assert_int_equal(a->prstatus_nregs, X86_64_NREGS);
	for (unsigned slot = 0; slot < a->prstatus_nregs; slot++)
		assert_int_equal(a->prstatus_dwarf[slot], x86_64_dwarf_of_slot(slot));
	assert_int_equal(a->tp_source, CQ_ARCH_TP_PRSTATUS_SLOT);
	assert_int_equal(a->tp_slot, X86_64_SLOT(fs_base));
	assert_int_equal(a->pc_reg, 16);
	assert_int_equal(a->ra_reg, 16);
	assert_int_equal(a->sp_reg, 7);
	assert_int_equal(a->fp_reg, 6);
	assert_string_equal(a->reg_names[a->pc_reg], "rip");
	assert_string_equal(a->reg_names[a->sp_reg], "rsp");
	assert_string_equal(a->reg_names[a->fp_reg], "rbp");
	assert_string_equal(a->reg_names[3], "rbx");
	assert_string_equal(a->reg_names[15], "r15");
	/* psABI: rbx, rbp, r12-r15 are preserved across calls. */
	assert_true(a->callee_saved == ((1ull << 3) | (1ull << 6) | (0xfull << 12)));
	assert_int_equal(a->red_zone, 128);
	/* mov $15 (__NR_rt_sigreturn), %rax; syscall: glibc's __restore_rt, Go's runtime.sigreturn
	 */
	static const uint8_t tramp[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
	assert_int_equal(a->sigreturn_len, sizeof(tramp));
	assert_memory_equal(a->sigreturn_code, tramp, sizeof(tramp));
	/* struct sigcontext after uc_flags, uc_link and uc_stack: r8 first, rip 17th */
	assert_int_equal(a->sigframe_regs_offset, 40);
	assert_int_equal(a->sigframe_nregs, 17);
	assert_int_equal(a->sigframe_dwarf[0], 8);
	assert_int_equal(a->sigframe_dwarf[15], (int)a->sp_reg);
	assert_int_equal(a->sigframe_dwarf[16], (int)a->pc_reg);
}

static void test_aarch64_layout(void **state)
{
	(void)state;
	const struct cq_arch *a = &cq_arch_aarch64;
	assert_int_equal(a->e_machine, EM_AARCH64);
	/* user_pt_regs: x0..x30, sp, pc, pstate; DWARF x0..x30 = 0..30, sp 31, pc 32 (AADWARF64).
	 */
	assert_int_equal(a->prstatus_nregs, 34);
	for (unsigned slot = 0; slot < 33; slot++)
		assert_int_equal(a->prstatus_dwarf[slot], (int)slot);
	assert_int_equal(a->prstatus_dwarf[33], -1);
	/* elf_prstatus on LP64: pr_reg at 112; 34 registers, then pr_fpvalid, padded to 8. */
	assert_int_equal(a->prstatus_reg_offset, 112);
	assert_int_equal(a->prstatus_size, 112 + 34 * 8 + 8);
#if defined(__aarch64__)
	/* This host's own headers describe the aarch64 layout. */
	assert_int_equal(a->prstatus_size, sizeof(struct elf_prstatus));
	assert_int_equal(a->prstatus_reg_offset, offsetof(struct elf_prstatus, pr_reg));
	assert_int_equal(a->prstatus_nregs, sizeof(struct user_regs_struct) / 8);
	assert_int_equal(8 * a->sp_reg, offsetof(struct user_regs_struct, sp));
	assert_int_equal(8 * a->pc_reg, offsetof(struct user_regs_struct, pc));
#endif
	assert_int_equal(a->sp_reg, 31);
	assert_int_equal(a->pc_reg, 32);
	assert_int_equal(a->fp_reg, 29);
	assert_int_equal(a->ra_reg, 30);
	assert_string_equal(a->reg_names[29], "x29");
	assert_string_equal(a->reg_names[31], "sp");
	assert_string_equal(a->reg_names[32], "pc");
	assert_int_equal(a->tp_source, CQ_ARCH_TP_NOTE);
	assert_int_equal(a->tp_note_type, NT_ARM_TLS);
	assert_int_equal(a->pac_mask_note, NT_ARM_PAC_MASK);
	/* AAPCS64: x19..x29 and the link register x30 are kept across calls here. */
	for (unsigned r = 0; r < 34; r++)
		assert_int_equal((a->callee_saved >> r) & 1, r >= 19 && r <= 30);
	/* mov x8, #139 (__NR_rt_sigreturn); svc #0 */
	static const uint8_t tramp[8] = {0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4};
	assert_int_equal(a->sigreturn_len, sizeof(tramp));
	assert_memory_equal(a->sigreturn_code, tramp, sizeof(tramp));
}

static void test_dwarf_numbers_fit_cq_regs(void **state)
{
	(void)state;
	const struct cq_arch *all[] = {&cq_arch_x86_64, &cq_arch_aarch64};
	for (size_t i = 0; i < 2; i++) {
		const struct cq_arch *a = all[i];
		assert_true(a->nregs <= CQ_REGS_MAX);
		assert_true(a->pc_reg < a->nregs && a->sp_reg < a->nregs);
		for (unsigned r = 0; r < a->nregs; r++)
			assert_non_null(a->reg_names[r]);
		for (unsigned s = 0; s < a->prstatus_nregs; s++)
			assert_true(a->prstatus_dwarf[s] < (int)a->nregs);
	}
	struct cq_regs regs = {0};
	cq_regs_set(&regs, 16, 0x1234);
	cq_regs_set(&regs, CQ_REGS_MAX, 1); /* out of range: ignored */
	assert_true(cq_regs_has(&regs, 16));
	assert_false(cq_regs_has(&regs, 15));
	assert_false(cq_regs_has(&regs, CQ_REGS_MAX));
	assert_int_equal(regs.value[16], 0x1234);
	assert_true(regs.valid == 1ull << 16);
}

/* Whether code, placed to end right at the return address, ends with a call. */
static bool x86_ends(const uint8_t *code, size_t n)
{
	uint8_t b[7];
	memset(b, 0x90, sizeof(b)); /* nop */
	memcpy(b + 7 - n, code, n);
	assert_int_equal(cq_arch_x86_64.call_max_len, 7);
	return cq_arch_x86_64.ends_with_call(b);
}

static void test_x86_64_call_before_return_address(void **state)
{
	(void)state;
	static const struct {
		uint8_t code[7];
		size_t n;
		bool call;
	} cases[] = {
	    {{0xe8, 0x10, 0x20, 0x30, 0x40}, 5, true},             /* call rel32 */
	    {{0xff, 0xd0}, 2, true},                               /* call rax */
	    {{0x41, 0xff, 0xd3}, 3, true},                         /* call r11 */
	    {{0xff, 0x50, 0x08}, 3, true},                         /* call [rax+8] */
	    {{0xff, 0x54, 0x24, 0x08}, 4, true},                   /* call [rsp+8] */
	    {{0xff, 0x15, 0x00, 0x10, 0x00, 0x00}, 6, true},       /* call [rip+0x1000] */
	    {{0xff, 0x90, 0x00, 0x01, 0x00, 0x00}, 6, true},       /* call [rax+0x100] */
	    {{0xff, 0x94, 0x24, 0x00, 0x01, 0x00, 0x00}, 7, true}, /* call [rsp+0x100] */
	    {{0x90}, 1, false},                                    /* nop */
	    {{0xc3}, 1, false},                                    /* ret */
	    {{0xff, 0xe0}, 2, false},                              /* jmp rax */
	    {{0xe9, 0x10, 0x20, 0x30, 0x40}, 5, false},            /* jmp rel32 */
	    {{0xff, 0x25, 0x00, 0x10, 0x00, 0x00}, 6, false},      /* jmp [rip+0x1000] */
	    {{0xff, 0xc0}, 2, false},                              /* inc eax */
	    {{0x48, 0x89, 0xe5}, 3, false},                        /* mov rbp, rsp */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (x86_ends(cases[i].code, cases[i].n) != cases[i].call)
			fail_msg("case %zu: want %d", i, cases[i].call);
	}
}

static bool a64_ends(uint32_t insn)
{
	uint8_t b[4] = {(uint8_t)insn, (uint8_t)(insn >> 8), (uint8_t)(insn >> 16),
	                (uint8_t)(insn >> 24)};
	assert_int_equal(cq_arch_aarch64.call_max_len, 4);
	return cq_arch_aarch64.ends_with_call(b);
}

static void test_aarch64_call_before_return_address(void **state)
{
	(void)state;
	assert_true(a64_ends(0x94000000u));  /* bl . */
	assert_true(a64_ends(0x97ffffffu));  /* bl .-4 */
	assert_true(a64_ends(0xd63f0020u));  /* blr x1 */
	assert_true(a64_ends(0xd63f03c0u));  /* blr x30 */
	assert_false(a64_ends(0x14000000u)); /* b . */
	assert_false(a64_ends(0xd61f0020u)); /* br x1 */
	assert_false(a64_ends(0xd65f03c0u)); /* ret */
	assert_false(a64_ends(0xd503201fu)); /* nop */
	assert_false(a64_ends(0xa9bf7bfdu)); /* stp x29, x30, [sp, #-16]! */
}

/*
 * The frame record a frame pointer points at (the psABIs): x86_64's
 * `push %rbp; mov %rsp, %rbp` after the call leaves the caller's rbp at
 * [rbp] and the return address at [rbp + 8], the caller's rsp at rbp + 16;
 * AAPCS64's `stp x29, x30, [sp, #-16]!; mov x29, sp` the same at x29.  And
 * where each keeps the thread pointer, as a person is told.
 */
static void test_frame_records_and_thread_pointers(void **state)
{
	(void)state;
	assert_int_equal(cq_arch_x86_64.frame_ra_offset, 8);
	assert_int_equal(cq_arch_x86_64.frame_record_size, 16);
	assert_int_equal(cq_arch_aarch64.frame_ra_offset, 8);
	assert_int_equal(cq_arch_aarch64.frame_record_size, 16);
	assert_string_equal(cq_arch_x86_64.tp_name, "fs_base");
	assert_string_equal(cq_arch_aarch64.tp_name, "NT_ARM_TLS note");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_machine_lookup),
	    cmocka_unit_test(test_x86_64_prstatus_layout),
	    cmocka_unit_test(test_aarch64_layout),
	    cmocka_unit_test(test_dwarf_numbers_fit_cq_regs),
	    cmocka_unit_test(test_x86_64_call_before_return_address),
	    cmocka_unit_test(test_aarch64_call_before_return_address),
	    cmocka_unit_test(test_frame_records_and_thread_pointers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
