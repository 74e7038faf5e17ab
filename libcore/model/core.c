/*
 * core.c - open a core file and build struct cq_core (see core.h).
 *
 * Order of work: get a seekable source (source.c), let libelf mmap it and
 * validate the ELF and program headers, parse the notes (notes.c), describe
 * every PT_LOAD to the memory reader (clipped to what the file really holds),
 * then discover modules (module.c), which adds the file-backed fallback layer.
 */
#include "libcore/model/core.h"

#include <elf.h>
#include <errno.h>
#include <gelf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libcore/model/module.h"
#include "libcore/model/link_map.h"
#include "libcore/model/notes.h"
#include "libcore/model/si_code.h"

/*
 * Checks the identity bytes before libelf sees the file, so that a short,
 * foreign or 32-bit file gets a precise reason rather than libelf's generic one.
 */
static struct cq_error *check_ident(const struct cq_source *src)
{
	unsigned char id[sizeof(Elf64_Ehdr)];
	ssize_t n = src->image ? (ssize_t)(src->size < sizeof(id) ? src->size : sizeof(id))
	                       : pread(src->fd, id, sizeof(id), 0);
	if (src->image)
		memcpy(id, src->image, (size_t)n);
	if (n < 0)
		return cq_error_errno(errno, "cannot read");
	size_t got = (size_t)n, magic_len = got < SELFMAG ? got : SELFMAG;
	if (got == 0 || memcmp(id, ELFMAG, magic_len) != 0)
		return cq_error_create(CQ_ERR_FORMAT, "not an ELF file");
	if (got < EI_NIDENT)
		return cq_error_create(CQ_ERR_FORMAT, "core truncated inside its ELF header");
	if (id[EI_CLASS] == ELFCLASS32)
		return cq_error_create(CQ_ERR_UNSUPPORTED, "32-bit cores are not supported yet");
	if (id[EI_CLASS] != ELFCLASS64)
		return cq_error_create(CQ_ERR_FORMAT, "bad ELF class %u", id[EI_CLASS]);
	if (id[EI_DATA] != ELFDATA2LSB)
		return cq_error_create(CQ_ERR_UNSUPPORTED,
		                       "big-endian cores are not supported yet");
	if (got < sizeof(Elf64_Ehdr))
		return cq_error_create(CQ_ERR_FORMAT, "core truncated inside its ELF header");
	return NULL;
}

static struct cq_error *check_header(struct cq_core *core)
{
	GElf_Ehdr eh;
	if (!gelf_getehdr(core->elf, &eh))
		return cq_error_create(CQ_ERR_FORMAT, "bad ELF header: %s", elf_errmsg(-1));
	if (eh.e_type != ET_CORE)
		return cq_error_create(CQ_ERR_FORMAT, "not a core file (an ELF %s)",
		                       eh.e_type == ET_EXEC  ? "executable"
		                       : eh.e_type == ET_DYN ? "shared object or PIE executable"
		                       : eh.e_type == ET_REL ? "relocatable object"
		                                             : "file of unknown type");
	core->arch = cq_arch_from_machine(eh.e_machine);
	if (!core->arch)
		return cq_error_create(CQ_ERR_UNSUPPORTED, "machine %u is not supported yet",
		                       eh.e_machine);
	if (eh.e_phoff > core->image_size ||
	    (uint64_t)eh.e_phnum * eh.e_phentsize > core->image_size - eh.e_phoff)
		return cq_error_create(CQ_ERR_FORMAT, "core truncated inside its program headers");
	return NULL;
}

static unsigned segment_flags(uint32_t p_flags)
{
	return (p_flags & PF_R ? CQ_MEM_READ : 0) | (p_flags & PF_W ? CQ_MEM_WRITE : 0) |
	       (p_flags & PF_X ? CQ_MEM_EXEC : 0);
}

