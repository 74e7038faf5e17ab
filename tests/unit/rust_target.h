/*
 * rust_target.h - a synthetic target with one Rust module, for the unit
 * tests of the Rust runtimes (test_rust.c, test_tokio.c): memory as
 * segments of the test's own buffers, a module whose ELF (built here in
 * memory with libelf's elf_memory) has a .comment saying "rustc version"
 * and one writable, non-executable PT_LOAD, and a cache whose get op serves
 * a hand-built Rust type index encoded with the blob codec
 * (rust_index_blob.h), so no DWARF is read.  The index is at link-time
 * addresses; the module's bias moves it.
 */
#ifndef CQ_TEST_RUST_TARGET_H
#define CQ_TEST_RUST_TARGET_H

#include <elf.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/arch.h"
#include "libcore/base/memory.h"
#include "unwind/async/runtime.h"
#include "unwind/async/rust_index.h"
#include "unwind/async/rust_index_blob.h"

/* The module's one data PT_LOAD, at link time. */
#define RT_DATA_VADDR 0x10000ull
#define RT_DATA_LEN   0x1000ull

/* A tiny ELF image: header, one PT_LOAD, sections null, .comment, .shstrtab. */
struct rt_elf {
	uint8_t image[1024];
	Elf *elf;
};

/* comment: clen bytes (NUL-separated strings, as the linker merges them). */
static inline void rt_elf_build(struct rt_elf *e, const char *comment, size_t clen)
{
	static const char shstr[] = "\0.comment\0.shstrtab";
	memset(e->image, 0, sizeof(e->image));
	Elf64_Ehdr *eh = (Elf64_Ehdr *)(void *)e->image;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = 1;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = 3;
	eh->e_shstrndx = 2;
	Elf64_Phdr *ph = (Elf64_Phdr *)(void *)(e->image + sizeof(*eh));
	*ph = (Elf64_Phdr){.p_type = PT_LOAD,
	                   .p_flags = PF_R | PF_W,
	                   .p_vaddr = RT_DATA_VADDR,
	                   .p_memsz = RT_DATA_LEN,
	                   .p_align = 0x1000};
	size_t comment_off = 0x100, shstr_off = 0x200, sh_off = 0x240;
	memcpy(e->image + comment_off, comment, clen);
	memcpy(e->image + shstr_off, shstr, sizeof(shstr));
	eh->e_shoff = sh_off;
	Elf64_Shdr *sh = (Elf64_Shdr *)(void *)(e->image + sh_off);
	sh[1] = (Elf64_Shdr){.sh_name = 1,
	                     .sh_type = SHT_PROGBITS,
	                     .sh_flags = SHF_MERGE | SHF_STRINGS,
	                     .sh_offset = comment_off,
	                     .sh_size = clen,
	                     .sh_addralign = 1,
	                     .sh_entsize = 1};
	sh[2] = (Elf64_Shdr){.sh_name = 10,
	                     .sh_type = SHT_STRTAB,
	                     .sh_offset = shstr_off,
	                     .sh_size = sizeof(shstr),
	                     .sh_addralign = 1};
	elf_version(EV_CURRENT);
	e->elf = elf_memory((char *)e->image, sh_off + 3 * sizeof(Elf64_Shdr));
}

struct rt_fake {
	struct cq_mem mem;
	const struct cq_rust_index *index; /* what the cache holds for module 0 */
	bool damaged;                      /* serve a blob with a flipped byte */
	unsigned gets, puts, rejects;      /* gets and puts: of Rust index rows only */
};

/* The Rust index's blob: runtime "rust", name "index" (other runtimes keep theirs). */
static inline bool rt_rust_index(const struct cq_target_blob *b)
{
	return strcmp(b->runtime, "rust") == 0 && strcmp(b->name, "index") == 0;
}

static inline uint8_t *rt_cache_get(void *ctx, size_t m, const struct cq_target_blob *b,
                                    size_t *len)
{
	struct rt_fake *f = ctx;
	f->gets += rt_rust_index(b); /* Rust index reads */
	if (m != 0 || !rt_rust_index(b) || b->format != CQ_RUST_INDEX_BLOB_FORMAT || !f->index)
		return NULL;
	uint8_t *blob = cq_rust_index_blob_encode(f->index, len);
	if (blob && f->damaged)
		blob[*len / 2] ^= 0x40;
	return blob;
}

