/*
 * test_cfi_table.c - the CFI table compiler (unwind/cfi_table.c) on real,
 * assembler-generated .eh_frame, and its serialised form
 * (unwind/cfi_serialize.c).
 *
 * The fixtures are functions written in top-level asm with .cfi_* directives,
 * so gas emits genuine CIEs and FDEs for them into this test binary's own
 * .eh_frame: a frame-pointer prologue, a stack-realigning main-like prologue
 * (CFA based on r10, then a CFA expression), register/val_offset/same_value/
 * undefined rules, an outermost frame (rip undefined), the glibc PLT CFA
 * expression and a glibc-like __restore_rt signal trampoline.  The tests
 * compile /proc/self/exe with cq_cfi_table_build, look the fixtures up at
 * known instruction boundaries (every boundary has an exported label), and
 * check the rule kinds, registers and values; the PLT and signal rows are
 * also stepped with cq_unwind_step_cfi over synthetic memory.  The fixtures
 * are never executed.  Each has an aarch64 twin with the same CFI shapes
 * (the aarch64 build runs this test under qemu-aarch64); the tests name
 * registers by their part (FX_SP, FX_RA ...), not by x86_64 name.
 *
 * Then the serialised form: round trips, and blobs damaged in one way each,
 * which must be rejected with CQ_ERR_FORMAT (never a crash: this runs under
 * ASan+UBSan).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "libcore/base/arch.h"
#include "libcore/base/error.h"
#include "unwind/cfi_table.h"
#include "unwind/unwind.h"

#include "tests/unit/x86_64_regs.h"

/*
 * The DWARF registers the fixtures name, by their part.  The serialised-form
 * tests build small tables by hand in x86_64's numbering (x86_64_regs.h) on
 * both architectures; the fixture tests read this binary's own .eh_frame, in
 * its architecture's.
 */
#if defined(__x86_64__)
#define FX_ARCH cq_arch_x86_64
enum {
	FX_NREGS = NREGS,
	FX_SP = RSP,
	FX_FP = RBP,
	FX_RA = RIP, /* the return-address column */
	FX_PC = RIP,
	FX_CFA_REG = R10,   /* cq_fx_realign's CFA register */
	FX_SAVED = RBX,     /* cq_fx_rules: held in FX_HOLDER, then same value */
	FX_HOLDER = R12,    /* callee-saved */
	FX_VAL = R13,       /* val_offset */
	FX_UNDEF = R14,     /* callee-saved, then undefined */
	FX_CLOBBERED = R11, /* call-clobbered */
	FX_ENTRY_CFA = 8,   /* CFA - sp where a function starts: the call pushed */
	FX_SIG_CFA = 160,   /* the saved sp's slot from the trampoline's sp */
};
#elif defined(__aarch64__)
#define FX_ARCH cq_arch_aarch64
enum {
	FX_NREGS = 33,
	FX_SP = 31,
	FX_FP = 29,
	FX_RA = 30,
	FX_PC = 32,
	FX_CFA_REG = 9,
	FX_SAVED = 19,
	FX_HOLDER = 20,
	FX_VAL = 21,
	FX_UNDEF = 22,
	FX_CLOBBERED = 10,
	FX_ENTRY_CFA = 0, /* the return address is in x30 */
	FX_SIG_CFA = 560,
};
#endif

/* ---- fixtures ------------------------------------------------------------------ */

/*
 * Every fixture is .globl .hidden so C can take its (PC-relative) address;
 * labels inside mark instruction boundaries where a new CFI row starts.
 * cq_fx_gap is padding between FDEs that no FDE covers.  The labels keep
 * the x86_64 register names (cq_fx_realign_r10, cq_fx_restore_rt) on both
 * architectures.
 */
#if defined(__x86_64__)
__asm__(".text\n"
        ".p2align 4\n"

        /* A classic frame-pointer prologue and epilogue. */
        ".globl cq_fx_frame\n .hidden cq_fx_frame\n .type cq_fx_frame, @function\n"
        ".globl cq_fx_frame_pushed\n .hidden cq_fx_frame_pushed\n"
        ".globl cq_fx_frame_body\n .hidden cq_fx_frame_body\n"
        ".globl cq_fx_frame_popped\n .hidden cq_fx_frame_popped\n"
        ".globl cq_fx_frame_end\n .hidden cq_fx_frame_end\n"
        "cq_fx_frame:\n"
        "	.cfi_startproc\n"
        "	push %rbp\n"
        "cq_fx_frame_pushed:\n"
        "	.cfi_def_cfa_offset 16\n"
        "	.cfi_offset %rbp, -16\n"
        "	mov %rsp, %rbp\n"
        "cq_fx_frame_body:\n"
        "	.cfi_def_cfa_register %rbp\n"
        "	nop\n"
        "	nop\n"
        "	nop\n"
        "	pop %rbp\n"
        "cq_fx_frame_popped:\n"
        "	.cfi_restore %rbp\n"
        "	.cfi_def_cfa %rsp, 8\n"
        "	ret\n"
        "	.cfi_endproc\n"
        "cq_fx_frame_end:\n"
        ".size cq_fx_frame, .-cq_fx_frame\n"

        /* No FDE covers these bytes. */
        ".globl cq_fx_gap\n .hidden cq_fx_gap\n"
        "cq_fx_gap:\n"
        "	.skip 32, 0xcc\n"

        /*
         * gcc's stack-realigning main: CFA = r10 + 0, then rbp saved by a
         * DW_CFA_expression, then CFA = *(rbp - 8) by DW_CFA_def_cfa_expression.
         */
        ".globl cq_fx_realign\n .hidden cq_fx_realign\n .type cq_fx_realign, @function\n"
        ".globl cq_fx_realign_r10\n .hidden cq_fx_realign_r10\n"
        ".globl cq_fx_realign_rbp\n .hidden cq_fx_realign_rbp\n"
        ".globl cq_fx_realign_expr\n .hidden cq_fx_realign_expr\n"
        "cq_fx_realign:\n"
        "	.cfi_startproc\n"
        "	lea 8(%rsp), %r10\n"
        "cq_fx_realign_r10:\n"
        "	.cfi_def_cfa %r10, 0\n"
        "	and $-16, %rsp\n"
        "	pushq -8(%r10)\n"
        "	push %rbp\n"
        "	mov %rsp, %rbp\n"
        "cq_fx_realign_rbp:\n"
        "	.cfi_escape 0x10, 0x06, 0x02, 0x76, 0x00\n" /* rbp at breg6 0 */
        "	push %r10\n"
        "cq_fx_realign_expr:\n"
        "	.cfi_escape 0x0f, 0x03, 0x76, 0x78, 0x06\n" /* CFA = *(rbp - 8) */
        "	nop\n"
        "	nop\n"
        "	ud2\n"
        "	.cfi_endproc\n"
        ".size cq_fx_realign, .-cq_fx_realign\n"

        /* DW_CFA_register, val_offset, same_value and undefined (not rip). */
        ".globl cq_fx_rules\n .hidden cq_fx_rules\n .type cq_fx_rules, @function\n"
        ".globl cq_fx_rules_reg\n .hidden cq_fx_rules_reg\n"
        ".globl cq_fx_rules_val\n .hidden cq_fx_rules_val\n"
        ".globl cq_fx_rules_same\n .hidden cq_fx_rules_same\n"
        "cq_fx_rules:\n"
        "	.cfi_startproc\n"
        "	mov %rbx, %r12\n"
        "cq_fx_rules_reg:\n"
        "	.cfi_register %rbx, %r12\n"
        "	lea -24(%rsp), %r13\n"
        "cq_fx_rules_val:\n"
        "	.cfi_val_offset %r13, -32\n"
        "	mov %r12, %rbx\n"
        "cq_fx_rules_same:\n"
        "	.cfi_same_value %rbx\n"
        "	.cfi_undefined %r14\n"
        "	ret\n"
        "	.cfi_endproc\n"
        ".size cq_fx_rules, .-cq_fx_rules\n"

        /* A thread's first function, like _start: the return address is undefined. */
        ".globl cq_fx_outermost\n .hidden cq_fx_outermost\n .type cq_fx_outermost, @function\n"
        "cq_fx_outermost:\n"
        "	.cfi_startproc\n"
        "	.cfi_undefined %rip\n"
        "	xor %ebp, %ebp\n"
        "	nop\n"
        "	ud2\n"
        "	.cfi_endproc\n"
        ".size cq_fx_outermost, .-cq_fx_outermost\n"

        /*
         * The glibc/binutils PLT rule: DW_CFA_def_cfa_expression
         * breg7 8; breg16 0; lit15; and; lit11; ge; lit3; shl; plus.
         */
        ".p2align 4\n"
        ".globl cq_fx_plt\n .hidden cq_fx_plt\n .type cq_fx_plt, @function\n"
        ".globl cq_fx_plt_end\n .hidden cq_fx_plt_end\n"
        "cq_fx_plt:\n"
        "	.cfi_startproc\n"
        "	.cfi_escape 0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, "
        "0x24, 0x22\n"
        "	jmp *0(%rip)\n"
        "	pushq $0\n"
        "	jmp cq_fx_plt\n"
        "	nop\n"
        "	.cfi_endproc\n"
        "cq_fx_plt_end:\n"
        ".size cq_fx_plt, .-cq_fx_plt\n"

        /*
         * glibc's __restore_rt: "zRS" CIE; CFA = *(rsp + 160) (uc_mcontext's
         * rsp), every register by DW_CFA_expression breg7 N into
         * uc_mcontext.gregs at sp + 40: r8..r15, rdi, rsi, rbp, rbx, rdx, rax,
         * rcx, rsp, rip.  Like glibc, the FDE starts one byte (a nop) before
         * the trampoline so that its return-address lookup at pc - 1 hits it.
         */
        ".globl cq_fx_sigframe\n .hidden cq_fx_sigframe\n .type cq_fx_sigframe, @function\n"
        ".globl cq_fx_restore_rt\n .hidden cq_fx_restore_rt\n"
        "cq_fx_sigframe:\n"
        "	.cfi_startproc\n"
        "	.cfi_signal_frame\n"
        "	.cfi_escape 0x0f, 0x04, 0x77, 0xa0, 0x01, 0x06\n"
        "	.cfi_escape 0x10, 0x08, 0x02, 0x77, 0x28\n"       /* r8   sp+40 */
        "	.cfi_escape 0x10, 0x09, 0x02, 0x77, 0x30\n"       /* r9   sp+48 */
        "	.cfi_escape 0x10, 0x0a, 0x02, 0x77, 0x38\n"       /* r10  sp+56 */
        "	.cfi_escape 0x10, 0x0b, 0x03, 0x77, 0xc0, 0x00\n" /* r11  sp+64 */
        "	.cfi_escape 0x10, 0x0c, 0x03, 0x77, 0xc8, 0x00\n" /* r12  sp+72 */
        "	.cfi_escape 0x10, 0x0d, 0x03, 0x77, 0xd0, 0x00\n" /* r13  sp+80 */
        "	.cfi_escape 0x10, 0x0e, 0x03, 0x77, 0xd8, 0x00\n" /* r14  sp+88 */
        "	.cfi_escape 0x10, 0x0f, 0x03, 0x77, 0xe0, 0x00\n" /* r15  sp+96 */
        "	.cfi_escape 0x10, 0x05, 0x03, 0x77, 0xe8, 0x00\n" /* rdi  sp+104 */
        "	.cfi_escape 0x10, 0x04, 0x03, 0x77, 0xf0, 0x00\n" /* rsi  sp+112 */
        "	.cfi_escape 0x10, 0x06, 0x03, 0x77, 0xf8, 0x00\n" /* rbp  sp+120 */
        "	.cfi_escape 0x10, 0x03, 0x03, 0x77, 0x80, 0x01\n" /* rbx  sp+128 */
        "	.cfi_escape 0x10, 0x01, 0x03, 0x77, 0x88, 0x01\n" /* rdx  sp+136 */
        "	.cfi_escape 0x10, 0x00, 0x03, 0x77, 0x90, 0x01\n" /* rax  sp+144 */
        "	.cfi_escape 0x10, 0x02, 0x03, 0x77, 0x98, 0x01\n" /* rcx  sp+152 */
        "	.cfi_escape 0x10, 0x07, 0x03, 0x77, 0xa0, 0x01\n" /* rsp  sp+160 */
        "	.cfi_escape 0x10, 0x10, 0x03, 0x77, 0xa8, 0x01\n" /* rip  sp+168 */
        "	nop\n"
        "cq_fx_restore_rt:\n"
        "	mov $15, %rax\n"
        "	syscall\n"
        "	.cfi_endproc\n"
        ".size cq_fx_sigframe, .-cq_fx_sigframe\n");
