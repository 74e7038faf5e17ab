/*
 * stream_image.c - a one-stream compressed core read once, keeping only
 * the pages the analysis reads (see stream_image.h).
 *
 * Invariants (asserted): a parsed head holds the program headers and every
 * PT_NOTE segment whole (parse_head sizes it so), so notes are read inside
 * it; a keep plan, once merged, is sorted, page-aligned, disjoint ranges;
 * what is kept of a decompressed window lies inside that window; a read
 * never reports more bytes than were asked for.
 */
#include "libcore/model/stream_image.h"

#include <assert.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_d_forceIgnoreChecksum */
#include <zstd.h>

#include "libcore/base/arch.h"
#include "libcore/base/archive_api.h"
#include "libcore/base/bytes.h"
#include "libcore/base/feed.h"
#include "libcore/base/lazy_map.h"
#include "libcore/model/scan_keep.h"

#define WINDOW          (1ull << 20)  /* bytes decompressed at a time */
#define CHUNK           (2ull << 20)  /* a chunk of the lazy region */
#define HEAD_MAX        (64ull << 20) /* headers and notes beyond this: spool instead */
#define SMALL_SEGMENT   (1ull << 20)
#define AROUND          (64ull << 10) /* kept on each side of a register's value */
#define ABOVE_SP        (16ull << 20) /* kept above a stack pointer, at most */
#define SECOND_BUDGET   (128ull << 20)
#define PLAN_MAX_VALUES (1u << 20) /* register values looked at: beyond, no plan */
#define PLAN_MAX_STEPS  (1u << 20) /* ranges added: beyond, no plan (spool) */

/* The page size: plan ranges and installs are in its multiples (lazy_map.h). */
static uint64_t page_size(void)
{
	static uint64_t page;
	if (!page) {
		long pg = sysconf(_SC_PAGESIZE);
		page = pg > 0 ? (uint64_t)pg : 4096;
	}
	return page;
}

static uint64_t page_up(uint64_t n)
{
	return (n + page_size() - 1) & ~(page_size() - 1);
}

/* ---- the decompressor: libzstd directly for zstd, libarchive for the rest ---- */

struct reader {
	int fd;
	ZSTD_DCtx *z;
	uint8_t *in;
	const uint8_t *map; /* the compressed file mapped, when it can be: no read copies */
	size_t map_len, map_dropped;
	ZSTD_inBuffer ib;
	bool in_eof, mid_frame;
	const struct cq_archive_api *ar;
	struct archive *a;
	const char *compression;
	/* With a second CPU: the compressed file read ahead into a ring (its pieces, the next). */
	struct cq_feed *in_feed;
	size_t in_n, in_next;
	uint64_t in_size;
};

#define IN_PIECE (1u << 20) /* bytes of the compressed file read ahead at a time */

/* Bytes [at, at + len) of fd into dst, as many as there are: fewer at its end or on an error. */
static size_t pread_full(int fd, uint8_t *dst, size_t len, uint64_t at)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = pread(fd, dst + done, len - done, (off_t)(at + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	return done;
}

static bool read_piece(void *arg, unsigned worker, const struct cq_feed_span *span, uint8_t *dst)
{
	const struct reader *r = arg;
	(void)worker;
	return pread_full(r->fd, dst, (size_t)span->len, span->off) == span->len;
}

/*
 * With a second CPU, a thread reads the compressed file ahead of the
 * decompressor into a ring of pieces (libcore/base/feed.h), as `zstd -d`
 * reads its input: the copies out of the page cache run beside the
 * decompression, which reads pieces still in the CPU's cache.
 */
static bool read_ahead(struct reader *r, uint64_t size)
{
	if (cq_feed_workers() < 2 || size == 0 ||
	    size / IN_PIECE >= SIZE_MAX / sizeof(struct cq_feed_span))
		return false;
	size_t n = (size_t)((size + IN_PIECE - 1) / IN_PIECE);
	struct cq_feed_span *sp = malloc(n * sizeof(*sp));
	if (!sp)
		return false;
	for (size_t i = 0; i < n; i++)
		sp[i] = (struct cq_feed_span){(uint64_t)i * IN_PIECE,
		                              size - (uint64_t)i * IN_PIECE < IN_PIECE
		                                  ? size - (uint64_t)i * IN_PIECE
		                                  : IN_PIECE,
		                              0};
	struct cq_error *err = cq_feed_start(sp, n, 1, read_piece, r, &r->in_feed);
	free(sp);
	if (err) {
		cq_error_free(err);
		r->in_feed = NULL;
		return false;
	}
	r->in_n = n;
	r->in_size = size;
	return true;
}

/*
 * ahead: read the compressed file ahead on a second CPU (read_ahead), for
 * the first pass, whose decompressor is what the analysis waits for; a
 * second decompression runs beside the scan, which needs the other CPU.
 */
static bool reader_open(struct reader *r, int fd, bool ahead)
{
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	uint8_t magic[4];
	if (pread(fd, magic, 4, 0) != 4)
		return false;
	if (cq_load_u32(magic) == ZSTD_MAGICNUMBER) {
		r->z = ZSTD_createDCtx();
		r->compression = "zstd";
		struct stat st;
		bool regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
		if (regular && ahead && read_ahead(r, (uint64_t)st.st_size))
			return r->z != NULL;
		if (regular && (uint64_t)st.st_size < SIZE_MAX) {
			void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
			if (m != MAP_FAILED) {
				madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL);
				r->map = m;
				r->map_len = (size_t)st.st_size;
				r->ib = (ZSTD_inBuffer){m, r->map_len, 0};
				r->in_eof = true;
				return r->z != NULL;
			}
		}
		r->in = malloc(ZSTD_DStreamInSize());
		return r->z && r->in;
	}
	struct cq_error *err = cq_archive_api(&r->ar);
	if (err) {
		cq_error_free(err);
		return false; /* the spool path says why */
	}
	if (!(r->a = r->ar->read_new()))
		return false;
	r->ar->read_support_filter_all(r->a);
	r->ar->read_support_format_raw(r->a);
	struct archive_entry *entry;
	if (r->ar->read_open_fd(r->a, fd, 1 << 16) != ARCHIVE_OK ||
	    r->ar->read_next_header(r->a, &entry) != ARCHIVE_OK)
		return false;
	r->compression = cq_stream_filter_name(r->ar->filter_code(r->a, 0));
	return true;
}