static inline void rt_cache_put(void *ctx, size_t m, const struct cq_target_blob *b,
                                const uint8_t *blob, size_t len)
{
	(void)m, (void)blob, (void)len;
	((struct rt_fake *)ctx)->puts += rt_rust_index(b);
}

static inline void rt_cache_reject(void *ctx)
{
	((struct rt_fake *)ctx)->rejects++;
}

static inline bool rt_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return cq_mem_read(&((struct rt_fake *)ctx)->mem, addr, buf, len);
}

/* No debuginfo: a module the cache does not hold cannot be indexed. */
static inline struct Dwarf *rt_dwarf(void *ctx, size_t m)
{
	(void)ctx, (void)m;
	return NULL;
}

static const struct cq_unwind_target_ops rt_ops = {
    .read = rt_read,
    .dwarf = rt_dwarf,
    .cache_get = rt_cache_get,
    .cache_put = rt_cache_put,
    .cache_reject = rt_cache_reject,
};

/* The parts of every runtime of the table, as the driver hands them to the index. */
static inline struct cq_rust_parts rt_table_parts(void)
{
	size_t n;
	const struct cq_async_runtime *const *rt = cq_async_runtimes(&n);
	struct cq_rust_parts parts;
	cq_rust_index_parts(rt, n, &parts);
	return parts;
}

static inline char *rt_dup(const char *s)
{
	char *d = strdup(s);
	if (!d)
		abort();
	return d;
}

/* A state-machine variant: discr, name, awaitee type (-1 none) at offset. */
static inline struct cq_rust_variant rt_variant(uint64_t discr, const char *name, int32_t awaitee,
                                                uint64_t offset, int line)
{
	return (struct cq_rust_variant){.discr = discr,
	                                .name = rt_dup(name),
	                                .file = line ? rt_dup("/src/app.rs") : NULL,
	                                .line = line,
	                                .awaitee = awaitee,
	                                .awaitee_offset = offset};
}

/* The four variants of an async fn: Unresumed, Returned, Panicked, Suspend0 awaiting awaitee. */
static inline struct cq_rust_variant *rt_async_fn_variants(int32_t awaitee, uint64_t offset,
                                                           int line)
{
	struct cq_rust_variant *v = calloc(4, sizeof(*v));
	if (!v)
		abort();
	v[0] = rt_variant(0, "Unresumed", -1, 0, 0);
	v[1] = rt_variant(1, "Returned", -1, 0, 0);
	v[2] = rt_variant(2, "Panicked", -1, 0, 0);
	v[3] = rt_variant(3, "Suspend0", awaitee, offset, line);
	return v;
}

/* A leaf future type (no state machine): name, size and alignment. */
static inline struct cq_rust_type rt_leaf(const char *name, uint64_t size, uint64_t align)
{
	return (struct cq_rust_type){
	    .name = rt_dup(name), .kind = CQ_RUST_LEAF, .size = size, .align = align, .target = -1};
}

/*
 * An async fn's state machine `fn::{async_fn_env#0}` (resume function
 * `fn::{async_fn#0}`), a u8 state at state_offset, whose Suspend0 awaits
 * awaitee at awaitee_offset from line.
 */
static inline struct cq_rust_type rt_async_fn(const char *fn, uint64_t size, uint64_t align,
                                              uint64_t state_offset, int32_t awaitee,
                                              uint64_t awaitee_offset, int line)
{
	char env[256], resume[256];
	snprintf(env, sizeof(env), "%s::{async_fn_env#0}", fn);
	snprintf(resume, sizeof(resume), "%s::{async_fn#0}", fn);
	return (struct cq_rust_type){.name = rt_dup(env),
	                             .kind = CQ_RUST_STATE_MACHINE,
	                             .size = size,
	                             .align = align,
	                             .state_offset = state_offset,
	                             .state_size = 1,
	                             .variants =
	                                 rt_async_fn_variants(awaitee, awaitee_offset, line),
	                             .nvariants = 4,
	                             .resume_name = rt_dup(resume),
	                             .target = -1};
}

#endif