#elif defined(__aarch64__)
/*
 * The aarch64 twins: the same CFI shapes in A64.  A call leaves the return
 * address in x30 (the return-address column), so a function's entry row has
 * CFA = sp + 0 and no rule for x30; the frame record is stp x29, x30.
 */
__asm__(".text\n"
        ".p2align 4\n"

        /* A frame-pointer prologue and epilogue (stp/ldp of the frame record). */
        ".globl cq_fx_frame\n .hidden cq_fx_frame\n .type cq_fx_frame, %function\n"
        ".globl cq_fx_frame_pushed\n .hidden cq_fx_frame_pushed\n"
        ".globl cq_fx_frame_body\n .hidden cq_fx_frame_body\n"
        ".globl cq_fx_frame_popped\n .hidden cq_fx_frame_popped\n"
        ".globl cq_fx_frame_end\n .hidden cq_fx_frame_end\n"
        "cq_fx_frame:\n"
        "	.cfi_startproc\n"
        "	stp x29, x30, [sp, #-16]!\n"
        "cq_fx_frame_pushed:\n"
        "	.cfi_def_cfa_offset 16\n"
        "	.cfi_offset x29, -16\n"
        "	.cfi_offset x30, -8\n"
        "	mov x29, sp\n"
        "cq_fx_frame_body:\n"
        "	.cfi_def_cfa_register x29\n"
        "	nop\n"
        "	nop\n"
        "	nop\n"
        "	ldp x29, x30, [sp], #16\n"
        "cq_fx_frame_popped:\n"
        "	.cfi_restore x29\n"
        "	.cfi_restore x30\n"
        "	.cfi_def_cfa sp, 0\n"
        "	ret\n"
        "	.cfi_endproc\n"
        "cq_fx_frame_end:\n"
        ".size cq_fx_frame, .-cq_fx_frame\n"

        /* No FDE covers these bytes. */
        ".globl cq_fx_gap\n .hidden cq_fx_gap\n"
        "cq_fx_gap:\n"
        "	.skip 32, 0\n"

        /*
         * The realigning prologue's shape: CFA = x9 + 0, then x29 saved by a
         * DW_CFA_expression, then CFA = *(x29 - 8) by DW_CFA_def_cfa_expression.
         */
        ".globl cq_fx_realign\n .hidden cq_fx_realign\n .type cq_fx_realign, %function\n"
        ".globl cq_fx_realign_r10\n .hidden cq_fx_realign_r10\n"
        ".globl cq_fx_realign_rbp\n .hidden cq_fx_realign_rbp\n"
        ".globl cq_fx_realign_expr\n .hidden cq_fx_realign_expr\n"
        "cq_fx_realign:\n"
        "	.cfi_startproc\n"
        "	mov x9, sp\n"
        "cq_fx_realign_r10:\n"
        "	.cfi_def_cfa x9, 0\n"
        "	and x10, x9, #-16\n"
        "	mov sp, x10\n"
        "	stp x29, x30, [sp, #-16]!\n"
        "	mov x29, sp\n"
        "cq_fx_realign_rbp:\n"
        "	.cfi_escape 0x10, 0x1d, 0x02, 0x8d, 0x00\n" /* x29 at breg29 0 */
        "	str x9, [sp, #-16]!\n"
        "cq_fx_realign_expr:\n"
        "	.cfi_escape 0x0f, 0x03, 0x8d, 0x78, 0x06\n" /* CFA = *(x29 - 8) */
        "	nop\n"
        "	nop\n"
        "	brk #0\n"
        "	.cfi_endproc\n"
        ".size cq_fx_realign, .-cq_fx_realign\n"

        /* DW_CFA_register, val_offset, same_value and undefined (not x30). */
        ".globl cq_fx_rules\n .hidden cq_fx_rules\n .type cq_fx_rules, %function\n"
        ".globl cq_fx_rules_reg\n .hidden cq_fx_rules_reg\n"
        ".globl cq_fx_rules_val\n .hidden cq_fx_rules_val\n"
        ".globl cq_fx_rules_same\n .hidden cq_fx_rules_same\n"
        "cq_fx_rules:\n"
        "	.cfi_startproc\n"
        "	mov x20, x19\n"
        "cq_fx_rules_reg:\n"
        "	.cfi_register x19, x20\n"
        "	sub x21, sp, #24\n"
        "cq_fx_rules_val:\n"
        "	.cfi_val_offset x21, -32\n"
        "	mov x19, x20\n"
        "cq_fx_rules_same:\n"
        "	.cfi_same_value x19\n"
        "	.cfi_undefined x22\n"
        "	ret\n"
        "	.cfi_endproc\n"
        ".size cq_fx_rules, .-cq_fx_rules\n"

        /* A thread's first function, like _start: the return address is undefined. */
        ".globl cq_fx_outermost\n .hidden cq_fx_outermost\n .type cq_fx_outermost, %function\n"
        "cq_fx_outermost:\n"
        "	.cfi_startproc\n"
        "	.cfi_undefined x30\n"
        "	mov x29, #0\n"
        "	nop\n"
        "	brk #0\n"
        "	.cfi_endproc\n"
        ".size cq_fx_outermost, .-cq_fx_outermost\n"

        /*
         * The PLT rule's shape: a CFA expression of the stack pointer and the
         * pc, breg31 8; bregx 32 0; lit15; and; lit11; ge; lit3; shl; plus,
         * with the return address at CFA - 8.
         */
        ".p2align 4\n"
        ".globl cq_fx_plt\n .hidden cq_fx_plt\n .type cq_fx_plt, %function\n"
        ".globl cq_fx_plt_end\n .hidden cq_fx_plt_end\n"
        "cq_fx_plt:\n"
        "	.cfi_startproc\n"
        "	.cfi_escape 0x0f, 0x0c, 0x8f, 0x08, 0x92, 0x20, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, "
        "0x33, 0x24, 0x22\n"
        "	.cfi_offset x30, -8\n"
        "	ldr x17, [x16]\n"
        "	br x17\n"
        "	nop\n"
        "	nop\n"
        "	.cfi_endproc\n"
        "cq_fx_plt_end:\n"
        ".size cq_fx_plt, .-cq_fx_plt\n"

        /*
         * A signal trampoline's: "zRS" CIE; CFA = *(sp + 560) (the
         * ucontext's saved sp), every register by DW_CFA_expression breg31 N
         * into the rt_sigframe: x0..x29 in uc_mcontext.regs at sp + 312, sp
         * at sp + 560, and the return-address column x30 from the saved pc
         * at sp + 568, so the caller's pc is the interrupted instruction.
         * The FDE starts one instruction (a nop) before the trampoline so
         * that its return-address lookup at pc - 1 hits it.
         */
        ".globl cq_fx_sigframe\n .hidden cq_fx_sigframe\n .type cq_fx_sigframe, %function\n"
        ".globl cq_fx_restore_rt\n .hidden cq_fx_restore_rt\n"
        "cq_fx_sigframe:\n"
        "	.cfi_startproc\n"
        "	.cfi_signal_frame\n"
        "	.cfi_escape 0x0f, 0x04, 0x8f, 0xb0, 0x04, 0x06\n"
        "	.cfi_escape 0x10, 0x00, 0x03, 0x8f, 0xb8, 0x02\n" /* x0  sp+312 */
        "	.cfi_escape 0x10, 0x01, 0x03, 0x8f, 0xc0, 0x02\n" /* x1  sp+320 */
        "	.cfi_escape 0x10, 0x02, 0x03, 0x8f, 0xc8, 0x02\n" /* x2  sp+328 */
        "	.cfi_escape 0x10, 0x03, 0x03, 0x8f, 0xd0, 0x02\n" /* x3  sp+336 */
        "	.cfi_escape 0x10, 0x04, 0x03, 0x8f, 0xd8, 0x02\n" /* x4  sp+344 */
        "	.cfi_escape 0x10, 0x05, 0x03, 0x8f, 0xe0, 0x02\n" /* x5  sp+352 */
        "	.cfi_escape 0x10, 0x06, 0x03, 0x8f, 0xe8, 0x02\n" /* x6  sp+360 */
        "	.cfi_escape 0x10, 0x07, 0x03, 0x8f, 0xf0, 0x02\n" /* x7  sp+368 */
        "	.cfi_escape 0x10, 0x08, 0x03, 0x8f, 0xf8, 0x02\n" /* x8  sp+376 */
        "	.cfi_escape 0x10, 0x09, 0x03, 0x8f, 0x80, 0x03\n" /* x9  sp+384 */
        "	.cfi_escape 0x10, 0x0a, 0x03, 0x8f, 0x88, 0x03\n" /* x10 sp+392 */
        "	.cfi_escape 0x10, 0x0b, 0x03, 0x8f, 0x90, 0x03\n" /* x11 sp+400 */
        "	.cfi_escape 0x10, 0x0c, 0x03, 0x8f, 0x98, 0x03\n" /* x12 sp+408 */
        "	.cfi_escape 0x10, 0x0d, 0x03, 0x8f, 0xa0, 0x03\n" /* x13 sp+416 */
        "	.cfi_escape 0x10, 0x0e, 0x03, 0x8f, 0xa8, 0x03\n" /* x14 sp+424 */
        "	.cfi_escape 0x10, 0x0f, 0x03, 0x8f, 0xb0, 0x03\n" /* x15 sp+432 */
        "	.cfi_escape 0x10, 0x10, 0x03, 0x8f, 0xb8, 0x03\n" /* x16 sp+440 */
        "	.cfi_escape 0x10, 0x11, 0x03, 0x8f, 0xc0, 0x03\n" /* x17 sp+448 */
        "	.cfi_escape 0x10, 0x12, 0x03, 0x8f, 0xc8, 0x03\n" /* x18 sp+456 */
        "	.cfi_escape 0x10, 0x13, 0x03, 0x8f, 0xd0, 0x03\n" /* x19 sp+464 */
        "	.cfi_escape 0x10, 0x14, 0x03, 0x8f, 0xd8, 0x03\n" /* x20 sp+472 */
        "	.cfi_escape 0x10, 0x15, 0x03, 0x8f, 0xe0, 0x03\n" /* x21 sp+480 */
        "	.cfi_escape 0x10, 0x16, 0x03, 0x8f, 0xe8, 0x03\n" /* x22 sp+488 */
        "	.cfi_escape 0x10, 0x17, 0x03, 0x8f, 0xf0, 0x03\n" /* x23 sp+496 */
        "	.cfi_escape 0x10, 0x18, 0x03, 0x8f, 0xf8, 0x03\n" /* x24 sp+504 */
        "	.cfi_escape 0x10, 0x19, 0x03, 0x8f, 0x80, 0x04\n" /* x25 sp+512 */
        "	.cfi_escape 0x10, 0x1a, 0x03, 0x8f, 0x88, 0x04\n" /* x26 sp+520 */
        "	.cfi_escape 0x10, 0x1b, 0x03, 0x8f, 0x90, 0x04\n" /* x27 sp+528 */
        "	.cfi_escape 0x10, 0x1c, 0x03, 0x8f, 0x98, 0x04\n" /* x28 sp+536 */
        "	.cfi_escape 0x10, 0x1d, 0x03, 0x8f, 0xa0, 0x04\n" /* x29 sp+544 */
        "	.cfi_escape 0x10, 0x1f, 0x03, 0x8f, 0xb0, 0x04\n" /* sp  sp+560 */
        "	.cfi_escape 0x10, 0x1e, 0x03, 0x8f, 0xb8, 0x04\n" /* x30 sp+568 (pc) */
        "	nop\n"
        "cq_fx_restore_rt:\n"
        "	mov x8, #139\n"
        "	svc #0\n"
        "	.cfi_endproc\n"
        ".size cq_fx_sigframe, .-cq_fx_sigframe\n");
#else
#error "test_cfi_table has fixtures for x86_64 and aarch64 only"
#endif

extern const char cq_fx_frame[], cq_fx_frame_pushed[], cq_fx_frame_body[], cq_fx_frame_popped[],
    cq_fx_frame_end[], cq_fx_gap[];
extern const char cq_fx_realign[], cq_fx_realign_r10[], cq_fx_realign_rbp[], cq_fx_realign_expr[];
extern const char cq_fx_rules[], cq_fx_rules_reg[], cq_fx_rules_val[], cq_fx_rules_same[];
extern const char cq_fx_outermost[];
extern const char cq_fx_plt[], cq_fx_plt_end[];
extern const char cq_fx_sigframe[], cq_fx_restore_rt[];