static struct cq_error *add_load_segments(struct cq_core *core)
{
	size_t phnum;
	if (elf_getphdrnum(core->elf, &phnum) != 0)
		return cq_error_create(CQ_ERR_FORMAT, "cannot read program headers: %s",
		                       elf_errmsg(-1));
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(core->elf, (int)i, &ph))
			return cq_error_create(CQ_ERR_FORMAT, "program header %zu: %s", i,
			                       elf_errmsg(-1));
		if (ph.p_type != PT_LOAD || ph.p_memsz == 0 || ph.p_vaddr + ph.p_memsz < ph.p_vaddr)
			continue;
		uint64_t filesz = ph.p_filesz < ph.p_memsz ? ph.p_filesz : ph.p_memsz;
		uint64_t avail = 0;
		if (ph.p_offset < core->image_size)
			avail = core->image_size - ph.p_offset;
		if (avail > filesz)
			avail = filesz;
		core->memory_dumped += filesz;
		core->memory_missing += filesz - avail;
		struct cq_error *err =
		    cq_mem_add_at(&core->mem, CQ_MEM_LAYER_CORE, ph.p_vaddr,
		                  ph.p_vaddr + ph.p_memsz, avail ? core->image + ph.p_offset : NULL,
		                  avail, segment_flags(ph.p_flags), ph.p_offset);
		if (err)
			return err;
	}
	cq_mem_finish(&core->mem);
	return NULL;
}

