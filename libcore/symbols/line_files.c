/*
 * line_files.c - the file table of a .debug_line header (see line_files.h).
 *
 * The header (DWARF 2-5, section 6.2.4): unit_length (4 bytes, or
 * 0xffffffff and 8 for 64-bit DWARF), version (2), in DWARF 5
 * address_size (1) and segment_selector_size (1), header_length (4 or 8),
 * minimum_instruction_length (1), from DWARF 4 maximum_operations_per_
 * instruction (1), default_is_stmt, line_base, line_range, opcode_base (1
 * each), opcode_base - 1 standard opcode lengths (1 each).  Then:
 *   - before DWARF 5: include directories (strings up to an empty one), and
 *     file entries (string name, ULEB128 directory, time and length) up to
 *     an empty name;
 *   - DWARF 5: a directory entry format (count, then content-type/form
 *     pairs), the directories, a file entry format, the files; only the
 *     DW_LNCT_directory_index of each file is kept, other values skipped by
 *     their form.
 */
#include "libcore/symbols/line_files.h"

#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/wire.h"

/* DW_FORMs of the GNU extensions elfutils' dwarf.h may lack. */
#define FORM_GNU_STR_INDEX 0x1f02
#define FORM_GNU_STRP_ALT  0x1f21

/* At most this many format pairs in an entry format (the header holds a count in a byte). */
#define MAX_FORMATS 255

static uint64_t get_uleb(struct cq_wire_reader *r)
{
	uint64_t v = 0;
	for (unsigned shift = 0;; shift += 7) {
		uint8_t b = cq_wire_get_u8(r);
		if (r->failed)
			return 0;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
		if (shift > 70) { /* longer than any value: damaged */
			r->failed = true;
			return 0;
		}
	}
}

static uint16_t get_u16(struct cq_wire_reader *r)
{
	uint16_t v = cq_wire_get_u8(r);
	return v | (uint16_t)(cq_wire_get_u8(r) << 8);
}

static void skip(struct cq_wire_reader *r, uint64_t n)
{
	if (r->failed || n > (uint64_t)(r->end - r->p)) {
		r->failed = true;
		return;
	}
	r->p += n;
}

/* A NUL-terminated string inside the reader's bounds; NULL and failed when it runs past them. */
static const char *get_cstring(struct cq_wire_reader *r)
{
	if (r->failed)
		return NULL;
	const uint8_t *nul = memchr(r->p, 0, (size_t)(r->end - r->p));
	if (!nul) {
		r->failed = true;
		return NULL;
	}
	const char *s = (const char *)r->p;
	r->p = nul + 1;
	return s;
}

/* Reads one value of form; an unsigned constant is stored in *value, anything else skipped. */
static void read_form(struct cq_wire_reader *r, uint64_t form, unsigned offset_size,
                      uint64_t *value)
{
	*value = 0;
	switch (form) {
	case DW_FORM_data1:
	case DW_FORM_strx1:
		*value = cq_wire_get_u8(r);
		return;
	case DW_FORM_data2:
	case DW_FORM_strx2:
		*value = get_u16(r);
		return;
	case DW_FORM_strx3:
		skip(r, 3);
		return;
	case DW_FORM_data4:
	case DW_FORM_strx4:
		*value = cq_wire_get_u32(r);
		return;
	case DW_FORM_data8:
		*value = cq_wire_get_u64(r);
		return;
	case DW_FORM_data16:
		skip(r, 16);
		return;
	case DW_FORM_udata:
	case DW_FORM_strx:
	case FORM_GNU_STR_INDEX:
		*value = get_uleb(r);
		return;
	case DW_FORM_sdata:
		(void)get_uleb(r); /* same length as an unsigned one */
		return;
	case DW_FORM_string:
		(void)get_cstring(r);
		return;
	case DW_FORM_strp:
	case DW_FORM_line_strp:
	case DW_FORM_strp_sup:
	case FORM_GNU_STRP_ALT:
		skip(r, offset_size);
		return;
	case DW_FORM_block:
		skip(r, get_uleb(r));
		return;
	case DW_FORM_block1:
		skip(r, cq_wire_get_u8(r));
		return;
	case DW_FORM_block2:
		skip(r, get_u16(r));
		return;
	case DW_FORM_block4:
		skip(r, cq_wire_get_u32(r));
		return;
	default: /* a form whose length this does not know: nothing after it can be read */
		r->failed = true;
		return;
	}
}

struct entry_format {
	unsigned n;
	uint64_t type[MAX_FORMATS], form[MAX_FORMATS];
};

static void read_format(struct cq_wire_reader *r, struct entry_format *fmt)
{
	fmt->n = cq_wire_get_u8(r);
	for (unsigned i = 0; i < fmt->n && !r->failed; i++) {
		fmt->type[i] = get_uleb(r);
		fmt->form[i] = get_uleb(r);
	}
}

/* A count of entries each at least one byte long (or none when the format is empty). */
static uint64_t get_entry_count(struct cq_wire_reader *r, const struct entry_format *fmt)
{
	uint64_t count = get_uleb(r);
	if (count > (uint64_t)(r->end - r->p) && (fmt->n > 0 || count > 0)) {
		r->failed = true;
		return 0;
	}
	return count;
}