/* ---- helpers ---------------------------------------------------------------- */

static void check_ok(struct cq_error *err)
{
	if (err)
		fail_msg("unexpected error: %s", err->message);
}

/* Asserts err is a CQ_ERR_FORMAT error with a message, and frees it. */
static void check_format_error(struct cq_error *err)
{
	assert_non_null(err);
	assert_int_equal(err->code, CQ_ERR_FORMAT);
	assert_non_null(err->message);
	assert_true(err->message[0] != '\0');
	cq_error_free(err);
}

static int first_object_bias(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uint64_t *)data = info->dlpi_addr;
	return 1; /* the first entry is the main program */
}

static uint64_t load_bias(void)
{
	uint64_t bias = 0;
	dl_iterate_phdr(first_object_bias, &bias);
	return bias;
}

/* The link-time address of a symbol of this (PIE) program. */
static uint64_t link_addr(const void *p)
{
	return (uint64_t)(uintptr_t)p - load_bias();
}

/* The table of /proc/self/exe, built once for all tests. */
struct self {
	int fd;
	Elf *elf;
	struct cq_cfi_table *table;
};

static int self_setup(void **state)
{
	struct self *s = calloc(1, sizeof(*s));
	if (!s)
		return -1;
	elf_version(EV_CURRENT);
	s->fd = open("/proc/self/exe", O_RDONLY);
	if (s->fd < 0)
		return -1;
	s->elf = elf_begin(s->fd, ELF_C_READ_MMAP, NULL);
	if (!s->elf)
		return -1;
	struct cq_error *err = cq_cfi_table_build(s->elf, NULL, FX_ARCH.nregs, &s->table);
	if (err) {
		fprintf(stderr, "cq_cfi_table_build: %s\n", err->message);
		cq_error_free(err);
		return -1;
	}
	*state = s;
	return 0;
}

static int self_teardown(void **state)
{
	struct self *s = *state;
	if (!s)
		return 0;
	cq_cfi_table_free(s->table);
	if (s->elf)
		elf_end(s->elf);
	if (s->fd >= 0)
		close(s->fd);
	free(s);
	return 0;
}

static const struct cq_cfi_table *self_table(void **state)
{
	const struct self *s = *state;
	assert_non_null(s);
	assert_non_null(s->table);
	return s->table;
}

/* The rule set for a symbol of this program plus a byte offset; fails if none. */
static const struct cq_cfi_rule *rules_at(const struct cq_cfi_table *t, const void *sym,
                                          uint64_t delta)
{
	const struct cq_cfi_rule *r = cq_cfi_table_lookup(t, link_addr(sym) + delta);
	if (!r)
		fail_msg("no CFI row at link-time 0x%llx",
		         (unsigned long long)(link_addr(sym) + delta));
	return r;
}

static void check_cfa_reg(const struct cq_cfi_rule *rs, unsigned reg, int32_t value)
{
	assert_int_equal(rs[0].kind, CQ_CFI_CFA_REG_OFFSET);
	assert_int_equal(rs[0].reg, reg);
	assert_int_equal(rs[0].value, value);
}

static void check_rule(const struct cq_cfi_rule *rs, unsigned regno, enum cq_cfi_kind kind,
                       int32_t value)
{
	const struct cq_cfi_rule *r = &rs[1 + regno];
	if (r->kind != kind)
		fail_msg("register %u: rule kind %u, expected %u", regno, r->kind, kind);
	if (kind == CQ_CFI_OFFSET || kind == CQ_CFI_VAL_OFFSET)
		assert_int_equal(r->value, value);
}

/*
 * Where a function starts: x86_64's call pushed the return address (at CFA
 * - 8); aarch64's is still in x30, whose rule no CIE instruction sets.
 */
static void check_entry_ra(const struct cq_cfi_rule *rs)
{
#if defined(__x86_64__)
	check_rule(rs, FX_RA, CQ_CFI_OFFSET, -8);
#else
	check_rule(rs, FX_RA, CQ_CFI_SAME, 0);
#endif
}

/* The expression ops of a rule; fails if the rule has none. */
static const struct cq_cfi_op *expr_of(const struct cq_cfi_table *t, const struct cq_cfi_rule *r,
                                       size_t *n)
{
	const struct cq_cfi_op *ops = cq_cfi_table_expr(t, r, n);
	assert_non_null(ops);
	assert_true(*n > 0);
	return ops;
}

/*
 * An expression's ops without a leading DW_OP_call_frame_cfa, which libdw
 * prepends to DW_CFA_expression rules (DWARF pushes the CFA first).
 */
static const struct cq_cfi_op *expr_body(const struct cq_cfi_table *t, const struct cq_cfi_rule *r,
                                         size_t *n)
{
	const struct cq_cfi_op *ops = expr_of(t, r, n);
	if (ops[0].atom == DW_OP_call_frame_cfa) {
		ops++;
		(*n)--;
	}
	return ops;
}

/* ---- a synthetic unwind target: one readable memory window ---------------------------- */

struct mem {
	uint64_t base;
	uint8_t *bytes;
	size_t len;
};

static bool mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct mem *m = ctx;
	if (addr < m->base || addr - m->base > m->len || len > m->len - (addr - m->base))
		return false;
	memcpy(buf, m->bytes + (addr - m->base), len);
	return true;
}

static const struct cq_cfi_table *mem_cfi_at(void *ctx, uint64_t pc, uint64_t *bias)
{
	(void)ctx;
	(void)pc;
	(void)bias;
	return NULL;
}

static bool mem_is_code(void *ctx, uint64_t addr)
{
	(void)ctx;
	(void)addr;
	return true;
}

static bool mem_stack_bounds(void *ctx, uint64_t sp, uint64_t *lo, uint64_t *hi)
{
	const struct mem *m = ctx;
	if (sp < m->base || sp - m->base >= m->len)
		return false;
	*lo = m->base;
	*hi = m->base + m->len;
	return true;
}

static const struct cq_unwind_target_ops mem_ops = {
    .read = mem_read,
    .cfi_at = mem_cfi_at,
    .is_code = mem_is_code,
    .stack_bounds = mem_stack_bounds,
};

static void put_u64(struct mem *m, uint64_t addr, uint64_t v)
{
	assert_true(addr >= m->base && addr + 8 <= m->base + m->len);
	memcpy(m->bytes + (addr - m->base), &v, 8);
}

#define MEM_BASE  0x7ff000000000ull
#define MEM_WORDS 128

/* A return address where a function that starts at sp finds it. */
static void put_entry_ra(struct mem *m, struct cq_regs *regs, uint64_t sp, uint64_t ra)
{
#if defined(__x86_64__)
	(void)regs;
	put_u64(m, sp, ra);
#else
	(void)m, (void)sp;
	cq_regs_set(regs, FX_RA, ra);
#endif
}

/* ---- rows of the fixtures -------------------------------------------------------- */

static void test_table_has_rows_and_fixture_fdes(void **state)
{
	const struct cq_cfi_table *t = self_table(state);
	assert_int_equal(t->nregs, FX_NREGS);
	assert_true(t->nrows > 10);
	assert_true(t->nrulesets > 0);
	for (uint32_t i = 1; i < t->nrows; i++)
		assert_true(t->rows[i].start > t->rows[i - 1].start);
	uint64_t lo = link_addr(cq_fx_frame), hi = link_addr(cq_fx_sigframe);
	assert_true(t->base <= lo);
	assert_true(hi - t->base < t->rows[t->nrows - 1].start);
}

static void test_frame_pointer_prologue_rows(void **state)
{
	const struct cq_cfi_table *t = self_table(state);

	/* Entry: CFA = rsp + 8, return address at CFA - 8 (aarch64: sp + 0, in x30). */
	const struct cq_cfi_rule *rs = rules_at(t, cq_fx_frame, 0);
	check_cfa_reg(rs, FX_SP, FX_ENTRY_CFA);
	assert_int_equal(rs[0].flags, 0);
	check_entry_ra(rs);
	assert_int_not_equal(rs[1 + FX_FP].kind, CQ_CFI_OFFSET);

	/* After push rbp (stp x29, x30): CFA = sp + 16, the frame pointer at CFA - 16. */
	rs = rules_at(t, cq_fx_frame_pushed, 0);
	check_cfa_reg(rs, FX_SP, 16);
	check_rule(rs, FX_RA, CQ_CFI_OFFSET, -8);
	check_rule(rs, FX_FP, CQ_CFI_OFFSET, -16);
	/* The whole mov (3 bytes; 4 on aarch64) belongs to that row. */
	assert_ptr_equal(rules_at(t, cq_fx_frame_pushed, 2), rs);

	/* After mov rsp, rbp (mov x29, sp): CFA = fp + 16. */
	rs = rules_at(t, cq_fx_frame_body, 0);
	check_cfa_reg(rs, FX_FP, 16);
	check_rule(rs, FX_RA, CQ_CFI_OFFSET, -8);
	check_rule(rs, FX_FP, CQ_CFI_OFFSET, -16);
	assert_ptr_equal(rules_at(t, cq_fx_frame_body, 3), rs);
}

static void test_row_boundaries_are_exact(void **state)
{
	const struct cq_cfi_table *t = self_table(state);
	/* The byte before each boundary still has the previous row. */
	const struct cq_cfi_rule *entry = rules_at(t, cq_fx_frame, 0);
	assert_ptr_equal(rules_at(t, cq_fx_frame_pushed, (uint64_t)-1), entry);
	const struct cq_cfi_rule *pushed = rules_at(t, cq_fx_frame_pushed, 0);
	assert_ptr_not_equal(pushed, entry);
	assert_ptr_equal(rules_at(t, cq_fx_frame_body, (uint64_t)-1), pushed);
	assert_ptr_not_equal(rules_at(t, cq_fx_frame_body, 0), pushed);
}

static void test_epilogue_row_is_interned_with_entry_row(void **state)
{
	const struct cq_cfi_table *t = self_table(state);
	/*
	 * After pop rbp / .cfi_restore rbp / .cfi_def_cfa rsp, 8 (ldp; restore
	 * x29, x30; def_cfa sp, 0) the rules equal the entry's.
	 */
	const struct cq_cfi_rule *entry = rules_at(t, cq_fx_frame, 0);
	const struct cq_cfi_rule *popped = rules_at(t, cq_fx_frame_popped, 0);
	check_cfa_reg(popped, FX_SP, FX_ENTRY_CFA);
	check_entry_ra(popped);
	assert_memory_equal(entry, popped, (FX_NREGS + 1) * sizeof(*entry));
	assert_ptr_equal(entry, popped);
}

static void test_lookup_outside_any_fde_is_null(void **state)
{
	const struct cq_cfi_table *t = self_table(state);
	/* Padding between two FDEs. */
	assert_null(cq_cfi_table_lookup(t, link_addr(cq_fx_gap)));
	assert_null(cq_cfi_table_lookup(t, link_addr(cq_fx_gap) + 31));
	assert_non_null(cq_cfi_table_lookup(t, link_addr(cq_fx_frame_end) - 1));
	/* Below the table, far above it, and in the last (terminating) row. */
	assert_null(cq_cfi_table_lookup(t, 0));
	assert_null(cq_cfi_table_lookup(t, t->base - 1));
	assert_null(cq_cfi_table_lookup(t, t->base + t->rows[t->nrows - 1].start));
	assert_null(cq_cfi_table_lookup(t, t->base + (1ull << 33)));
	assert_null(cq_cfi_table_lookup(t, UINT64_MAX));
	assert_null(cq_cfi_table_lookup(NULL, link_addr(cq_fx_frame)));
}

