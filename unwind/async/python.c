/*
 * python.c - the CPython runtime: every thread's interpreter frames,
 * spliced into its native stack as frames of kind python (qualified name,
 * file, line), and the thread that holds the GIL.
 *
 * Found through the program's own symbols (the executable's when it links
 * CPython in, as Debian's python3.11 does, else libpython's):
 *
 *   _PyRuntime                  the runtime state: interpreters, the GIL
 *   Py_Version                  PY_VERSION_HEX (3.11 on): which layout
 *   _PyEval_EvalFrameDefault    the evaluation loop, where frames splice in
 *
 * A process without _PyRuntime and Py_Version costs two symbol lookups per
 * module and nothing else.  Layouts come from libpython's DWARF when it is
 * there (python3.11-dbg) and otherwise from the version-keyed table
 * python_layouts.def; a version with neither is reported, not guessed.
 *
 * The walk (3.11): _PyRuntime.interpreters.head -> each interpreter's
 * threads.head -> each PyThreadState, matched to the core's thread by its
 * native_thread_id; its cframe->current_frame is the innermost
 * _PyInterpreterFrame, `previous` the next one out.  One call of
 * _PyEval_EvalFrameDefault runs the frames from the one it was entered with
 * (is_entry) inwards: a thread's Python frames, innermost first, are cut at
 * each entry frame and each run is put in front of (inside) the next
 * _PyEval_EvalFrameDefault frame of the native stack, counting out from
 * the innermost.  Frames left over (a native unwind cut short) go at the
 * end of the stack and are counted.  The line of a frame is its code
 * object's location table at prev_instr, as PyCode_Addr2Line computes it.
 *
 * Everything read from the core is untrusted: every list is bounded and
 * checked for loops, every string and table bounded in length.
 */
#include "unwind/async/python.h"

#include <dwarf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/elf_section.h"
#include "unwind/async/dwarf_type.h"
#include "unwind/async/runtime.h"
#include "unwind/async/word_scan.h"

/* Bounds on what a damaged or forged core can make the walk read. */
#define MAX_INTERPS    64
#define MAX_TSTATES    65536
#define MAX_STRING     4096
#define MAX_LINETABLE  (1u << 20)
#define MAX_DWARF_CUS  100000
#define MAX_TOP_DIES   (1u << 22)
#define MAX_PATH_DEPTH 4

static const struct cq_python_layout layouts[] = {
#define PY_LAYOUT(maj, min, ...) {.major = (maj), .minor = (min), __VA_ARGS__},
#include "unwind/async/python_layouts.def"
#undef PY_LAYOUT
};

const struct cq_python_layout *cq_python_layout_table(unsigned major, unsigned minor)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].major == major && layouts[i].minor == minor)
			return &layouts[i];
	return NULL;
}

/* ---- layouts from DWARF ------------------------------------------------ */

struct layout_field {
	const char *type, *path;
	size_t at; /* offsetof(struct cq_python_layout, field) */
};

static const struct layout_field layout_fields[] = {
#define CQ_PY_FIELD(name, t, p) {t, p, offsetof(struct cq_python_layout, name)},
    CQ_PYTHON_LAYOUT_FIELDS(CQ_PY_FIELD)
#undef CQ_PY_FIELD
};
#define NFIELDS (sizeof(layout_fields) / sizeof(layout_fields[0]))

static const struct layout_field asyncio_fields[] = {
#define CQ_PY_FIELD(name, t, p) {t, p, offsetof(struct cq_python_layout, name)},
    CQ_PYTHON_ASYNCIO_FIELDS(CQ_PY_FIELD)
#undef CQ_PY_FIELD
};
#define NASYNCIO (sizeof(asyncio_fields) / sizeof(asyncio_fields[0]))

/* The distinct type names the fields name (at most nf). */
static size_t type_names(const struct layout_field *fields, size_t nf, const char **out)
{
	size_t n = 0;
	for (size_t i = 0; i < nf; i++) {
		size_t k = 0;
		while (k < n && strcmp(out[k], fields[i].type) != 0)
			k++;
		if (k == n)
			out[n++] = fields[i].type;
	}
	return n;
}

/* A struct with members (not a declaration), typedefs peeled. */
static bool defined_struct(Dwarf_Die *die)
{
	Dwarf_Die child;
	return cq_dwt_peel(die) && dwarf_tag(die) == DW_TAG_structure_type &&
	       !dwarf_hasattr(die, DW_AT_declaration) && dwarf_child(die, &child) == 0;
}

/* Finds each named struct or typedef among the compile units' top-level DIEs. */
static bool find_types(Dwarf *dw, const char **names, size_t n, Dwarf_Die *types)
{
	bool found[NFIELDS] = {false};
	size_t left = n, budget = MAX_TOP_DIES;
	Dwarf_Off off = 0, next;
	size_t hsize;
	for (size_t cus = 0; left && cus < MAX_DWARF_CUS &&
	                     dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0;
	     cus++, off = next) {
		Dwarf_Die cu, die;
		if (!dwarf_offdie(dw, off + hsize, &cu) || dwarf_child(&cu, &die) != 0)
			continue;
		do {
			if (budget-- == 0)
				return false;
			int tag = dwarf_tag(&die);
			if (tag != DW_TAG_structure_type && tag != DW_TAG_typedef)
				continue;
			const char *name = dwarf_diename(&die);
			for (size_t k = 0; name && k < n; k++) {
				Dwarf_Die t = die;
				if (found[k] || strcmp(name, names[k]) != 0 || !defined_struct(&t))
					continue;
				types[k] = t;
				found[k] = true;
				left--;
			}
		} while (left && dwarf_siblingof(&die, &die) == 0);
	}
	return left == 0;
}

/* The offset of a dotted member path inside type (each step a direct member). */
static bool member_path(Dwarf_Die type, const char *path, uint64_t *out)
{
	char part[64];
	uint64_t total = 0;
	for (int depth = 0; depth < MAX_PATH_DEPTH; depth++) {
		const char *dot = strchr(path, '.');
		size_t len = dot ? (size_t)(dot - path) : strlen(path);
		if (len == 0 || len >= sizeof(part))
			return false;
		memcpy(part, path, len);
		part[len] = '\0';
		uint64_t off;
		Dwarf_Die found;
		if (!cq_dwt_find_member(&type, cq_dwt_named, part, 0, &off, &found))
			return false;
		total += off;
		if (!dot) {
			*out = total;
			return true;
		}
		type = found;
		path = dot + 1;
	}
	return false;
}

/* The fields of out that fields name, from dw (see cq_python_layout_dwarf). */
static bool fields_dwarf(Dwarf *dw, const struct layout_field *fields, size_t nf,
                         struct cq_python_layout *out, const char **missing)
{
	const char *names[NFIELDS];
	Dwarf_Die types[NFIELDS];
	size_t n = type_names(fields, nf, names);
	*missing = NULL;
	bool all = find_types(dw, names, n, types);
	for (size_t i = 0; i < nf; i++) {
		const struct layout_field *f = &fields[i];
		size_t k = 0;
		while (strcmp(names[k], f->type) != 0)
			k++;
		uint64_t v = 0;
		bool ok = all;
		if (ok && f->path)
			ok = member_path(types[k], f->path, &v);
		else if (ok)
			ok = (v = cq_dwt_size(&types[k])) != 0;
		if (!ok || v > UINT32_MAX) {
			*missing = f->path ? f->path : f->type;
			return false;
		}
		memcpy((char *)out + f->at, &(uint32_t){(uint32_t)v}, sizeof(uint32_t));
	}
	return true;
}

