/*
 * fuzz_core.c - libFuzzer target for the core-file model: ELF and program
 * headers, every note parser (NT_PRSTATUS, NT_PRPSINFO, NT_SIGINFO, NT_AUXV,
 * NT_FILE), the memory map, and module discovery from core memory.
 *
 * The input is written to a memfd and opened by path like any core.  A
 * sysroot that does not exist keeps NT_FILE paths from reaching host files,
 * so runs are deterministic.  After a successful open, reads at addresses
 * taken from the input exercise the segment lookup.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libcore/model/core.h"
#include "libcore/model/module.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void poke_memory(struct cq_core *core, const uint8_t *data, size_t size)
{
	uint8_t buf[64];
	char str[32];
	for (size_t off = 0; off + 8 <= size && off < 4096; off += 64) {
		uint64_t addr;
		memcpy(&addr, data + off, sizeof(addr));
		cq_mem_read_partial(&core->mem, addr, buf, sizeof(buf));
		cq_mem_read_string(&core->mem, addr, str, sizeof(str));
		cq_core_module_at(core, addr);
	}
	for (size_t i = 0; i < core->nthreads; i++) {
		uint64_t v;
		cq_mem_read_u64(&core->mem, core->threads[i].regs.value[core->arch->sp_reg], &v);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-core", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct cq_core_options opts = {.sysroot = "/nonexistent-coreq-fuzz-sysroot"};
	struct cq_core *core = NULL;
	struct cq_error *err = cq_core_open(path, &opts, &core);
	if (err) {
		cq_error_free(err);
	} else {
		poke_memory(core, data, size);
		cq_core_close(core);
	}
	close(fd);
	return 0;
}
