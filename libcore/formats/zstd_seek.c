/*
 * zstd_seek.c - read and write the seek table of zstd's seekable format
 * (see zstd_seek.h).  Every field is checked before it is used: a table is
 * believed only if its frames tile the file exactly up to the table.
 *
 * Invariants (asserted): once the footer is checked the entries lie inside
 * the table; a parsed table's frames are non-empty and tile [0, raw_size)
 * and the compressed bytes before the table; a find lands in the frame
 * holding the offset.
 */
#include "libcore/formats/zstd_seek.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "libcore/base/bytes.h"

#define DESC_CHECKSUM 0x80u
#define DESC_RESERVED 0x7cu

static size_t entry_size(uint8_t desc)
{
	return desc & DESC_CHECKSUM ? 12 : 8;
}

bool cq_zseek_has_footer(const uint8_t *tail, size_t n)
{
	return n >= CQ_ZSEEK_FOOTER && cq_load_u32(tail + n - 4) == CQ_ZSEEK_MAGIC;
}

uint64_t cq_zseek_table_size(const uint8_t footer[CQ_ZSEEK_FOOTER], uint64_t file_size)
{
	if (cq_load_u32(footer + 5) != CQ_ZSEEK_MAGIC || (footer[4] & DESC_RESERVED))
		return 0;
	uint64_t n = cq_load_u32(footer);
	if (n > CQ_ZSEEK_MAX_FRAMES)
		return 0;
	uint64_t size = 8 + n * entry_size(footer[4]) + CQ_ZSEEK_FOOTER;
	/* every frame takes at least one byte of the file besides its entry */
	if (size > file_size || n > file_size - size)
		return 0;
	return size;
}

void cq_zseek_free(struct cq_zseek *z)
{
	free(z->frame);
	memset(z, 0, sizeof(*z));
}

struct cq_error *cq_zseek_parse(const uint8_t *table, size_t table_size, uint64_t file_size,
                                uint64_t max_raw, struct cq_zseek *out)
{
	memset(out, 0, sizeof(*out));
	if (table_size < 8 + CQ_ZSEEK_FOOTER || table_size > file_size)
		return cq_error_create(CQ_ERR_FORMAT, "seek table: %zu bytes is no table",
		                       table_size);
	const uint8_t *foot = table + table_size - CQ_ZSEEK_FOOTER;
	if (cq_zseek_table_size(foot, file_size) != table_size)
		return cq_error_create(CQ_ERR_FORMAT,
		                       "seek table: its footer does not describe %zu bytes",
		                       table_size);
	if (cq_load_u32(table) != CQ_ZSEEK_SKIP_MAGIC || cq_load_u32(table + 4) != table_size - 8)
		return cq_error_create(CQ_ERR_FORMAT,
		                       "seek table: not a skippable frame of its own size");
	size_t n = cq_load_u32(foot), esize = entry_size(foot[4]);
	assert(8 + n * esize + CQ_ZSEEK_FOOTER == table_size);
	if (n == 0)
		return cq_error_create(CQ_ERR_FORMAT, "seek table: no frames");
	struct cq_zseek_frame *f = calloc(n, sizeof(*f));
	if (!f)
		return &cq_error_nomem;
	uint64_t comp = 0, raw = 0, data_end = file_size - table_size;
	struct cq_error *err = NULL;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *e = table + 8 + i * esize;
		f[i] = (struct cq_zseek_frame){.comp_off = comp,
		                               .raw_off = raw,
		                               .comp_size = cq_load_u32(e),
		                               .raw_size = cq_load_u32(e + 4)};
		if (f[i].comp_size == 0 || f[i].raw_size == 0 ||
		    f[i].raw_size > CQ_ZSEEK_MAX_FRAME) {
			err = cq_error_create(CQ_ERR_FORMAT,
			                      "seek table: frame %zu has %u bytes compressed, %u "
			                      "decompressed (at most %u)",
			                      i, f[i].comp_size, f[i].raw_size, CQ_ZSEEK_MAX_FRAME);
			break;
		}
		if (f[i].comp_size > ZSTD_COMPRESSBOUND(f[i].raw_size)) {
			err =
			    cq_error_create(CQ_ERR_FORMAT,
			                    "seek table: frame %zu has %u bytes compressed for %u "
			                    "decompressed (zstd's bound is %zu)",
			                    i, f[i].comp_size, f[i].raw_size,
			                    (size_t)ZSTD_COMPRESSBOUND(f[i].raw_size));
			break;
		}
		if (f[i].comp_size > data_end - comp) {
			err = cq_error_create(
			    CQ_ERR_FORMAT, "seek table: frame %zu ends past the table's start", i);
			break;
		}
		comp += f[i].comp_size;
		raw += f[i].raw_size;
		if (max_raw && raw > max_raw) {
			err = cq_error_create(
			    CQ_ERR_LIMIT, "seek table: frames decompress to more than %llu bytes",
			    (unsigned long long)max_raw);
			break;
		}
	}
	if (!err && comp != data_end)
		err = cq_error_create(CQ_ERR_FORMAT,
		                      "seek table: frames cover %llu of the %llu bytes before it",
		                      (unsigned long long)comp, (unsigned long long)data_end);
	if (err) {
		free(f);
		return err;
	}
	assert(comp == data_end && raw >= n && f[n - 1].raw_off + f[n - 1].raw_size == raw);
	*out = (struct cq_zseek){.frame = f, .n = n, .raw_size = raw, .table_size = table_size};
	return NULL;
}

size_t cq_zseek_find(const struct cq_zseek *z, uint64_t raw_off)
{
	assert(z && (z->frame || z->n == 0));
	size_t lo = 0, hi = z->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (z->frame[mid].raw_off + z->frame[mid].raw_size <= raw_off)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t at = lo < z->n && z->frame[lo].raw_off <= raw_off ? lo : z->n;
	assert(at == z->n || raw_off - z->frame[at].raw_off < z->frame[at].raw_size);
	return at;
}

static void put_u32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

size_t cq_zseek_encoded_size(size_t n)
{
	return 8 + 8 * n + CQ_ZSEEK_FOOTER;
}

void cq_zseek_encode(const uint32_t *comp_size, const uint32_t *raw_size, size_t n, uint8_t *buf)
{
	assert(buf && (comp_size || n == 0) && (raw_size || n == 0) && n <= CQ_ZSEEK_MAX_FRAMES);
	size_t size = cq_zseek_encoded_size(n);
	put_u32(buf, CQ_ZSEEK_SKIP_MAGIC);
	put_u32(buf + 4, (uint32_t)(size - 8));
	for (size_t i = 0; i < n; i++) {
		put_u32(buf + 8 + 8 * i, comp_size[i]);
		put_u32(buf + 12 + 8 * i, raw_size[i]);
	}
	uint8_t *foot = buf + size - CQ_ZSEEK_FOOTER;
	put_u32(foot, (uint32_t)n);
	foot[4] = 0;
	put_u32(foot + 5, CQ_ZSEEK_MAGIC);
}