static void reader_close(struct reader *r)
{
	cq_feed_stop(r->in_feed);
	ZSTD_freeDCtx(r->z);
	free(r->in);
	if (r->map)
		munmap((void *)r->map, r->map_len);
	if (r->a)
		r->ar->read_free(r->a);
}

/* Fills dst with up to want bytes; fewer only at the stream's end; -1: a damaged stream. */
static int64_t reader_read(struct reader *r, uint8_t *dst, size_t want)
{
	size_t got = 0;
	if (!r->z) {
		while (got < want) {
			la_ssize_t n = r->ar->read_data(r->a, dst + got, want - got);
			if (n < 0)
				return -1;
			if (n == 0)
				break;
			got += (size_t)n;
		}
		return (int64_t)got;
	}
	ZSTD_outBuffer ob = {dst, want, 0};
	while (ob.pos < ob.size) {
		if (r->ib.pos == r->ib.size && !r->in_eof && r->in_feed) {
			if (r->in_next == r->in_n) {
				r->in_eof = true;
				r->ib = (ZSTD_inBuffer){NULL, 0, 0};
				continue;
			}
			const uint8_t *p = cq_feed_next(r->in_feed);
			if (!p)
				return -1; /* the file shrank under us */
			uint64_t at = (uint64_t)r->in_next++ * IN_PIECE;
			r->ib = (ZSTD_inBuffer){
			    p, (size_t)(r->in_size - at < IN_PIECE ? r->in_size - at : IN_PIECE),
			    0};
			continue;
		}
		if (r->ib.pos == r->ib.size && !r->in_eof) {
			ssize_t n = read(r->fd, r->in, ZSTD_DStreamInSize());
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return -1;
			r->in_eof = n == 0;
			r->ib = (ZSTD_inBuffer){r->in, (size_t)n, 0};
		}
		if (r->ib.pos == r->ib.size && r->in_eof) {
			if (r->mid_frame)
				return -1; /* truncated */
			break;
		}
		size_t rc = ZSTD_decompressStream(r->z, &ob, &r->ib);
		if (ZSTD_isError(rc))
			return -1;
		r->mid_frame = rc != 0;
	}
	if (r->map) {
		/* What is consumed leaves the mapping (it stays in the page cache): RSS stays flat.
		 */
		size_t upto = r->ib.pos & ~(size_t)(page_size() - 1);
		if (upto > r->map_dropped + (8u << 20)) {
			madvise((void *)(r->map + r->map_dropped), upto - r->map_dropped,
			        MADV_DONTNEED);
			r->map_dropped = upto;
		}
	}
	return (int64_t)ob.pos;
}

/* ---- the keep plan ---- */

/* Room for one more item of size bytes in the array *v of *n items (*cap allocated). */
static bool grow(void **v, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return true;
	size_t want = *cap ? 2 * *cap : 256;
	void *nv = realloc(*v, want * size);
	if (!nv)
		return false;
	*v = nv;
	*cap = want;
	return true;
}

static bool plan_add(struct cq_stream_plan *p, uint64_t lo, uint64_t hi)
{
	lo &= ~(page_size() - 1);
	hi = page_up(hi);
	if (hi <= lo)
		return true;
	if (!grow((void **)&p->v, p->n, &p->cap, sizeof(*p->v)))
		return false;
	assert(p->n < p->cap);
	p->v[p->n++] = (struct cq_stream_range){lo, hi};
	return true;
}

static int compare_range(const void *a, const void *b)
{
	const struct cq_stream_range *x = a, *y = b;
	return (x->lo > y->lo) - (x->lo < y->lo);
}

static void plan_merge(struct cq_stream_plan *p)
{
	if (p->n == 0)
		return;
	qsort(p->v, p->n, sizeof(*p->v), compare_range);
	size_t w = 0;
	for (size_t i = 1; i < p->n; i++) {
		if (p->v[i].lo <= p->v[w].hi) {
			if (p->v[i].hi > p->v[w].hi)
				p->v[w].hi = p->v[i].hi;
		} else
			p->v[++w] = p->v[i];
	}
	p->n = w + 1;
	for (size_t i = 0; i < p->n; i++)
		assert(p->v[i].lo < p->v[i].hi && (i == 0 || p->v[i - 1].hi < p->v[i].lo) &&
		       (p->v[i].lo & (page_size() - 1)) == 0);
}

struct head {
	const uint8_t *b;
	uint64_t len;
	const struct cq_arch *arch;
	Elf64_Ehdr eh;
};

static bool get_phdr(const struct head *h, size_t i, Elf64_Phdr *ph)
{
	memcpy(ph, h->b + h->eh.e_phoff + i * sizeof(*ph), sizeof(*ph));
	return true;
}

/* Calls fn on every note of every PT_NOTE segment (all within the head). */
static bool each_note(const struct head *h,
                      bool (*fn)(void *arg, uint32_t type, const uint8_t *desc, uint64_t len),
                      void *arg)
{
	for (size_t i = 0; i < h->eh.e_phnum; i++) {
		Elf64_Phdr ph;
		get_phdr(h, i, &ph);
		if (ph.p_type != PT_NOTE)
			continue;
		assert(h->b && ph.p_offset + ph.p_filesz <= h->len);
		const uint8_t *p = h->b + ph.p_offset, *end = p + ph.p_filesz;
		while (end - p >= 12) {
			uint32_t namesz = cq_load_u32(p), descsz = cq_load_u32(p + 4),
			         type = cq_load_u32(p + 8);
			uint64_t name_len = ((uint64_t)namesz + 3) & ~3ull;
			uint64_t desc_len = ((uint64_t)descsz + 3) & ~3ull;
			if (name_len > (uint64_t)(end - p) - 12 ||
			    desc_len > (uint64_t)(end - p) - 12 - name_len)
				break;
			const uint8_t *desc = p + 12 + name_len;
			if (!fn(arg, type, desc, descsz))
				return false;
			p = desc + desc_len;
		}
	}
	return true;
}

