/*
 * x86_64_regs.h - x86_64 DWARF register numbers for the unit tests that
 * build CFI and register sets by hand (test_cfi_table.c, test_unwinder.c).
 */
#ifndef CQ_TEST_X86_64_REGS_H
#define CQ_TEST_X86_64_REGS_H

enum {
	RAX = 0,
	RDX = 1,
	RCX = 2,
	RBX = 3,
	RSI = 4,
	RDI = 5,
	RBP = 6,
	RSP = 7,
	R8 = 8,
	R9 = 9,
	R10 = 10,
	R11 = 11,
	R12 = 12,
	R13 = 13,
	R14 = 14,
	R15 = 15,
	RIP = 16,
	NREGS = 17,
};

#endif
