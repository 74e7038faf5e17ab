/*
 * debug_image.c - inflate a debuginfo file's compressed DWARF once, with
 * libdeflate, into an in-memory copy that libdw reads as is (see
 * debug_image.h).
 *
 * Layout of the copy (ELF64, the file's byte order = ours): the ELF header,
 * the program headers, every section that has bytes (in section order, at
 * its alignment), then the section headers.  Section numbers, names, links
 * and addresses are unchanged; an inflated section loses SHF_COMPRESSED and
 * gets its inflated size, a section left out becomes SHT_NOBITS of size 0.
 */
#include "libcore/symbols/debug_image.h"

#include <elf.h>
#include <gelf.h>
#include <libdeflate.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_SECTIONS 65000u
#define MAX_WORKERS  2

/* Sections no symbol lookup reads: not inflated, not copied. */
static const char *const unread[] = {
    ".debug_loclists", ".debug_loc",      ".debug_macro",        ".debug_macinfo",
    ".debug_pubnames", ".debug_pubtypes", ".debug_gnu_pubnames", ".debug_gnu_pubtypes",
};

enum plan { KEEP_NOBITS /* no bytes */, COPY, INFLATE, DROP };

struct section {
	GElf_Shdr shdr;
	enum plan plan;
	const uint8_t *src; /* COPY: the bytes; INFLATE: the zlib stream */
	size_t src_len;
	uint64_t out_size, out_align, out_off;
	unsigned worker; /* INFLATE: which worker inflates it */
	bool ok;
};

struct job {
	struct section *s;
	size_t n;
	uint8_t *image;
	unsigned worker;
	bool copies; /* this worker copies the plain sections */
};

static bool is_unread(const char *name)
{
	for (size_t i = 0; name && i < sizeof(unread) / sizeof(unread[0]); i++)
		if (strcmp(name, unread[i]) == 0)
			return true;
	return false;
}

/*
 * Populates the pages of the sections other workers inflate, from their
 * starts, before this worker does its own share: the worker writing one
 * from its start then finds its pages there instead of faulting them in
 * one at a time (a third of the time of inflating libc's .debug_info on a
 * VM: 10.5 ms into pages already there, 15-20 ms into new ones), and
 * populating (about 2 us a page) stays well ahead of inflating (about
 * 7 us a page).  Pages that are already there cost a page-table walk.
 */
static void populate_others(const struct job *j)
{
#ifdef MADV_POPULATE_WRITE
	const uint64_t chunk = 256 << 10;
	for (size_t i = 0; i < j->n; i++) {
		const struct section *s = &j->s[i];
		if (s->plan != INFLATE || s->worker == j->worker)
			continue;
		uint64_t at = s->out_off & ~(uint64_t)4095, end = s->out_off + s->out_size;
		for (; at < end; at += chunk)
			if (madvise(j->image + at, end - at > chunk ? chunk : end - at,
			            MADV_POPULATE_WRITE) != 0)
				return; /* not supported here: the writer faults them in */
	}
#else
	(void)j;
#endif
}

/*
 * Copies the plain sections (the last worker does, after populating the
 * others' pages) and inflates the INFLATE sections given to this worker
 * (assign_workers).
 */
static void *inflate_worker(void *arg)
{
	struct job *j = arg;
	if (j->copies)
		populate_others(j);
	for (size_t i = 1; j->copies && i < j->n; i++)
		if (j->s[i].plan == COPY)
			memcpy(j->image + j->s[i].out_off, j->s[i].src, j->s[i].out_size);
	struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
	for (size_t i = 0; i < j->n; i++) {
		struct section *s = &j->s[i];
		if (s->plan != INFLATE || s->worker != j->worker)
			continue;
		size_t got = 0;
		s->ok = d &&
		        libdeflate_zlib_decompress(d, s->src, s->src_len, j->image + s->out_off,
		                                   s->out_size, &got) == LIBDEFLATE_SUCCESS &&
		        got == s->out_size;
	}
	if (d)
		libdeflate_free_decompressor(d);
	return NULL;
}