static void test_cfa_based_on_r10_then_expression(void **state)
{
	const struct cq_cfi_table *t = self_table(state);
	check_cfa_reg(rules_at(t, cq_fx_realign, 0), FX_SP, FX_ENTRY_CFA);

	/* lea 8(%rsp), %r10; .cfi_def_cfa r10, 0 (mov x9, sp; .cfi_def_cfa x9, 0) */
	const struct cq_cfi_rule *rs = rules_at(t, cq_fx_realign_r10, 0);
	check_cfa_reg(rs, FX_CFA_REG, 0);
	check_entry_ra(rs);

	/* The frame pointer saved by DW_CFA_expression (breg6 0; breg29 0): an EXPR rule. */
	rs = rules_at(t, cq_fx_realign_rbp, 0);
	check_cfa_reg(rs, FX_CFA_REG, 0);
	assert_int_equal(rs[1 + FX_FP].kind, CQ_CFI_EXPR);
	size_t n;
	const struct cq_cfi_op *ops = expr_body(t, &rs[1 + FX_FP], &n);
	assert_int_equal(n, 1);
	assert_int_equal(ops[0].atom, DW_OP_breg0 + FX_FP);
	assert_int_equal(ops[0].number, 0);

	/* CFA = *(fp - 8): a CFA expression; the frame pointer's rule is unchanged. */
	rs = rules_at(t, cq_fx_realign_expr, 0);
	assert_int_equal(rs[0].kind, CQ_CFI_CFA_EXPR);
	ops = expr_of(t, &rs[0], &n);
	assert_int_equal(n, 2);
	assert_int_equal(ops[0].atom, DW_OP_breg0 + FX_FP);
	assert_int_equal((int64_t)ops[0].number, -8);
	assert_int_equal(ops[1].atom, DW_OP_deref);
	assert_int_equal(rs[1 + FX_FP].kind, CQ_CFI_EXPR);
	check_entry_ra(rs);
}

static void test_cfi_register_rule_is_register_kind(void **state)
{
	const struct cq_cfi_table *t = self_table(state);
	/* .cfi_register rbx, r12 (x19, x20): caller's rbx is this frame's r12. */
	const struct cq_cfi_rule *rs = rules_at(t, cq_fx_rules_reg, 0);
	check_cfa_reg(rs, FX_SP, FX_ENTRY_CFA);
	check_entry_ra(rs);
	if (rs[1 + FX_SAVED].kind != CQ_CFI_REGISTER)
		fail_msg("DW_CFA_register %u, %u compiled to rule kind %u, not CQ_CFI_REGISTER",
		         FX_SAVED, FX_HOLDER, rs[1 + FX_SAVED].kind);
	assert_int_equal(rs[1 + FX_SAVED].reg, FX_HOLDER);
	assert_int_equal(rules_at(t, cq_fx_rules_val, 0)[1 + FX_SAVED].kind, CQ_CFI_REGISTER);
}

static void test_val_offset_same_value_and_undefined_rules(void **state)
{
	const struct cq_cfi_table *t = self_table(state);
	/* .cfi_val_offset r13 (x21), -32: caller's r13 = CFA - 32. */
	const struct cq_cfi_rule *rs = rules_at(t, cq_fx_rules_val, 0);
	check_cfa_reg(rs, FX_SP, FX_ENTRY_CFA);
	check_rule(rs, FX_VAL, CQ_CFI_VAL_OFFSET, -32);
	check_entry_ra(rs);

	/* .cfi_same_value rbx (x19) after a register rule, .cfi_undefined r14 (x22). */
	rs = rules_at(t, cq_fx_rules_same, 0);
	check_rule(rs, FX_SAVED, CQ_CFI_SAME, 0);
	check_rule(rs, FX_UNDEF, CQ_CFI_UNDEFINED, 0);
	check_rule(rs, FX_VAL, CQ_CFI_VAL_OFFSET, -32);
	check_entry_ra(rs);
	/* Before .cfi_undefined, r14 was callee-saved: same value. */
	check_rule(rules_at(t, cq_fx_rules_val, 0), FX_UNDEF, CQ_CFI_SAME, 0);
}

static void test_outermost_row_has_undefined_return_address(void **state)
{
	const struct cq_cfi_table *t = self_table(state);
	const struct cq_cfi_rule *rs = rules_at(t, cq_fx_outermost, 0);
	check_cfa_reg(rs, FX_SP, FX_ENTRY_CFA);
	check_rule(rs, FX_RA, CQ_CFI_UNDEFINED, 0);
	assert_ptr_equal(rules_at(t, cq_fx_outermost, 3), rs);
}

static void test_plt_row_is_cfa_expression(void **state)
{
	const struct cq_cfi_table *t = self_table(state);
	const struct cq_cfi_rule *rs = rules_at(t, cq_fx_plt, 0);
	assert_int_equal(rs[0].kind, CQ_CFI_CFA_EXPR);
	check_rule(rs, FX_RA, CQ_CFI_OFFSET, -8);
	assert_ptr_equal(rules_at(t, cq_fx_plt_end, (uint64_t)-1), rs);

	size_t n;
	const struct cq_cfi_op *ops = expr_of(t, &rs[0], &n);
#if defined(__x86_64__)
	static const uint8_t atoms[] = {DW_OP_breg7, DW_OP_breg16, DW_OP_lit15,
	                                DW_OP_and,   DW_OP_lit11,  DW_OP_ge,
	                                DW_OP_lit3,  DW_OP_shl,    DW_OP_plus};
#else
	static const uint8_t atoms[] = {DW_OP_breg31, DW_OP_bregx, DW_OP_lit15,
	                                DW_OP_and,    DW_OP_lit11, DW_OP_ge,
	                                DW_OP_lit3,   DW_OP_shl,   DW_OP_plus};
#endif
	assert_int_equal(n, sizeof(atoms));
	for (size_t i = 0; i < n; i++)
		assert_int_equal(ops[i].atom, atoms[i]);
	assert_int_equal(ops[0].number, 8);
#if defined(__x86_64__)
	assert_int_equal(ops[1].number, 0);
#else
	assert_int_equal(ops[1].number, FX_PC); /* bregx: register, then offset */
	assert_int_equal(ops[1].number2, 0);
#endif
}

/* Steps the PLT row with sp and pc, returning the CFA and checking the caller. */
static uint64_t step_plt(const struct cq_cfi_table *t, const struct cq_cfi_rule *rs, uint64_t rip)
{
	uint64_t words[MEM_WORDS] = {0};
	struct mem m = {MEM_BASE, (uint8_t *)words, sizeof(words)};
	struct cq_unwind_target target = {.ops = &mem_ops, .ctx = &m, .arch = &FX_ARCH};
	uint64_t rsp = MEM_BASE + 0x100;
	/* Return addresses where either CFA would find them. */
	put_u64(&m, rsp + 0, 0x1111);
	put_u64(&m, rsp + 8, 0x2222);
	struct cq_regs regs = {.valid = 0};
	cq_regs_set(&regs, FX_SP, rsp);
	cq_regs_set(&regs, FX_PC, rip);
	cq_regs_set(&regs, FX_SAVED, 0xb0b0);
	struct cq_regs caller;
	uint64_t cfa = 0;
	assert_true(cq_unwind_step_cfi(&target, t, rs, &regs, &caller, &cfa));
	assert_true(cq_regs_has(&caller, FX_SP));
	assert_int_equal(caller.value[FX_SP], cfa);
	assert_true(cq_regs_has(&caller, FX_PC));
	assert_int_equal(caller.value[FX_PC], cfa == rsp + 8 ? 0x1111 : 0x2222);
	return cfa - rsp;
}

static void test_plt_cfa_depends_on_rip(void **state)
{
	const struct cq_cfi_table *t = self_table(state);
	const struct cq_cfi_rule *rs = rules_at(t, cq_fx_plt, 0);
	/* CFA = sp + 8 + ((pc & 15) >= 11 ? 8 : 0) */
	for (uint64_t low = 0; low < 16; low++) {
		uint64_t rip = 0x401230 + low;
		uint64_t want = low >= 11 ? 16 : 8;
		if (step_plt(t, rs, rip) != want)
			fail_msg("rip 0x%llx: CFA offset is not %llu", (unsigned long long)rip,
			         (unsigned long long)want);
	}
	assert_int_equal(step_plt(t, rs, 0x7f00000000a5), 8);
	assert_int_equal(step_plt(t, rs, 0x7f00000000ab), 16);
	assert_int_equal(step_plt(t, rs, 0x7f00000000fa), 8);
	assert_int_equal(step_plt(t, rs, 0x7f00000000ff), 16);
}

static void test_plt_step_fails_without_rip(void **state)
{
	const struct cq_cfi_table *t = self_table(state);
	const struct cq_cfi_rule *rs = rules_at(t, cq_fx_plt, 0);
	uint64_t words[MEM_WORDS] = {0};
	struct mem m = {MEM_BASE, (uint8_t *)words, sizeof(words)};
	struct cq_unwind_target target = {.ops = &mem_ops, .ctx = &m, .arch = &FX_ARCH};
	struct cq_regs regs = {.valid = 0}, caller;
	cq_regs_set(&regs, FX_SP, MEM_BASE + 0x100);
	uint64_t cfa;
	assert_false(cq_unwind_step_cfi(&target, t, rs, &regs, &caller, &cfa));
}

/* The saved registers' slots in the signal frame, from the trampoline's sp. */
struct greg {
	unsigned regno, offset;
};
#if defined(__x86_64__)
/* glibc's uc_mcontext.gregs order (at sp + 40), as DWARF numbers. */
static const unsigned gregs_dwarf[17] = {R8,  R9,  R10, R11, R12, R13, R14, R15, RDI,
                                         RSI, RBP, RBX, RDX, RAX, RCX, RSP, RIP};
enum { NGREGS = 17 };
static struct greg greg(unsigned i)
{
	return (struct greg){gregs_dwarf[i], 40 + 8 * i};
}
#else
/* uc_mcontext.regs at sp + 312: x0..x29, then sp at 560; x30's column from the pc at 568. */
enum { NGREGS = 32 };
static struct greg greg(unsigned i)
{
	if (i < 30)
		return (struct greg){i, 312 + 8 * i};
	return i == 30 ? (struct greg){FX_SP, 560} : (struct greg){FX_RA, 568};
}
#endif

static void test_signal_frame_row(void **state)
{
	const struct cq_cfi_table *t = self_table(state);
	/* The FDE starts at the nop before the trampoline: pc - 1 of __restore_rt hits it. */
	const struct cq_cfi_rule *rs = rules_at(t, cq_fx_restore_rt, (uint64_t)-1);
	assert_ptr_equal(rules_at(t, cq_fx_restore_rt, 0), rs);
	assert_ptr_equal(rules_at(t, cq_fx_sigframe, 0), rs);
	assert_int_equal(rs[0].kind, CQ_CFI_CFA_EXPR);
	assert_int_equal(rs[0].flags & CQ_CFI_SIGNAL_FRAME, CQ_CFI_SIGNAL_FRAME);

	size_t n;
	const struct cq_cfi_op *ops = expr_of(t, &rs[0], &n);
	assert_int_equal(n, 2);
	assert_int_equal(ops[0].atom, DW_OP_breg0 + FX_SP);
	assert_int_equal(ops[0].number, FX_SIG_CFA);
	assert_int_equal(ops[1].atom, DW_OP_deref);

	for (unsigned i = 0; i < NGREGS; i++) {
		unsigned regno = greg(i).regno;
		if (rs[1 + regno].kind != CQ_CFI_EXPR)
			fail_msg("register %u: kind %u, not EXPR", regno, rs[1 + regno].kind);
		ops = expr_body(t, &rs[1 + regno], &n);
		assert_int_equal(n, 1);
		assert_int_equal(ops[0].atom, DW_OP_breg0 + FX_SP);
		assert_int_equal(ops[0].number, greg(i).offset);
	}

	/* Ordinary rows are not signal frames. */
	assert_int_equal(rules_at(t, cq_fx_frame, 0)[0].flags & CQ_CFI_SIGNAL_FRAME, 0);
	assert_int_equal(rules_at(t, cq_fx_plt, 0)[0].flags & CQ_CFI_SIGNAL_FRAME, 0);
}

static void test_signal_frame_step_restores_ucontext(void **state)
{
	const struct cq_cfi_table *t = self_table(state);
	const struct cq_cfi_rule *rs = rules_at(t, cq_fx_restore_rt, 0);

	uint64_t words[MEM_WORDS] = {0};
	struct mem m = {MEM_BASE, (uint8_t *)words, sizeof(words)};
	struct cq_unwind_target target = {.ops = &mem_ops, .ctx = &m, .arch = &FX_ARCH};
	uint64_t sp = MEM_BASE + 0x80;
	uint64_t want[FX_NREGS];
	for (unsigned i = 0; i < NGREGS; i++) {
		unsigned regno = greg(i).regno;
		want[regno] = 0x5a5a000000000000ull | (uint64_t)regno << 8 | i;
		if (regno == FX_SP)
			want[regno] = MEM_BASE + 0x300; /* the interrupted stack */
		if (regno == FX_RA)
			want[regno] = 0x401777; /* the interrupted instruction */
		put_u64(&m, sp + greg(i).offset, want[regno]);
	}
	want[FX_PC] = want[FX_RA]; /* the caller's pc is its return-address column */
	struct cq_regs regs = {.valid = 0};
	cq_regs_set(&regs, FX_SP, sp);
	cq_regs_set(&regs, FX_PC, link_addr(cq_fx_restore_rt));
	cq_regs_set(&regs, FX_SAVED, 0x1234); /* the handler's values must not leak through */
	cq_regs_set(&regs, FX_FP, 0x5678);
	struct cq_regs caller;
	uint64_t cfa = 0;
	assert_true(cq_unwind_step_cfi(&target, t, rs, &regs, &caller, &cfa));
	assert_int_equal(cfa, MEM_BASE + 0x300);
	for (unsigned regno = 0; regno < FX_NREGS; regno++) {
		if (!cq_regs_has(&caller, regno))
			fail_msg("register %u not restored", regno);
		if (caller.value[regno] != want[regno])
			fail_msg("register %u: 0x%llx, not 0x%llx", regno,
			         (unsigned long long)caller.value[regno],
			         (unsigned long long)want[regno]);
	}
}