bool cq_python_layout_dwarf(Dwarf *dw, struct cq_python_layout *out, const char **missing)
{
	return fields_dwarf(dw, layout_fields, NFIELDS, out, missing);
}

bool cq_python_asyncio_layout_dwarf(Dwarf *dw, struct cq_python_layout *out, const char **missing)
{
	return fields_dwarf(dw, asyncio_fields, NASYNCIO, out, missing);
}

/*
 * What the runtime caches per module: the layout its DWARF gave (a header
 * of the version and the field count, then each field), so a later core of
 * the same files reads no DWARF.  A layout from the table is not cached:
 * the table is in coreq already.
 */
static const struct cq_target_blob layout_blob = {"python", "layout", 3};
static const struct cq_target_blob *const python_blobs[] = {&layout_blob, NULL};

#define BLOB_WORDS (3 + NFIELDS)
#define MAX_OFFSET (1u << 20)

static void layout_encode(const struct cq_python_layout *l, uint32_t *w)
{
	w[0] = l->major;
	w[1] = l->minor;
	w[2] = (uint32_t)NFIELDS;
	for (size_t i = 0; i < NFIELDS; i++)
		memcpy(&w[3 + i], (const char *)l + layout_fields[i].at, sizeof(uint32_t));
}

bool cq_python_layout_decode(const uint8_t *blob, size_t len, unsigned major, unsigned minor,
                             struct cq_python_layout *out)
{
	uint32_t w[BLOB_WORDS];
	if (len != sizeof(w))
		return false;
	memcpy(w, blob, sizeof(w));
	if (w[0] != major || w[1] != minor || w[2] != NFIELDS)
		return false;
	out->major = major;
	out->minor = minor;
	for (size_t i = 0; i < NFIELDS; i++) {
		if (w[3 + i] >= MAX_OFFSET)
			return false;
		memcpy((char *)out + layout_fields[i].at, &w[3 + i], sizeof(uint32_t));
	}
	return true;
}

/*
 * Module m's layout from its DWARF (the target's), for a version coreq
 * reads (the table has its row: the version's frame list is one python.c
 * walks): from the cache when it holds it for these files, else read and
 * cached.  *cached: the cache had it.
 */
static bool layout_from_dwarf(const struct cq_unwind_target *t, size_t m, unsigned major,
                              unsigned minor, struct cq_python_layout *out, bool *cached)
{
	size_t len = 0;
	uint8_t *blob = t->ops->cache_get ? t->ops->cache_get(t->ctx, m, &layout_blob, &len) : NULL;
	*cached = false;
	if (blob) {
		bool good = cq_python_layout_decode(blob, len, major, minor, out);
		free(blob);
		if (good)
			return *cached = true;
		if (t->ops->cache_reject)
			t->ops->cache_reject(t->ctx); /* damaged: read again and replaced */
	}
	Dwarf *dw = t->ops->dwarf ? t->ops->dwarf(t->ctx, m) : NULL; /* the target's */
	const char *missing;
	if (!dw || !cq_python_layout_dwarf(dw, out, &missing))
		return false;
	out->major = major;
	out->minor = minor;
	uint32_t w[BLOB_WORDS];
	layout_encode(out, w);
	if (t->ops->cache_put)
		t->ops->cache_put(t->ctx, m, &layout_blob, (const uint8_t *)w, sizeof(w));
	return true;
}

/* ---- the location table ---------------------------------------------- */

/* 3.11's location entry kinds (Objects/locations.md). */
enum {
	LOC_ONE_LINE0 = 10,
	LOC_ONE_LINE1 = 11,
	LOC_ONE_LINE2 = 12,
	LOC_NO_COLUMNS = 13,
	LOC_LONG = 14,
	LOC_NONE = 15,
};

/* An unsigned varint of 6-bit groups (bit 6: more) at *at; stops at end. */
static uint32_t read_varint(const uint8_t *table, size_t len, size_t *at)
{
	uint32_t v = 0;
	unsigned shift = 0;
	while (*at < len) {
		uint8_t b = table[(*at)++];
		if (shift < 32)
			v |= (uint32_t)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	return v;
}

static int32_t read_svarint(const uint8_t *table, size_t len, size_t *at)
{
	uint32_t v = read_varint(table, len, at);
	return v & 1 ? -(int32_t)(v >> 1) : (int32_t)(v >> 1);
}

int cq_python_addr2line(const uint8_t *table, size_t len, int firstlineno, int64_t addr)
{
	if (addr < 0)
		return firstlineno;
	int64_t line = firstlineno, end = 0;
	size_t at = 0;
	while (at < len) {
		uint8_t first = table[at];
		unsigned code = (first >> 3) & 15;
		int64_t delta = 0;
		size_t p = at + 1;
		if (code == LOC_NO_COLUMNS || code == LOC_LONG)
			delta = read_svarint(table, len, &p);
		else if (code >= LOC_ONE_LINE0 && code <= LOC_ONE_LINE2)
			delta = code - LOC_ONE_LINE0;
		line += delta;
		if (line < INT32_MIN || line > INT32_MAX)
			return -1;
		end += ((first & 7) + 1) * 2;
		if (addr < end)
			return code == LOC_NONE ? -1 : (int)line;
		/* The next entry starts at the next byte with bit 7 set. */
		at++;
		while (at < len && !(table[at] & 128))
			at++;
	}
	return -1;
}

/* ---- reading the core ------------------------------------------------ */

/* What one code object gives its frames (strings owned by the runtime). */
struct code_info {
	uint64_t addr;
	const char *qualname, *filename;
	int firstlineno;
	uint8_t *linetable;
	size_t linetable_len;
};

struct py_frame {
	uint64_t addr;
	const struct code_info *code;
	int line;
	bool is_entry;
	const char *label; /* a mark of its own: the thread's Python name */
};

struct python {
	struct cq_python_layout layout;
	bool from_dwarf;
	bool cached; /* from_dwarf, and the cache held it */
	unsigned major, minor, micro;
	uint64_t runtime;
	uint64_t eval_lo, eval_hi; /* _PyEval_EvalFrameDefault, 0 0: by name */
	/* Code objects read so far: an open-addressing table by address. */
	struct code_info *codes;
	size_t ncodes, capcodes;
	/* Strings the frames point to. */
	char **strings;
	size_t nstrings, capstrings;
	struct py_frame *frames; /* one thread's frames */
	size_t max_frames;
	/* What it found (report). */
	bool no_layout;
	size_t tstates, threads_matched, threads_with_frames, python_frames, unplaced;
	size_t truncated, unreadable;
	size_t exceptions;   /* threads raising or handling one */
	size_t thread_names; /* threads named by their threading.Thread */
	/* asyncio: the C accelerator's Task type, the scan's candidates, what decode found. */
	uint64_t task_type;
	bool asyncio_dwarf;
	uint64_t *tasks, *hits;
	size_t ntasks, captasks;
	bool tasks_nomem;
	size_t tasks_listed, tasks_done, tasks_rejected;
	int64_t gil_tid; /* the thread holding the GIL, 0: none known */
	bool gil_locked;
};

static void python_destroy(void *p)
{
	struct python *py = p;
	for (size_t i = 0; i < py->capcodes; i++)
		free(py->codes[i].linetable);
	free(py->codes);
	for (size_t i = 0; i < py->nstrings; i++)
		free(py->strings[i]);
	free(py->strings);
	free(py->frames);
	free(py->tasks);
	free(py->hits);
	free(py);
}

static bool rd(const struct cq_unwind_target *t, uint64_t addr, void *buf, size_t len)
{
	return t->ops->read(t->ctx, addr, buf, len);
}

static bool rd64(const struct cq_unwind_target *t, uint64_t addr, uint64_t *v)
{
	return rd(t, addr, v, sizeof(*v));
}

/* Keeps s (malloc'd) for the frames; NULL when out of memory (s freed). */
static const char *keep_string(struct python *py, char *s)
{
	if (py->nstrings == py->capstrings) {
		size_t cap = py->capstrings ? py->capstrings * 2 : 64;
		char **a = realloc(py->strings, cap * sizeof(*a));
		if (!a) {
			free(s);
			return NULL;
		}
		py->strings = a;
		py->capstrings = cap;
	}
	py->strings[py->nstrings++] = s;
	return s;
}

/* Appends code point c as UTF-8 (a surrogate or beyond U+10FFFF as '?'). */
static size_t put_utf8(char *out, uint32_t c)
{
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | c >> 6);
		out[1] = (char)(0x80 | (c & 63));
		return 2;
	}
	if ((c >= 0xd800 && c < 0xe000) || c > 0x10ffff) {
		out[0] = '?';
		return 1;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | c >> 12);
		out[1] = (char)(0x80 | (c >> 6 & 63));
		out[2] = (char)(0x80 | (c & 63));
		return 3;
	}
	out[0] = (char)(0xf0 | c >> 18);
	out[1] = (char)(0x80 | (c >> 12 & 63));
	out[2] = (char)(0x80 | (c >> 6 & 63));
	out[3] = (char)(0x80 | (c & 63));
	return 4;
}