/* Values worth keeping pages around: every register of every thread. */
struct val {
	uint64_t v;
	bool sp;
};

struct values {
	const struct head *h;
	struct val *v;
	size_t n, cap;
	struct cq_stream_range *files; /* NT_FILE mappings, by address */
	size_t nfiles;
};

static bool values_push(struct values *vs, uint64_t v, bool sp)
{
	if (!grow((void **)&vs->v, vs->n, &vs->cap, sizeof(*vs->v)))
		return false;
	vs->v[vs->n++] = (struct val){v, sp};
	return true;
}

static bool collect(void *arg, uint32_t type, const uint8_t *desc, uint64_t len)
{
	struct values *vs = arg;
	const struct cq_arch *a = vs->h->arch;
	if (vs->n >= PLAN_MAX_VALUES)
		return false; /* a forged thread list: no plan */
	if (type == NT_PRSTATUS && len >= a->prstatus_reg_offset + 8ull * a->prstatus_nregs) {
		for (unsigned s = 0; s < a->prstatus_nregs; s++)
			if (!values_push(vs, cq_load_u64(desc + a->prstatus_reg_offset + 8 * s),
			                 a->prstatus_dwarf[s] == (int8_t)a->sp_reg))
				return false;
	} else if (a->tp_source == CQ_ARCH_TP_NOTE && type == a->tp_note_type && len >= 8) {
		return values_push(vs, cq_load_u64(desc), false);
	} else if (type == NT_FILE && len >= 16 && !vs->files) {
		uint64_t count = cq_load_u64(desc);
		if (count > (len - 16) / 24)
			return true;
		vs->files = malloc((count ? count : 1) * sizeof(*vs->files));
		if (!vs->files)
			return false;
		for (uint64_t i = 0; i < count; i++)
			vs->files[vs->nfiles++] = (struct cq_stream_range){
			    cq_load_u64(desc + 16 + 24 * i), cq_load_u64(desc + 24 + 24 * i)};
	}
	return true;
}

static int compare_val(const void *a, const void *b)
{
	const struct val *x = a, *y = b;
	return (x->v > y->v) - (x->v < y->v);
}

/* The first of n sorted items (stride bytes apart, a uint64_t first) not below key. */
/* Whether [lo, hi) meets a mapped file (files sorted by start; they do not overlap). */
static bool file_backed(const struct values *vs, uint64_t lo, uint64_t hi)
{
	size_t i = cq_sorted_below(vs->files, vs->nfiles, sizeof(*vs->files), hi);
	return i > 0 && vs->files[i - 1].hi > lo;
}

static uint64_t keep_all_below_env(void)
{
	const char *e = getenv("COREQ_STREAM_KEEP_ALL_BELOW");
	if (e && *e) {
		char *end;
		unsigned long long v = strtoull(e, &end, 10);
		if (!*end)
			return v;
	}
	return CQ_STREAM_KEEP_ALL_BELOW;
}

/* The plan for a core whose head (headers and notes) is h and whose bytes end at size. */
static bool make_plan(const struct head *h, uint64_t size, uint64_t keep_all_below,
                      struct cq_stream_plan *p)
{
	if (!plan_add(p, 0, h->len > CQ_STREAM_KEEP_PREFIX ? h->len : CQ_STREAM_KEEP_PREFIX))
		return false;
	if (size <= keep_all_below) {
		p->n = 0;
		return plan_add(p, 0, size);
	}
	struct values vs = {.h = h};
	bool ok = each_note(h, collect, &vs);
	if (ok && vs.n)
		qsort(vs.v, vs.n, sizeof(*vs.v), compare_val);
	if (ok && vs.nfiles)
		qsort(vs.files, vs.nfiles, sizeof(*vs.files), compare_range);
	size_t steps = 0;
	for (size_t i = 0; ok && i < h->eh.e_phnum; i++) {
		Elf64_Phdr ph;
		get_phdr(h, i, &ph);
		if (ph.p_type != PT_LOAD || ph.p_filesz == 0)
			continue;
		uint64_t lo = ph.p_offset, hi = ph.p_offset + ph.p_filesz;
		uint64_t va = ph.p_vaddr, va_end = ph.p_vaddr + ph.p_filesz;
		if (ph.p_filesz <= SMALL_SEGMENT || file_backed(&vs, va, ph.p_vaddr + ph.p_memsz)) {
			ok = plan_add(p, lo, hi);
			continue;
		}
		for (size_t k = cq_sorted_below(vs.v, vs.n, sizeof(*vs.v), va);
		     ok && k < vs.n && vs.v[k].v < va_end; k++) {
			uint64_t at = lo + (vs.v[k].v - va);
			uint64_t from = at - lo > AROUND ? at - AROUND : lo;
			uint64_t above = vs.v[k].sp ? ABOVE_SP : AROUND;
			uint64_t to = hi - at > above ? at + above : hi;
			ok = ++steps <= PLAN_MAX_STEPS && plan_add(p, from, to);
		}
	}
	free(vs.v);
	free(vs.files);
	if (ok)
		plan_merge(p);
	return ok;
}

/*
 * The most a plan may keep: a quarter of the RAM, and no more than the
 * caller's RLIMIT_DATA (the kept pages are not counted against it: the
 * region is read-only), at least 64 MiB.  A plan over it (thousands of
 * stacks, a forged sp at a huge segment's start) is not followed: the core
 * is spooled to disk as before.
 */
