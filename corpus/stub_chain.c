/* stub_chain.c: corpus program for the test-only "stub" async runtime
 * (unwind/async/stub.c, in the ASan build only).  It publishes one chain in
 * the record that runtime reads: three return addresses, one just past the
 * start of each of stub_leaf, stub_middle and stub_root (innermost first),
 * so the chain names those three functions.  Then main -> stub_crash, which
 * aborts: SIGABRT. */
#include "common.h"

#include <stdint.h>

#define STUB_MAGIC 0x636f726571737562ull /* "coreqsub" */

struct {
	uint64_t magic;
	uint64_t n;
	uint64_t pcs[8];
} coreq_stub_chain;

CHAIN void stub_leaf(void)
{
	KEEP_FRAME();
}

CHAIN void stub_middle(void)
{
	KEEP_FRAME();
}

CHAIN void stub_root(void)
{
	KEEP_FRAME();
}

CHAIN static void stub_crash(void)
{
	abort();
	KEEP_FRAME();
}

int main(void)
{
	/* A return address is looked up at address - 1: the function's first byte. */
	coreq_stub_chain.pcs[0] = (uint64_t)(uintptr_t)stub_leaf + 1;
	coreq_stub_chain.pcs[1] = (uint64_t)(uintptr_t)stub_middle + 1;
	coreq_stub_chain.pcs[2] = (uint64_t)(uintptr_t)stub_root + 1;
	coreq_stub_chain.n = 3;
	coreq_stub_chain.magic = STUB_MAGIC;
	stub_crash();
	KEEP_FRAME();
	return 0;
}