/*
 * A str object as UTF-8 (malloc'd), at most MAX_STRING characters, or NULL:
 * a compact string (every name and file name of a code object is one),
 * ASCII or of 1, 2 or 4 bytes a character.
 */
static char *read_str(const struct cq_unwind_target *t, const struct cq_python_layout *l,
                      uint64_t obj)
{
	uint64_t length;
	uint32_t state;
	if (!obj || !rd64(t, obj + l->unicode_length, &length) ||
	    !rd(t, obj + l->unicode_state, &state, sizeof(state)) || length > MAX_STRING)
		return NULL;
	unsigned kind = state >> 2 & 7, compact = state >> 5 & 1, ascii = state >> 6 & 1;
	if (!compact || (kind != 1 && kind != 2 && kind != 4))
		return NULL;
	uint64_t data = obj + (ascii ? l->ascii_size : l->compact_size);
	uint8_t *raw = malloc(length * kind + 1);
	char *s = malloc(length * 4 + 1);
	if (!raw || !s || !rd(t, data, raw, length * kind)) {
		free(raw);
		free(s);
		return NULL;
	}
	size_t n = 0;
	for (uint64_t i = 0; i < length; i++) {
		uint32_t c = kind == 1   ? raw[i]
		             : kind == 2 ? (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8
		                         : (uint32_t)raw[4 * i] | (uint32_t)raw[4 * i + 1] << 8 |
		                               (uint32_t)raw[4 * i + 2] << 16 |
		                               (uint32_t)raw[4 * i + 3] << 24;
		if (ascii && c >= 0x80)
			c = '?';
		n += put_utf8(s + n, c);
	}
	s[n] = '\0';
	free(raw);
	return s;
}

static size_t code_slot(const struct python *py, uint64_t addr)
{
	uint64_t h = addr * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 20) & (py->capcodes - 1);
}

static bool codes_grow(struct python *py)
{
	size_t cap = py->capcodes ? py->capcodes * 2 : 256;
	struct code_info *old = py->codes;
	size_t oldcap = py->capcodes;
	if (!(py->codes = calloc(cap, sizeof(*py->codes)))) {
		py->codes = old;
		return false;
	}
	py->capcodes = cap;
	for (size_t i = 0; i < oldcap; i++) {
		if (!old[i].addr)
			continue;
		size_t k = code_slot(py, old[i].addr);
		while (py->codes[k].addr)
			k = (k + 1) & (cap - 1);
		py->codes[k] = old[i];
	}
	free(old);
	return true;
}

/*
 * The code object at addr, read once (its names, first line and location
 * table); NULL when out of memory.  A code object the core lacks gives a
 * frame without a name.
 */
static const struct code_info *code_at(struct python *py, const struct cq_unwind_target *t,
                                       uint64_t addr, bool *nomem)
{
	if ((py->ncodes + 1) * 2 > py->capcodes && !codes_grow(py)) {
		*nomem = true;
		return NULL;
	}
	size_t k = code_slot(py, addr);
	while (py->codes[k].addr && py->codes[k].addr != addr)
		k = (k + 1) & (py->capcodes - 1);
	struct code_info *c = &py->codes[k];
	if (c->addr)
		return c;
	const struct cq_python_layout *l = &py->layout;
	*c = (struct code_info){.addr = addr};
	py->ncodes++;
	uint64_t qual = 0, file = 0, table = 0, len = 0;
	int32_t first = 0;
	rd64(t, addr + l->code_qualname, &qual);
	rd64(t, addr + l->code_filename, &file);
	if (rd(t, addr + l->code_firstlineno, &first, sizeof(first)))
		c->firstlineno = first;
	char *s = read_str(t, l, qual);
	if (s && !(c->qualname = keep_string(py, s)))
		*nomem = true;
	s = read_str(t, l, file);
	if (s && !(c->filename = keep_string(py, s)))
		*nomem = true;
	if (rd64(t, addr + l->code_linetable, &table) && table &&
	    rd64(t, table + l->bytes_size, &len) && len > 0 && len <= MAX_LINETABLE) {
		if (!(c->linetable = malloc(len)))
			*nomem = true;
		else if (rd(t, table + l->bytes_data, c->linetable, len))
			c->linetable_len = len;
	}
	return c;
}

/* Brent's loop check over a linked list (seen: the walk came round). */
struct loop_check {
	uint64_t saved;
	size_t power, lam;
};

static bool loop_seen(struct loop_check *c, uint64_t p)
{
	if (p == c->saved)
		return true;
	if (++c->lam == c->power) {
		c->saved = p;
		c->power *= 2;
		c->lam = 0;
	}
	return false;
}

/*
 * A thread state's frames, innermost first, into py->frames; how many.
 * *cut: the list was longer than the bound, looped or became unreadable.
 */