static uint64_t keep_budget(void)
{
	long pages = sysconf(_SC_PHYS_PAGES);
	uint64_t b = pages > 0 ? (uint64_t)pages * page_size() / 4 : (1ull << 30);
	struct rlimit rl;
	if (getrlimit(RLIMIT_DATA, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < b)
		b = rl.rlim_cur;
	return b < (64ull << 20) ? (64ull << 20) : b;
}

static uint64_t plan_bytes(const struct cq_stream_plan *p, uint64_t size)
{
	uint64_t n = 0;
	for (size_t i = 0; i < p->n && p->v[i].lo < size; i++)
		n += (p->v[i].hi < size ? p->v[i].hi : size) - p->v[i].lo;
	return n;
}

/* ---- the executable's build-id, from the head ---- */

/* The head's bytes at address va, n of them, when a segment holds them all within the head. */
static const uint8_t *head_at(const struct head *h, uint64_t va, uint64_t n)
{
	for (size_t i = 0; i < h->eh.e_phnum; i++) {
		Elf64_Phdr ph;
		get_phdr(h, i, &ph);
		if (ph.p_type != PT_LOAD || va < ph.p_vaddr || va - ph.p_vaddr > ph.p_filesz ||
		    n > ph.p_filesz - (va - ph.p_vaddr))
			continue;
		uint64_t off = ph.p_offset + (va - ph.p_vaddr);
		if (off <= h->len && n <= h->len - off)
			return h->b + off;
	}
	return NULL;
}

struct auxv {
	const uint8_t *d;
	uint64_t len;
};

static bool find_auxv(void *arg, uint32_t type, const uint8_t *desc, uint64_t len)
{
	struct auxv *a = arg;
	if (type == NT_AUXV && !a->d)
		*a = (struct auxv){desc, len};
	return true;
}

/*
 * The executable's GNU build-id in hex (hex[0] 0 when unknown): AT_PHDR in
 * NT_AUXV gives its program headers in memory, PT_PHDR its load bias, and
 * its PT_NOTE the note; all must lie in the head (the first MiB).
 */
static void exe_build_id(const struct head *h, char hex[CQ_STREAM_BUILD_ID_HEX])
{
	hex[0] = '\0';
	struct auxv a = {0};
	each_note(h, find_auxv, &a);
	uint64_t phdr = 0, phnum = 0;
	for (uint64_t i = 0; a.d && i + 16 <= a.len; i += 16) {
		uint64_t k = cq_load_u64(a.d + i), v = cq_load_u64(a.d + i + 8);
		if (k == AT_PHDR)
			phdr = v;
		else if (k == AT_PHNUM)
			phnum = v;
	}
	const uint8_t *ph = phdr && phnum && phnum <= 256 ? head_at(h, phdr, phnum * 56) : NULL;
	if (!ph)
		return;
	uint64_t bias = 0;
	bool found = false;
	for (uint64_t i = 0; i < phnum; i++)
		if (cq_load_u32(ph + 56 * i) == PT_PHDR) {
			bias = phdr - cq_load_u64(ph + 56 * i + 16);
			found = true;
		}
	for (uint64_t i = 0; found && i < phnum; i++) {
		if (cq_load_u32(ph + 56 * i) != PT_NOTE)
			continue;
		uint64_t size = cq_load_u64(ph + 56 * i + 32);
		size = size < 4096 ? size : 4096;
		const uint8_t *p = head_at(h, bias + cq_load_u64(ph + 56 * i + 16), size);
		for (uint64_t at = 0; p && at + 12 <= size;) {
			uint32_t namesz = cq_load_u32(p + at), descsz = cq_load_u32(p + at + 4);
			uint64_t name_len = ((uint64_t)namesz + 3) & ~3ull;
			uint64_t desc_len = ((uint64_t)descsz + 3) & ~3ull;
			if (name_len + desc_len > size - at - 12)
				break;
			if (namesz == 4 && memcmp(p + at + 12, "GNU", 4) == 0 &&
			    cq_load_u32(p + at + 8) == NT_GNU_BUILD_ID && descsz >= 1 &&
			    descsz <= 64) {
				for (uint32_t b = 0; b < descsz; b++)
					snprintf(hex + 2 * b, 3, "%02x", p[at + 12 + name_len + b]);
				return;
			}
			at += 12 + name_len + desc_len;
		}
	}
}

/* ---- the image ---- */

struct cq_stream_image {
	int fd; /* the compressed file, for the second pass */
	uint64_t cap, size, region;
	const char *compression;
	struct cq_lazy_map *map;
	cq_stream_spool_fn spool;
	void *spool_arg;
	int spool_fd; /* the second pass's spool, -1 before */
	uint64_t spool_size;
	bool spool_failed;
	struct reader roll; /* the rolling second decoder */
	bool rolling, roll_done;
	uint64_t roll_pos;
	uint64_t *bound;
	char exe_id[CQ_STREAM_BUILD_ID_HEX];
	struct cq_stream_image_stats stats;
	struct cq_scan_keep *keep; /* the pages a heap scan acts on (scan_keep.h) */
	char *hint_note;           /* the scan note the keep was armed with */
	char *note;                /* the scan note of the last feed, for the cache */
	bool kept_feed;            /* a feed was given the kept pages alone */
};

/* The rest of the core into a spool, once; false if it cannot be made. */
static bool spool_once(struct cq_stream_image *s)
{
	if (s->spool_fd >= 0 || s->spool_failed)
		return s->spool_fd >= 0;
	if (s->rolling) {
		reader_close(&s->roll);
		s->rolling = false;
	}
	struct cq_error *err = NULL;
	if (lseek(s->fd, 0, SEEK_SET) != 0 ||
	    (err = s->spool(s->spool_arg, s->fd, s->cap, &s->spool_fd, &s->spool_size))) {
		cq_error_free(err);
		s->spool_fd = -1;
		s->spool_failed = true;
	} else
		__atomic_store_n(&s->stats.spool_bytes, s->spool_size, __ATOMIC_RELAXED);
	return s->spool_fd >= 0;
}

/*
 * Chunk i (len bytes) from the rolling decoder: a second decompression that
 * only moves forward, skipping to the chunk asked for.  A heap scan reads in
 * address order, which is the file's order, so it costs one decompression
 * and no spool.  False: the chunk is behind the decoder, or the stream fails.
 */
static bool roll_to(struct cq_stream_image *s, size_t i, uint8_t *dst, size_t len)
{
	uint64_t at = s->bound[i];
	if (!s->rolling) {
		if (s->roll_done || lseek(s->fd, 0, SEEK_SET) != 0 ||
		    !reader_open(&s->roll, s->fd, false)) {
			s->roll_done = true;
			return false;
		}
		s->rolling = true;
		s->roll_pos = 0;
	}
	if (at < s->roll_pos)
		return false;
	while (s->roll_pos < at) {
		size_t want = at - s->roll_pos < len ? (size_t)(at - s->roll_pos) : len;
		int64_t got = reader_read(&s->roll, dst, want);
		if (got <= 0)
			return false;
		assert((uint64_t)got <= want);
		s->roll_pos += (uint64_t)got;
	}
	int64_t got = reader_read(&s->roll, dst, len);
	if (got < 0)
		return false;
	assert((uint64_t)got <= len);
	memset(dst + got, 0, len - (size_t)got); /* past the core's end */
	s->roll_pos += (uint64_t)got;
	return true;
}

/* A page not kept was touched: the rolling decoder, or else a spool of the whole core. */
static bool second_fill(void *arg, size_t i, uint8_t *dst, size_t len)
{
	struct cq_stream_image *s = arg;
	__atomic_store_n(&s->stats.second_pass, true, __ATOMIC_RELAXED);
	if (s->spool_fd < 0 && !s->spool_failed && roll_to(s, i, dst, len)) {
		__atomic_add_fetch(&s->stats.second_fills, 1, __ATOMIC_RELAXED);
		return true;
	}
	if (!spool_once(s)) {
		__atomic_add_fetch(&s->stats.bad_chunks, 1, __ATOMIC_RELAXED);
		return false;
	}
	uint64_t at = s->bound[i];
	size_t done = pread_full(s->spool_fd, dst, len, at);
	assert(done <= len);
	if (done < len && at + done < s->size) {
		/* the spool was cut short (no room): what it lacks reads as zeros */
		__atomic_add_fetch(&s->stats.bad_chunks, 1, __ATOMIC_RELAXED);
		return false;
	}
	memset(dst + done, 0, len - done); /* past the core's end */
	__atomic_add_fetch(&s->stats.second_fills, 1, __ATOMIC_RELAXED);
	return true;
}

/* Reads more of the stream into *buf (grown) until it holds want bytes; false: it ends first. */
static bool head_read(struct reader *r, uint8_t **buf, uint64_t *have, uint64_t want)
{
	if (want <= *have)
		return true;
	if (want > HEAD_MAX)
		return false;
	uint8_t *nb = realloc(*buf, (size_t)want);
	if (!nb)
		return false;
	*buf = nb;
	int64_t got = reader_read(r, nb + *have, (size_t)(want - *have));
	if (got < 0)
		return false;
	*have += (uint64_t)got;
	return *have == want;
}

/*
 * Parses the first have bytes of a core: true with *need the bytes its
 * headers and notes take (more than have: read more and ask again), h set
 * when they are all there, and *end where its segments end; false when it
 * is no core this reads as a stream (the spool path then says why).
 */
static bool parse_head(const uint8_t *b, uint64_t have, struct head *h, uint64_t *need,
                       uint64_t *end)
{
	*need = sizeof(Elf64_Ehdr);
	if (have < *need)
		return true;
	memcpy(&h->eh, b, sizeof(h->eh));
	const Elf64_Ehdr *eh = &h->eh;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != ELFDATA2LSB || eh->e_type != ET_CORE ||
	    eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phnum == 0 || eh->e_phnum == PN_XNUM ||
	    eh->e_shoff != 0 || eh->e_phoff > HEAD_MAX ||
	    !(h->arch = cq_arch_from_machine(eh->e_machine)))
		return false;
	*need = eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr);
	if (have < *need)
		return true;
	h->b = b;
	uint64_t notes = *need;
	*end = *need;
	for (size_t i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr ph;
		get_phdr(h, i, &ph);
		if (ph.p_offset > (1ull << 62) || ph.p_filesz > (1ull << 62))
			return false;
		if (ph.p_type == PT_NOTE && ph.p_offset + ph.p_filesz > notes)
			notes = ph.p_offset + ph.p_filesz;
		if (ph.p_offset + ph.p_filesz > *end)
			*end = ph.p_offset + ph.p_filesz;
	}
	notes = page_up(notes);
	*need = notes < *end ? notes : *end;
	if (*need > HEAD_MAX)
		return false;
	h->len = *need;
	return true;
}