/* Decides what becomes of section scn; false when the file cannot be rewritten. */
static bool plan_section(Elf *elf, size_t shstrndx, Elf_Scn *scn, struct section *s)
{
	if (!gelf_getshdr(scn, &s->shdr))
		return false;
	const char *name = elf_strptr(elf, shstrndx, s->shdr.sh_name);
	s->out_align = s->shdr.sh_addralign ? s->shdr.sh_addralign : 1;
	if (s->shdr.sh_type == SHT_NOBITS || s->shdr.sh_size == 0) {
		/* No bytes: nothing compressed can be here (an empty compressed section is damage).
		 */
		if ((s->shdr.sh_flags & SHF_COMPRESSED) && s->shdr.sh_type != SHT_NOBITS)
			return false;
		s->plan = KEEP_NOBITS;
		s->shdr.sh_flags &= ~(uint64_t)SHF_COMPRESSED;
		if (s->shdr.sh_type != SHT_NOBITS)
			s->shdr.sh_offset = 0;
		return true;
	}
	Elf_Data *raw = elf_rawdata(scn, NULL);
	if (!raw || (raw->d_size && !raw->d_buf) || raw->d_size != s->shdr.sh_size)
		return false;
	s->src = raw->d_buf;
	s->src_len = raw->d_size;
	if (!(s->shdr.sh_flags & SHF_COMPRESSED)) {
		s->plan = COPY;
		s->out_size = raw->d_size;
		return true;
	}
	if (is_unread(name)) {
		s->plan = DROP;
		return true;
	}
	Elf64_Chdr ch;
	if (raw->d_size < sizeof(ch))
		return false;
	memcpy(&ch, raw->d_buf, sizeof(ch));
	/* deflate cannot expand more than 1032:1: a larger claim is a lie */
	if (ch.ch_type != ELFCOMPRESS_ZLIB || ch.ch_size > CQ_DEBUG_IMAGE_MAX_SECTION ||
	    ch.ch_size / 1032 > raw->d_size || (ch.ch_addralign & (ch.ch_addralign - 1)) != 0)
		return false;
	s->plan = INFLATE;
	s->src += sizeof(ch);
	s->src_len -= sizeof(ch);
	s->out_size = ch.ch_size;
	s->out_align = ch.ch_addralign ? ch.ch_addralign : 1;
	return true;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return a > 1 ? (v + a - 1) & ~(a - 1) : v;
}

static int larger_first(const void *a, const void *b)
{
	const struct section *x = *(struct section *const *)a, *y = *(struct section *const *)b;
	return (x->out_size < y->out_size) - (x->out_size > y->out_size);
}

/*
 * Deals the INFLATE sections to workers, largest first, each to the worker
 * with the least work so far (inflate time follows the inflated size).
 * The last worker also copies the plain sections: that counts as an
 * eighth of their size (memcpy against inflate).  One section dominates
 * real debuginfo (.debug_info, most of libc's), so it goes to worker 0,
 * the calling thread, which starts on it at once, and sets the wall time.
 * False when out of memory.
 */
static bool assign_workers(struct section *s, size_t n, unsigned workers)
{
	uint64_t load[MAX_WORKERS] = {0};
	struct section **order = malloc(n * sizeof(*order));
	size_t m = 0;
	if (!order)
		return false;
	for (size_t i = 1; i < n; i++) {
		if (s[i].plan == COPY)
			load[workers - 1] += s[i].out_size / 8;
		else if (s[i].plan == INFLATE)
			order[m++] = &s[i];
	}
	qsort(order, m, sizeof(*order), larger_first);
	for (size_t k = 0; k < m; k++) {
		unsigned least = 0;
		for (unsigned w = 1; w < workers; w++)
			if (load[w] < load[least])
				least = w;
		order[k]->worker = least;
		load[least] += order[k]->out_size;
	}
	free(order);
	return true;
}

