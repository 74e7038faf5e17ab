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
	uint64_t names = 0, pcln = 0;
	switch (t->magic) {
	case MAGIC_12:
		t->ftab = 16;
		t->names = 0;
		t->funcdata = 0;
		t->entry_size = 16;
		break;
	case MAGIC_116:
		if (!u64_at(t, 8 + 3 * 8, &names) || !u64_at(t, 8 + 7 * 8, &pcln))
			return false;
		t->entry_size = 16;
		break;
	case MAGIC_118:
	case MAGIC_120:
		if (!u64_at(t, 8 + 2 * 8, &t->text_start) || !u64_at(t, 8 + 3 * 8, &names) ||
		    !u64_at(t, 8 + 7 * 8, &pcln))
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

const char *cq_gopclntab_find(const struct cq_gopclntab *t, uint64_t addr, uint64_t *entry)
{
	uint64_t first, last;
	if (!t->data || !cq_gopclntab_entry(t, 0, &first) ||
	    !cq_gopclntab_entry(t, t->nfunc, &last) || addr < first || addr >= last)
		return NULL;
	/* the greatest i < nfunc with entry(i) <= addr; a table out of order answers nothing */
	uint64_t lo = 0, hi = t->nfunc;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2, e;
		if (!cq_gopclntab_entry(t, mid, &e))
			return NULL;
		if (e <= addr)
			lo = mid;
		else
			hi = mid;
	}
	uint64_t e, next, off;
	if (!cq_gopclntab_entry(t, lo, &e) || !cq_gopclntab_entry(t, lo + 1, &next) || e > addr ||
	    addr >= next || !funcoff(t, lo, &off) || off > t->len - t->funcdata)
		return NULL;
	/* the _func: its name offset after the entry (a uintptr before 1.18, a u32 since) */
	size_t fn = t->funcdata + (size_t)off;
	size_t name_field = fn + (t->entry_size == 16 ? 8 : 4);
	uint32_t nameoff;
	if (name_field < fn || !u32_at(t, name_field, &nameoff) || (int32_t)nameoff < 0)
		return NULL;
	size_t base = t->magic == MAGIC_12 ? 0 : t->names;
	size_t at = base + nameoff;
	if (at < base || at >= t->len)
		return NULL;
	const uint8_t *end =
	    memchr(t->data + at, 0, t->len - at < MAX_NAME ? t->len - at : MAX_NAME);
	if (!end || end == t->data + at)
		return NULL;
	*entry = e;
	return (const char *)(t->data + at);
}