static size_t read_frames(struct python *py, const struct cq_unwind_target *t, uint64_t tstate,
                          bool *cut, bool *nomem)
{
	const struct cq_python_layout *l = &py->layout;
	uint64_t cframe, frame;
	*cut = false;
	if (!rd64(t, tstate + l->tstate_cframe, &cframe) || !cframe ||
	    !rd64(t, cframe + l->cframe_current, &frame))
		return 0;
	struct loop_check loop = {.saved = frame, .power = 1};
	size_t n = 0;
	while (frame && !*nomem) {
		uint64_t code, prev, instr;
		uint8_t entry;
		if (n == py->max_frames || (frame & 7) || !rd64(t, frame + l->frame_code, &code) ||
		    !rd64(t, frame + l->frame_previous, &prev) ||
		    !rd64(t, frame + l->frame_prev_instr, &instr) ||
		    !rd(t, frame + l->frame_is_entry, &entry, 1)) {
			*cut = true;
			break;
		}
		const struct code_info *c = code ? code_at(py, t, code, nomem) : NULL;
		int line = -1;
		if (c) {
			int64_t lasti = ((int64_t)(instr - (code + l->code_adaptive))) / 2;
			line = cq_python_addr2line(c->linetable, c->linetable_len, c->firstlineno,
			                           lasti * 2);
		}
		py->frames[n++] = (struct py_frame){
		    .addr = frame, .code = c, .line = line, .is_entry = entry != 0};
		frame = prev;
		if (frame && loop_seen(&loop, frame)) {
			*cut = true;
			break;
		}
	}
	return n;
}

#define MAX_TYPE_NAME   128
#define MAX_EXC_ITEMS   64
#define MAX_EXC_MESSAGE 200

/* A NUL-terminated C string of at most cap - 1 bytes at addr; false when unreadable. */
static bool read_cstr(const struct cq_unwind_target *t, uint64_t addr, char *buf, size_t cap)
{
	/* Whole when it can (a name rarely ends at the edge of the memory the core holds). */
	if (rd(t, addr, buf, cap - 1)) {
		buf[cap - 1] = '\0';
		return true;
	}
	for (size_t i = 0; i + 1 < cap; i++) {
		if (!rd(t, addr + i, &buf[i], 1))
			return false;
		if (!buf[i])
			return true;
	}
	buf[cap - 1] = '\0';
	return true;
}

/* The tp_name of obj's type into buf; false when unreadable. */
static bool type_name(const struct cq_unwind_target *t, const struct cq_python_layout *l,
                      uint64_t obj, char *buf, size_t cap)
{
	uint64_t type, name;
	return obj && !(obj & 7) && rd64(t, obj + l->object_type, &type) &&
	       rd64(t, type + l->type_name, &name) && read_cstr(t, name, buf, cap);
}

/*
 * The last line of the traceback Python prints for exception type `type`
 * whose args tuple holds n items, the first `msg` when it is a str (else
 * NULL): "T: message", "T" for no args or an empty message; NULL when the
 * core does not say what str(exception) is (more args, a first arg not a
 * str, a KeyError's repr needing escapes).  T is the type's tp_name: a
 * class defined in a module other than __main__ is printed by Python with
 * its module too, which tp_name does not hold.
 */
static char *traceback_line(const char *type, uint64_t n, const char *msg)
{
	if (n > 1 || (n == 1 && !msg))
		return NULL;
	bool quote = false; /* str(KeyError(k)) is repr(k), '' included */
	if (msg && !strcmp(type, "KeyError")) {
		for (const unsigned char *c = (const unsigned char *)msg; *c; c++)
			if (*c < 0x20 || *c == 0x7f || *c == '\\' || *c == '\'' || *c >= 0x80)
				return NULL;
		quote = true;
	}
	bool said = msg && (msg[0] || quote);
	size_t len = strlen(type) + (said ? strlen(msg) + 5 : 1);
	char *out = malloc(len);
	if (out)
		snprintf(out, len, "%s%s%s%s%s", type, said ? ": " : "", quote ? "'" : "",
		         said ? msg : "", quote ? "'" : "");
	return out;
}

/*
 * What thread state ts is doing with an exception, as "raising T: message"
 * (curexc_value: being raised) or "handling T: message" (the innermost
 * exception an except block or excepthook handles), the message the
 * exception's first argument when it is a str; NULL for none or unreadable.
 * An exception handled also gives *line, the traceback's last line Python
 * prints for it (traceback_line), when the core says it; else *line is NULL.
 */
static char *thread_exception(const struct cq_unwind_target *t, const struct cq_python_layout *l,
                              uint64_t ts, char **line)
{
	*line = NULL;
	uint64_t exc = 0, item = 0;
	char type[MAX_TYPE_NAME];
	const char *verb = "raising";
	if (!rd64(t, ts + l->tstate_curexc_value, &exc) ||
	    !type_name(t, l, exc, type, sizeof(type))) {
		exc = 0;
		verb = "handling";
		rd64(t, ts + l->tstate_exc_info, &item);
		for (int i = 0; item && i < MAX_EXC_ITEMS; i++) {
			uint64_t v = 0;
			if (!rd64(t, item + l->stackitem_value, &v) ||
			    (v && type_name(t, l, v, type, sizeof(type)) &&
			     strcmp(type, "NoneType"))) {
				exc = v;
				break;
			}
			if (!rd64(t, item + l->stackitem_previous, &item))
				break;
		}
	}
	if (!exc || !type_name(t, l, exc, type, sizeof(type)))
		return NULL;
	char *msg = NULL, tuple[16], str[16];
	uint64_t args, n = 0, first;
	bool counted = rd64(t, exc + l->exception_args, &args) &&
	               type_name(t, l, args, tuple, sizeof(tuple)) && !strcmp(tuple, "tuple") &&
	               rd64(t, args + l->tuple_size, &n);
	if (counted && n >= 1 && rd64(t, args + l->tuple_items, &first) &&
	    type_name(t, l, first, str, sizeof(str)) && !strcmp(str, "str"))
		msg = read_str(t, l, first);
	if (counted && !strcmp(verb, "handling"))
		*line = traceback_line(type, n, msg); /* before the mark's cut */
	if (msg && strlen(msg) > MAX_EXC_MESSAGE)
		strcpy(msg + MAX_EXC_MESSAGE - 3, "...");
	size_t len = strlen(verb) + strlen(type) + (msg ? strlen(msg) : 0) + 4;
	char *out = malloc(len);
	if (out)
		snprintf(out, len, "%s %s%s%s", verb, type, msg ? ": " : "", msg ? msg : "");
	free(msg);
	return out;
}

/* Is native frame f a call of _PyEval_EvalFrameDefault? */
static bool is_eval_frame(const struct python *py, const struct cq_stack_frame *f)
{
	if (f->kind != CQ_FRAME_NATIVE)
		return false;
	if (py->eval_hi)
		return f->pc >= py->eval_lo && f->pc <= py->eval_hi;
	return f->function && strcmp(f->function, "_PyEval_EvalFrameDefault") == 0;
}

static void set_python_frame(struct cq_stack_frame *out, const struct py_frame *p)
{
	*out = (struct cq_stack_frame){
	    .kind = CQ_FRAME_PYTHON,
	    .trust = CQ_TRUST_ASYNC,
	    .function = p->code ? p->code->qualname : NULL,
	    .file = p->code ? p->code->filename : NULL,
	    .line = p->line > 0 ? p->line : 0,
	    .object = p->addr,
	    .state = p->label,
	};
}

/*
 * Thread ts's stack with its n Python frames spliced in: each run up to an
 * entry frame in front of the next _PyEval_EvalFrameDefault frame's inline
 * calls, counting out; the rest at the end.
 */