static void test_signal_frame_step_fails_on_unreadable_ucontext(void **state)
{
	const struct cq_cfi_table *t = self_table(state);
	const struct cq_cfi_rule *rs = rules_at(t, cq_fx_restore_rt, 0);
	uint64_t words[MEM_WORDS] = {0};
	struct mem m = {MEM_BASE, (uint8_t *)words, sizeof(words)};
	struct cq_unwind_target target = {.ops = &mem_ops, .ctx = &m, .arch = &FX_ARCH};
	struct cq_regs regs = {.valid = 0}, caller;
	/* The ucontext's saved sp slot (sp + 160; 560) lies past the readable window. */
	cq_regs_set(&regs, FX_SP, MEM_BASE + sizeof(words) - 64);
	cq_regs_set(&regs, FX_PC, link_addr(cq_fx_restore_rt));
	uint64_t cfa;
	assert_false(cq_unwind_step_cfi(&target, t, rs, &regs, &caller, &cfa));
}

static void test_frame_pointer_rows_step(void **state)
{
	const struct cq_cfi_table *t = self_table(state);
	uint64_t words[MEM_WORDS] = {0};
	struct mem m = {MEM_BASE, (uint8_t *)words, sizeof(words)};
	struct cq_unwind_target target = {.ops = &mem_ops, .ctx = &m, .arch = &FX_ARCH};
	/*
	 * In the body: fp = sp + 0x20, saved fp at [fp], return address at
	 * [fp + 8] (aarch64's frame record has the same layout).
	 */
	uint64_t rsp = MEM_BASE + 0x100, rbp = rsp + 0x20;
	put_u64(&m, rbp, 0xcafe0000);
	put_u64(&m, rbp + 8, 0x401999);
	struct cq_regs regs = {.valid = 0}, caller;
	cq_regs_set(&regs, FX_SP, rsp);
	cq_regs_set(&regs, FX_FP, rbp);
	cq_regs_set(&regs, FX_PC, link_addr(cq_fx_frame_body));
	cq_regs_set(&regs, FX_HOLDER, 0x12);
	cq_regs_set(&regs, FX_CLOBBERED, 0xaa);
	uint64_t cfa;
	assert_true(
	    cq_unwind_step_cfi(&target, t, rules_at(t, cq_fx_frame_body, 0), &regs, &caller, &cfa));
	assert_int_equal(cfa, rbp + 16);
	assert_int_equal(caller.value[FX_SP], rbp + 16);
	assert_int_equal(caller.value[FX_PC], 0x401999);
	assert_int_equal(caller.value[FX_FP], 0xcafe0000);
	/* r12 (x20) is callee-saved and untouched: same value (libdw's ABI default). */
	assert_true(cq_regs_has(&caller, FX_HOLDER));
	assert_int_equal(caller.value[FX_HOLDER], 0x12);
	/*
	 * r11 (x10) is call-clobbered: unknown in the caller.  (Not rax: libdw
	 * 0.188's x86_64 ABI defaults say "same value" for rax and "undefined"
	 * for rbx.)
	 */
	assert_false(cq_regs_has(&caller, FX_CLOBBERED));
}

/*
 * Steps the row at a cq_fx_rules label: sp, rbx = 0x1111, r12 = 0x2222,
 * r13 = 0x3333 (x19, x20, x21), and the return address 0x401abc.
 */
static bool step_rules_row(const struct cq_cfi_table *t, const void *label, struct cq_regs *caller,
                           uint64_t *rsp)
{
	static uint64_t words[MEM_WORDS];
	memset(words, 0, sizeof(words));
	struct mem m = {MEM_BASE, (uint8_t *)words, sizeof(words)};
	struct cq_unwind_target target = {.ops = &mem_ops, .ctx = &m, .arch = &FX_ARCH};
	*rsp = MEM_BASE + 0x100;
	struct cq_regs regs = {.valid = 0};
	put_entry_ra(&m, &regs, *rsp, 0x401abc);
	cq_regs_set(&regs, FX_SP, *rsp);
	cq_regs_set(&regs, FX_PC, link_addr(label));
	cq_regs_set(&regs, FX_SAVED, 0x1111);
	cq_regs_set(&regs, FX_HOLDER, 0x2222);
	cq_regs_set(&regs, FX_VAL, 0x3333);
	uint64_t cfa;
	bool ok = cq_unwind_step_cfi(&target, t, rules_at(t, label, 0), &regs, caller, &cfa);
	if (ok)
		assert_int_equal(cfa, *rsp + FX_ENTRY_CFA);
	return ok;
}

static void test_cfi_register_rule_step(void **state)
{
	const struct cq_cfi_table *t = self_table(state);
	struct cq_regs caller;
	uint64_t rsp;
	assert_true(step_rules_row(t, cq_fx_rules_reg, &caller, &rsp));
	assert_int_equal(caller.value[FX_PC], 0x401abc);
	assert_true(cq_regs_has(&caller, FX_SAVED));
	assert_int_equal(caller.value[FX_SAVED], 0x2222); /* from r12 */
}

static void test_val_offset_and_same_value_step(void **state)
{
	const struct cq_cfi_table *t = self_table(state);
	struct cq_regs caller;
	uint64_t rsp;
	assert_true(step_rules_row(t, cq_fx_rules_same, &caller, &rsp));
	assert_int_equal(caller.value[FX_PC], 0x401abc);
	assert_int_equal(caller.value[FX_SP], rsp + FX_ENTRY_CFA);
	assert_int_equal(caller.value[FX_SAVED], 0x1111);                /* same value */
	assert_int_equal(caller.value[FX_VAL], rsp + FX_ENTRY_CFA - 32); /* CFA - 32 */
	assert_int_equal(caller.value[FX_HOLDER], 0x2222); /* callee-saved, untouched */
	assert_false(cq_regs_has(&caller, FX_UNDEF));      /* undefined */
}

/* ---- the whole table against libdw ------------------------------------------------- */

/* Checks one rule set against libdw's rules at pc. */
static void check_against_libdw(const struct cq_cfi_table *t, Dwarf_CFI *cfi, uint64_t pc,
                                const struct cq_cfi_rule *rs)
{
	Dwarf_Frame *frame;
	if (dwarf_cfi_addrframe(cfi, pc, &frame) != 0)
		fail_msg("0x%llx: a table row, but libdw has no CFI", (unsigned long long)pc);
	Dwarf_Addr start, end;
	bool signal = false;
	assert_true(dwarf_frame_info(frame, &start, &end, &signal) >= 0);
	assert_int_equal(!!(rs[0].flags & CQ_CFI_SIGNAL_FRAME), signal);
	Dwarf_Op *ops;
	size_t n;
	assert_int_equal(dwarf_frame_cfa(frame, &ops, &n), 0);
	if (rs[0].kind == CQ_CFI_CFA_REG_OFFSET) {
		assert_int_equal(n, 1);
		assert_int_equal(ops[0].atom, DW_OP_bregx);
		assert_int_equal(ops[0].number, rs[0].reg);
		assert_int_equal((int64_t)ops[0].number2, rs[0].value);
	} else {
		assert_int_equal(rs[0].kind, CQ_CFI_CFA_EXPR);
		size_t m;
		const struct cq_cfi_op *mine = expr_of(t, &rs[0], &m);
		assert_int_equal(m, n);
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(mine[i].atom, ops[i].atom);
			assert_int_equal(mine[i].number, ops[i].number);
		}
	}
	for (unsigned regno = 0; regno < t->nregs; regno++) {
		Dwarf_Op mem[3];
		ops = NULL;
		n = 0;
		assert_int_equal(dwarf_frame_register(frame, (int)regno, mem, &ops, &n), 0);
		const struct cq_cfi_rule *r = &rs[1 + regno];
		bool value = n > 0 && ops[n - 1].atom == DW_OP_stack_value;
		size_t m = value ? n - 1 : n;
		if (ops == NULL) {
			assert_int_equal(r->kind, CQ_CFI_SAME);
		} else if (n == 0) {
			assert_int_equal(r->kind, CQ_CFI_UNDEFINED);
		} else if (ops[0].atom == DW_OP_call_frame_cfa &&
		           (m == 1 || (m == 2 && ops[1].atom == DW_OP_plus_uconst))) {
			assert_int_equal(r->kind, value ? CQ_CFI_VAL_OFFSET : CQ_CFI_OFFSET);
			assert_int_equal(r->value, m == 1 ? 0 : (int32_t)(int64_t)ops[1].number);
		} else {
			assert_true(r->kind == CQ_CFI_REGISTER || r->kind == CQ_CFI_EXPR ||
			            r->kind == CQ_CFI_VAL_EXPR);
		}
	}
	free(frame);
}

static void test_table_agrees_with_libdw_at_every_row(void **state)
{
	const struct self *s = *state;
	const struct cq_cfi_table *t = self_table(state);
	Dwarf_CFI *cfi = dwarf_getcfi_elf(s->elf);
	assert_non_null(cfi);
	size_t checked = 0;
	for (uint32_t i = 0; i + 1 < t->nrows; i++) {
		uint64_t first = t->base + t->rows[i].start;
		uint64_t last = t->base + t->rows[i + 1].start - 1;
		const struct cq_cfi_rule *rs = cq_cfi_table_lookup(t, first);
		if (t->rows[i].ruleset == CQ_CFI_NO_RULES) {
			assert_null(rs);
			Dwarf_Frame *frame;
			if (dwarf_cfi_addrframe(cfi, first, &frame) == 0) {
				Dwarf_Op *ops;
				size_t n;
				assert_true(dwarf_frame_cfa(frame, &ops, &n) != 0 || n == 0);
				free(frame);
			}
			continue;
		}
		assert_non_null(rs);
		assert_ptr_equal(cq_cfi_table_lookup(t, last), rs);
		check_against_libdw(t, cfi, first, rs);
		check_against_libdw(t, cfi, last, rs);
		checked++;
	}
	assert_true(checked > 10);
	dwarf_cfi_end(cfi);
}

/* Every function symbol that libdw has CFI for is covered by a row. */
static void test_every_function_with_cfi_has_rows(void **state)
{
	const struct self *s = *state;
	const struct cq_cfi_table *t = self_table(state);
	Dwarf_CFI *cfi = dwarf_getcfi_elf(s->elf);
	assert_non_null(cfi);
	size_t functions = 0;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(s->elf, scn));) {
		GElf_Shdr shdr;
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_SYMTAB)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		assert_non_null(data);
		for (size_t i = 0; i < shdr.sh_size / shdr.sh_entsize; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(data, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value == 0 ||
			    sym.st_shndx == SHN_UNDEF)
				continue;
			Dwarf_Frame *frame;
			if (dwarf_cfi_addrframe(cfi, sym.st_value, &frame) != 0)
				continue;
			free(frame);
			if (!cq_cfi_table_lookup(t, sym.st_value))
				fail_msg("no row for function at 0x%llx",
				         (unsigned long long)sym.st_value);
			functions++;
		}
	}
	assert_true(functions > 20);
	dwarf_cfi_end(cfi);
}

/* ---- compiled a row at a time ----------------------------------------------------- */

