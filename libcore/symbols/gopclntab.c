/*
 * gopclntab.c - Go function names from .gopclntab (see gopclntab.h).
 *
 * Layouts (Go's runtime/symtab.go and debug/gosym; little endian, 8-byte
 * pointers):
 *   1.2-1.15   header {magic u32, 0 u8, 0 u8, minLC u8, ptrSize u8,
 *              nfunc uintptr}; then nfunc+1 entries {entry uintptr,
 *              funcoff uintptr}; a _func {entry uintptr, nameoff i32} at
 *              funcoff from the table's start, its name at nameoff from it.
 *   1.16-1.17  header {..., nfunc, nfiles, funcnameOffset, cuOffset,
 *              filetabOffset, pctabOffset, pclnOffset} (uintptrs); the
 *              function table at pclnOffset, entries {entry uintptr,
 *              funcoff uintptr}, funcoff from pclnOffset, names from
 *              funcnameOffset.
 *   1.18 on    header {..., nfunc, nfiles, textStart, funcnameOffset,
 *              cuOffset, filetabOffset, pctabOffset, pclnOffset}; entries
 *              {entryoff u32, funcoff u32}, an entry at textStart+entryoff;
 *              a _func {entryOff u32, nameOff i32}.
 */
#include "libcore/symbols/gopclntab.h"

#include <string.h>

#define MAGIC_12  0xfffffffbu
#define MAGIC_116 0xfffffffau
#define MAGIC_118 0xfffffff0u
#define MAGIC_120 0xfffffff1u

#define MAX_NAME 4096 /* a name longer than this is not believed */

static bool u32_at(const struct cq_gopclntab *t, size_t off, uint32_t *v)
{
	if (off > t->len || t->len - off < 4)
		return false;
	*v = (uint32_t)t->data[off] | (uint32_t)t->data[off + 1] << 8 |
	     (uint32_t)t->data[off + 2] << 16 | (uint32_t)t->data[off + 3] << 24;
	return true;
}

static bool u64_at(const struct cq_gopclntab *t, size_t off, uint64_t *v)
{
	uint32_t lo, hi;
	if (off > SIZE_MAX - 4 || !u32_at(t, off, &lo) || !u32_at(t, off + 4, &hi))
		return false;
	*v = (uint64_t)hi << 32 | lo;
	return true;
}

bool cq_gopclntab_init(struct cq_gopclntab *t, const uint8_t *data, size_t len)
{
	*t = (struct cq_gopclntab){.data = data, .len = len};
	if (len < 16 || data[4] != 0 || data[5] != 0 || data[7] != 8)
		return false; /* 8-byte pointers only */
	if (!u32_at(t, 0, &t->magic) || !u64_at(t, 8, &t->nfunc))
		return false;
	uint64_t names = 0, pcln = 0, cu = 0, files = 0, pc = 0;
	t->quantum = data[6];
	switch (t->magic) {
	case MAGIC_12:
		t->ftab = 16;
		t->names = 0;
		t->funcdata = 0;
		t->entry_size = 16;
		break;
	case MAGIC_116: /* nfunc, nfiles, then the five offsets */
		if (!u64_at(t, 8 + 2 * 8, &names) || !u64_at(t, 8 + 3 * 8, &cu) ||
		    !u64_at(t, 8 + 4 * 8, &files) || !u64_at(t, 8 + 5 * 8, &pc) ||
		    !u64_at(t, 8 + 6 * 8, &pcln))
			return false;
		t->entry_size = 16;
		break;
	case MAGIC_118: /* nfunc, nfiles, textStart, then the five offsets */
	case MAGIC_120:
		if (!u64_at(t, 8 + 2 * 8, &t->text_start) || !u64_at(t, 8 + 3 * 8, &names) ||
		    !u64_at(t, 8 + 4 * 8, &cu) || !u64_at(t, 8 + 5 * 8, &files) ||
		    !u64_at(t, 8 + 6 * 8, &pc) || !u64_at(t, 8 + 7 * 8, &pcln))
			return false;
		t->entry_size = 8;
		break;
	default:
		return false;
	}
	if (t->magic != MAGIC_12) {
		if (names >= len || pcln >= len)
			return false;
		t->names = (size_t)names;
		t->ftab = (size_t)pcln;
		t->funcdata = (size_t)pcln;
		/* the line tables: read only where all three lie in the section */
		if (cu < len && files < len && pc < len && t->quantum) {
			t->cutab = (size_t)cu;
			t->filetab = (size_t)files;
			t->pctab = (size_t)pc;
		}
	}
	/* the table of nfunc+1 entries must lie in the section */
	if (t->nfunc == 0 || t->nfunc >= (len - t->ftab) / t->entry_size)
		return false;
	return true;
}

