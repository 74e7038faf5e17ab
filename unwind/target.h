/*
 * target.h - everything the unwinder and the async runtimes may ask of the
 * process they look at, as one struct of operations (drgn's memory reader
 * and platform are the model).
 *
 * unwind/ and unwind/async/ include only libcore/base and their own
 * headers: they never see the core file, its model, the symbolizer, the
 * debuginfo search or the cache.  libcore/analysis/unwind_target.c
 * implements this interface once over a core and hands it down; tests and
 * fuzz targets implement the parts they need over synthetic memory (an
 * operation a target does not offer is NULL, and a caller that finds it
 * NULL does without).
 *
 * What a target offers:
 *   - memory: read (through the unwinder's page cache), the address space
 *     itself (base/memory.h: segments, flags, the bytes the core holds), and
 *     advice about the pages a scan is about to read or is done with;
 *   - per pc: the CFI table and load bias, whether it is code, the stack
 *     mapping around an sp;
 *   - modules (their file, build-id, bias and ELF) and the data symbols
 *     they define;
 *   - threads: their registers, and pthread_getspecific as glibc keeps it;
 *   - names: the function at a pc, and an unwound frame turned into named
 *     frames (inline calls expanded);
 *   - DWARF: a module's debugging information, opened once by the target
 *     from the debuginfo it finds (a runtime never opens files);
 *   - the cache: blobs a runtime derives from a module, stored per module
 *     under (runtime, blob name, format) (the target decides which files
 *     prove a blob's origin).
 *
 * Layer: unwind.
 */
#ifndef CQ_TARGET_H
#define CQ_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcore/base/arch.h"
#include "libcore/base/error.h"
#include "libcore/base/feed.h"

struct cq_cfi_table;
struct cq_frame_list;
struct cq_mem;
struct cq_unwind_frame;
struct Dwarf;          /* libdw's Dwarf */
struct cq_core_thread; /* handles of the core model, never looked into here */
struct cq_module;

/* A module of the target, as the runtimes may see it. */
struct cq_target_module {
	const struct cq_module *handle; /* what frames point at */
	const char *name;               /* path as the process had it, or "[vdso]" */
	const char *file_path;          /* the file used on this host, when found */
	uint64_t start, end, bias;
	void *elf;    /* Elf * of its file (NULL when the file was not found) */
	bool found;   /* a file whose build-id matches is open */
	bool is_vdso; /* read from the target's memory, not a file */
};

/* A thread of the target. */
struct cq_target_thread {
	const struct cq_core_thread *handle; /* what a thread's stack points at */
	int32_t tid;
	const struct cq_regs *regs;
};

/* One data symbol to look up: fill name; found and addr (a runtime address) are the answer. */
struct cq_target_symbol {
	const char *name;
	bool found;
	uint64_t addr, size;
};

enum cq_target_tls {
	CQ_TARGET_TLS_VALUE,      /* *value is the thread's value (may be 0) */
	CQ_TARGET_TLS_NONE,       /* the thread never set the key */
	CQ_TARGET_TLS_STALE,      /* a value of a deleted key with the same number */
	CQ_TARGET_TLS_UNREADABLE, /* no thread pointer, or memory the target lacks */
};

/*
 * A blob a runtime derives from a module and caches per module, declared in
 * its descriptor (unwind/async/runtime.h).  The cache keeps one blob per
 * (module's files, runtime, name); a blob of another format is not served,
 * and the next put replaces it.  What a blob holds is its runtime's own
 * business: the cache stores bytes.
 */
struct cq_target_blob {
	const char *runtime; /* the runtime's name, as in its descriptor ("rust") */
	const char *name;    /* the blob's name within the runtime ("index") */
	unsigned format;     /* the version of its encoding */
};

/*
 * Bytes of the target's memory where its segments map them; the first lead
 * are the previous span's last (a scan's chunks overlap by a word).
 */
struct cq_unwind_span {
	const uint8_t *data;
	uint64_t len, lead;
};