static int compare_tid(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

/* Counts threads that repeat an earlier thread's tid. */
static struct cq_error *count_duplicate_tids(struct cq_core *core)
{
	int32_t *tids = malloc(core->nthreads * sizeof(*tids));
	if (!tids)
		return &cq_error_nomem;
	for (size_t i = 0; i < core->nthreads; i++)
		tids[i] = core->threads[i].tid;
	qsort(tids, core->nthreads, sizeof(*tids), compare_tid);
	for (size_t i = 1; i < core->nthreads; i++)
		core->duplicate_tids += tids[i] == tids[i - 1];
	free(tids);
	return NULL;
}

static struct cq_error *core_load(struct cq_core *core)
{
	struct cq_error *err =
	    cq_source_open(core->path, core->options.max_spool, core->options.regular_only,
	                   core->options.want_fd, core->options.stream_hint, &core->source);
	if (err)
		return err;
	if ((err = check_ident(&core->source)))
		return err;
	elf_version(EV_CURRENT);
	core->elf = core->source.image
	                ? elf_memory((char *)core->source.image, (size_t)core->source.size)
	                : elf_begin(core->source.fd, ELF_C_READ_MMAP, NULL);
	if (!core->elf)
		return cq_error_create(CQ_ERR_FORMAT, "cannot read as ELF: %s", elf_errmsg(-1));
	size_t size;
	core->image = (const uint8_t *)elf_rawfile(core->elf, &size);
	if (!core->image)
		return cq_error_create(CQ_ERR_FORMAT, "not an ELF file");
	core->image_size = size;
	/* Reads of a core are scattered (a few stack pages per thread). */
	madvise((void *)((uintptr_t)core->image & ~(uintptr_t)4095), size, MADV_RANDOM);
	if ((err = check_header(core)) || (err = cq_notes_parse(core)) ||
	    (err = count_duplicate_tids(core)) || (err = add_load_segments(core)))
		return err;
	if (core->at_execfn)
		cq_mem_read_string(&core->mem, core->at_execfn, core->execfn, sizeof(core->execfn));
	if (core->nmappings == 0 && (err = cq_link_map_mappings(core)))
		return err;
	if ((err = cq_core_load_modules(core)))
		return err;
	if (core->has_psinfo && core->nthreads > 0) {
		for (size_t i = 0; i < core->nthreads; i++)
			if (core->threads[i].tid == core->pid)
				core->threads[i].name = core->fname;
	}
	return NULL;
}

struct cq_error *cq_core_open(const char *path, const struct cq_core_options *opts,
                              struct cq_core **out)
{
	*out = NULL;
	struct cq_core *core = calloc(1, sizeof(*core));
	if (!core)
		return &cq_error_nomem;
	core->source.fd = -1;
	cq_mem_init(&core->mem);
	if (opts)
		core->options = *opts;
	core->path = strdup(path);
	if (!core->path) {
		cq_core_close(core);
		return &cq_error_nomem;
	}
	struct cq_error *err = core_load(core);
	struct cq_source_frame_stats fs = cq_source_frame_stats(&core->source);
	if (err && fs.bad)
		err = cq_error_prefix(err,
		                      "%llu of the %llu frames of the compressed core would not "
		                      "decompress to the size its seek table gives",
		                      (unsigned long long)fs.bad, (unsigned long long)fs.frames);
	if (err) {
		cq_core_close(core);
		return err;
	}
	*out = core;
	return NULL;
}

void cq_core_close(struct cq_core *core)
{
	if (!core)
		return;
	for (size_t i = 0; i < core->nmodules; i++)
		cq_module_destroy(&core->modules[i]);
	free(core->modules);
	cq_mem_destroy(&core->mem);
	free(core->mappings);
	free(core->mapping_paths);
	free(core->threads);
	if (core->elf)
		elf_end(core->elf);
	cq_source_close(&core->source);
	free(core->path);
	free(core);
}

void cq_core_trim(struct cq_core *core)
{
	if (core->source.image)
		return; /* a lazy image keeps its own budget (source.h) */
	uintptr_t start = (uintptr_t)core->image & ~(uintptr_t)4095;
	size_t len = core->image_size + ((uintptr_t)core->image - start);
	madvise((void *)start, len, MADV_DONTNEED);
}

int cq_core_advise(const struct cq_core *core, const uint8_t *p, uint64_t len, int advice)
{
	uintptr_t lo = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
	uintptr_t hi = ((uintptr_t)p + len) & ~(uintptr_t)4095;
	if (p < core->image || p + len > core->image + core->image_size || hi <= lo)
		return 0;
	if (core->source.image && advice == MADV_DONTNEED)
		return 0; /* a lazy image drops frames by its own budget (source.h) */
	return madvise((void *)lo, hi - lo, advice);
}

const struct cq_core_thread *cq_core_crashed_thread(const struct cq_core *core)
{
	return core->nthreads && !core->snapshot ? &core->threads[0] : NULL;
}

const char *cq_core_snapshot_name(enum cq_core_snapshot snapshot)
{
	return snapshot == CQ_SNAPSHOT_GCORE ? "gcore" : NULL;
}

int cq_core_signal(const struct cq_core *core)
{
	if (core->siginfo.present && core->siginfo.signo > 0)
		return core->siginfo.signo;
	return core->nthreads ? core->threads[0].cursig : 0;
}

bool cq_core_signal_from_self(const struct cq_core *core)
{
	const struct cq_core_siginfo *si = &core->siginfo;
	if (!si->present || !si->has_sender)
		return false;
	if (core->has_psinfo)
		return si->sender_pid == core->pid;
	for (size_t i = 0; i < core->nthreads; i++)
		if (core->threads[i].tid == si->sender_pid)
			return true;
	return false;
}

/* Signals the kernel sends for a fault of the thread that takes them. */
static bool fault_signal(int signo)
{
	return signo == SIGSEGV || signo == SIGBUS || signo == SIGILL || signo == SIGFPE ||
	       signo == SIGTRAP || signo == SIGSYS;
}

bool cq_core_stopped_from_outside(const struct cq_core *core)
{
	const struct cq_core_siginfo *si = &core->siginfo;
	int signo = cq_core_signal(core);
	if (core->snapshot || signo == SIGSTOP)
		return true;
	/* No siginfo (qemu-user's cores): a fault signal is still a crash. */
	if (!si->present)
		return !fault_signal(signo);
	if (si->has_sender)
		return !cq_core_signal_from_self(core);
	return !fault_signal(signo);
}

bool cq_core_sender_claimed(const struct cq_core *core)
{
	const struct cq_core_siginfo *si = &core->siginfo;
	if (!si->present || !si->has_sender)
		return false;
	const struct cq_si_code *what = cq_si_code_find(si->signo, si->code);
	bool kernel_fills = what && what->kernel_fills_sender;
	/* pid 0 is no process's own: a kill from an ancestor pid namespace. */
	return !(kernel_fills && core->has_psinfo && core->pid > 0 && si->sender_pid == core->pid &&
	         si->sender_uid == core->uid);
}

const char *cq_core_signal_name(int signo)
{
	const char *abbrev = signo > 0 ? sigabbrev_np(signo) : NULL;
	if (!abbrev)
		return NULL;
	static __thread char buf[32];
	snprintf(buf, sizeof(buf), "SIG%s", abbrev);
	return buf;
}

struct cq_module *cq_core_module_at(const struct cq_core *core, uint64_t addr)
{
	return cq_module_find(core->modules, core->nmodules, addr);
}

struct cq_module *cq_core_main_module(const struct cq_core *core)
{
	for (size_t i = 0; i < core->nmodules; i++)
		if (core->modules[i].is_main)
			return &core->modules[i];
	return NULL;
}

const char *cq_core_exe(const struct cq_core *core, const char *outside_exe)
{
	const struct cq_module *main_mod = cq_core_main_module(core);
	if (main_mod)
		return main_mod->name;
	if (core->execfn[0])
		return core->execfn;
	if (outside_exe && outside_exe[0])
		return outside_exe;
	return core->has_psinfo && core->fname[0] ? core->fname : NULL;
}