static struct cq_error *splice(struct python *py, struct cq_thread_stack *ts, size_t n,
                               const char *state)
{
	size_t total = ts->nframes + n;
	struct cq_stack_frame *out = malloc((total ? total : 1) * sizeof(*out));
	if (!out)
		return &cq_error_nomem;
	size_t k = 0, p = 0;
	for (size_t i = 0; i < ts->nframes; i++) {
		/* The group of frame i: its inline calls, then the native frame at the same pc. */
		size_t j = i;
		while (j < ts->nframes && ts->frames[j].kind == CQ_FRAME_INLINE &&
		       j + 1 < ts->nframes && ts->frames[j + 1].pc == ts->frames[i].pc)
			j++;
		bool group_start = i == 0 || ts->frames[i - 1].kind != CQ_FRAME_INLINE ||
		                   ts->frames[i - 1].pc != ts->frames[i].pc;
		if (group_start && p < n && is_eval_frame(py, &ts->frames[j])) {
			while (p < n) {
				set_python_frame(&out[k++], &py->frames[p]);
				if (py->frames[p++].is_entry)
					break;
			}
		}
		out[k++] = ts->frames[i];
	}
	py->unplaced += n - p;
	while (p < n)
		set_python_frame(&out[k++], &py->frames[p++]);
	for (size_t i = 0; state && i < k; i++)
		if (out[i].kind == CQ_FRAME_PYTHON) {
			out[i].state = state; /* over the thread's name, if it is that frame */
			break;
		}
	if (ts->owns_frames)
		free(ts->frames);
	ts->frames = out;
	ts->nframes = k;
	ts->owns_frames = true;
	return NULL;
}

/* The core's thread whose tid is tid, or SIZE_MAX. */
static size_t thread_of(const struct cq_unwind_target *t, uint64_t tid)
{
	for (size_t i = 0; i < t->nthreads; i++)
		if (tid && (uint64_t)t->threads[i].tid == tid)
			return i;
	return SIZE_MAX;
}

/* ---- asyncio tasks ---------------------------------------------------- */

#define MAX_TASKS     (1u << 16)
#define CHUNK_HITS    4096u
#define RESUME_OPCODE 151 /* 3.11's RESUME: its oparg >= 2 after an await */
#define RESUME_QUICK  150 /* RESUME quickened in a warm code object (_PyOpcode_Deopt) */
#define MAX_STACKTOP  (1 << 16)

enum { FRAME_CREATED = -2, FRAME_SUSPENDED = -1, FRAME_EXECUTING = 0 };

static const char task_type_name[] = "_asyncio.Task";

/* The address in module m of the C string s in its .rodata, or 0. */
static uint64_t rodata_string(const struct cq_target_module *mod, const char *s)
{
	GElf_Shdr sh;
	Elf_Scn *scn = mod->elf ? cq_elf_section(mod->elf, ".rodata", &sh) : NULL;
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	if (!d || !d->d_buf || sh.sh_type == SHT_NOBITS)
		return 0;
	size_t n = strlen(s) + 1;
	const char *p = d->d_buf, *end = p + d->d_size;
	for (const char *at = p; end - at >= (ptrdiff_t)n;) {
		const char *hit = memchr(at, s[0], (size_t)(end - at - (ptrdiff_t)n + 1));
		if (!hit)
			break;
		if (memcmp(hit, s, n) == 0 && (hit == p || hit[-1] == '\0'))
			return sh.sh_addr + (uint64_t)(hit - p) + mod->bias;
		at = hit + 1;
	}
	return 0;
}

struct type_search {
	const struct cq_unwind_target *t;
	const struct cq_python_layout *l;
	uint64_t found;
};

/* A word equal to the name's address: the tp_name of a type object whose type is `type`. */
static bool type_hit(void *arg, uint64_t addr, const uint64_t *words)
{
	(void)words;
	struct type_search *ts = arg;
	char name[8];
	uint64_t type = addr - ts->l->type_name;
	if (type_name(ts->t, ts->l, type, name, sizeof(name)) && !strcmp(name, "type")) {
		ts->found = type;
		return false;
	}
	return true;
}

/*
 * The asyncio accelerator's Task type (a static PyTypeObject in _asyncio's
 * data whose tp_name is "_asyncio.Task": its symbol TaskType, or the word
 * in the module's data that points to that name), or 0 when the program has not
 * loaded _asyncio.  Its layout from _asyncio's DWARF when there is one.
 */
static uint64_t find_task_type(const struct cq_async_ctx *ctx, struct python *py)
{
	const struct cq_unwind_target *t = ctx->target;
	for (size_t m = 0; m < t->nmodules; m++) {
		const char *base = strrchr(t->modules[m].name, '/');
		base = base ? base + 1 : t->modules[m].name;
		if (strncmp(base, "_asyncio.", 9) != 0)
			continue;
		/* Its symbol where the file keeps a symbol table, else its name in .rodata. */
		struct cq_target_symbol q = {.name = "TaskType"};
		struct type_search ts = {.t = t, .l = &py->layout};
		char name[sizeof(task_type_name)];
		uint64_t tp_name;
		if (t->ops->find_symbols && t->ops->find_symbols(t->ctx, m, &q, 1) == 1 &&
		    rd64(t, q.addr + py->layout.type_name, &tp_name) &&
		    read_cstr(t, tp_name, name, sizeof(name)) && !strcmp(name, task_type_name))
			ts.found = q.addr;
		uint64_t str = ts.found ? 0 : rodata_string(&t->modules[m], task_type_name);
		if (str)
			cq_async_data_words(ctx, m, str, str, 0, type_hit, &ts);
		if (!ts.found)
			continue;
		Dwarf *dw = t->ops->dwarf ? t->ops->dwarf(t->ctx, m) : NULL;
		struct cq_python_layout l = py->layout;
		const char *missing;
		if (dw && cq_python_asyncio_layout_dwarf(dw, &l, &missing)) {
			py->layout = l;
			py->asyncio_dwarf = true;
		}
		return ts.found;
	}
	return 0;
}

static void python_scan(void *state, const struct cq_async_ctx *ctx, const struct cq_async_chunk *c)
{
	(void)ctx;
	struct python *py = state;
	if (!c->data || py->tasks_nomem)
		return;
	size_t n = cq_word_scan(c->data + c->overlap, c->addr + c->overlap, c->len - c->overlap,
	                        py->task_type, py->hits, CHUNK_HITS);
	for (size_t i = 0; i < n && i < CHUNK_HITS && py->ntasks < MAX_TASKS; i++) {
		uint64_t obj = py->hits[i] - py->layout.object_type;
		if (py->ntasks == py->captasks) {
			size_t cap = py->captasks ? py->captasks * 2 : 64;
			uint64_t *a = realloc(py->tasks, cap * sizeof(*a));
			if (!a) {
				py->tasks_nomem = true;
				return;
			}
			py->tasks = a;
			py->captasks = cap;
		}
		py->tasks[py->ntasks++] = obj;
	}
}