bool cq_gopclntab_entry(const struct cq_gopclntab *t, uint64_t i, uint64_t *entry)
{
	if (i > t->nfunc)
		return false;
	size_t off = t->ftab + (size_t)i * t->entry_size;
	if (t->entry_size == 16)
		return u64_at(t, off, entry);
	uint32_t e;
	if (!u32_at(t, off, &e))
		return false;
	*entry = t->text_start + e;
	return true;
}

/* Function i's funcoff: where its _func is, from t->funcdata. */
static bool funcoff(const struct cq_gopclntab *t, uint64_t i, uint64_t *off)
{
	size_t at = t->ftab + (size_t)i * t->entry_size + t->entry_size / 2;
	if (t->entry_size == 16)
		return u64_at(t, at, off);
	uint32_t v;
	if (!u32_at(t, at, &v))
		return false;
	*off = v;
	return true;
}

/*
 * Where function i's _func has its u32 field k after the entry (0 nameoff,
 * 3 pcsp, 4 pcfile, 5 pcln, 7 cuOffset: the entry is a uintptr before 1.18,
 * a u32 since), in *at; false when it lies outside the section.
 */
static bool func_field(const struct cq_gopclntab *t, uint64_t i, unsigned k, size_t *at)
{
	uint64_t off;
	if (!t->data || i >= t->nfunc || !funcoff(t, i, &off) || off > t->len - t->funcdata)
		return false;
	size_t fn = t->funcdata + (size_t)off;
	*at = fn + (t->entry_size == 16 ? 8 : 4) + 4 * k;
	return *at >= fn && *at < t->len;
}

const char *cq_gopclntab_name(const struct cq_gopclntab *t, uint64_t i)
{
	size_t name_field;
	uint32_t nameoff;
	if (!func_field(t, i, 0, &name_field) || !u32_at(t, name_field, &nameoff) ||
	    (int32_t)nameoff < 0)
		return NULL;
	size_t base = t->magic == MAGIC_12 ? 0 : t->names;
	size_t at = base + nameoff;
	if (at < base || at >= t->len)
		return NULL;
	const uint8_t *end =
	    memchr(t->data + at, 0, t->len - at < MAX_NAME ? t->len - at : MAX_NAME);
	if (!end || end == t->data + at)
		return NULL;
	return (const char *)(t->data + at);
}