/* Reads the stream's headers and notes into *buf; false: no core to stream. */
static bool read_head(struct reader *r, uint8_t **buf, uint64_t *have, struct head *h,
                      uint64_t *size)
{
	uint64_t need = 0;
	for (;;) {
		if (!parse_head(*buf, *have, h, &need, size))
			return false;
		if (need <= *have && h->b)
			return true;
		if (!head_read(r, buf, have, need))
			return false;
		h->b = NULL;
	}
}

bool cq_stream_plan_make(const uint8_t *b, uint64_t len, uint64_t keep_all_below,
                         struct cq_stream_plan *p)
{
	struct head h = {0};
	uint64_t need = 0, end = 0;
	memset(p, 0, sizeof(*p));
	if (!parse_head(b, len, &h, &need, &end) || need > len || !h.b)
		return false;
	if (!make_plan(&h, end, keep_all_below, p)) {
		cq_stream_plan_free(p);
		return false;
	}
	p->size = end;
	p->head_len = h.len;
	return true;
}

void cq_stream_plan_free(struct cq_stream_plan *p)
{
	free(p->v);
	memset(p, 0, sizeof(*p));
}

/* Installs the kept parts of [at, at + len) from b (page-rounded room), advancing *k over plan. */
static struct cq_error *keep(struct cq_stream_image *s, const struct cq_stream_plan *p, size_t *k,
                             uint64_t at, const uint8_t *b, uint64_t len)
{
	uint64_t end = at + len, kept = 0;
	while (*k < p->n && p->v[*k].hi <= at)
		(*k)++;
	for (size_t j = *k; j < p->n && p->v[j].lo < end; j++) {
		uint64_t lo = p->v[j].lo > at ? p->v[j].lo : at;
		uint64_t hi = p->v[j].hi < end ? p->v[j].hi : end;
		assert(at <= lo && lo <= hi && hi <= end);
		struct cq_error *err = cq_lazy_map_put(s->map, lo, b + (lo - at), hi - lo);
		if (err)
			return err;
		kept += hi - lo;
	}
	assert(kept <= len);
	s->stats.kept_bytes += kept;
	s->stats.dropped_bytes += len - kept;
	return NULL;
}

