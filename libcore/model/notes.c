/*
 * notes.c - the core note parser (see notes.h).
 *
 * libelf locates the note segments and splits them into notes
 * (elf_getdata_rawchunk + gelf_getnote, both bounds-checked); this file
 * interprets each note's descriptor.  Layouts (64-bit Linux): elf_prstatus
 * has pr_cursig at 12, pr_pid at 32 and pr_reg at arch->prstatus_reg_offset;
 * elf_prpsinfo has uid 16, gid 20, pid 24, ppid 28, fname[16] at 40 and
 * psargs[80] at 56; siginfo has signo 0, errno 4, code 8, then at 16 either
 * si_addr (a fault: 0 < code < SI_KERNEL) or si_pid and si_uid (a signal a
 * process sent: see si_code.h).  Only the first NT_SIGINFO counts: gdb's
 * gcore writes one after each thread's NT_PRSTATUS, and the first thread's
 * is the one that stopped it.
 *
 * A core gdb wrote is told by its marks: a note of owner "GDB" (its target
 * description) or NT_PRPSINFO before the first NT_PRSTATUS (the kernel
 * writes the dumping thread's NT_PRSTATUS first).  When no thread of it was
 * handling a signal other than a stop, it is a snapshot (core.h).
 *
 * Invariants (asserted): the architecture's NT_PRSTATUS layout (registers,
 * syscall and thread-pointer slots) lies inside the size a note is checked
 * for before it is read; NT_FILE's entries and the first name lie inside
 * the descriptor once its count is checked; a parsed core has a thread.
 */
#include "libcore/model/notes.h"

#include <assert.h>
#include <elf.h>
#include <gelf.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/bytes.h"
#include "libcore/model/si_code.h"

#define PRPSINFO_SIZE    136
#define SIGINFO_MIN_SIZE 24

/* The fields parse_psinfo and parse_siginfo read lie inside what they check for. */
_Static_assert(56 + 80 <= PRPSINFO_SIZE, "psargs inside NT_PRPSINFO");
_Static_assert(20 + 4 <= SIGINFO_MIN_SIZE, "si_uid inside NT_SIGINFO");

/* Every slot add_thread reads lies inside arch's pr_reg, inside NT_PRSTATUS. */
static bool prstatus_layout_sane(const struct cq_arch *arch)
{
	unsigned n = arch->prstatus_nregs;
	return arch->prstatus_reg_offset + 8 * n <= arch->prstatus_size &&
	       32 + 4 <= arch->prstatus_size && arch->syscall.nr_slot < n &&
	       arch->syscall.arg_slots[0] < n && arch->syscall.arg_slots[1] < n &&
	       arch->syscall.ret_slot < n &&
	       (arch->tp_source != CQ_ARCH_TP_PRSTATUS_SLOT || arch->tp_slot < n);
}

static bool name_is(const char *name, GElf_Nhdr *nh, const char *want)
{
	return nh->n_namesz == strlen(want) + 1 && memcmp(name, want, nh->n_namesz) == 0;
}

static struct cq_error *add_thread(struct cq_core *core, const uint8_t *desc, size_t size,
                                   size_t *cap)
{
	const struct cq_arch *arch = core->arch;
	assert(prstatus_layout_sane(arch));
	if (size < arch->prstatus_size)
		return cq_error_create(CQ_ERR_FORMAT, "NT_PRSTATUS note is %zu bytes, expected %zu",
		                       size, arch->prstatus_size);
	if (core->nthreads == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		struct cq_core_thread *t = realloc(core->threads, ncap * sizeof(*t));
		if (!t)
			return &cq_error_nomem;
		core->threads = t;
		*cap = ncap;
	}
	assert(core->nthreads < *cap);
	struct cq_core_thread *t = &core->threads[core->nthreads];
	memset(t, 0, sizeof(*t));
	t->tid = cq_load_i32(desc + 32);
	t->cursig = cq_load_i16(desc + 12);
	t->crashed = core->nthreads == 0;
	const uint8_t *reg = desc + arch->prstatus_reg_offset;
	for (unsigned i = 0; i < arch->prstatus_nregs; i++) {
		int regno = arch->prstatus_dwarf[i];
		if (regno >= 0)
			cq_regs_set(&t->regs, (unsigned)regno, cq_load_u64(reg + 8 * i));
	}
	t->syscall_nr = (int64_t)cq_load_u64(reg + 8 * arch->syscall.nr_slot);
	t->syscall_args[0] = cq_load_u64(reg + 8 * arch->syscall.arg_slots[0]);
	t->syscall_args[1] = cq_load_u64(reg + 8 * arch->syscall.arg_slots[1]);
	t->syscall_ret = (int64_t)cq_load_u64(reg + 8 * arch->syscall.ret_slot);
	if (arch->tp_source == CQ_ARCH_TP_PRSTATUS_SLOT) {
		t->tp = cq_load_u64(reg + 8 * arch->tp_slot);
		t->has_tp = true;
	}
	core->nthreads++;
	return NULL;
}