/* A task's name: its str, or "Task-N" for the int N 3.11 keeps for an unnamed one. */
static char *task_name(const struct cq_unwind_target *t, const struct cq_python_layout *l,
                       uint64_t task, uint64_t *number)
{
	uint64_t name;
	char type[8];
	*number = 0;
	if (!rd64(t, task + l->task_name, &name) || !type_name(t, l, name, type, sizeof(type)))
		return NULL;
	if (!strcmp(type, "str")) {
		char *s = read_str(t, l, name), *end;
		if (s && !strncmp(s, "Task-", 5) && s[5] >= '1' && s[5] <= '9') {
			unsigned long long v = strtoull(s + 5, &end, 10);
			*number = *end ? 0 : v;
		}
		return s;
	}
	int64_t size;
	uint32_t digit;
	if (strcmp(type, "int") || !rd64(t, name + l->long_size, (uint64_t *)&size) || size != 1 ||
	    !rd(t, name + l->long_digits, &digit, sizeof(digit)))
		return NULL;
	*number = digit & 0x3fffffffu;
	char *s = malloc(32);
	if (s)
		snprintf(s, 32, "Task-%llu", (unsigned long long)*number);
	return s;
}

/*
 * The coroutine a suspended coroutine awaits (3.11's _PyGen_yf: the next
 * instruction is RESUME, or RESUME_QUICK, with oparg >= 2, the awaited
 * object on top of its value stack), or 0.
 */
static uint64_t awaited(const struct cq_unwind_target *t, const struct cq_python_layout *l,
                        uint64_t frame, uint64_t instr)
{
	uint16_t next;
	int32_t top;
	uint64_t yf;
	if (!rd(t, instr + 2, &next, sizeof(next)) ||
	    ((next & 0xff) != RESUME_OPCODE && (next & 0xff) != RESUME_QUICK) || (next >> 8) < 2 ||
	    !rd(t, frame + l->frame_stacktop, &top, sizeof(top)) || top < 1 || top > MAX_STACKTOP ||
	    !rd64(t, frame + l->frame_localsplus + 8 * (uint64_t)(top - 1), &yf))
		return 0;
	return yf;
}

#define FUTURE_ITER_FUTURE 16 /* _asyncio.FutureIter: {PyObject_HEAD; FutureObj *future} */

/*
 * What a coroutine awaits when it is not a coroutine: a future's iterator
 * stands for its future, named by type (type, in place); *task is the
 * future's address when it is a Task.
 */
static void leaf_of(struct python *py, const struct cq_unwind_target *t, uint64_t yf, char *type,
                    size_t cap, uint64_t *task)
{
	uint64_t fut;
	char name[64];
	*task = 0;
	if (strcmp(type, "_asyncio.FutureIter") != 0 || !rd64(t, yf + FUTURE_ITER_FUTURE, &fut) ||
	    !type_name(t, &py->layout, fut, name, sizeof(name)))
		return;
	snprintf(type, cap, "%s", name);
	if (fut && !strcmp(name, task_type_name))
		*task = fut;
}

/* One pending task's await chain, innermost first, into a suspended stack; false: not a task. */
static bool task_chain(struct python *py, const struct cq_unwind_target *t, uint64_t task,
                       struct cq_suspended_stack *s, bool *nomem)
{
	const struct cq_python_layout *l = &py->layout;
	uint64_t refs, coro;
	uint32_t fstate;
	char type[64];
	if (!rd64(t, task, &refs) || refs == 0 || refs >= (1ull << 32) ||
	    !rd(t, task + l->task_state, &fstate, sizeof(fstate)) || fstate > 2)
		return false;
	if (fstate != 0) { /* done or cancelled: not waiting on anything */
		py->tasks_done++;
		return false;
	}
	if (!rd64(t, task + l->task_coro, &coro) || !type_name(t, l, coro, type, sizeof(type)) ||
	    strcmp(type, "coroutine"))
		return false;
	struct cq_stack_frame *f = calloc(py->max_frames, sizeof(*f));
	if (!f) {
		*nomem = true;
		return false;
	}
	size_t n = 0;
	const char *running = NULL, *leaf = NULL;
	uint64_t awaited_task = 0;
	for (uint64_t c = coro; c && n < py->max_frames && !*nomem;) {
		int8_t cstate;
		uint64_t frame = c + l->coro_iframe, code, instr;
		if (!rd(t, c + l->coro_frame_state, &cstate, 1) || cstate > FRAME_EXECUTING ||
		    !rd64(t, frame + l->frame_code, &code) ||
		    !rd64(t, frame + l->frame_prev_instr, &instr))
			break;
		const struct code_info *ci = code_at(py, t, code, nomem);
		int line = ci ? ci->firstlineno : 0;
		if (ci && cstate != FRAME_CREATED)
			line = cq_python_addr2line(
			    ci->linetable, ci->linetable_len, ci->firstlineno,
			    (((int64_t)(instr - (code + l->code_adaptive))) / 2) * 2);
		f[n++] = (struct cq_stack_frame){.kind = CQ_FRAME_PYTHON,
		                                 .trust = CQ_TRUST_ASYNC,
		                                 .function = ci ? ci->qualname : NULL,
		                                 .file = ci ? ci->filename : NULL,
		                                 .line = line > 0 ? line : 0,
		                                 .object = c};
		if (cstate == FRAME_EXECUTING) {
			running = "running";
			break;
		}
		if (cstate == FRAME_CREATED)
			break;
		uint64_t yf = awaited(t, l, frame, instr);
		if (!yf || !type_name(t, l, yf, type, sizeof(type)))
			break;
		if (strcmp(type, "coroutine")) {
			leaf_of(py, t, yf, type, sizeof(type), &awaited_task);
			leaf = type;
			break;
		}
		c = yf;
	}
	if (n == 0) {
		free(f);
		return false;
	}
	/* Innermost first. */
	for (size_t i = 0; i < n / 2; i++) {
		struct cq_stack_frame x = f[i];
		f[i] = f[n - 1 - i];
		f[n - 1 - i] = x;
	}
	uint64_t number;
	char *name = task_name(t, l, task, &number);
	char mark[200];
	uint64_t other;
	char *other_name = awaited_task ? task_name(t, l, awaited_task, &other) : NULL;
	if (leaf && other_name)
		snprintf(mark, sizeof(mark), "awaiting task %s", other_name);
	else if (leaf)
		snprintf(mark, sizeof(mark), "awaiting %s", leaf);
	free(other_name);
	if (leaf) {
		const char *kept = keep_string(py, strdup(mark));
		*nomem |= kept == NULL;
		f[0].state = kept;
	}
	if (name) {
		snprintf(mark, sizeof(mark), "task %s%s%s", name, n == 1 && leaf ? "; " : "",
		         n == 1 && leaf ? f[0].state : "");
		free(name);
		const char *kept = keep_string(py, strdup(mark));
		*nomem |= kept == NULL;
		f[n - 1].state = kept;
	}
	*s = (struct cq_suspended_stack){.kind = "python",
	                                 .leaf = task,
	                                 .frames = f,
	                                 .nframes = n,
	                                 .end = CQ_END_OUTERMOST,
	                                 .has_task = true,
	                                 .task_id = number,
	                                 .task_state = running ? running : "idle"};
	return true;
}

