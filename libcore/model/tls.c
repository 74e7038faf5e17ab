/*
 * tls.c - pthread_getspecific() of a thread in a core (see tls.h).
 *
 * Each descriptor _thread_db_<struct>_<field> is uint32_t[3] = {size in bits,
 * count, byte offset}; _thread_db_sizeof_<type> is one uint32_t.  They are in
 * libc's .rodata, which the core does not hold: the memory reader's file
 * layer supplies it from the libc file, which module loading only accepts
 * when its build-id matches the core.  For key k the value is at
 * specific[k / 32] + entry_size * (k % 32), valid when its seq equals
 * __pthread_keys[k].seq.
 */
#include "libcore/model/tls.h"

#include <string.h>

#include "libcore/model/core.h"
#include "libcore/model/elf_symbols.h"
#include "libcore/model/module.h"

enum {
	Q_SPECIFIC,
	Q_DATA_SEQ,
	Q_DATA_DATA,
	Q_SIZEOF_DATA,
	Q_LEVEL2,
	Q_KEYS_DESC,
	Q_KEY_SEQ,
	Q_SIZEOF_KEY,
	Q_SIZEOF_PTHREAD,
	Q_KEYS,
	Q_COUNT,
};

static const char *const query_names[Q_COUNT] = {
    [Q_SPECIFIC] = "_thread_db_pthread_specific",
    [Q_DATA_SEQ] = "_thread_db_pthread_key_data_seq",
    [Q_DATA_DATA] = "_thread_db_pthread_key_data_data",
    [Q_SIZEOF_DATA] = "_thread_db_sizeof_pthread_key_data",
    [Q_LEVEL2] = "_thread_db_pthread_key_data_level2_data",
    [Q_KEYS_DESC] = "_thread_db___pthread_keys",
    [Q_KEY_SEQ] = "_thread_db_pthread_key_struct_seq",
    [Q_SIZEOF_KEY] = "_thread_db_sizeof_pthread_key_struct",
    [Q_SIZEOF_PTHREAD] = "_thread_db_sizeof_pthread",
    [Q_KEYS] = "__pthread_keys",
};

/*
 * glibc's layout where its libc lacks the descriptors: the generic parts
 * here, the per-architecture offsets from the arch table (fallback()).
 */
static const struct cq_tls_layout glibc_generic = {
    .specific_count = 32,
    .block_entries = 32,
    .entry_size = 16,
    .entry_seq = 0,
    .entry_data = 8,
    .keys_count = 1024,
    .key_size = 16,
    .key_seq = 0,
};

/* The fallback for core's architecture; keys_count 0 (no key readable) if it has none. */
static struct cq_tls_layout fallback(const struct cq_core *core)
{
	struct cq_tls_layout l = glibc_generic;
	l.specific_offset = core->arch->glibc_specific_offset;
	l.sizeof_pthread = core->arch->glibc_sizeof_pthread;
	if (l.specific_offset == 0)
		l.keys_count = 0;
	return l;
}

/* Reads a {bits, count, offset} descriptor; false if unreadable or absurd. */
static bool read_desc(struct cq_core *core, const struct cq_symbol_query *q, uint32_t d[3])
{
	if (!q->found)
		return false;
	for (int i = 0; i < 3; i++)
		if (!cq_mem_read_u32(&core->mem, q->addr + 4u * (unsigned)i, &d[i]))
			return false;
	return d[0] > 0 && d[0] % 8 == 0 && d[1] > 0 && d[2] < (1u << 20);
}

static bool read_sizeof(struct cq_core *core, const struct cq_symbol_query *q, uint32_t *v)
{
	return q->found && cq_mem_read_u32(&core->mem, q->addr, v) && *v > 0 && *v < (1u << 20);
}