/* ---- the scan keep (scan_keep.h) ---- */

struct nt_file {
	const uint8_t *desc;
	uint64_t len;
};

static bool find_nt_file(void *arg, uint32_t type, const uint8_t *desc, uint64_t len)
{
	struct nt_file *f = arg;
	if (type == NT_FILE && !f->desc) {
		f->desc = desc;
		f->len = len;
	}
	return true;
}

/*
 * The keep of a core whose head is h, armed with the note an earlier core
 * of its build left (hint), or else, when the plan drops bytes (drops),
 * with what a probe of the head finds; NULL without a hint to ask.  A
 * writable segment whose words are not 8-aligned in the file as in memory
 * makes none.
 */
static struct cq_scan_keep *scan_keep_make(struct cq_stream_image *s, const struct head *h,
                                           uint64_t size, const struct cq_stream_hint *hint,
                                           bool drops)
{
	if (!hint || !hint->scan_note)
		return NULL;
	struct nt_file f = {0};
	each_note(h, find_nt_file, &f);
	uint64_t(*wr)[2] = malloc((h->eh.e_phnum ? h->eh.e_phnum : 1) * sizeof(*wr));
	size_t nw = 0;
	bool ok = wr != NULL;
	for (size_t i = 0; ok && i < h->eh.e_phnum; i++) {
		Elf64_Phdr ph;
		get_phdr(h, i, &ph);
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_W) || ph.p_filesz == 0)
			continue;
		ok = ph.p_offset % 8 == 0 && ph.p_vaddr % 8 == 0 &&
		     ph.p_offset + ph.p_filesz > ph.p_offset;
		if (ok) {
			wr[nw][0] = ph.p_offset;
			wr[nw++][1] = ph.p_offset + ph.p_filesz;
		}
	}
	struct cq_scan_keep *k =
	    ok ? cq_scan_keep_create(f.desc, f.len, (const uint64_t(*)[2])wr, nw, size, page_size())
	       : NULL;
	free(wr);
	char *note = k ? hint->scan_note(hint->arg, s->exe_id) : NULL;
	/* An empty note: this build's runtimes scan for nothing (a probe found none). */
	if (note && (!*note || cq_scan_keep_arm(k, note))) {
		s->hint_note = note;
		return k;
	}
	free(note);
	/* No note (the first core of its build): what the runtimes on its head would scan for. */
	if (!k || !drops || !hint->scan_probe)
		return k; /* not armed: it only makes this core's note */
	struct cq_feed_words words[CQ_SCAN_KEEP_MAX_RANGES];
	size_t n = hint->scan_probe(hint->arg, h->b, h->len, words, CQ_SCAN_KEEP_MAX_RANGES);
	if (n)
		cq_scan_keep_arm_words(k, words, n);
	else
		s->note = strdup(""); /* noted, so the next core of the build is not probed again */
	return k;
}

/* What a kept page needs: the image, and the plan (whose pages are installed already). */
struct scan_put {
	struct cq_stream_image *s;
	const struct cq_stream_plan *plan;
};

static bool scan_put(void *arg, uint64_t off, const uint8_t *page)
{
	struct scan_put *sp = arg;
	const struct cq_stream_plan *p = sp->plan;
	size_t i = cq_sorted_below(p->v, p->n, sizeof(*p->v), off + 1);
	if (i > 0 && p->v[i - 1].hi > off)
		return true;
	struct cq_error *err = cq_lazy_map_put(sp->s->map, off, page, page_size());
	if (err) {
		cq_error_free(err);
		return false;
	}
	struct cq_stream_image_stats *st = &sp->s->stats;
	uint64_t n = page_size() < st->dropped_bytes ? page_size() : st->dropped_bytes;
	st->kept_bytes += page_size();
	st->dropped_bytes -= n;
	return true;
}

