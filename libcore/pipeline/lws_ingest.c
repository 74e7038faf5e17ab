/*
 * lws_ingest.c - name the addresses of lws records with an ELF's symbols,
 * and store a log's records as allocation sites (see lws_ingest.h).
 *
 * While a log is read, its records are counted in an open-addressing table
 * keyed by (addresses, size), so a log of a million records of a few hundred
 * sites holds a few hundred entries; only then are the distinct stacks named
 * and stored, in one transaction.
 */
#include "libcore/pipeline/lws_ingest.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/hash.h"
#include "libcore/formats/lws_log.h"
#include "libcore/store/store.h"

#define TABLE_MIN_CAP 64u

struct cq_error *cq_lws_elf_open(const char *path, const char *const *debug_dirs,
                                 struct cq_cache *cache, struct cq_lws_elf **out)
{
	*out = NULL;
	struct cq_lws_elf *elf = calloc(1, sizeof(*elf));
	if (!elf)
		return &cq_error_nomem;
	struct cq_error *err = cq_module_open_elf(path, &elf->module);
	if (err) {
		free(elf);
		return err;
	}
	err = cq_symbolizer_create_modules(&elf->module, 1, debug_dirs, cache, &elf->symbolizer);
	if (err) {
		cq_lws_elf_close(elf);
		return err;
	}
	*out = elf;
	return NULL;
}

void cq_lws_elf_close(struct cq_lws_elf *elf)
{
	if (!elf)
		return;
	cq_symbolizer_destroy(elf->symbolizer);
	cq_module_destroy(&elf->module);
	free(elf);
}

size_t cq_lws_elf_frames(struct cq_lws_elf *elf, const struct cq_lws_stack *s,
                         struct cq_stack_frame *frames, size_t cap)
{
	size_t n = 0;
	for (unsigned i = 0; i < s->depth && i < CQ_LWS_MAX_DEPTH && n < cap; i++) {
		uint64_t pc = s->addr[i];
		const struct cq_module *mod =
		    elf ? cq_module_find(&elf->module, 1, pc ? pc - 1 : pc) : NULL;
		struct cq_stack_frame base = {.pc = pc,
		                              .kind = CQ_FRAME_NATIVE,
		                              .trust = CQ_TRUST_LOG,
		                              .module = mod,
		                              .offset = mod ? pc - mod->bias : pc};
		const struct cq_symbol_frame *sym = NULL;
		size_t nsym = elf ? cq_symbolizer_lookup(elf->symbolizer, pc, true, &sym) : 0;
		if (nsym == 0) {
			frames[n++] = base;
			continue;
		}
		for (size_t k = 0; k < nsym && n < cap; k++) {
			struct cq_stack_frame f = base;
			f.kind = sym[k].inlined ? CQ_FRAME_INLINE : CQ_FRAME_NATIVE;
			f.function = sym[k].function;
			f.file = sym[k].file;
			f.line = sym[k].line;
			frames[n++] = f;
		}
	}
	return n;
}

/* ---- counting a log's records ------------------------------------------------- */

struct site_entry {
	struct cq_lws_stack stack;
	uint64_t count; /* 0: empty slot */
};

struct site_table {
	struct site_entry *slots;
	size_t cap, used;
};

static uint64_t stack_key_hash(const struct cq_lws_stack *s)
{
	uint64_t h = CQ_FNV_OFFSET ^ s->depth;
	for (unsigned i = 0; i < s->depth; i++)
		h = cq_fnv1a_step(h, s->addr[i]);
	h = cq_fnv1a_step(h, s->size);
	return h ^ (h >> 29);
}

static bool same_stack(const struct cq_lws_stack *a, const struct cq_lws_stack *b)
{
	return a->depth == b->depth && a->size == b->size &&
	       !memcmp(a->addr, b->addr, a->depth * sizeof(a->addr[0]));
}

static struct site_entry *probe(struct site_entry *slots, size_t cap, const struct cq_lws_stack *s)
{
	size_t mask = cap - 1;
	for (size_t i = (size_t)stack_key_hash(s) & mask, n = 0; n < cap; n++, i = (i + 1) & mask)
		if (!slots[i].count || same_stack(&slots[i].stack, s))
			return &slots[i];
	return NULL;
}

static struct cq_error *table_grow(struct site_table *t)
{
	size_t cap = t->cap ? t->cap * 2 : TABLE_MIN_CAP;
	struct site_entry *slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return &cq_error_nomem;
	for (size_t i = 0; i < t->cap; i++)
		if (t->slots[i].count)
			*probe(slots, cap, &t->slots[i].stack) = t->slots[i];
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	return NULL;
}

static struct cq_error *table_add(struct site_table *t, const struct cq_lws_stack *s)
{
	struct site_entry *e = t->cap ? probe(t->slots, t->cap, s) : NULL;
	if (e && e->count) {
		e->count++;
		return NULL;
	}
	if (t->used == CQ_LWS_MAX_SITES)
		return cq_error_create(CQ_ERR_LIMIT, "more than %u distinct records",
		                       CQ_LWS_MAX_SITES);
	if ((t->used + 1) * 4 > t->cap * 3) {
		struct cq_error *err = table_grow(t);
		if (err)
			return err;
	}
	e = probe(t->slots, t->cap, s);
	e->stack = *s;
	e->count = 1;
	t->used++;
	return NULL;
}

