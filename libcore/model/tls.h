/*
 * tls.h - a thread's pthread_getspecific() value, read from a core.
 *
 * glibc keeps each thread's key values in its struct pthread: an array
 * `specific` of pointers to blocks of 32 {seq, data} entries (the first
 * block is inside struct pthread itself), and the process-wide
 * __pthread_keys[] holds each key's current sequence number; an entry whose
 * seq differs is a stale value of a deleted key.  The layout comes from
 * libc's _thread_db_* descriptors (FACTS.md section 3), read from the libc
 * file whose build-id matches the core.  When they cannot be read (no
 * matching libc file, a static program without them) the glibc 2.36 (Debian 12)
 * 2.36 x86_64 values are used and from_libc says so, so callers can warn.
 */
#ifndef CQ_TLS_H
#define CQ_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cq_core;
struct cq_core_thread;

struct cq_tls_layout {
	bool from_libc;           /* false: glibc 2.36's values (arch table), or none */
	uint64_t specific_offset; /* of pthread.specific[] in struct pthread */
	uint32_t specific_count;  /* second-level pointers (32) */
	uint32_t block_entries;   /* entries per block (32) */
	uint64_t entry_size;      /* sizeof(struct pthread_key_data) (16) */
	uint64_t entry_seq;       /* offset of seq in an entry (0) */
	uint64_t entry_data;      /* offset of data in an entry (8) */
	uint64_t keys_addr;       /* runtime address of __pthread_keys[]; 0: unknown */
	uint32_t keys_count;      /* 1024 */
	uint64_t key_size;        /* sizeof(struct pthread_key_struct) (16) */
	uint64_t key_seq;         /* offset of seq in it (0) */
	uint64_t sizeof_pthread;  /* 2368 on x86_64 */
};

/* Reads the layout from the core's libc, else fills in the fallback values. */
void cq_tls_layout_load(struct cq_core *core, struct cq_tls_layout *out);

enum cq_tls_result {
	CQ_TLS_VALUE,      /* *value is the thread's value (may be 0) */
	CQ_TLS_NONE,       /* the thread never set the key */
	CQ_TLS_STALE,      /* a value of a deleted key with the same number */
	CQ_TLS_UNREADABLE, /* no thread pointer, or memory the core lacks */
};

/*
 * Finds the thread pointer of every thread the core gave none (an
 * architecture whose thread pointer is in a note: qemu-user writes no
 * NT_ARM_TLS), from its struct pthread in memory; returns how many it
 * found (each marked tp_recovered).  Costs a pass over writable memory, so
 * callers ask only when they need thread pointers.
 */
size_t cq_tls_recover_thread_pointers(struct cq_core *core);

/* The thread's value for key (any key below keys_count, including >= 32). */
enum cq_tls_result cq_tls_get_specific(struct cq_core *core, const struct cq_tls_layout *l,
                                       const struct cq_core_thread *thread, uint32_t key,
                                       uint64_t *value);

#endif