/* Every pending asyncio task the scan found, once each, as a suspended chain. */
static struct cq_error *python_decode(void *state, const struct cq_async_ctx *ctx)
{
	struct python *py = state;
	if (py->tasks_nomem)
		return &cq_error_nomem;
	size_t n = cq_async_sort_unique(py->tasks, py->ntasks, sizeof(*py->tasks));
	bool nomem = false;
	for (size_t i = 0; i < n && !nomem; i++) {
		struct cq_suspended_stack s;
		if (!task_chain(py, ctx->target, py->tasks[i], &s, &nomem)) {
			py->tasks_rejected++;
			continue;
		}
		bool added;
		struct cq_error *err = cq_async_add_suspended(ctx, &s, &added);
		if (err)
			return err;
		py->tasks_listed += added;
	}
	py->tasks_rejected -= py->tasks_done;
	return nomem ? &cq_error_nomem : NULL;
}

enum { Q_RUNTIME, Q_VERSION, Q_EVAL, Q_COUNT };

static struct cq_error *python_detect(const struct cq_async_ctx *ctx, void **state,
                                      struct cq_async_needs *needs)
{
	const struct cq_unwind_target *t = ctx->target;
	*state = NULL;
	struct cq_target_symbol q[Q_COUNT] = {
	    [Q_RUNTIME] = {.name = "_PyRuntime"},
	    [Q_VERSION] = {.name = "Py_Version"},
	    [Q_EVAL] = {.name = "_PyEval_EvalFrameDefault"},
	};
	size_t m = 0;
	for (; t->ops->find_symbols && m < t->nmodules; m++) {
		q[Q_RUNTIME].found = q[Q_VERSION].found = q[Q_EVAL].found = false;
		if (t->ops->find_symbols(t->ctx, m, q, 2) == 2)
			break;
	}
	uint32_t version;
	if (m == t->nmodules || !rd(t, q[Q_VERSION].addr, &version, sizeof(version)))
		return NULL;
	struct python *py = calloc(1, sizeof(*py));
	if (!py)
		return &cq_error_nomem;
	py->major = version >> 24;
	py->minor = version >> 16 & 0xff;
	py->micro = version >> 8 & 0xff;
	py->runtime = q[Q_RUNTIME].addr;
	if (t->ops->find_symbols(t->ctx, m, &q[Q_EVAL], 1) == 1 && q[Q_EVAL].size) {
		py->eval_lo = q[Q_EVAL].addr;
		py->eval_hi = q[Q_EVAL].addr + q[Q_EVAL].size;
	}
	const struct cq_python_layout *row = cq_python_layout_table(py->major, py->minor);
	if (row && layout_from_dwarf(t, m, py->major, py->minor, &py->layout, &py->cached)) {
		py->from_dwarf = true;
	} else if (row) {
		py->layout = *row;
	} else {
		py->no_layout = true;
	}
	if (py->from_dwarf) /* _asyncio's fields are not libpython's: the table's until its DWARF */
		for (size_t i = 0; i < NASYNCIO; i++)
			memcpy((char *)&py->layout + asyncio_fields[i].at,
			       (const char *)row + asyncio_fields[i].at, sizeof(uint32_t));
	py->max_frames = ctx->unwind->max_frames ? ctx->unwind->max_frames : 256;
	if (!py->no_layout && !(py->frames = calloc(py->max_frames, sizeof(*py->frames)))) {
		python_destroy(py);
		return &cq_error_nomem;
	}
	if (!py->no_layout)
		py->task_type = find_task_type(ctx, py);
	if (py->task_type && !(py->hits = malloc(CHUNK_HITS * sizeof(*py->hits)))) {
		python_destroy(py);
		return &cq_error_nomem;
	}
	*needs = (struct cq_async_needs){.native_frames = false,
	                                 .scan = py->task_type != 0,
	                                 .scan_lo = py->task_type,
	                                 .scan_hi = py->task_type};
	*state = py;
	return NULL;
}

/* ---- Python-level thread names ------------------------------------------ */

#define TPFLAGS_MANAGED_DICT (1ull << 4) /* 3.11: the dict and values before the object */
#define MANAGED_DICT_AT      24          /* ((PyObject **)obj)[-3] */
#define MANAGED_VALUES_AT    32          /* ((PyDictValues **)obj)[-4] */
#define MAX_DICT_ENTRIES     1024
#define MAX_LOG2_INDEX_BYTES 20

/*
 * The value of obj's instance attribute `name` (a key of its dict: its own
 * dict, or the values of a split table whose keys its type shares), or 0.
 */
static uint64_t attribute(const struct cq_unwind_target *t, const struct cq_python_layout *l,
                          uint64_t obj, const char *name)
{
	uint64_t type, flags, dict = 0, keys = 0, values = 0, n;
	uint8_t log2, kind;
	if (!obj || (obj & 7) || !rd64(t, obj + l->object_type, &type) ||
	    !rd64(t, type + l->type_flags, &flags) || !(flags & TPFLAGS_MANAGED_DICT) ||
	    !rd64(t, obj - MANAGED_DICT_AT, &dict))
		return 0;
	if (dict ? !rd64(t, dict + l->dict_keys, &keys) || !rd64(t, dict + l->dict_values, &values)
	         : !rd64(t, obj - MANAGED_VALUES_AT, &values) ||
	               !rd64(t, type + l->heaptype_cached_keys, &keys))
		return 0;
	if (!keys || !rd(t, keys + l->keys_log2_index_bytes, &log2, 1) ||
	    !rd(t, keys + l->keys_kind, &kind, 1) || !rd64(t, keys + l->keys_nentries, &n) ||
	    log2 > MAX_LOG2_INDEX_BYTES || kind > 2 || n > MAX_DICT_ENTRIES || (!dict && !values))
		return 0;
	/* Entries after the indices: {hash, key, value} (general) or {key, value}. */
	uint64_t entries = keys + l->keys_indices + (1ull << log2);
	uint64_t size = kind == 0 ? 24 : 16, key_at = kind == 0 ? 8 : 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t key, value;
		if (!rd64(t, entries + i * size + key_at, &key) || !key)
			continue;
		char *k = read_str(t, l, key);
		bool match = k && !strcmp(k, name);
		free(k);
		if (!match)
			continue;
		bool got = values ? rd64(t, values + 8 * i, &value)
		                  : rd64(t, entries + i * size + key_at + 8, &value);
		return got ? value : 0;
	}
	return 0;
}

/*
 * The threading.Thread name of a thread whose outermost frames are
 * Thread._bootstrap (self, its first local, has the attribute _name), and
 * that frame's index; NULL when there is none.
 */
static char *thread_name(struct python *py, const struct cq_unwind_target *t, size_t n, size_t *at)
{
	const struct cq_python_layout *l = &py->layout;
	for (size_t i = n; i-- > 0;) {
		const struct code_info *c = py->frames[i].code;
		if (!c || !c->qualname || strcmp(c->qualname, "Thread._bootstrap") != 0)
			continue;
		uint64_t self, value;
		char type[8];
		if (!rd64(t, py->frames[i].addr + l->frame_localsplus, &self) ||
		    !(value = attribute(t, l, self, "_name")) ||
		    !type_name(t, l, value, type, sizeof(type)) || strcmp(type, "str"))
			return NULL;
		*at = i;
		return read_str(t, l, value);
	}
	return NULL;
}

/*
 * The mark of a thread's innermost Python frame: "holds the GIL", the
 * exception it raises or handles, both ("holds the GIL; handling ..."), or
 * NULL.  Kept with the runtime's strings.  For the crashed thread (crashed),
 * an exception it handles is also the crash's message (cq_stacks.crash_message),
 * as the traceback's last line: an uncaught exception whose excepthook
 * aborts, or a crash in an except block.
 */