/* Decodes every record of the line into the table; warns about bad ones. */
static struct cq_error *scan_line(const struct cq_lws_log_reader *rd, struct site_table *t,
                                  cq_lws_warn_fn warn, void *ctx, struct cq_lws_ingest_result *r)
{
	size_t from = 0, start, end;
	if (rd->truncated && warn)
		warn(ctx, rd->lineno, "line longer than 64 KiB: only its start was searched");
	while (cq_lws_log_find_record(rd->line, rd->len, from, &start, &end)) {
		from = end;
		struct cq_lws_stack s;
		struct cq_error *err = cq_lws_decode_text(rd->line + start, end - start, &s);
		if (err) {
			r->malformed++;
			if (warn)
				warn(ctx, rd->lineno, err->message);
			cq_error_free(err);
			continue;
		}
		if ((err = table_add(t, &s)))
			return err;
		r->records++;
	}
	return NULL;
}

/* ---- storing ------------------------------------------------------------------- */

static struct cq_error *store_sites(struct cq_store *store, struct cq_lws_elf *elf,
                                    const struct site_table *t, const struct cq_store_lws_log *log,
                                    struct cq_lws_ingest_result *r)
{
	/*
	 * Frames are packed as they come (a site has as many as its stack
	 * names, not the maximum), so memory follows the log, not 2^18 times
	 * the largest possible stack.
	 */
	struct cq_store_lws_site *sites = t->used ? calloc(t->used, sizeof(*sites)) : NULL;
	size_t *first = t->used ? calloc(t->used, sizeof(*first)) : NULL;
	struct cq_stack_frame *scratch = malloc(CQ_LWS_MAX_FRAMES * sizeof(*scratch));
	struct cq_stack_frame *frames = NULL;
	size_t nframes = 0, cap = 0, n = 0;
	struct cq_error *err = NULL;
	if ((t->used && (!sites || !first)) || !scratch)
		err = &cq_error_nomem;
	for (size_t i = 0; i < t->cap && !err; i++) {
		const struct site_entry *e = &t->slots[i];
		if (!e->count)
			continue;
		size_t nf = cq_lws_elf_frames(elf, &e->stack, scratch, CQ_LWS_MAX_FRAMES);
		if (nframes + nf > cap) {
			size_t ncap = cap ? cap * 2 : 256;
			while (ncap < nframes + nf)
				ncap *= 2;
			struct cq_stack_frame *g = realloc(frames, ncap * sizeof(*g));
			if (!g) {
				err = &cq_error_nomem;
				break;
			}
			frames = g;
			cap = ncap;
		}
		memcpy(frames + nframes, scratch, nf * sizeof(*scratch));
		first[n] = nframes;
		sites[n] = (struct cq_store_lws_site){
		    .nframes = nf, .size = e->stack.size, .count = e->count};
		nframes += nf;
		n++;
	}
	for (size_t i = 0; i < n; i++)
		sites[i].frames = frames + first[i];
	free(scratch);
	free(first);
	if (err) {
		free(sites);
		free(frames);
		return err;
	}
	struct cq_store_lws_result sr;
	err = cq_store_ingest_lws(store, log, sites, n, &sr);
	if (!err) {
		r->log_id = sr.log_id;
		r->duplicate = sr.duplicate;
		r->stacks = sr.stacks;
		r->new_stacks = sr.new_stacks;
		r->sites = n;
	}
	free(sites);
	free(frames);
	return err;
}

struct cq_error *cq_lws_ingest_log(struct cq_store *store, struct cq_lws_elf *elf, FILE *in,
                                   const char *path, cq_lws_warn_fn warn, void *ctx,
                                   struct cq_lws_ingest_result *result)
{
	memset(result, 0, sizeof(*result));
	struct cq_lws_log_reader rd;
	struct site_table t = {0};
	struct cq_error *err = cq_lws_log_reader_init(&rd, in);
	while (!err && cq_lws_log_next_line(&rd, &err))
		err = scan_line(&rd, &t, warn, ctx, result);
	if (!err) {
		char id[2 * CQ_BUILD_ID_MAX + 1];
		cq_module_build_id_hex(&elf->module, id, sizeof(id));
		char *identity = NULL;
		if (asprintf(&identity, "%" PRIu64 "-%016" PRIx64 "-%s%s", rd.bytes, rd.hash,
		             id[0] ? "" : "path:", id[0] ? id : elf->module.name) < 0)
			err = &cq_error_nomem;
		result->lines = rd.lineno;
		struct cq_store_lws_log log = {.path = path,
		                               .identity = identity,
		                               .elf = &elf->module,
		                               .bytes = rd.bytes,
		                               .lines = rd.lineno,
		                               .records = result->records,
		                               .malformed = result->malformed};
		if (!err)
			err = store_sites(store, elf, &t, &log, result);
		free(identity);
	}
	cq_lws_log_reader_free(&rd);
	free(t.slots);
	if (err) {
		uint64_t line = rd.lineno;
		memset(result, 0, sizeof(*result));
		result->lines = line;
	}
	return err;
}