/* Fills l from the descriptors; false when any needed one is missing or odd. */
static bool layout_from(struct cq_core *core, const struct cq_symbol_query *q,
                        struct cq_tls_layout *l)
{
	uint32_t spec[3], seq[3], data[3], level2[3], keys[3], kseq[3];
	uint32_t sz_data, sz_key, sz_pthread;
	if (!read_desc(core, &q[Q_SPECIFIC], spec) || !read_desc(core, &q[Q_DATA_SEQ], seq) ||
	    !read_desc(core, &q[Q_DATA_DATA], data) || !read_desc(core, &q[Q_KEYS_DESC], keys) ||
	    !read_desc(core, &q[Q_KEY_SEQ], kseq) ||
	    !read_sizeof(core, &q[Q_SIZEOF_DATA], &sz_data) ||
	    !read_sizeof(core, &q[Q_SIZEOF_KEY], &sz_key) ||
	    !read_sizeof(core, &q[Q_SIZEOF_PTHREAD], &sz_pthread))
		return false;
	/* specific[] is one array member of count 1 and size 32 pointers. */
	uint32_t nspecific = spec[0] / 64;
	if (nspecific == 0 || seq[0] != 64 || data[0] != 64)
		return false;
	l->from_libc = true;
	l->specific_offset = spec[2];
	l->specific_count = nspecific;
	l->block_entries = read_desc(core, &q[Q_LEVEL2], level2) ? level2[1] : 32;
	l->entry_size = sz_data;
	l->entry_seq = seq[2];
	l->entry_data = data[2];
	l->keys_count = keys[1];
	l->key_size = sz_key;
	l->key_seq = kseq[2];
	l->sizeof_pthread = sz_pthread;
	l->keys_addr = q[Q_KEYS].found ? q[Q_KEYS].addr + keys[2] : 0;
	return l->block_entries > 0 && l->entry_size >= 16;
}

void cq_tls_layout_load(struct cq_core *core, struct cq_tls_layout *out)
{
	*out = fallback(core);
	for (size_t m = 0; m < core->nmodules; m++) {
		struct cq_symbol_query q[Q_COUNT];
		memset(q, 0, sizeof(q));
		for (int i = 0; i < Q_COUNT; i++)
			q[i].name = query_names[i];
		cq_elf_find_symbols(&core->modules[m], q, Q_COUNT);
		if (!q[Q_SPECIFIC].found)
			continue;
		struct cq_tls_layout l = fallback(core);
		if (layout_from(core, q, &l)) {
			*out = l;
			return;
		}
	}
}

enum cq_tls_result cq_tls_get_specific(struct cq_core *core, const struct cq_tls_layout *l,
                                       const struct cq_core_thread *thread, uint32_t key,
                                       uint64_t *value)
{
	*value = 0;
	if (!thread->has_tp || key >= l->keys_count)
		return CQ_TLS_UNREADABLE;
	uint64_t self = thread->tp;
	if (core->arch->tp_pthread_adjust)
		self -= l->sizeof_pthread;
	uint32_t block = key / l->block_entries, slot = key % l->block_entries;
	if (block >= l->specific_count)
		return CQ_TLS_UNREADABLE;
	uint64_t level2;
	if (!cq_mem_read_u64(&core->mem, self + l->specific_offset + 8ull * block, &level2))
		return CQ_TLS_UNREADABLE;
	if (level2 == 0)
		return CQ_TLS_NONE;
	uint64_t entry = level2 + l->entry_size * slot, seq, data;
	if (!cq_mem_read_u64(&core->mem, entry + l->entry_seq, &seq) ||
	    !cq_mem_read_u64(&core->mem, entry + l->entry_data, &data))
		return CQ_TLS_UNREADABLE;
	if (seq == 0 && data == 0)
		return CQ_TLS_NONE;
	if (l->keys_addr) {
		uint64_t key_seq;
		if (!cq_mem_read_u64(&core->mem, l->keys_addr + l->key_size * key + l->key_seq,
		                     &key_seq))
			return CQ_TLS_UNREADABLE;
		if (seq != key_seq)
			return CQ_TLS_STALE;
	}
	*value = data;
	return CQ_TLS_VALUE;
}

