/*
 * memory.c - layered segment reader over the target's address space.
 *
 * Lookups are a binary search per layer with a one-entry cache, because the
 * unwinder reads many words from the same stack segment in a row.
 */
#include "libcore/base/memory.h"

#include <stdlib.h>
#include <string.h>

void cq_mem_init(struct cq_mem *mem)
{
	memset(mem, 0, sizeof(*mem));
}

void cq_mem_destroy(struct cq_mem *mem)
{
	for (int i = 0; i < CQ_MEM_LAYERS; i++)
		free(mem->layer[i].seg);
	memset(mem, 0, sizeof(*mem));
}

struct cq_error *cq_mem_add(struct cq_mem *mem, enum cq_mem_layer layer, uint64_t start,
                            uint64_t end, const uint8_t *data, uint64_t data_len, unsigned flags)
{
	return cq_mem_add_at(mem, layer, start, end, data, data_len, flags, 0);
}

struct cq_error *cq_mem_add_at(struct cq_mem *mem, enum cq_mem_layer layer, uint64_t start,
                               uint64_t end, const uint8_t *data, uint64_t data_len, unsigned flags,
                               uint64_t file_off)
{
	if ((unsigned)layer >= CQ_MEM_LAYERS || end < start)
		return cq_error_create(CQ_ERR_USAGE, "bad memory segment");
	if (end == start)
		return NULL;
	struct cq_mem_layer_set *set = &mem->layer[layer];
	if (set->n == set->cap) {
		size_t cap = set->cap ? set->cap * 2 : 64;
		struct cq_mem_segment *seg = realloc(set->seg, cap * sizeof(*seg));
		if (!seg)
			return &cq_error_nomem;
		set->seg = seg;
		set->cap = cap;
	}
	if (data_len > end - start)
		data_len = end - start;
	set->seg[set->n++] = (struct cq_mem_segment){
	    .start = start,
	    .end = end,
	    .data = data_len ? data : NULL,
	    .data_len = data ? data_len : 0,
	    .flags = flags,
	    .file_off = file_off,
	};
	return NULL;
}

static int segment_cmp(const void *a, const void *b)
{
	const struct cq_mem_segment *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? 1 : x->end > y->end ? -1 : 0; /* longest first */
}

void cq_mem_finish(struct cq_mem *mem)
{
	for (int l = 0; l < CQ_MEM_LAYERS; l++) {
		struct cq_mem_layer_set *set = &mem->layer[l];
		if (set->n > 1)
			qsort(set->seg, set->n, sizeof(*set->seg), segment_cmp);
		/* Trim overlaps so the search can assume disjoint, sorted ranges. */
		size_t out = 0;
		for (size_t i = 0; i < set->n; i++) {
			struct cq_mem_segment s = set->seg[i];
			if (out > 0 && s.start < set->seg[out - 1].end) {
				uint64_t cut = set->seg[out - 1].end - s.start;
				if (cut >= s.end - s.start)
					continue;
				s.start += cut;
				s.file_off += s.file_off ? cut : 0;
				if (s.data_len > cut) {
					s.data += cut;
					s.data_len -= cut;
				} else {
					s.data = NULL;
					s.data_len = 0;
				}
			}
			set->seg[out++] = s;
		}
		set->n = out;
		mem->last_hit[l] = 0;
	}
}

static const struct cq_mem_segment *layer_find(struct cq_mem *mem, int l, uint64_t addr)
{
	struct cq_mem_layer_set *set = &mem->layer[l];
	if (set->n == 0)
		return NULL;
	size_t hint = mem->last_hit[l];
	if (hint < set->n && set->seg[hint].start <= addr && addr < set->seg[hint].end)
		return &set->seg[hint];
	size_t lo = 0, hi = set->n; /* find the last segment with start <= addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (set->seg[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= set->seg[lo - 1].end)
		return NULL;
	mem->last_hit[l] = lo - 1;
	return &set->seg[lo - 1];
}

const struct cq_mem_segment *cq_mem_find(struct cq_mem *mem, uint64_t addr)
{
	for (int l = 0; l < CQ_MEM_LAYERS; l++) {
		const struct cq_mem_segment *s = layer_find(mem, l, addr);
		if (s)
			return s;
	}
	return NULL;
}

/* Bytes readable at addr from one segment of the first layer that holds them. */
static size_t read_chunk(struct cq_mem *mem, uint64_t addr, uint8_t *buf, size_t len)
{
	for (int l = 0; l < CQ_MEM_LAYERS; l++) {
		const struct cq_mem_segment *s = layer_find(mem, l, addr);
		if (!s || addr - s->start >= s->data_len)
			continue;
		uint64_t off = addr - s->start;
		uint64_t avail = s->data_len - off;
		size_t n = len < avail ? len : (size_t)avail;
		memcpy(buf, s->data + off, n);
		return n;
	}
	return 0;
}

size_t cq_mem_read_partial(struct cq_mem *mem, uint64_t addr, void *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		if (addr + done < addr)
			break; /* wrapped around the address space */
		size_t n = read_chunk(mem, addr + done, (uint8_t *)buf + done, len - done);
		if (n == 0)
			break;
		done += n;
	}
	return done;
}

bool cq_mem_read(struct cq_mem *mem, uint64_t addr, void *buf, size_t len)
{
	return cq_mem_read_partial(mem, addr, buf, len) == len;
}

bool cq_mem_read_u64(struct cq_mem *mem, uint64_t addr, uint64_t *out)
{
	uint8_t b[8];
	if (!cq_mem_read(mem, addr, b, sizeof(b)))
		return false;
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	*out = v;
	return true;
}

bool cq_mem_read_u32(struct cq_mem *mem, uint64_t addr, uint32_t *out)
{
	uint8_t b[4];
	if (!cq_mem_read(mem, addr, b, sizeof(b)))
		return false;
	*out = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	return true;
}

bool cq_mem_read_string(struct cq_mem *mem, uint64_t addr, char *buf, size_t cap)
{
	if (cap == 0)
		return false;
	size_t n = cq_mem_read_partial(mem, addr, buf, cap - 1);
	buf[n] = '\0';
	/* A string cut at cap-1 is returned truncated; one cut by absent memory is not. */
	return memchr(buf, '\0', n) != NULL || n == cap - 1;
}

const struct cq_mem_segment *cq_mem_core_segments(const struct cq_mem *mem, size_t *n)
{
	*n = mem->layer[CQ_MEM_LAYER_CORE].n;
	return mem->layer[CQ_MEM_LAYER_CORE].seg;
}