/* Writes the image of elf's n sections (planned in s) into a new memfd; -1 on failure. */
static int write_image(Elf *elf, const GElf_Ehdr *eh, size_t phnum, struct section *s, size_t n,
                       unsigned workers)
{
	uint64_t off = sizeof(Elf64_Ehdr) + phnum * sizeof(Elf64_Phdr);
	for (size_t i = 1; i < n; i++) {
		if (s[i].plan != COPY && s[i].plan != INFLATE)
			continue;
		off = align_up(off, s[i].out_align > 4096 ? 4096 : s[i].out_align);
		s[i].out_off = off;
		off += s[i].out_size;
	}
	uint64_t shoff = align_up(off, 8), total = shoff + n * sizeof(Elf64_Shdr);
	if (total > CQ_DEBUG_IMAGE_MAX_TOTAL)
		return -1;
	int mfd = memfd_create("coreq-debuginfo", MFD_CLOEXEC);
	if (mfd < 0)
		return -1;
	uint8_t *image = MAP_FAILED;
	if (ftruncate(mfd, (off_t)total) != 0 ||
	    (image = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0)) == MAP_FAILED) {
		close(mfd);
		return -1;
	}
	if (!assign_workers(s, n, workers)) {
		munmap(image, total);
		close(mfd);
		return -1;
	}
	struct job jobs[MAX_WORKERS];
	pthread_t th[MAX_WORKERS];
	bool started[MAX_WORKERS] = {false};
	for (unsigned w = 0; w < workers; w++) {
		jobs[w] = (struct job){
		    .s = s, .n = n, .image = image, .worker = w, .copies = w == workers - 1};
		if (w > 0)
			started[w] = pthread_create(&th[w], NULL, inflate_worker, &jobs[w]) == 0;
	}
	inflate_worker(&jobs[0]);
	for (unsigned w = 1; w < workers; w++) {
		if (started[w])
			pthread_join(th[w], NULL);
		else
			inflate_worker(&jobs[w]); /* no thread: do its share here */
	}
	bool ok = true;
	Elf64_Ehdr out = *eh;
	out.e_phoff = phnum ? sizeof(Elf64_Ehdr) : 0;
	out.e_shoff = shoff;
	memcpy(image, &out, sizeof(out));
	for (size_t i = 0; i < phnum && ok; i++) {
		GElf_Phdr ph;
		ok = gelf_getphdr(elf, (int)i, &ph) != NULL;
		memcpy(image + sizeof(Elf64_Ehdr) + i * sizeof(Elf64_Phdr), &ph, sizeof(ph));
	}
	for (size_t i = 0; i < n && ok; i++) {
		Elf64_Shdr sh = s[i].shdr;
		if (s[i].plan == COPY || s[i].plan == INFLATE) {
			sh.sh_offset = s[i].out_off;
			sh.sh_size = s[i].out_size;
		}
		if (s[i].plan == INFLATE) {
			ok = s[i].ok;
			sh.sh_flags &= ~(uint64_t)SHF_COMPRESSED;
			sh.sh_addralign = s[i].out_align;
		} else if (s[i].plan == DROP) {
			sh.sh_type = SHT_NOBITS;
			sh.sh_flags &= ~(uint64_t)SHF_COMPRESSED;
			sh.sh_size = 0;
		}
		memcpy(image + shoff + i * sizeof(Elf64_Shdr), &sh, sizeof(sh));
	}
	munmap(image, total);
	if (!ok || lseek(mfd, 0, SEEK_SET) != 0) {
		close(mfd);
		return -1;
	}
	return mfd;
}

int cq_debug_image_inflate(int fd, unsigned workers)
{
	if (workers < 1)
		workers = 1;
	if (workers > MAX_WORKERS)
		workers = MAX_WORKERS;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	GElf_Ehdr eh;
	size_t n = 0, shstrndx, phnum = 0;
	int result = -1;
	static const uint16_t one = 1;
	const unsigned char host_data = *(const uint8_t *)&one ? ELFDATA2LSB : ELFDATA2MSB;
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != host_data ||
	    elf_getshdrnum(elf, &n) != 0 || n < 2 || n > MAX_SECTIONS ||
	    elf_getshdrstrndx(elf, &shstrndx) != 0 || elf_getphdrnum(elf, &phnum) != 0 ||
	    phnum > MAX_SECTIONS) {
		elf_end(elf);
		return -1;
	}
	struct section *s = calloc(n, sizeof(*s));
	bool ok = s != NULL, any = false;
	if (ok)
		ok = gelf_getshdr(elf_getscn(elf, 0), &s[0].shdr) != NULL;
	for (size_t i = 1; ok && i < n; i++) {
		Elf_Scn *scn = elf_getscn(elf, i);
		ok = scn && plan_section(elf, shstrndx, scn, &s[i]);
		any |= ok && (s[i].plan == INFLATE || s[i].plan == DROP);
	}
	if (ok && any)
		result = write_image(elf, &eh, phnum, s, n, workers);
	free(s);
	elf_end(elf);
	return result;
}
