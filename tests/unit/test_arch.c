/*
 * test_arch.c - the per-architecture tables (libcore/base/arch.h), checked
 * against independent sources: this host's kernel ABI headers for the
 * x86_64 NT_PRSTATUS layout (struct elf_prstatus, struct
 * user_regs_struct), <elf.h> for machine and note numbers, the psABI
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

/* The DWARF number of the x86_64 register in pr_reg slot (offset / 8) of user_regs_struct. */
static int x86_64_dwarf_of_slot(unsigned slot)
{
	/* System V AMD64 psABI, figure "DWARF Register Number Mapping". */
	static const struct {
		size_t offset;
		int dwarf;
	} map[] = {
	    {offsetof(struct user_regs_struct, rax), 0},
	    {offsetof(struct user_regs_struct, rdx), 1},
	    {offsetof(struct user_regs_struct, rcx), 2},
	    {offsetof(struct user_regs_struct, rbx), 3},
	    {offsetof(struct user_regs_struct, rsi), 4},
	    {offsetof(struct user_regs_struct, rdi), 5},
	    {offsetof(struct user_regs_struct, rbp), 6},
	    {offsetof(struct user_regs_struct, rsp), 7},
	    {offsetof(struct user_regs_struct, r8), 8},
	    {offsetof(struct user_regs_struct, r9), 9},
	    {offsetof(struct user_regs_struct, r10), 10},
	    {offsetof(struct user_regs_struct, r11), 11},
	    {offsetof(struct user_regs_struct, r12), 12},
	    {offsetof(struct user_regs_struct, r13), 13},
	    {offsetof(struct user_regs_struct, r14), 14},
	    {offsetof(struct user_regs_struct, r15), 15},
	    {offsetof(struct user_regs_struct, rip), 16},
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (map[i].offset == 8 * slot)
			return map[i].dwarf;
	return -1;
}

static void test_x86_64_prstatus_layout(void **state)
{
	(void)state;
	const struct cq_arch *a = &cq_arch_x86_64;
	assert_int_equal(a->e_machine, EM_X86_64);
	assert_int_equal(a->prstatus_size, sizeof(struct elf_prstatus));
	assert_int_equal(a->prstatus_reg_offset, offsetof(struct elf_prstatus, pr_reg));
	assert_int_equal(a->prstatus_nregs, sizeof(struct user_regs_struct) / 8);
	for (unsigned slot = 0; slot < a->prstatus_nregs; slot++)
		assert_int_equal(a->prstatus_dwarf[slot], x86_64_dwarf_of_slot(slot));
	assert_int_equal(a->tp_source, CQ_ARCH_TP_PRSTATUS_SLOT);
	assert_int_equal(8 * a->tp_slot, offsetof(struct user_regs_struct, fs_base));
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
	assert_null(a->sigreturn_code);
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