/* Rule sets a and b (of tables ta and tb) say the same, expressions compared by content. */
static void check_same_rules(const struct cq_cfi_table *ta, const struct cq_cfi_rule *a,
                             const struct cq_cfi_table *tb, const struct cq_cfi_rule *b)
{
	for (unsigned r = 0; r <= ta->nregs; r++) {
		assert_int_equal(a[r].kind, b[r].kind);
		assert_int_equal(a[r].flags, b[r].flags);
		if (a[r].kind == CQ_CFI_EXPR || a[r].kind == CQ_CFI_VAL_EXPR ||
		    a[r].kind == CQ_CFI_CFA_EXPR) {
			size_t na, nb;
			const struct cq_cfi_op *oa = cq_cfi_table_expr(ta, &a[r], &na);
			const struct cq_cfi_op *ob = cq_cfi_table_expr(tb, &b[r], &nb);
			assert_non_null(oa);
			assert_non_null(ob);
			assert_int_equal(na, nb);
			for (size_t i = 0; i < na; i++) {
				assert_int_equal(oa[i].atom, ob[i].atom);
				assert_int_equal(oa[i].number, ob[i].number);
				assert_int_equal(oa[i].number2, ob[i].number2);
			}
		} else {
			assert_int_equal(a[r].reg, b[r].reg);
			assert_int_equal(a[r].value, b[r].value);
		}
	}
}

static unsigned debug_elf_calls;

static void *no_debug_elf(void *arg)
{
	(void)arg;
	debug_elf_calls++;
	return NULL;
}

/* The lazy table's rule set at pc, compiling it if needed. */
static const struct cq_cfi_rule *lazy_rules(struct cq_cfi_lazy *l, uint64_t pc,
                                            const struct cq_cfi_table **t)
{
	struct cq_error *err;
	*t = cq_cfi_lazy_at(l, pc, &err);
	assert_null(err);
	assert_non_null(*t);
	return cq_cfi_table_lookup(*t, pc);
}

/*
 * Every row of the complete table, probed in an order: the lazy table gives
 * the same rule set at both ends of each row, and none in gaps.
 */
static void check_lazy_agrees(void **state, bool backwards)
{
	const struct self *s = *state;
	const struct cq_cfi_table *full = self_table(state);
	struct cq_cfi_lazy *l;
	check_ok(cq_cfi_lazy_create(s->elf, no_debug_elf, NULL, FX_NREGS, NULL, &l));
	assert_false(cq_cfi_lazy_grew(l));
	size_t checked = 0;
	for (uint32_t j = 0; j + 1 < full->nrows; j++) {
		uint32_t i = backwards ? full->nrows - 2 - j : j;
		uint64_t first = full->base + full->rows[i].start;
		uint64_t last = full->base + full->rows[i + 1].start - 1;
		const struct cq_cfi_rule *want = cq_cfi_table_lookup(full, first);
		for (int k = 0; k < 2; k++) {
			uint64_t pc = (k == 0) == backwards ? last : first;
			const struct cq_cfi_table *t;
			const struct cq_cfi_rule *got = lazy_rules(l, pc, &t);
			if (!want) {
				assert_null(got);
				continue;
			}
			if (!got)
				fail_msg("lazy table has no rules at 0x%llx",
				         (unsigned long long)pc);
			check_same_rules(full, want, t, got);
			checked++;
		}
	}
	assert_true(checked > 20);
	assert_true(cq_cfi_lazy_grew(l));
	/* Rows stay sorted, rule sets interned as in the complete table. */
	const struct cq_cfi_table *t = cq_cfi_lazy_table(l);
	assert_int_equal(t->flags, 0);
	for (uint32_t i = 1; i < t->nrows; i++)
		assert_true(t->rows[i].start > t->rows[i - 1].start);
	assert_int_equal(t->nrulesets, full->nrulesets);
	cq_cfi_lazy_free(l);
}

/* Backwards, rows land before, between and after rows already compiled. */
static void test_lazy_table_agrees_with_complete_table_backwards(void **state)
{
	check_lazy_agrees(state, true);
}

static void test_lazy_table_agrees_with_complete_table_forwards(void **state)
{
	check_lazy_agrees(state, false);
}

/* A pc without CFI is compiled once into a "none" row; .debug_frame is looked for once. */
static void test_lazy_table_remembers_pcs_without_cfi(void **state)
{
	const struct self *s = *state;
	struct cq_cfi_lazy *l;
	debug_elf_calls = 0;
	check_ok(cq_cfi_lazy_create(s->elf, no_debug_elf, NULL, FX_NREGS, NULL, &l));
	const struct cq_cfi_table *t;
	assert_non_null(lazy_rules(l, link_addr(cq_fx_frame), &t));
	assert_null(lazy_rules(l, link_addr(cq_fx_gap), &t));
	assert_int_equal(debug_elf_calls, 1);
	uint32_t rows = t->nrows;
	assert_null(lazy_rules(l, link_addr(cq_fx_gap), &t));
	assert_int_equal(t->nrows, rows); /* known: nothing compiled again */
	assert_int_equal(debug_elf_calls, 1);
	bool none = false;
	for (uint32_t i = 0; i < t->nrows; i++)
		none |= t->rows[i].ruleset == CQ_CFI_NO_CFI;
	assert_true(none);
	cq_cfi_lazy_free(l);
}

/*
 * A partial table survives the cache (serialised, read back) and grows from
 * there: rows it holds are not compiled again, new ones join it.
 */
static void test_partial_table_round_trips_and_grows(void **state)
{
	const struct self *s = *state;
	const struct cq_cfi_table *full = self_table(state);
	struct cq_cfi_lazy *l;
	check_ok(cq_cfi_lazy_create(s->elf, no_debug_elf, NULL, FX_NREGS, NULL, &l));
	const struct cq_cfi_table *t;
	assert_non_null(lazy_rules(l, link_addr(cq_fx_frame_pushed), &t));
	assert_null(lazy_rules(l, link_addr(cq_fx_gap), &t));
	uint8_t *blob;
	size_t len;
	check_ok(cq_cfi_table_serialize(cq_cfi_lazy_table(l), &blob, &len));
	cq_cfi_lazy_free(l);
	struct cq_cfi_table *back;
	check_ok(cq_cfi_table_deserialize(blob, len, &back));
	free(blob);
	assert_int_equal(back->flags, 0);
	debug_elf_calls = 0;
	check_ok(cq_cfi_lazy_create(s->elf, no_debug_elf, NULL, FX_NREGS, back, &l));
	assert_non_null(lazy_rules(l, link_addr(cq_fx_frame_pushed), &t));
	assert_null(lazy_rules(l, link_addr(cq_fx_gap), &t));
	assert_false(cq_cfi_lazy_grew(l)); /* both were in the seed */
	assert_int_equal(debug_elf_calls, 0);
	const struct cq_cfi_rule *got = lazy_rules(l, link_addr(cq_fx_sigframe), &t);
	assert_non_null(got);
	assert_true(cq_cfi_lazy_grew(l));
	check_same_rules(full, rules_at(full, cq_fx_sigframe, 0), t, got);
	got = lazy_rules(l, link_addr(cq_fx_frame_pushed), &t);
	check_same_rules(full, rules_at(full, cq_fx_frame_pushed, 0), t, got);
	cq_cfi_lazy_free(l);
	cq_cfi_table_free(back);
}

static void test_complete_table_is_marked_and_keeps_its_mark(void **state)
{
	const struct cq_cfi_table *full = self_table(state);
	assert_int_equal(full->flags, CQ_CFI_TABLE_COMPLETE);
	uint8_t *blob;
	size_t len;
	check_ok(cq_cfi_table_serialize(full, &blob, &len));
	struct cq_cfi_table *back;
	check_ok(cq_cfi_table_deserialize(blob, len, &back));
	assert_int_equal(back->flags, CQ_CFI_TABLE_COMPLETE);
	cq_cfi_table_free(back);
	free(blob);
}

/* ---- interning, debug_frame, empty tables ------------------------------------------ */

static void test_rulesets_are_interned(void **state)
{
	const struct cq_cfi_table *t = self_table(state);
	assert_true(t->nrulesets < t->nrows);
	/* No two rule sets are identical. */
	size_t stride = t->nregs + 1;
	for (uint32_t i = 0; i < t->nrulesets; i++)
		for (uint32_t j = i + 1; j < t->nrulesets; j++)
			if (memcmp(&t->rules[i * stride], &t->rules[j * stride],
			           stride * sizeof(*t->rules)) == 0)
				fail_msg("rule sets %u and %u are identical", i, j);
	/* Adjacent rows never repeat a rule set (they would be one row). */
	for (uint32_t i = 1; i < t->nrows; i++)
		assert_int_not_equal(t->rows[i].ruleset, t->rows[i - 1].ruleset);
}

static void test_every_rule_is_well_formed(void **state)
{
	const struct cq_cfi_table *t = self_table(state);
	size_t stride = t->nregs + 1;
	for (uint32_t i = 0; i < t->nrows; i++)
		assert_true(t->rows[i].ruleset == CQ_CFI_NO_RULES ||
		            t->rows[i].ruleset < t->nrulesets);
	for (size_t i = 0; i < (size_t)t->nrulesets * stride; i++) {
		const struct cq_cfi_rule *r = &t->rules[i];
		size_t n;
		if (i % stride == 0) {
			assert_true(r->kind == CQ_CFI_CFA_REG_OFFSET || r->kind == CQ_CFI_CFA_EXPR);
			if (r->kind == CQ_CFI_CFA_EXPR)
				assert_non_null(cq_cfi_table_expr(t, r, &n));
			else
				assert_true(r->reg < t->nregs);
		} else {
			assert_true(r->kind <= CQ_CFI_VAL_EXPR);
			if (r->kind == CQ_CFI_EXPR || r->kind == CQ_CFI_VAL_EXPR)
				assert_non_null(cq_cfi_table_expr(t, r, &n));
			if (r->kind == CQ_CFI_REGISTER)
				assert_true(r->reg < t->nregs);
		}
	}
}

static void test_debug_elf_without_debug_frame_changes_nothing(void **state)
{
	const struct self *s = *state;
	struct cq_cfi_table *t2;
	check_ok(cq_cfi_table_build(s->elf, s->elf, FX_NREGS, &t2));
	assert_int_equal(t2->base, s->table->base);
	assert_int_equal(t2->nrows, s->table->nrows);
	assert_memory_equal(t2->rows, s->table->rows, t2->nrows * sizeof(*t2->rows));
	assert_int_equal(t2->nrulesets, s->table->nrulesets);
	cq_cfi_table_free(t2);
}

static void test_bad_register_count_is_rejected(void **state)
{
	const struct self *s = *state;
	struct cq_cfi_table *t = (void *)1;
	struct cq_error *err = cq_cfi_table_build(s->elf, NULL, 0, &t);
	assert_non_null(err);
	assert_null(t);
	cq_error_free(err);
	err = cq_cfi_table_build(s->elf, NULL, CQ_CFI_MAX_REGS + 1, &t);
	assert_non_null(err);
	assert_null(t);
	cq_error_free(err);
}

static void test_no_elf_gives_empty_table(void **state)
{
	(void)state;
	struct cq_cfi_table *t;
	check_ok(cq_cfi_table_build(NULL, NULL, NREGS, &t));
	assert_non_null(t);
	assert_int_equal(t->nrows, 0);
	assert_null(cq_cfi_table_lookup(t, 0));
	assert_null(cq_cfi_table_lookup(t, 0x401000));
	assert_null(cq_cfi_table_lookup(t, UINT64_MAX));
	cq_cfi_table_free(t);
}

/* A minimal ELF64 object with a .text section and no .eh_frame. */
struct tiny_elf {
	Elf64_Ehdr ehdr;
	uint8_t text[16];
	char shstrtab[32];
	Elf64_Shdr shdr[3];
};

static void test_elf_without_eh_frame_gives_empty_table(void **state)
{
	(void)state;
	static const char names[] = "\0.text\0.shstrtab";
	struct tiny_elf *img = calloc(1, sizeof(*img));
	assert_non_null(img);
	memcpy(img->ehdr.e_ident, ELFMAG, SELFMAG);
	img->ehdr.e_ident[EI_CLASS] = ELFCLASS64;
	img->ehdr.e_ident[EI_DATA] = ELFDATA2LSB;
	img->ehdr.e_ident[EI_VERSION] = EV_CURRENT;
	img->ehdr.e_type = ET_DYN;
	img->ehdr.e_machine = EM_X86_64;
	img->ehdr.e_version = EV_CURRENT;
	img->ehdr.e_ehsize = sizeof(Elf64_Ehdr);
	img->ehdr.e_shentsize = sizeof(Elf64_Shdr);
	img->ehdr.e_shoff = offsetof(struct tiny_elf, shdr);
	img->ehdr.e_shnum = 3;
	img->ehdr.e_shstrndx = 2;
	memset(img->text, 0x90, sizeof(img->text));
	memcpy(img->shstrtab, names, sizeof(names));
	img->shdr[1] = (Elf64_Shdr){.sh_name = 1,
	                            .sh_type = SHT_PROGBITS,
	                            .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
	                            .sh_addr = 0x1000,
	                            .sh_offset = offsetof(struct tiny_elf, text),
	                            .sh_size = sizeof(img->text),
	                            .sh_addralign = 16};
	img->shdr[2] = (Elf64_Shdr){.sh_name = 7,
	                            .sh_type = SHT_STRTAB,
	                            .sh_offset = offsetof(struct tiny_elf, shstrtab),
	                            .sh_size = sizeof(names),
	                            .sh_addralign = 1};
	elf_version(EV_CURRENT);
	Elf *elf = elf_memory((char *)img, sizeof(*img));
	assert_non_null(elf);
	assert_int_equal(elf_kind(elf), ELF_K_ELF);
	struct cq_cfi_table *t;
	check_ok(cq_cfi_table_build(elf, elf, NREGS, &t));
	assert_int_equal(t->nrows, 0);
	assert_null(cq_cfi_table_lookup(t, 0x1000));
	assert_null(cq_cfi_table_lookup(t, 0x1008));
	cq_cfi_table_free(t);
	elf_end(elf);
	free(img);
}