/* The index of the function holding addr (as cq_gopclntab_find), or nfunc. */
static uint64_t func_index(const struct cq_gopclntab *t, uint64_t addr)
{
	uint64_t first, last;
	if (!t->data || !cq_gopclntab_entry(t, 0, &first) ||
	    !cq_gopclntab_entry(t, t->nfunc, &last) || addr < first || addr >= last)
		return t->nfunc;
	uint64_t lo = 0, hi = t->nfunc;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2, e;
		if (!cq_gopclntab_entry(t, mid, &e))
			return t->nfunc;
		if (e <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

const char *cq_gopclntab_find(const struct cq_gopclntab *t, uint64_t addr, uint64_t *entry)
{
	uint64_t i = func_index(t, addr), e, next;
	if (i >= t->nfunc || !cq_gopclntab_entry(t, i, &e) ||
	    !cq_gopclntab_entry(t, i + 1, &next) || e > addr || addr >= next)
		return NULL;
	const char *name = cq_gopclntab_name(t, i);
	if (name)
		*entry = e;
	return name;
}

/* An unsigned varint at *at, moved past it; false past the section or over 32 bits. */
static bool uvarint(const struct cq_gopclntab *t, size_t *at, uint32_t *v)
{
	*v = 0;
	for (unsigned shift = 0; shift < 35 && *at < t->len; shift += 7) {
		uint8_t b = t->data[(*at)++];
		*v |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/*
 * The value a pc-value table (at off in pctab) gives addr in a function that
 * starts at entry: Go's encoding, pairs of a zig-zag value delta and a pc
 * delta in instruction quanta, from the value -1 at the entry, ended by a
 * zero value delta after the first pair.  Bounded by the section.
 */
static bool pcvalue(const struct cq_gopclntab *t, uint32_t off, uint64_t entry, uint64_t addr,
                    int32_t *out)
{
	if (!t->pctab || off == 0 || off >= t->len - t->pctab)
		return false;
	size_t at = t->pctab + off;
	int64_t val = -1;
	uint64_t pc = entry;
	for (bool first = true;; first = false) {
		uint32_t uv, pcdelta;
		if (!uvarint(t, &at, &uv) || (uv == 0 && !first) || !uvarint(t, &at, &pcdelta))
			return false;
		val += (uv & 1) ? -(int64_t)(uv >> 1) - 1 : (int64_t)(uv >> 1);
		if (val < INT32_MIN || val > INT32_MAX) /* the table says nothing Go would write */
			return false;
		pc += (uint64_t)pcdelta * t->quantum;
		if (addr < pc) {
			*out = (int32_t)val;
			return true;
		}
	}
}

bool cq_gopclntab_frame_size(const struct cq_gopclntab *t, uint64_t addr, uint64_t *size)
{
	uint64_t i = func_index(t, addr), entry;
	size_t f_pcsp;
	uint32_t pcsp;
	int32_t delta;
	if (i >= t->nfunc || !cq_gopclntab_entry(t, i, &entry) || !func_field(t, i, 3, &f_pcsp) ||
	    !u32_at(t, f_pcsp, &pcsp) || !pcvalue(t, pcsp, entry, addr, &delta) || delta < 0)
		return false;
	*size = (uint64_t)delta;
	return true;
}

void cq_gopclntab_set_gofunc(struct cq_gopclntab *t, const uint8_t *gofunc, size_t len)
{
	t->gofunc = gofunc;
	t->gofunc_len = gofunc ? len : 0;
}

/*
 * Function i's pcdata table k (an offset into pctab) and funcdata k (an
 * offset from go:func.*), Go 1.18/1.19's _func: 40 bytes, npcdata its u32
 * field 6, nfuncdata its last byte, then the u32 arrays.  False for none.
 */
static bool func_data(const struct cq_gopclntab *t, uint64_t i, unsigned pcdata_k,
                      unsigned funcdata_k, uint32_t *pcdata, uint32_t *funcdata)
{
	size_t f_npc, fixed;
	uint32_t npcdata;
	if (t->magic != MAGIC_118 || !func_field(t, i, 6, &f_npc) || !u32_at(t, f_npc, &npcdata) ||
	    !func_field(t, i, 0, &fixed))
		return false;
	fixed += 40 - 4; /* from the nameoff field to the _func's end */
	if (fixed >= t->len || npcdata > 64 || pcdata_k >= npcdata)
		return false;
	uint8_t nfuncdata = t->data[fixed - 1];
	if (funcdata_k >= nfuncdata || !u32_at(t, fixed + 4 * pcdata_k, pcdata) ||
	    !u32_at(t, fixed + 4 * ((size_t)npcdata + funcdata_k), funcdata))
		return false;
	return *pcdata != 0 && *funcdata != UINT32_MAX;
}

/* The file and line at addr of function i (entry entry). */
static bool line_of(const struct cq_gopclntab *t, uint64_t i, uint64_t entry, uint64_t addr,
                    const char **file, int *line)
{
	size_t f_pcfile, f_pcln, f_cu;
	uint32_t pcfile, pcln, cuoff, fileoff;
	int32_t fileno, ln;
	if (!t->pctab || !func_field(t, i, 4, &f_pcfile) || !func_field(t, i, 5, &f_pcln) ||
	    !func_field(t, i, 7, &f_cu) || !u32_at(t, f_pcfile, &pcfile) ||
	    !u32_at(t, f_pcln, &pcln) || !u32_at(t, f_cu, &cuoff) ||
	    !pcvalue(t, pcfile, entry, addr, &fileno) || !pcvalue(t, pcln, entry, addr, &ln) ||
	    fileno < 0 || ln <= 0)
		return false;
	/* the file: cutab[cuOffset + fileno], an offset into filetab */
	uint64_t slot = t->cutab + 4 * ((uint64_t)cuoff + (uint32_t)fileno);
	if (slot > t->len || !u32_at(t, (size_t)slot, &fileoff) || fileoff == UINT32_MAX ||
	    fileoff >= t->len - t->filetab)
		return false;
	size_t at = t->filetab + fileoff;
	const uint8_t *end =
	    memchr(t->data + at, 0, t->len - at < MAX_NAME ? t->len - at : MAX_NAME);
	if (!end || end == t->data + at)
		return false;
	*file = (const char *)(t->data + at);
	*line = ln;
	return true;
}

/* A function name at nameoff in funcnametab, or NULL. */
static const char *name_at(const struct cq_gopclntab *t, uint32_t nameoff)
{
	size_t at = t->names + nameoff;
	if ((int32_t)nameoff < 0 || at < t->names || at >= t->len)
		return NULL;
	const uint8_t *end =
	    memchr(t->data + at, 0, t->len - at < MAX_NAME ? t->len - at : MAX_NAME);
	return end && end != t->data + at ? (const char *)(t->data + at) : NULL;
}

size_t cq_gopclntab_frames(const struct cq_gopclntab *t, uint64_t addr,
                           struct cq_gopclntab_frame *out, size_t cap)
{
	uint64_t i = func_index(t, addr), entry;
	const char *outer = i < t->nfunc ? cq_gopclntab_name(t, i) : NULL;
	if (!outer || cap == 0 || !cq_gopclntab_entry(t, i, &entry))
		return 0;
	size_t n = 0;
	uint32_t pcdata, tree;
	uint64_t pc = addr;
	/* inlined calls (Go 1.18/1.19: _PCDATA_InlTreeIndex 2, _FUNCDATA_InlTree 3) */
	if (t->gofunc && func_data(t, i, 2, 3, &pcdata, &tree)) {
		int32_t last = -1;
		for (unsigned depth = 0; depth < 64 && n + 1 < cap; depth++) {
			int32_t ix;
			/* a parent pc inside the same inlined call would loop */
			if (!pcvalue(t, pcdata, entry, pc, &ix) || ix < 0 || ix == last)
				break;
			last = ix;
			/* inlinedCall {parent i16, funcID u8, pad, file i32, line i32, func i32,
			 * parentPc i32} */
			uint64_t at = (uint64_t)tree + 20u * (uint32_t)ix;
			if (at > t->gofunc_len || t->gofunc_len - at < 20)
				break;
			const uint8_t *c = t->gofunc + at;
			uint32_t nameoff = (uint32_t)c[12] | (uint32_t)c[13] << 8 |
			                   (uint32_t)c[14] << 16 | (uint32_t)c[15] << 24;
			uint32_t parent = (uint32_t)c[16] | (uint32_t)c[17] << 8 |
			                  (uint32_t)c[18] << 16 | (uint32_t)c[19] << 24;
			struct cq_gopclntab_frame *f = &out[n];
			f->function = name_at(t, nameoff);
			if (!f->function)
				break;
			f->file = NULL;
			f->line = 0;
			line_of(t, i, entry, pc, &f->file, &f->line);
			n++;
			pc = entry + parent;
		}
	}
	out[n] = (struct cq_gopclntab_frame){.function = outer};
	line_of(t, i, entry, pc, &out[n].file, &out[n].line);
	return n + 1;
}

bool cq_gopclntab_line(const struct cq_gopclntab *t, uint64_t addr, const char **file, int *line)
{
	uint64_t i = func_index(t, addr), entry;
	return i < t->nfunc && cq_gopclntab_entry(t, i, &entry) &&
	       line_of(t, i, entry, addr, file, line);
}