struct cq_error *cq_stream_image_open(int fd, uint64_t cap, cq_stream_spool_fn spool,
                                      void *spool_arg, const struct cq_stream_hint *hint,
                                      bool *hinted, struct cq_stream_image **out)
{
	*out = NULL;
	*hinted = false;
	struct reader r;
	struct cq_stream_image *s = calloc(1, sizeof(*s));
	uint8_t *head = NULL, *wins[2] = {NULL, NULL};
	uint64_t have = 0, size = 0;
	struct cq_stream_plan plan = {0};
	struct head h = {0};
	struct cq_error *err = NULL;
	bool streamed = false;
	int in = dup(fd);
	if (!s || in < 0 || lseek(in, 0, SEEK_SET) != 0) {
		if (in >= 0)
			close(in);
		free(s);
		return s ? NULL : &cq_error_nomem;
	}
	s->fd = in;
	s->spool_fd = -1;
	s->cap = cap;
	s->spool = spool;
	s->spool_arg = spool_arg;
	/* A head shorter than what was read to parse it (a degenerate core): spool. */
	if (!reader_open(&r, in, true) || !read_head(&r, &head, &have, &h, &size) || size > cap ||
	    have != h.len)
		goto done;
	s->compression = r.compression;
	/* The first MiB too (it is kept anyway): the executable's headers are there. */
	uint64_t prefix = size < CQ_STREAM_KEEP_PREFIX ? size : CQ_STREAM_KEEP_PREFIX;
	if (prefix > have && !head_read(&r, &head, &have, prefix))
		goto done;
	h.b = head;
	h.len = have;
	exe_build_id(&h, s->exe_id);
	/* A build whose analysis reads its heap: keep it whole (within the budget), read once. */
	*hinted =
	    hint && hint->reads_heap && s->exe_id[0] && hint->reads_heap(hint->arg, s->exe_id);
	s->region = page_up(size);
	size_t n = (size_t)((s->region + CHUNK - 1) / CHUNK);
	s->bound = malloc((n + 1) * sizeof(*s->bound));
	/* No plan (out of memory, a forged list of threads), or one that keeps too much: spool. */
	if (!s->bound || !make_plan(&h, size, *hinted ? UINT64_MAX : keep_all_below_env(), &plan) ||
	    plan_bytes(&plan, size) > keep_budget())
		goto done;
	for (size_t i = 0; i < n; i++)
		s->bound[i] = i * CHUNK;
	if (!*hinted)
		s->keep = scan_keep_make(s, &h, size, hint, plan_bytes(&plan, size) < size);
	struct scan_put sput = {s, &plan};
	s->bound[n] = s->region;
	struct cq_error *lerr =
	    cq_lazy_map_create(s->region, s->bound, n, SECOND_BUDGET, second_fill, s, &s->map);
	if (lerr) {
		cq_error_free(lerr); /* no userfaultfd: spool */
		goto done;
	}
	/* The head, then the rest window by window. */
	uint64_t at;
	uint8_t *hb = realloc(head, (size_t)page_up(h.len));
	if (!hb) {
		err = &cq_error_nomem;
		goto done;
	}
	head = hb;
	size_t k = 0;
	uint64_t head_len = h.len;
	memset(head + head_len, 0, (size_t)(page_up(head_len) - head_len));
	if ((err = keep(s, &plan, &k, 0, head, head_len)))
		goto done;
	/* The scan keep looks at each window on another CPU while the next one is read. */
	cq_scan_keep_post(s->keep, 0, head, head_len);
	at = head_len;
	uint64_t window = WINDOW > page_size() ? WINDOW : page_size();
	size_t nwins = cq_scan_keep_armed(s->keep) ? 2 : 1, cur = 0;
	for (size_t i = 0; i < nwins; i++)
		if (!(wins[i] = aligned_alloc(page_size(), window))) {
			err = &cq_error_nomem;
			goto done;
		}
	while (at < size) {
		uint8_t *win = wins[cur];
		uint64_t want = size - at < window ? size - at : window;
		int64_t got = reader_read(&r, win, (size_t)want);
		if (got < 0)
			goto done; /* damaged: the spool path says how */
		memset(win + got, 0, (size_t)(page_up((uint64_t)got) - (uint64_t)got));
		if ((err = keep(s, &plan, &k, at, win, (uint64_t)got)))
			goto done;
		cq_scan_keep_collect(s->keep, scan_put, &sput);
		cq_scan_keep_post(s->keep, at, win, (uint64_t)got);
		cur = (cur + 1) % nwins;
		at += (uint64_t)got;
		if ((uint64_t)got < want)
			break; /* a truncated core: its size is what came */
	}
	cq_scan_keep_collect(s->keep, scan_put, &sput);
	if (at == size) {
		/* More than the headers account for: the spool path keeps it all. */
		uint8_t extra;
		int64_t more = reader_read(&r, &extra, 1);
		if (more != 0)
			goto done;
	}
	s->size = at;
	cq_scan_keep_end(s->keep);
	streamed = true;
done:
	cq_scan_keep_collect(s->keep, NULL, NULL); /* before the windows it may read go */
	reader_close(&r);
	free(head);
	free(wins[0]);
	free(wins[1]);
	cq_stream_plan_free(&plan);
	if (err || !streamed) {
		cq_stream_image_destroy(s);
		lseek(fd, 0, SEEK_SET);
		return err;
	}
	*out = s;
	return NULL;
}

const uint8_t *cq_stream_image_data(const struct cq_stream_image *s)
{
	return cq_lazy_map_data(s->map);
}

uint64_t cq_stream_image_size(const struct cq_stream_image *s)
{
	return s->size;
}

const char *cq_stream_image_exe_build_id(const struct cq_stream_image *s)
{
	return s->exe_id;
}

const char *cq_stream_image_compression(const struct cq_stream_image *s)
{
	return s->compression;
}

struct cq_stream_image_stats cq_stream_image_stats(struct cq_stream_image *s)
{
	struct cq_stream_image_stats st = s->stats;
	st.second_pass = __atomic_load_n(&s->stats.second_pass, __ATOMIC_RELAXED);
	st.second_fills = __atomic_load_n(&s->stats.second_fills, __ATOMIC_RELAXED);
	st.bad_chunks = __atomic_load_n(&s->stats.bad_chunks, __ATOMIC_RELAXED);
	st.peak_bytes = cq_lazy_map_stats(s->map).peak_bytes;
	st.spool_bytes = __atomic_load_n(&s->stats.spool_bytes, __ATOMIC_RELAXED);
	st.scan_armed = cq_scan_keep_armed(s->keep);
	st.scan_kept_bytes = cq_scan_keep_bytes(s->keep);
	st.scan_gave_up = cq_scan_keep_gave_up(s->keep);
	st.kept_feed = s->kept_feed;
	st.scan_note =
	    s->note && (!s->hint_note || strcmp(s->note, s->hint_note) != 0) ? s->note : NULL;
	return st;
}

void cq_stream_image_destroy(struct cq_stream_image *s)
{
	if (!s)
		return;
	cq_lazy_map_destroy(s->map);
	if (s->rolling)
		reader_close(&s->roll);
	if (s->spool_fd >= 0)
		close(s->spool_fd);
	if (s->fd >= 0)
		close(s->fd);
	free(s->bound);
	cq_scan_keep_free(s->keep);
	free(s->hint_note);
	free(s->note);
	free(s);
}

bool cq_stream_image_dropped(const struct cq_stream_image *s)
{
	return s->stats.dropped_bytes > 0;
}

/*
 * A feed (libcore/base/feed.h): one more decompression from the start,
 * moving forward only, its bytes handed to the reader and never installed.
 * A span behind it (the feed copies the spans' overlaps itself) is not
 * made: the reader reads it from the image.
 */