/* ---- serialised form ------------------------------------------------------------ */

static void check_tables_equal(const struct cq_cfi_table *a, const struct cq_cfi_table *b)
{
	assert_int_equal(a->base, b->base);
	assert_int_equal(a->nregs, b->nregs);
	assert_int_equal(a->nrows, b->nrows);
	assert_int_equal(a->nrulesets, b->nrulesets);
	assert_int_equal(a->nops, b->nops);
	if (a->nrows)
		assert_memory_equal(a->rows, b->rows, a->nrows * sizeof(*a->rows));
	size_t nrules = (size_t)a->nrulesets * (a->nregs + 1);
	for (size_t i = 0; i < nrules; i++) {
		assert_int_equal(a->rules[i].kind, b->rules[i].kind);
		assert_int_equal(a->rules[i].reg, b->rules[i].reg);
		assert_int_equal(a->rules[i].flags, b->rules[i].flags);
		assert_int_equal(a->rules[i].value, b->rules[i].value);
	}
	for (uint32_t i = 0; i < a->nops; i++) {
		assert_int_equal(a->ops[i].atom, b->ops[i].atom);
		assert_int_equal(a->ops[i].number, b->ops[i].number);
		assert_int_equal(a->ops[i].number2, b->ops[i].number2);
		assert_int_equal(a->ops[i].offset, b->ops[i].offset);
	}
}

/* Same lookups: same rules, and the same expression ops behind expression rules. */
static void check_same_lookup(const struct cq_cfi_table *a, const struct cq_cfi_table *b,
                              uint64_t pc)
{
	const struct cq_cfi_rule *ra = cq_cfi_table_lookup(a, pc);
	const struct cq_cfi_rule *rb = cq_cfi_table_lookup(b, pc);
	if (!ra || !rb) {
		assert_null(ra);
		assert_null(rb);
		return;
	}
	for (unsigned i = 0; i <= a->nregs; i++) {
		assert_int_equal(ra[i].kind, rb[i].kind);
		assert_int_equal(ra[i].reg, rb[i].reg);
		assert_int_equal(ra[i].flags, rb[i].flags);
		if (ra[i].kind == CQ_CFI_EXPR || ra[i].kind == CQ_CFI_VAL_EXPR ||
		    ra[i].kind == CQ_CFI_CFA_EXPR) {
			size_t na, nb;
			const struct cq_cfi_op *oa = expr_of(a, &ra[i], &na);
			const struct cq_cfi_op *ob = expr_of(b, &rb[i], &nb);
			assert_int_equal(na, nb);
			for (size_t k = 0; k < na; k++) {
				assert_int_equal(oa[k].atom, ob[k].atom);
				assert_int_equal(oa[k].number, ob[k].number);
				assert_int_equal(oa[k].number2, ob[k].number2);
			}
		} else {
			assert_int_equal(ra[i].value, rb[i].value);
		}
	}
}

static void test_serialize_round_trip_gives_identical_lookups(void **state)
{
	const struct cq_cfi_table *t = self_table(state);
	uint8_t *blob;
	size_t len;
	check_ok(cq_cfi_table_serialize(t, &blob, &len));
	assert_true(len > 48);
	assert_memory_equal(blob, "CQCFI\0\0\0", 8);
	struct cq_cfi_table *t2;
	check_ok(cq_cfi_table_deserialize(blob, len, &t2));
	check_tables_equal(t, t2);
	for (uint32_t i = 0; i < t->nrows; i++) {
		uint64_t pc = t->base + t->rows[i].start;
		check_same_lookup(t, t2, pc);
		check_same_lookup(t, t2, pc - 1);
	}
	const void *fixtures[] = {cq_fx_frame,     cq_fx_frame_pushed, cq_fx_frame_body,
	                          cq_fx_gap,       cq_fx_realign_r10,  cq_fx_realign_expr,
	                          cq_fx_rules_reg, cq_fx_plt,          cq_fx_restore_rt};
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++)
		check_same_lookup(t, t2, link_addr(fixtures[i]));
	/* Serialising the copy gives the same bytes. */
	uint8_t *blob2;
	size_t len2;
	check_ok(cq_cfi_table_serialize(t2, &blob2, &len2));
	assert_int_equal(len2, len);
	assert_memory_equal(blob2, blob, len);
	free(blob2);
	cq_cfi_table_free(t2);
	free(blob);
}

static void test_empty_table_round_trip(void **state)
{
	(void)state;
	struct cq_cfi_table *t, *t2;
	check_ok(cq_cfi_table_build(NULL, NULL, NREGS, &t));
	uint8_t *blob;
	size_t len;
	check_ok(cq_cfi_table_serialize(t, &blob, &len));
	check_ok(cq_cfi_table_deserialize(blob, len, &t2));
	check_tables_equal(t, t2);
	assert_null(cq_cfi_table_lookup(t2, 0x1000));
	cq_cfi_table_free(t2);
	cq_cfi_table_free(t);
	free(blob);
}

/*
 * A small hand-built table: CFA rsp+8 / rip at CFA-8; CFA rsp+16 / rbp at
 * CFA-16; and a CFA expression (breg7 8; deref), rows over [0x1000, 0x1040).
 */
#define STRIDE      (NREGS + 1)
#define HEADER_SIZE 40
#define ROW_SIZE    8
#define RULE_SIZE   8
#define OP_SIZE     25

static struct cq_cfi_table *small_table(void)
{
	static struct cq_cfi_rule rules[3 * STRIDE];
	memset(rules, 0, sizeof(rules));
	rules[0] = (struct cq_cfi_rule){.kind = CQ_CFI_CFA_REG_OFFSET, .reg = RSP, .value = 8};
	rules[1 + RIP] = (struct cq_cfi_rule){.kind = CQ_CFI_OFFSET, .value = -8};
	rules[STRIDE] =
	    (struct cq_cfi_rule){.kind = CQ_CFI_CFA_REG_OFFSET, .reg = RSP, .value = 16};
	rules[STRIDE + 1 + RIP] = (struct cq_cfi_rule){.kind = CQ_CFI_OFFSET, .value = -8};
	rules[STRIDE + 1 + RBP] = (struct cq_cfi_rule){.kind = CQ_CFI_OFFSET, .value = -16};
	rules[2 * STRIDE] = (struct cq_cfi_rule){.kind = CQ_CFI_CFA_EXPR, .value = 0};
	rules[2 * STRIDE + 1 + RIP] = (struct cq_cfi_rule){.kind = CQ_CFI_OFFSET, .value = -8};
	static const struct cq_cfi_op ops[] = {
	    {.atom = 0, .number = 2},
	    {.atom = DW_OP_breg7, .number = 8, .offset = 0},
	    {.atom = DW_OP_deref, .offset = 2},
	};
	static const struct cq_cfi_row rows[] = {
	    {0x0, 0},  {0x10, 1},
	    {0x20, 2}, {0x30, CQ_CFI_NO_RULES},
	    {0x40, 0}, {0x48, CQ_CFI_NO_RULES},
	};
	struct cq_cfi_table *t;
	check_ok(cq_cfi_table_from_parts(0x1000, NREGS, rows, 6, rules, 3, ops, 3, &t));
	return t;
}

/* The serialised small table; the caller frees it. */
static uint8_t *small_blob(size_t *len)
{
	struct cq_cfi_table *t = small_table();
	uint8_t *blob;
	check_ok(cq_cfi_table_serialize(t, &blob, len));
	cq_cfi_table_free(t);
	assert_int_equal(*len,
	                 HEADER_SIZE + 6 * ROW_SIZE + 3 * STRIDE * RULE_SIZE + 3 * OP_SIZE + 4);
	return blob;
}

static size_t rows_at(void)
{
	return HEADER_SIZE;
}

static size_t rules_at_offset(void)
{
	return HEADER_SIZE + 6 * ROW_SIZE;
}

static size_t ops_at(void)
{
	return rules_at_offset() + 3 * STRIDE * RULE_SIZE;
}

static void store_u32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void store_u64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/*
 * Deserialises a copy of blob in a buffer of exactly len bytes (so ASan sees
 * overreads), its trailing CRC-32 made right for the bytes before it, so that
 * the checks behind the checksum are what rejects a damaged blob.
 */
static struct cq_error *deserialize_exact(const uint8_t *blob, size_t len,
                                          struct cq_cfi_table **out)
{
	uint8_t *copy = malloc(len ? len : 1);
	assert_non_null(copy);
	if (len)
		memcpy(copy, blob, len);
	if (len >= 4) {
		uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), copy, (uInt)(len - 4));
		memcpy(copy + len - 4, &crc, 4);
	}
	struct cq_error *err = cq_cfi_table_deserialize(copy, len, out);
	free(copy);
	return err;
}

static void test_small_table_round_trip(void **state)
{
	(void)state;
	struct cq_cfi_table *t = small_table(), *t2;
	uint8_t *blob;
	size_t len;
	check_ok(cq_cfi_table_serialize(t, &blob, &len));
	check_ok(deserialize_exact(blob, len, &t2));
	check_tables_equal(t, t2);
	for (uint64_t pc = 0xff0; pc < 0x1050; pc++)
		check_same_lookup(t, t2, pc);
	assert_null(cq_cfi_table_lookup(t2, 0x1030));
	assert_non_null(cq_cfi_table_lookup(t2, 0x1047));
	assert_null(cq_cfi_table_lookup(t2, 0x1048));
	cq_cfi_table_free(t2);
	cq_cfi_table_free(t);
	free(blob);
}

static void test_blob_with_wrong_version_is_rejected(void **state)
{
	(void)state;
	size_t len;
	uint8_t *blob = small_blob(&len);
	struct cq_cfi_table *t = (void *)1;
	store_u32(blob + 8, CQ_CFI_TABLE_VERSION + 1);
	check_format_error(deserialize_exact(blob, len, &t));
	assert_null(t);
	store_u32(blob + 8, 0);
	check_format_error(deserialize_exact(blob, len, &t));
	assert_null(t);
	free(blob);
}

static void test_blob_with_bad_magic_is_rejected(void **state)
{
	(void)state;
	size_t len;
	uint8_t *blob = small_blob(&len);
	struct cq_cfi_table *t;
	blob[0] = 'X';
	check_format_error(deserialize_exact(blob, len, &t));
	assert_null(t);
	free(blob);
}

static void test_truncated_blob_is_rejected(void **state)
{
	(void)state;
	size_t len;
	uint8_t *blob = small_blob(&len);
	struct cq_cfi_table *t;
	for (size_t cut = 0; cut < len; cut++) {
		t = (void *)1;
		check_format_error(deserialize_exact(blob, cut, &t));
		assert_null(t);
	}
	/* One byte too many is rejected too. */
	uint8_t *longer = calloc(1, len + 1);
	assert_non_null(longer);
	memcpy(longer, blob, len);
	check_format_error(deserialize_exact(longer, len + 1, &t));
	free(longer);
	free(blob);
}

/* A blob that is sound in structure but whose bytes changed fails its checksum. */
static void test_blob_with_bad_checksum_is_rejected(void **state)
{
	(void)state;
	size_t len;
	uint8_t *blob = small_blob(&len);
	struct cq_cfi_table *t = NULL;
	check_ok(cq_cfi_table_deserialize(blob, len, &t));
	cq_cfi_table_free(t);
	blob[rules_at_offset() + 4] ^= 1; /* a rule's offset: still a valid table */
	check_ok(deserialize_exact(blob, len, &t));
	cq_cfi_table_free(t);
	t = (void *)1;
	check_format_error(cq_cfi_table_deserialize(blob, len, &t));
	assert_null(t);
	free(blob);
}