static void parse_psinfo(struct cq_core *core, const uint8_t *desc, size_t size)
{
	if (size < PRPSINFO_SIZE)
		return;
	core->has_psinfo = true;
	core->uid = cq_load_u32(desc + 16);
	core->gid = cq_load_u32(desc + 20);
	core->pid = cq_load_i32(desc + 24);
	core->ppid = cq_load_i32(desc + 28);
	memcpy(core->fname, desc + 40, 16);
	core->fname[16] = '\0';
	memcpy(core->psargs, desc + 56, 80);
	core->psargs[80] = '\0';
	/* The kernel pads psargs with NULs; trailing spaces are its separators. */
	size_t n = strlen(core->psargs);
	while (n > 0 && core->psargs[n - 1] == ' ')
		core->psargs[--n] = '\0';
}

static bool signal_has_addr(int signo)
{
	return signo == SIGSEGV || signo == SIGBUS || signo == SIGILL || signo == SIGFPE ||
	       signo == SIGTRAP;
}

static void parse_siginfo(struct cq_core *core, const uint8_t *desc, size_t size)
{
	if (size < SIGINFO_MIN_SIZE || core->siginfo.present)
		return;
	struct cq_core_siginfo *si = &core->siginfo;
	si->present = true;
	si->signo = cq_load_i32(desc);
	si->errno_value = cq_load_i32(desc + 4);
	si->code = cq_load_i32(desc + 8);
	/* si_addr is meaningful only for faults (0 < si_code < SI_KERNEL): the
	 * kernel's own SI_KERNEL signals carry a zero pid and uid there. */
	si->has_addr = signal_has_addr(si->signo) && si->code > 0 && si->code < SI_KERNEL;
	si->addr = cq_load_u64(desc + 16);
	const struct cq_si_code *what = cq_si_code_find(si->signo, si->code);
	si->has_sender = what && what->has_sender;
	if (si->has_sender) {
		si->sender_pid = cq_load_i32(desc + 16);
		si->sender_uid = cq_load_u32(desc + 20);
	}
}

static void parse_auxv(struct cq_core *core, const uint8_t *desc, size_t size)
{
	for (size_t off = 0; off + 16 <= size; off += 16) {
		uint64_t type = cq_load_u64(desc + off), val = cq_load_u64(desc + off + 8);
		switch (type) {
		case AT_NULL:
			return;
		case AT_ENTRY:
			core->at_entry = val;
			break;
		case AT_PHDR:
			core->at_phdr = val;
			break;
		case AT_PHNUM:
			core->at_phnum = val;
			break;
		case AT_BASE:
			core->at_base = val;
			break;
		case AT_EXECFN:
			core->at_execfn = val;
			break;
		case AT_SYSINFO_EHDR:
			core->at_sysinfo_ehdr = val;
			break;
		case AT_PAGESZ:
			core->at_pagesz = val;
			break;
		default:
			break;
		}
	}
}

/* NT_FILE: count, page_size, count x (start, end, pgoff), count paths. */
static struct cq_error *parse_file_note(struct cq_core *core, const uint8_t *desc, size_t size)
{
	if (core->mappings)
		return NULL; /* only the first NT_FILE counts */
	if (size < 16)
		return cq_error_create(CQ_ERR_FORMAT, "NT_FILE note too short");
	uint64_t count = cq_load_u64(desc), page_size = cq_load_u64(desc + 8);
	if (count > (size - 16) / 24)
		return cq_error_create(CQ_ERR_FORMAT, "NT_FILE note claims %llu entries",
		                       (unsigned long long)count);
	if (page_size == 0 || (page_size & (page_size - 1)) || page_size > (1u << 30))
		return cq_error_create(CQ_ERR_FORMAT, "NT_FILE page size %llu",
		                       (unsigned long long)page_size);
	if (count == 0)
		return NULL;
	struct cq_core_mapping *map = calloc(count, sizeof(*map));
	if (!map)
		return &cq_error_nomem;
	const char *names = (const char *)desc + 16 + 24 * count;
	const char *end = (const char *)desc + size;
	assert(names <= end);
	for (uint64_t i = 0; i < count; i++) {
		const uint8_t *e = desc + 16 + 24 * i;
		const char *nul = memchr(names, '\0', (size_t)(end - names));
		uint64_t pgoff = cq_load_u64(e + 16);
		if (!nul || pgoff > UINT64_MAX / page_size) {
			free(map);
			return cq_error_create(CQ_ERR_FORMAT, "NT_FILE entry %llu is malformed",
			                       (unsigned long long)i);
		}
		map[i] = (struct cq_core_mapping){
		    .start = cq_load_u64(e),
		    .end = cq_load_u64(e + 8),
		    .file_offset = pgoff * page_size,
		    .path = names,
		};
		if (map[i].end < map[i].start)
			map[i].end = map[i].start;
		names = nul + 1;
	}
	core->mappings = map;
	core->nmappings = (size_t)count;
	return NULL;
}