struct cq_unwind_target_ops {
	/* Copies len bytes at addr; false if any is unreadable. */
	bool (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
	/* The CFI table covering runtime address pc and its module's load bias, or NULL. */
	const struct cq_cfi_table *(*cfi_at)(void *ctx, uint64_t pc, uint64_t *bias);
	/* True if addr lies in an executable mapping. */
	bool (*is_code)(void *ctx, uint64_t addr);
	/* Bounds [lo, hi) of the mapping holding sp; false if sp is unmapped. */
	bool (*stack_bounds)(void *ctx, uint64_t sp, uint64_t *lo, uint64_t *hi);

	/* madvise() advice for bytes of the address space (a scan's chunk). */
	void (*advise)(void *ctx, const void *data, uint64_t len, int advice);
	/* Drops the pages of the target that were read so far from our resident set. */
	void (*trim)(void *ctx);
	/*
	 * Optional: reads spans of the target's memory (where its segments map
	 * them; ascending) once, in order, ahead of the caller into buffers of
	 * its own: a compressed core's frames decompressed on other CPUs and
	 * not mapped in.  words[0, nwords) are the word values the caller acts
	 * on (struct cq_feed_words; none: it did not say).  NULL when it offers
	 * no such reader.
	 */
	void *(*feed_start)(void *ctx, const struct cq_unwind_span *spans, size_t n,
	                    const struct cq_feed_words *words, size_t nwords);
	/*
	 * The next span's bytes, valid until the next call; NULL: read it where
	 * it is mapped, unless *none is set: the span holds no word in words,
	 * and its bytes are not given.
	 */
	const uint8_t *(*feed_next)(void *feed, bool *none);
	void (*feed_stop)(void *feed);

	/*
	 * Looks every query not yet found up in module m's symbol tables (defined
	 * symbols only); how many of the n are found after the call.
	 */
	size_t (*find_symbols)(void *ctx, size_t m, struct cq_target_symbol *q, size_t n);
	/*
	 * Prepares pthread_getspecific (glibc's layout, read from libc's
	 * _thread_db descriptors when it can, and each thread's pointer); true
	 * when the layout came from libc, false when a known default is used.
	 */
	bool (*tls_prepare)(void *ctx);
	/* pthread_getspecific(key) of thread t, as the thread would see it. */
	enum cq_target_tls (*tls_get)(void *ctx, size_t t, uint32_t key, uint64_t *value);
	/* True when thread t has a thread pointer (read from the core or recovered). */
	bool (*thread_has_tp)(void *ctx, size_t t);

	/*
	 * Optional: the bytes the function holding runtime address pc keeps
	 * below its return address at pc (0 at its entry), from the table its
	 * module carries for its own runtime's unwinder (a Go program's
	 * .gopclntab), for code with no CFI (a stripped Go program); false
	 * where there is none.
	 */
	bool (*frame_size)(void *ctx, uint64_t pc, uint64_t *size);
	/* The function at pc (pc - 1 for a return address), or NULL. */
	const char *(*function_at)(void *ctx, uint64_t pc, bool is_return_address);
	/* Appends uf's named frames (inlined calls first) to fl, the last of kind kind. */
	struct cq_error *(*add_frames)(void *ctx, struct cq_frame_list *fl,
	                               const struct cq_unwind_frame *uf, int kind);

	/*
	 * Module m's DWARF (libdw's Dwarf *), read from the debuginfo the target
	 * found for it (the file itself when it has DWARF), opened on the first
	 * call and owned by the target (freed with it); NULL when it has none.
	 * Each call returns the same handle until the target closes it: a
	 * runtime uses it within the step it asked in, and keeps nothing that
	 * points into it (the core's target closes every module's DWARF once
	 * the runtimes' detect step is over).
	 */
	struct Dwarf *(*dwarf)(void *ctx, size_t m);
	/* Module m's cached blob (malloc'd, its size in *len) at blob->format, or NULL. */
	uint8_t *(*cache_get)(void *ctx, size_t m, const struct cq_target_blob *blob, size_t *len);
	/* Stores (replaces) module m's blob; best-effort. */
	void (*cache_put)(void *ctx, size_t m, const struct cq_target_blob *blob,
	                  const uint8_t *data, size_t len);
	/* A blob cache_get returned was damaged (counted, and replaced by the next put). */
	void (*cache_reject)(void *ctx);
};

struct cq_unwind_target {
	const struct cq_unwind_target_ops *ops;
	void *ctx;
	const struct cq_arch *arch;
	/*
	 * Bits to clear from every return address before it is used: the
	 * pointer-authentication code aarch64 signs them with (NT_ARM_PAC_MASK's
	 * instruction mask); 0 for none.
	 */
	uint64_t return_address_mask;
	/* The address space (NULL for a target that only offers read). */
	struct cq_mem *mem;
	/* Modules sorted by start, and threads in the target's order. */
	const struct cq_target_module *modules;
	size_t nmodules;
	const struct cq_target_thread *threads;
	size_t nthreads;
};

/* The index of the module of t holding addr, or -1. */
ptrdiff_t cq_target_module_at(const struct cq_unwind_target *t, uint64_t addr);

#endif