static const char *thread_state(struct python *py, const struct cq_async_ctx *ctx, uint64_t ts,
                                bool holds_gil, bool crashed, bool *nomem)
{
	char *line;
	char *exc = thread_exception(ctx->target, &py->layout, ts, &line);
	if (line && crashed && !ctx->stacks->crash_message) {
		const char *kept = keep_string(py, line);
		*nomem |= kept == NULL;
		ctx->stacks->crash_message = kept;
	} else {
		free(line);
	}
	py->exceptions += exc != NULL;
	if (!exc)
		return holds_gil ? "holds the GIL" : NULL;
	if (holds_gil) {
		size_t len = strlen(exc) + 16;
		char *both = malloc(len);
		if (both)
			snprintf(both, len, "holds the GIL; %s", exc);
		free(exc);
		exc = both;
	}
	const char *kept = exc ? keep_string(py, exc) : NULL;
	*nomem |= kept == NULL;
	return kept;
}

/* Every interpreter's thread states: each matched thread's frames spliced in. */
static struct cq_error *python_threads(void *state, const struct cq_async_ctx *ctx)
{
	struct python *py = state;
	const struct cq_unwind_target *t = ctx->target;
	const struct cq_python_layout *l = &py->layout;
	if (py->no_layout)
		return NULL;
	uint64_t holder = 0, interp = 0;
	int32_t locked = 0;
	if (rd(t, py->runtime + l->runtime_gil_locked, &locked, sizeof(locked)) && locked > 0 &&
	    rd64(t, py->runtime + l->runtime_gil_holder, &holder))
		py->gil_locked = true;
	else
		holder = 0;
	if (!rd64(t, py->runtime + l->runtime_interp_head, &interp))
		return NULL;
	struct loop_check interps = {.saved = interp, .power = 1};
	bool nomem = false;
	for (int i = 0; interp && i < MAX_INTERPS && !nomem; i++) {
		uint64_t ts;
		if (!rd64(t, interp + l->interp_threads, &ts))
			break;
		struct loop_check tss = {.saved = ts, .power = 1};
		for (size_t k = 0; ts && k < MAX_TSTATES && !nomem; k++) {
			uint64_t native = 0, next = 0, owner = 0;
			if (!rd64(t, ts + l->tstate_native_id, &native) ||
			    !rd64(t, ts + l->tstate_next, &next) ||
			    !rd64(t, ts + l->tstate_interp, &owner) || owner != interp) {
				py->unreadable++;
				break;
			}
			py->tstates++;
			size_t th = thread_of(t, native);
			if (th != SIZE_MAX && th < ctx->stacks->nthreads) {
				py->threads_matched++;
				if (ts == holder)
					py->gil_tid = t->threads[th].tid;
				bool cut;
				size_t n = read_frames(py, t, ts, &cut, &nomem);
				py->truncated += cut;
				py->python_frames += n;
				py->threads_with_frames += n > 0;
				const char *mark =
				    n ? thread_state(py, ctx, ts, ts == holder, th == 0, &nomem)
				      : NULL;
				size_t named_at = SIZE_MAX;
				char *tname = n ? thread_name(py, t, n, &named_at) : NULL;
				if (tname) {
					size_t len = strlen(tname) + 16;
					char *label = malloc(len);
					if (label)
						snprintf(label, len, "thread \"%s\"", tname);
					free(tname);
					py->frames[named_at].label =
					    label ? keep_string(py, label) : NULL;
					nomem |=
					    label == NULL || py->frames[named_at].label == NULL;
					py->thread_names += !nomem;
				}
				struct cq_error *err =
				    n && !nomem ? splice(py, &ctx->stacks->threads[th], n, mark)
				                : NULL;
				if (err)
					return err;
			}
			ts = next;
			if (ts && loop_seen(&tss, ts)) {
				py->unreadable++;
				break;
			}
		}
		if (!rd64(t, interp + l->interp_next, &interp))
			break;
		if (interp && loop_seen(&interps, interp))
			break;
	}
	return nomem ? &cq_error_nomem : NULL;
}

/* The "python" keys of the async statistics, and what a person should be warned of. */
static void python_report(const void *state, const struct cq_async_ctx *ctx, struct cq_stats *st,
                          struct cq_stats *warnings)
{
	(void)ctx;
	const struct python *py = state;
	const struct python none = {0};
	if (!py)
		py = &none;
	char version[32];
	snprintf(version, sizeof(version), "%u.%u.%u", py->major, py->minor, py->micro);
	cq_stats_bool(st, "python", state != NULL);
	cq_stats_string(st, "python_version", state ? version : NULL);
	cq_stats_string(st, "python_layout",
	                !state || py->no_layout ? NULL
	                : py->from_dwarf        ? "dwarf"
	                                        : "table");
	cq_stats_bool(st, "python_layout_cached", py->cached);
	cq_stats_uint(st, "python_thread_states", py->tstates);
	cq_stats_uint(st, "python_threads", py->threads_with_frames);
	cq_stats_uint(st, "python_frames", py->python_frames);
	cq_stats_uint(st, "python_frames_unplaced", py->unplaced);
	cq_stats_uint(st, "python_truncated", py->truncated);
	cq_stats_uint(st, "python_exceptions", py->exceptions);
	cq_stats_uint(st, "python_thread_names", py->thread_names);
	cq_stats_bool(st, "python_asyncio", py->task_type != 0);
	cq_stats_string(st, "python_asyncio_layout",
	                !py->task_type      ? NULL
	                : py->asyncio_dwarf ? "dwarf"
	                                    : "table");
	cq_stats_uint(st, "python_task_candidates", py->ntasks);
	cq_stats_uint(st, "python_tasks", py->tasks_listed);
	cq_stats_uint(st, "python_tasks_done", py->tasks_done);
	cq_stats_uint(st, "python_tasks_rejected", py->tasks_rejected);
	if (py->gil_tid)
		cq_stats_uint(st, "python_gil_holder", (uint64_t)py->gil_tid);
	else
		cq_stats_null(st, "python_gil_holder");
	char line[200];
	if (state && py->no_layout) {
		snprintf(line, sizeof(line),
		         "CPython %s: no layout for this version (coreq reads 3.11): its Python "
		         "frames are not shown",
		         version);
		cq_stats_string(warnings, NULL, line);
	}
	if (py->unreadable || py->truncated) {
		snprintf(line, sizeof(line),
		         "CPython: %zu thread-state list%s and %zu frame list%s damaged or cut "
		         "short: some Python frames are missing",
		         py->unreadable, py->unreadable == 1 ? "" : "s", py->truncated,
		         py->truncated == 1 ? "" : "s");
		cq_stats_string(warnings, NULL, line);
	}
}

static const char *const python_kinds[] = {"python", NULL};

const struct cq_async_runtime cq_async_python = {
    .name = "python",
    .kinds = python_kinds,
    .listing = CQ_ASYNC_LIST_TASKS,
    .heading = "asyncio tasks",
    .noun = "task",
    .leaf = "task",
    .detect = python_detect,
    .threads = python_threads,
    .scan = python_scan,
    .decode = python_decode,
    .report = python_report,
    .destroy = python_destroy,
    .blobs = python_blobs,
};