/* What the notes say of their writer, gathered as they are read. */
struct note_marks {
	size_t thread_cap;
	bool gdb; /* a note of gdb's own, or NT_PRPSINFO before any NT_PRSTATUS */
};

static struct cq_error *parse_one_note(struct cq_core *core, GElf_Nhdr *nh, const char *name,
                                       const uint8_t *desc, struct note_marks *marks)
{
	bool is_core = name_is(name, nh, "CORE");
	if (name_is(name, nh, "GDB"))
		marks->gdb = true;
	if (is_core && nh->n_type == NT_PRSTATUS)
		return add_thread(core, desc, nh->n_descsz, &marks->thread_cap);
	if (is_core && nh->n_type == NT_PRPSINFO && core->nthreads == 0)
		marks->gdb = true;
	if (is_core && nh->n_type == NT_PRPSINFO)
		parse_psinfo(core, desc, nh->n_descsz);
	else if (is_core && nh->n_type == NT_SIGINFO)
		parse_siginfo(core, desc, nh->n_descsz);
	else if (is_core && nh->n_type == NT_AUXV)
		parse_auxv(core, desc, nh->n_descsz);
	else if (is_core && nh->n_type == NT_FILE)
		return parse_file_note(core, desc, nh->n_descsz);
	else if (name_is(name, nh, "LINUX") && core->arch->pac_mask_note &&
	         nh->n_type == core->arch->pac_mask_note && nh->n_descsz >= 16)
		core->pac_insn_mask = cq_load_u64(desc + 8);
	else if (name_is(name, nh, "LINUX") && core->arch->tp_source == CQ_ARCH_TP_NOTE &&
	         nh->n_type == core->arch->tp_note_type && nh->n_descsz >= 8 && core->nthreads) {
		struct cq_core_thread *t = &core->threads[core->nthreads - 1];
		t->tp = cq_load_u64(desc);
		t->has_tp = true;
	}
	return NULL;
}

static bool stop_signal(int signo)
{
	return signo == 0 || signo == SIGSTOP || signo == SIGTSTP || signo == SIGTTIN ||
	       signo == SIGTTOU;
}

/* A core gdb wrote of a process no thread of which was handling a fatal signal. */
static enum cq_core_snapshot snapshot_of(struct cq_core *core, const struct note_marks *marks)
{
	if (!marks->gdb)
		return CQ_SNAPSHOT_NONE;
	for (size_t i = 0; i < core->nthreads; i++)
		if (!stop_signal(core->threads[i].cursig))
			return CQ_SNAPSHOT_NONE;
	return CQ_SNAPSHOT_GCORE;
}

struct cq_error *cq_notes_parse(struct cq_core *core)
{
	assert(core && core->elf && core->arch && core->nthreads == 0 && !core->mappings);
	Elf *elf = core->elf;
	size_t phnum;
	struct note_marks marks = {0};
	if (elf_getphdrnum(elf, &phnum) != 0)
		return cq_error_create(CQ_ERR_FORMAT, "cannot read program headers: %s",
		                       elf_errmsg(-1));
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph))
			return cq_error_create(CQ_ERR_FORMAT, "program header %zu: %s", i,
			                       elf_errmsg(-1));
		if (ph.p_type != PT_NOTE || ph.p_filesz == 0)
			continue;
		if (ph.p_offset > core->image_size || ph.p_filesz > core->image_size - ph.p_offset)
			return cq_error_create(CQ_ERR_FORMAT,
			                       "core truncated inside its notes (note segment at "
			                       "0x%llx+0x%llx, file is %llu bytes)",
			                       (unsigned long long)ph.p_offset,
			                       (unsigned long long)ph.p_filesz,
			                       (unsigned long long)core->image_size);
		Elf_Data *data =
		    elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_NHDR);
		if (!data)
			return cq_error_create(CQ_ERR_FORMAT, "note segment %zu: %s", i,
			                       elf_errmsg(-1));
		size_t off = 0, name_off, desc_off, next;
		GElf_Nhdr nh;
		while (off < data->d_size &&
		       (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			const char *base = data->d_buf;
			struct cq_error *err = parse_one_note(
			    core, &nh, base + name_off, (const uint8_t *)base + desc_off, &marks);
			if (err)
				return err;
			off = next;
		}
		if (off < data->d_size)
			return cq_error_create(CQ_ERR_FORMAT,
			                       "malformed note at offset %zu of note segment %zu",
			                       off, i);
	}
	if (core->nthreads == 0)
		return cq_error_create(CQ_ERR_FORMAT, "core has no NT_PRSTATUS (thread) notes");
	assert(core->threads && core->nthreads <= marks.thread_cap);
	core->snapshot = snapshot_of(core, &marks);
	if (core->snapshot)
		core->threads[0].crashed = false;
	return NULL;
}