/*
 * Thread pointers a core does not record (qemu-user writes no NT_ARM_TLS):
 * each such thread's struct pthread is found by its tid, at the offset
 * libc's _thread_db_pthread_tid descriptor gives, in the core's writable
 * memory; a candidate counts only when its `list` member is a well-formed
 * node of glibc's doubly linked thread list (next->prev and prev->next
 * lead back to it), which random words equal to a tid are not.
 */
enum { R_TID, R_LIST, R_NEXT, R_PREV, R_SIZEOF, R_COUNT };

static bool list_node_ok(struct cq_core *core, uint64_t node, uint64_t next_off, uint64_t prev_off)
{
	uint64_t next, prev, back;
	return cq_mem_read_u64(&core->mem, node + next_off, &next) &&
	       cq_mem_read_u64(&core->mem, node + prev_off, &prev) && next && prev &&
	       cq_mem_read_u64(&core->mem, next + prev_off, &back) && back == node &&
	       cq_mem_read_u64(&core->mem, prev + next_off, &back) && back == node;
}

size_t cq_tls_recover_thread_pointers(struct cq_core *core)
{
	if (core->arch->tp_source != CQ_ARCH_TP_NOTE)
		return 0;
	size_t missing = 0;
	for (size_t t = 0; t < core->nthreads; t++)
		missing += !core->threads[t].has_tp;
	if (!missing)
		return 0;
	struct cq_symbol_query q[R_COUNT] = {
	    [R_TID] = {.name = "_thread_db_pthread_tid"},
	    [R_LIST] = {.name = "_thread_db_pthread_list"},
	    [R_NEXT] = {.name = "_thread_db_list_t_next"},
	    [R_PREV] = {.name = "_thread_db_list_t_prev"},
	    [R_SIZEOF] = {.name = "_thread_db_sizeof_pthread"},
	};
	for (size_t m = 0; m < core->nmodules; m++)
		if (cq_elf_find_symbols(&core->modules[m], q, R_COUNT) == R_COUNT)
			break;
	uint32_t tid[3], list[3], next[3], prev[3], size;
	if (!read_desc(core, &q[R_TID], tid) || tid[0] != 32 ||
	    !read_desc(core, &q[R_LIST], list) || !read_desc(core, &q[R_NEXT], next) ||
	    !read_desc(core, &q[R_PREV], prev) || !read_sizeof(core, &q[R_SIZEOF], &size) ||
	    (uint64_t)tid[2] + 4 > size || (uint64_t)list[2] + 16 > size)
		return 0;
	size_t found = 0, nseg;
	const struct cq_mem_segment *seg = cq_mem_core_segments(&core->mem, &nseg);
	for (size_t g = 0; g < nseg && found < missing; g++) {
		const struct cq_mem_segment *s = &seg[g];
		if (!(s->flags & CQ_MEM_WRITE) || !s->data)
			continue;
		/* struct pthread is at least 8-aligned: tid sits at tid[2] mod 8. */
		uint64_t first = (s->start + 7) & ~7ull;
		for (uint64_t pd = first; pd + size <= s->start + s->data_len && found < missing;
		     pd += 8) {
			uint32_t v;
			memcpy(&v, s->data + (pd - s->start) + tid[2], sizeof(v));
			for (size_t t = 0; t < core->nthreads; t++) {
				struct cq_core_thread *th = &core->threads[t];
				if (th->has_tp || v != (uint32_t)th->tid ||
				    !list_node_ok(core, pd + list[2], next[2], prev[2]))
					continue;
				th->tp = pd + size; /* TLS above the thread control block */
				th->has_tp = th->tp_recovered = true;
				found++;
				break;
			}
		}
	}
	return found;
}