static void test_truncated_real_blob_is_rejected(void **state)
{
	const struct cq_cfi_table *st = self_table(state);
	uint8_t *blob;
	size_t len;
	check_ok(cq_cfi_table_serialize(st, &blob, &len));
	struct cq_cfi_table *t;
	const size_t cuts[] = {0, 7, 8, 35, 36, 37, len / 2, len - 25, len - 8, len - 1};
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++)
		check_format_error(deserialize_exact(blob, cuts[i], &t));
	free(blob);
}

static void test_blob_with_ruleset_index_past_end_is_rejected(void **state)
{
	(void)state;
	size_t len;
	uint8_t *blob = small_blob(&len);
	struct cq_cfi_table *t = (void *)1;
	/* Row 2 refers to rule set 3 of 3. */
	store_u32(blob + rows_at() + 2 * ROW_SIZE + 4, 3);
	check_format_error(deserialize_exact(blob, len, &t));
	assert_null(t);
	store_u32(blob + rows_at() + 2 * ROW_SIZE + 4, CQ_CFI_NO_CFI - 1);
	check_format_error(deserialize_exact(blob, len, &t));
	assert_null(t);
	free(blob);
}

static void test_blob_with_expression_count_past_end_is_rejected(void **state)
{
	(void)state;
	size_t len;
	uint8_t *blob = small_blob(&len);
	struct cq_cfi_table *t = (void *)1;
	/* The header op says 3 ops follow; only 2 do. */
	store_u64(blob + ops_at() + 1, 3);
	check_format_error(deserialize_exact(blob, len, &t));
	assert_null(t);
	store_u64(blob + ops_at() + 1, UINT64_MAX);
	check_format_error(deserialize_exact(blob, len, &t));
	assert_null(t);
	store_u64(blob + ops_at() + 1, 1ull << 32);
	check_format_error(deserialize_exact(blob, len, &t));
	assert_null(t);
	free(blob);
}

static void test_blob_with_expression_index_past_end_is_rejected(void **state)
{
	(void)state;
	size_t len;
	uint8_t *blob = small_blob(&len);
	struct cq_cfi_table *t = (void *)1;
	/* Rule set 2's CFA expression index: 3 (== nops), then negative. */
	uint8_t *value = blob + rules_at_offset() + 2 * STRIDE * RULE_SIZE + 4;
	store_u32(value, 3);
	check_format_error(deserialize_exact(blob, len, &t));
	store_u32(value, (uint32_t)-1);
	check_format_error(deserialize_exact(blob, len, &t));
	assert_null(t);
	free(blob);
}

static void test_blob_with_bad_rules_is_rejected(void **state)
{
	(void)state;
	size_t len;
	uint8_t *blob = small_blob(&len);
	struct cq_cfi_table *t;
	uint8_t *cfa0 = blob + rules_at_offset();
	uint8_t *rip0 = cfa0 + (1 + RIP) * RULE_SIZE;

	cfa0[1] = NREGS; /* CFA register out of range */
	check_format_error(deserialize_exact(blob, len, &t));
	cfa0[1] = RSP;

	cfa0[0] = CQ_CFI_OFFSET; /* not a CFA rule */
	check_format_error(deserialize_exact(blob, len, &t));
	cfa0[0] = CQ_CFI_CFA_REG_OFFSET;

	rip0[0] = CQ_CFI_CFA_REG_OFFSET; /* a CFA rule for a register */
	check_format_error(deserialize_exact(blob, len, &t));
	rip0[0] = CQ_CFI_CFA_EXPR + 1; /* unknown kind */
	check_format_error(deserialize_exact(blob, len, &t));
	rip0[0] = CQ_CFI_REGISTER; /* register out of range */
	rip0[1] = 200;
	check_format_error(deserialize_exact(blob, len, &t));
	rip0[0] = CQ_CFI_EXPR; /* expression index out of range */
	rip0[1] = 0;
	store_u32(rip0 + 4, 1000);
	check_format_error(deserialize_exact(blob, len, &t));
	rip0[0] = CQ_CFI_OFFSET;
	store_u32(rip0 + 4, (uint32_t)-8);

	/* Restored: accepted again. */
	check_ok(deserialize_exact(blob, len, &t));
	cq_cfi_table_free(t);
	free(blob);
}

static void test_blob_with_unsorted_rows_is_rejected(void **state)
{
	(void)state;
	size_t len;
	uint8_t *blob = small_blob(&len);
	struct cq_cfi_table *t;
	store_u32(blob + rows_at() + 1 * ROW_SIZE, 0x20); /* equal to row 2's start */
	check_format_error(deserialize_exact(blob, len, &t));
	store_u32(blob + rows_at() + 1 * ROW_SIZE, 0x30); /* after row 2's start */
	check_format_error(deserialize_exact(blob, len, &t));
	free(blob);
}

static void test_blob_with_bad_header_counts_is_rejected(void **state)
{
	(void)state;
	size_t len;
	uint8_t *blob = small_blob(&len);
	struct cq_cfi_table *t;
	store_u32(blob + 12, 0); /* nregs */
	check_format_error(deserialize_exact(blob, len, &t));
	store_u32(blob + 12, CQ_CFI_MAX_REGS + 1);
	check_format_error(deserialize_exact(blob, len, &t));
	store_u32(blob + 12, NREGS);
	store_u32(blob + 24, UINT32_MAX); /* nrows */
	check_format_error(deserialize_exact(blob, len, &t));
	store_u32(blob + 24, 6);
	store_u32(blob + 28, UINT32_MAX); /* nrulesets */
	check_format_error(deserialize_exact(blob, len, &t));
	store_u32(blob + 28, 4);
	check_format_error(deserialize_exact(blob, len, &t));
	store_u32(blob + 28, 3);
	store_u32(blob + 32, UINT32_MAX); /* nops */
	check_format_error(deserialize_exact(blob, len, &t));
	store_u32(blob + 32, 3);
	check_ok(deserialize_exact(blob, len, &t));
	cq_cfi_table_free(t);
	free(blob);
}

/* Every single-byte change to a valid blob is either rejected or yields a usable table. */
static void test_single_byte_corruptions_never_crash(void **state)
{
	(void)state;
	size_t len;
	uint8_t *blob = small_blob(&len);
	static const uint8_t values[] = {0x00, 0x01, 0x03, 0x07, 0x10,
	                                 0x11, 0x22, 0x7f, 0x80, 0xff};
	for (size_t i = 0; i < len; i++) {
		uint8_t orig = blob[i];
		for (size_t v = 0; v < sizeof(values); v++) {
			blob[i] = values[v];
			struct cq_cfi_table *t;
			struct cq_error *err = deserialize_exact(blob, len, &t);
			if (err) {
				assert_null(t);
				cq_error_free(err);
				continue;
			}
			for (uint64_t pc = t->base; pc < t->base + 0x50; pc += 4) {
				const struct cq_cfi_rule *rs = cq_cfi_table_lookup(t, pc);
				size_t n;
				for (unsigned k = 0; rs && k <= t->nregs; k++)
					if (rs[k].kind == CQ_CFI_EXPR ||
					    rs[k].kind == CQ_CFI_VAL_EXPR ||
					    rs[k].kind == CQ_CFI_CFA_EXPR)
						assert_non_null(cq_cfi_table_expr(t, &rs[k], &n));
			}
			cq_cfi_table_free(t);
		}
		blob[i] = orig;
	}
	free(blob);
}

static void test_from_parts_rejects_bad_tables(void **state)
{
	(void)state;
	struct cq_cfi_rule rules[STRIDE];
	memset(rules, 0, sizeof(rules));
	rules[0] = (struct cq_cfi_rule){.kind = CQ_CFI_CFA_REG_OFFSET, .reg = RSP, .value = 8};
	struct cq_cfi_row rows[] = {{0, 0}, {0x10, CQ_CFI_NO_RULES}};
	struct cq_cfi_table *t;
	check_ok(cq_cfi_table_from_parts(0x1000, NREGS, rows, 2, rules, 1, NULL, 0, &t));
	cq_cfi_table_free(t);

	struct cq_cfi_row bad_rows[] = {{0, 1}, {0x10, CQ_CFI_NO_RULES}};
	struct cq_error *err =
	    cq_cfi_table_from_parts(0x1000, NREGS, bad_rows, 2, rules, 1, NULL, 0, &t);
	assert_non_null(err);
	assert_null(t);
	cq_error_free(err);

	err = cq_cfi_table_from_parts(0x1000, 0, rows, 2, rules, 1, NULL, 0, &t);
	assert_non_null(err);
	cq_error_free(err);

	rules[0].kind = CQ_CFI_CFA_EXPR; /* no ops at all */
	err = cq_cfi_table_from_parts(0x1000, NREGS, rows, 2, rules, 1, NULL, 0, &t);
	assert_non_null(err);
	assert_null(t);
	cq_error_free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table_has_rows_and_fixture_fdes),
	    cmocka_unit_test(test_frame_pointer_prologue_rows),
	    cmocka_unit_test(test_row_boundaries_are_exact),
	    cmocka_unit_test(test_epilogue_row_is_interned_with_entry_row),
	    cmocka_unit_test(test_lookup_outside_any_fde_is_null),
	    cmocka_unit_test(test_cfa_based_on_r10_then_expression),
	    cmocka_unit_test(test_cfi_register_rule_is_register_kind),
	    cmocka_unit_test(test_val_offset_same_value_and_undefined_rules),
	    cmocka_unit_test(test_outermost_row_has_undefined_return_address),
	    cmocka_unit_test(test_plt_row_is_cfa_expression),
	    cmocka_unit_test(test_plt_cfa_depends_on_rip),
	    cmocka_unit_test(test_plt_step_fails_without_rip),
	    cmocka_unit_test(test_signal_frame_row),
	    cmocka_unit_test(test_signal_frame_step_restores_ucontext),
	    cmocka_unit_test(test_signal_frame_step_fails_on_unreadable_ucontext),
	    cmocka_unit_test(test_frame_pointer_rows_step),
	    cmocka_unit_test(test_cfi_register_rule_step),
	    cmocka_unit_test(test_val_offset_and_same_value_step),
	    cmocka_unit_test(test_table_agrees_with_libdw_at_every_row),
	    cmocka_unit_test(test_every_function_with_cfi_has_rows),
	    cmocka_unit_test(test_lazy_table_agrees_with_complete_table_backwards),
	    cmocka_unit_test(test_lazy_table_agrees_with_complete_table_forwards),
	    cmocka_unit_test(test_lazy_table_remembers_pcs_without_cfi),
	    cmocka_unit_test(test_partial_table_round_trips_and_grows),
	    cmocka_unit_test(test_complete_table_is_marked_and_keeps_its_mark),
	    cmocka_unit_test(test_rulesets_are_interned),
	    cmocka_unit_test(test_every_rule_is_well_formed),
	    cmocka_unit_test(test_debug_elf_without_debug_frame_changes_nothing),
	    cmocka_unit_test(test_bad_register_count_is_rejected),
	    cmocka_unit_test(test_no_elf_gives_empty_table),
	    cmocka_unit_test(test_elf_without_eh_frame_gives_empty_table),
	    cmocka_unit_test(test_serialize_round_trip_gives_identical_lookups),
	    cmocka_unit_test(test_empty_table_round_trip),
	    cmocka_unit_test(test_small_table_round_trip),
	    cmocka_unit_test(test_blob_with_wrong_version_is_rejected),
	    cmocka_unit_test(test_blob_with_bad_magic_is_rejected),
	    cmocka_unit_test(test_truncated_blob_is_rejected),
	    cmocka_unit_test(test_truncated_real_blob_is_rejected),
	    cmocka_unit_test(test_blob_with_bad_checksum_is_rejected),
	    cmocka_unit_test(test_blob_with_ruleset_index_past_end_is_rejected),
	    cmocka_unit_test(test_blob_with_expression_count_past_end_is_rejected),
	    cmocka_unit_test(test_blob_with_expression_index_past_end_is_rejected),
	    cmocka_unit_test(test_blob_with_bad_rules_is_rejected),
	    cmocka_unit_test(test_blob_with_unsorted_rows_is_rejected),
	    cmocka_unit_test(test_blob_with_bad_header_counts_is_rejected),
	    cmocka_unit_test(test_single_byte_corruptions_never_crash),
	    cmocka_unit_test(test_from_parts_rejects_bad_tables),
	};
	return cmocka_run_group_tests(tests, self_setup, self_teardown);
}