struct cq_stream_feed {
	struct reader r;
	int fd; /* a file description of its own: the second pass seeks s->fd */
	bool open, failed;
	uint64_t pos;
	uint8_t *skip; /* WINDOW bytes, for what lies between spans */
	struct cq_feed *feed;
	/* A feed of kept pages: the spans, the next one, and a buffer for one. */
	const struct cq_stream_image *s;
	struct cq_feed_span *spans;
	size_t n, k;
	uint8_t *buf;
	uint64_t buf_len;
};

const uint8_t *cq_stream_image_feed_kept_next(struct cq_stream_feed *sf, bool *none)
{
	*none = false;
	if (!sf->spans || sf->k >= sf->n)
		return NULL;
	const struct cq_feed_span *sp = &sf->spans[sf->k++];
	const uint64_t *pg;
	size_t np = cq_scan_keep_pages(sf->s->keep, sp->off, sp->len, &pg);
	if (np == 0) {
		*none = true;
		return NULL;
	}
	const uint8_t *data = cq_lazy_map_data(sf->s->map);
	memset(sf->buf, 0, (size_t)sp->len);
	for (size_t i = 0; i < np; i++) {
		uint64_t lo = pg[i] > sp->off ? pg[i] : sp->off;
		uint64_t hi = pg[i] + page_size() < sp->off + sp->len ? pg[i] + page_size()
		                                                      : sp->off + sp->len;
		memcpy(sf->buf + (lo - sp->off), data + lo, (size_t)(hi - lo));
	}
	return sf->buf;
}

static bool stream_feed_fill(void *arg, unsigned worker, const struct cq_feed_span *span,
                             uint8_t *dst)
{
	struct cq_stream_feed *sf = arg;
	(void)worker;
	if (sf->failed || span->off < sf->pos)
		return false;
	while (sf->pos < span->off) {
		uint64_t want = span->off - sf->pos < WINDOW ? span->off - sf->pos : WINDOW;
		int64_t got = reader_read(&sf->r, sf->skip, (size_t)want);
		if (got <= 0) {
			sf->failed = true;
			return false;
		}
		sf->pos += (uint64_t)got;
	}
	int64_t got = reader_read(&sf->r, dst, (size_t)span->len);
	if (got != (int64_t)span->len) {
		sf->failed = true;
		return false;
	}
	sf->pos += (uint64_t)got;
	return true;
}

uint64_t cq_stream_image_feed_bytes(const struct cq_stream_feed *sf)
{
	return (sf->spans ? sf->buf_len : WINDOW) + sizeof(struct cq_stream_feed);
}

void cq_stream_image_feed_stop(struct cq_stream_feed *sf)
{
	if (!sf)
		return;
	cq_feed_stop(sf->feed);
	if (sf->open)
		reader_close(&sf->r);
	if (sf->fd >= 0)
		close(sf->fd);
	free(sf->skip);
	free(sf->spans);
	free(sf->buf);
	free(sf);
}

/* A feed of the kept pages alone, when they are all the reader needs; NULL otherwise. */
static struct cq_stream_feed *kept_feed(const struct cq_stream_image *s,
                                        const struct cq_feed_span *spans, size_t n,
                                        const struct cq_feed_words *words, size_t nwords)
{
	if (n == 0 || !cq_scan_keep_covers(s->keep, spans, n, words, nwords))
		return NULL;
	struct cq_stream_feed *sf = calloc(1, sizeof(*sf));
	if (!sf)
		return NULL;
	sf->fd = -1;
	sf->s = s;
	sf->n = n;
	for (size_t i = 0; i < n; i++)
		sf->buf_len = spans[i].len > sf->buf_len ? spans[i].len : sf->buf_len;
	sf->spans = malloc(n * sizeof(*spans));
	sf->buf = malloc(sf->buf_len ? (size_t)sf->buf_len : 1);
	if (!sf->spans || !sf->buf) {
		cq_stream_image_feed_stop(sf);
		return NULL;
	}
	memcpy(sf->spans, spans, n * sizeof(*spans));
	return sf;
}

struct cq_error *cq_stream_image_feed_start(struct cq_stream_image *s,
                                            const struct cq_feed_span *spans, size_t n,
                                            const struct cq_feed_words *words, size_t nwords,
                                            struct cq_stream_feed **out, struct cq_feed **feed)
{
	*out = NULL;
	*feed = NULL;
	free(s->note);
	s->note = cq_scan_keep_note(s->keep, words, nwords);
	if ((*out = kept_feed(s, spans, n, words, nwords))) {
		s->kept_feed = true;
		return NULL;
	}
	struct cq_stream_feed *sf = calloc(1, sizeof(*sf));
	if (!sf)
		return &cq_error_nomem;
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", s->fd);
	sf->fd = open(path, O_RDONLY | O_CLOEXEC);
	struct cq_error *err = NULL;
	if (!(sf->skip = malloc(WINDOW)))
		err = &cq_error_nomem;
	else if (sf->fd < 0 || !(sf->open = true, reader_open(&sf->r, sf->fd, false)))
		err = cq_error_create(CQ_ERR_IO, "cannot read the compressed core again");
	else {
		/* The first pass checked the stream's checksum to its end: this one need not. */
		if (sf->r.z)
			ZSTD_DCtx_setParameter(sf->r.z, ZSTD_d_forceIgnoreChecksum,
			                       ZSTD_d_ignoreChecksum);
		err = cq_feed_start(spans, n, 1, stream_feed_fill, sf, &sf->feed);
	}
	if (err) {
		cq_stream_image_feed_stop(sf);
		return err;
	}
	*out = sf;
	*feed = sf->feed;
	return NULL;
}

const char *cq_stream_filter_name(int code)
{
	switch (code) {
	case ARCHIVE_FILTER_NONE:
		return "none";
	case ARCHIVE_FILTER_GZIP:
		return "gzip";
	case ARCHIVE_FILTER_BZIP2:
		return "bzip2";
	case ARCHIVE_FILTER_XZ:
		return "xz";
	case ARCHIVE_FILTER_LZMA:
		return "lzma";
	case ARCHIVE_FILTER_LZ4:
		return "lz4";
	case ARCHIVE_FILTER_ZSTD:
		return "zstd";
	default:
		return "other";
	}
}