static bool grow(struct cq_line_files *f, size_t n, const char ***names)
{
	f->dir = calloc(n ? n : 1, sizeof(*f->dir));
	*names = calloc(n ? n : 1, sizeof(**names));
	f->name = *names;
	f->n = n;
	return f->dir && *names;
}

/* Before DWARF 5: include directories, then file entries up to an empty name. */
static bool read_v4(struct cq_wire_reader *r, struct cq_line_files *f)
{
	const char *dir;
	while ((dir = get_cstring(r)) && dir[0])
		;
	/* Count the entries first, then read them again into the table. */
	struct cq_wire_reader first = *r;
	size_t n = 0;
	const char *name;
	while ((name = get_cstring(r)) && name[0]) {
		get_uleb(r);
		get_uleb(r);
		get_uleb(r);
		n++;
	}
	if (r->failed)
		return false;
	const char **names;
	if (!grow(f, n + 1, &names))
		return true; /* out of memory: the caller checks the arrays */
	*r = first;
	for (size_t i = 1; i <= n; i++) {
		names[i] = get_cstring(r);
		f->dir[i] = get_uleb(r);
		get_uleb(r);
		get_uleb(r);
	}
	return !r->failed;
}

static bool read_v5(struct cq_wire_reader *r, unsigned offset_size, struct cq_line_files *f)
{
	struct entry_format fmt;
	uint64_t value;
	read_format(r, &fmt);
	uint64_t ndirs = get_entry_count(r, &fmt);
	for (uint64_t d = 0; d < ndirs && !r->failed; d++)
		for (unsigned i = 0; i < fmt.n; i++)
			read_form(r, fmt.form[i], offset_size, &value);
	read_format(r, &fmt);
	uint64_t nfiles = get_entry_count(r, &fmt);
	if (r->failed)
		return false;
	const char **names;
	if (!grow(f, (size_t)nfiles, &names))
		return true;
	for (uint64_t k = 0; k < nfiles && !r->failed; k++)
		for (unsigned i = 0; i < fmt.n; i++) {
			read_form(r, fmt.form[i], offset_size, &value);
			if (fmt.type[i] == DW_LNCT_directory_index)
				f->dir[k] = value;
		}
	return !r->failed;
}

struct cq_error *cq_line_files_parse(const uint8_t *section, size_t len, uint64_t offset,
                                     struct cq_line_files *out)
{
	memset(out, 0, sizeof(*out));
	if (!section || offset >= len)
		return cq_error_create(CQ_ERR_FORMAT, "line table offset %#llx is past the section",
		                       (unsigned long long)offset);
	struct cq_wire_reader r = {.p = section + offset, .end = section + len};
	unsigned offset_size = 4;
	uint64_t unit_length = cq_wire_get_u32(&r);
	if (unit_length == 0xffffffff) {
		offset_size = 8;
		unit_length = cq_wire_get_u64(&r);
	}
	if (!r.failed && unit_length < (uint64_t)(r.end - r.p))
		r.end = r.p + unit_length;
	uint16_t version = get_u16(&r);
	if (r.failed || version < 2 || version > 5)
		return cq_error_create(CQ_ERR_FORMAT, "line table version %u is not read", version);
	if (version >= 5)
		skip(&r, 2); /* address_size, segment_selector_size */
	uint64_t header_length = offset_size == 8 ? cq_wire_get_u64(&r) : cq_wire_get_u32(&r);
	if (!r.failed && header_length < (uint64_t)(r.end - r.p))
		r.end = r.p + header_length;
	skip(&r, version >= 4 ? 5 : 4); /* up to line_range */
	uint8_t opcode_base = cq_wire_get_u8(&r);
	skip(&r, opcode_base ? opcode_base - 1u : 0);
	out->version = version;
	bool read = !r.failed && (version >= 5 ? read_v5(&r, offset_size, out) : read_v4(&r, out));
	if (read && (!out->dir || !out->name)) {
		cq_line_files_free(out);
		return cq_error_create(CQ_ERR_NOMEM, "line table of %zu files", out->n);
	}
	if (!read) {
		cq_line_files_free(out);
		return cq_error_create(CQ_ERR_FORMAT, "line table header at %#llx is damaged",
		                       (unsigned long long)offset);
	}
	return NULL;
}

void cq_line_files_free(struct cq_line_files *f)
{
	free(f->dir);
	free((void *)f->name);
	memset(f, 0, sizeof(*f));
}

/* True when joined is dir '/' name, the way gdb joins a unit's directory and name. */
static bool is_joined(const char *joined, const char *dir, const char *name)
{
	size_t dl = strlen(dir);
	if (strncmp(joined, dir, dl) != 0)
		return false;
	joined += dl;
	if (dl && dir[dl - 1] != '/' && *joined++ != '/')
		return false;
	return strcmp(joined, name) == 0;
}

const char *cq_line_files_display(const struct cq_line_files *f, size_t index, const char *path,
                                  const char *unit_name, const char *comp_dir)
{
	const char *shown = path;
	if (f && index < f->n && f->version < 5 && f->dir[index] == 0 && f->name[index] &&
	    f->name[index][0] != '/')
		shown = f->name[index];
	if (shown && shown[0] == '/' && unit_name && unit_name[0] && unit_name[0] != '/' &&
	    comp_dir && comp_dir[0] && is_joined(shown, comp_dir, unit_name))
		shown = unit_name;
	return shown;
}
