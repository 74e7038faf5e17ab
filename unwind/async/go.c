/*
 * go.c - every goroutine of a Go program, from the core alone: the "go"
 * async runtime (runtime.h).
 *
 * A goroutine is a runtime.g in the Go heap: its status, id, wait reason,
 * the sudogs it waits in, the pc of the go statement that created it, and
 * its saved context (g.sched, a runtime.gobuf: pc, sp, bp) while it is not
 * on a thread.  The runtime keeps every g ever made in runtime.allgs (a
 * slice), and every M (an OS thread) in the list from runtime.allm, each
 * with its thread id (m.procid), its scheduler stack (m.g0), its signal
 * stack (m.gsignal) and the goroutine it runs (m.curg).  Then:
 *   1. detect: the module that defines runtime.allgs; the layouts of
 *      runtime.g, gobuf, m, sudog, hchan and stack, and the status
 *      constants (runtime._Gwaiting...), from its DWARF: nothing per Go
 *      version is written here.  A Go binary without DWARF (or without its
 *      symbols) is said to be one in a warning, and nothing more is read;
 *   2. threads: each thread is matched to its M by tid.  A thread whose
 *      native walk ends on its M's g0 or signal stack (runtime.mcall,
 *      systemstack, mstart: the stack switch the CFI does not describe)
 *      goes on into the goroutine the M runs, unwound from its g.sched;
 *      else the walk ends there as a system stack's does (outermost), not
 *      as bad memory;
 *   3. decode: every g of allgs that is not dead or idle is one task of kind
 *      "go", in id order: its id, its state as the runtime's own traceback
 *      names it (the wait reason from runtime.waitReasonStrings for a
 *      waiting g, else runtime.gStatusStrings[status]: strings read from the
 *      core), the thread it runs on, the channel it waits on (g.waiting's
 *      sudog -> c) or the semaphore (the sudog in runtime.semtable's treaps
 *      whose g it is: elem), where it was created (g.gopc), and its frames:
 *      a running goroutine's are its thread's (merged above); a parked
 *      one's are unwound from g.sched by the same CFI and frame-pointer
 *      walker as a thread's.  The crash message: the panic value of the
 *      goroutine on the crashed thread (g._panic.arg), else the string of
 *      a fatal error (runtime.throw / runtime.fatal), read from the
 *      closure that prints it.
 *
 * Every read is bounded: the number of gs and Ms, the treap walks, the
 * length of a string, the stack searched for a fatal error's closure.  A damaged g is listed with
 * what could be read.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcore/base/elf_section.h"
#include "libcore/base/regular_file.h"
#include "unwind/async/dwarf_type.h"
#include "unwind/async/runtime.h"

#define MAX_GS         (1u << 24) /* gs read from allgs */
#define MAX_MS         (1u << 14) /* Ms followed along allm */
#define MAX_G_SIZE     4096       /* bytes of a runtime.g we read */
#define MAX_REASONS    256        /* waitReason is a uint8 */
#define MAX_STATUSES   16
#define MAX_STRING     128        /* a wait reason or status string */
#define FATAL_TEXT     512        /* bytes of a fatal error's message, at most */
#define FATAL_WINDOW   (64 << 10) /* bytes of one stack searched for it */
#define MAX_FN_CODE    8192       /* bytes of a runtime function searched for its variables */
#define MAX_CANDIDATES 64         /* addresses one such function refers to */
#define MAX_SEMA_NODES (1u << 20) /* sudogs visited in runtime.semtable */
#define MAX_TREAP      64         /* depth of a semaRoot's treap */
#define MAX_DIES       (1u << 22) /* top-level DIEs looked at for the layouts */

#define LAYOUT_SUDOG_TREE 1u /* sudog prev/next/parent: the semaphore treaps can be walked */
#define LAYOUT_SEMTABLE   2u /* semaRoot.treap too */
#define LAYOUT_PANIC      4u /* g._panic, _panic.arg, _type.str, moduledata.types, boundsError */

/* The offsets (and sizes) of what we read, from DWARF. */
struct go_layout {
	uint64_t g_size;
	uint64_t g_stack_lo, g_stack_hi, g_sched, g_atomicstatus, g_goid, g_waitsince, g_waitreason,
	    g_waiting, g_gopc, g_m, g_syscallsp, g_syscallpc;
	uint64_t status_size, goid_size, reason_size;
	uint64_t gobuf_sp, gobuf_pc, gobuf_bp;
	uint64_t m_size, m_procid, m_curg, m_g0, m_gsignal, m_alllink;
	uint64_t sudog_g, sudog_next, sudog_prev, sudog_elem, sudog_c, sudog_waitlink, sudog_parent;
	uint64_t flags;         /* LAYOUT_SUDOG_TREE, LAYOUT_SEMTABLE */
	uint64_t semroot_treap; /* semaRoot.treap */
	/* status constants */
	int64_t st_idle, st_running, st_syscall, st_waiting, st_dead, st_scan;
	uint64_t found_consts;
	uint64_t semtab_size; /* runtime.semTabSize: the semaphore treaps */
	/* The panic value (g._panic.arg, an interface{}): its type's name, and a
	 * runtime.boundsError; flags LAYOUT_PANIC when all were found. */
	uint64_t g_panic, panic_arg, type_tflag, type_str, md_types, be_x, be_y, be_signed, be_code;
};

/* One goroutine as read from the core. */
struct go_g {
	uint64_t addr, goid, gopc, waiting, m, sp, pc, bp, syscallsp, syscallpc, panic;
	int64_t waitsince;
	uint32_t status;
	uint8_t reason;
	uint64_t wait_object;
};

/* One M: its thread and stacks. */
struct go_m {
	uint64_t addr, procid, curg, g0, gsignal;
	uint64_t g0_lo, g0_hi, gs_lo, gs_hi;
	ptrdiff_t thread; /* index into the target's threads, -1 none */
};

struct go_stats {
	bool dwarf;           /* the layouts came from DWARF */
	bool table;           /* ... from go_layouts.def (no DWARF) */
	bool cached;          /* ... through the cache */
	size_t allgs;         /* gs in runtime.allgs */
	size_t dead;          /* of them dead or idle: not listed */
	size_t goroutines;    /* listed */
	size_t running;       /* of them on a thread */
	size_t unwound;       /* parked goroutines unwound from g.sched */
	size_t ms;            /* Ms in runtime.allm */
	size_t merged;        /* threads whose stack goes on into their M's curg */
	size_t system_stacks; /* threads whose walk ends on their g0 or signal stack */
	size_t sema_waiters;  /* goroutines whose semaphore was found in runtime.semtable */
	size_t over_limit;
	size_t unreadable; /* gs of allgs that could not be read */
};

struct go_rt {
	struct go_stats stats;
	size_t module;
	struct go_layout l;
	const char *missing; /* why the goroutines were not read (a warning), or NULL */
	uint64_t allgs, waitreasons, nwaitreasons, gstatuses, nstatuses, allm, semtable, nsemtable,
	    semtable_elem;
	uint64_t moduledata, bounds_fmts,
	    nbounds_fmts;      /* the panic value's type names, bounds text */
	char *panic;           /* "panic: ..." or "fatal error: ..." (crash_message) */
	uint64_t fatal_fns[2]; /* runtime.throw.func1, runtime.fatal.func1 (0: none) */
	char release[32];      /* "go1.19.8", read where DWARF is gone (go_layouts.def) */
	char *reasons[MAX_REASONS];
	char *statuses[MAX_STATUSES];
	struct go_g *gs;
	size_t ngs;
	struct go_m *ms;
	size_t nms;
	/* semaphore waiters: g address -> the semaphore's address, sorted by g */
	uint64_t (*sema)[2];
	size_t nsema;
	/* "created by" frames, one per listed goroutine (owned) */
	struct cq_stack_frame **created;
	size_t ncreated;
};

static bool rd(const struct cq_async_ctx *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct cq_unwind_target *t = ctx->target;
	return t->ops->read && t->ops->read(t->ctx, addr, buf, len);
}

static bool rd_u64(const struct cq_async_ctx *ctx, uint64_t addr, uint64_t *v)
{
	return rd(ctx, addr, v, 8);
}

/* The little-endian integer of size bytes at buf + off (0 when out of buf). */
static uint64_t field(const uint8_t *buf, size_t len, uint64_t off, unsigned size)
{
	if (size == 0 || size > 8 || off > len || len - off < size)
		return 0;
	uint64_t v = 0;
	for (unsigned i = 0; i < size; i++)
		v |= (uint64_t)buf[off + i] << (8 * i);
	return v;
}

/* ---- layouts from DWARF ---- */

/* The member called name of struct die: its offset, type and that type's size. */
static bool member(Dwarf_Die *st, const char *name, uint64_t *off, Dwarf_Die *type, uint64_t *size)
{
	Dwarf_Die child;
	if (dwarf_child(st, &child) != 0)
		return false;
	unsigned budget = 4096;
	do {
		if (dwarf_tag(&child) != DW_TAG_member)
			continue;
		const char *n = dwarf_diename(&child);
		if (!n || strcmp(n, name) != 0)
			continue;
		if (!cq_dwt_member_offset(&child, off))
			return false;
		Dwarf_Die t;
		if (!cq_dwt_type(&child, &t) || !cq_dwt_peel(&t))
			return false;
		if (type)
			*type = t;
		if (size)
			*size = cq_dwt_size(&t);
		return true;
	} while (--budget && dwarf_siblingof(&child, &child) == 0);
	return false;
}

/* Structs we need, by name; found[i] once seen. */
enum {
	ST_G,
	ST_GOBUF,
	ST_M,
	ST_SUDOG,
	ST_SEMAROOT,
	ST_STACK,
	ST_PANIC,
	ST_TYPE,
	ST_MODULEDATA,
	ST_BOUNDS,
	NSTRUCTS
};
static const char *const struct_names[NSTRUCTS] = {
    "runtime.g",     "runtime.gobuf",  "runtime.m",     "runtime.sudog",      "runtime.semaRoot",
    "runtime.stack", "runtime._panic", "runtime._type", "runtime.moduledata", "runtime.boundsError",
};

/* Status constants, by name. */
static const char *const const_names[] = {
    "runtime._Gidle",    "runtime._Grunning", "runtime._Gsyscall",
    "runtime._Gwaiting", "runtime._Gdead",    "runtime._Gscan",
};
#define NCONSTS (sizeof(const_names) / sizeof(const_names[0]))

static int64_t *const_slot(struct go_layout *l, size_t i)
{
	int64_t *slots[NCONSTS] = {&l->st_idle,    &l->st_running, &l->st_syscall,
	                           &l->st_waiting, &l->st_dead,    &l->st_scan};
	return slots[i];
}

/* Reads the layouts from dw's struct types and constants; false when one we need is missing. */
static bool layout_from_dwarf(Dwarf *dw, struct go_layout *l)
{
	Dwarf_Die structs[NSTRUCTS];
	bool have[NSTRUCTS] = {0};
	size_t nhave = 0;
	Dwarf_Off off = 0, next;
	size_t hsize;
	unsigned budget = MAX_DIES;
	while ((nhave < NSTRUCTS || l->found_consts != (1u << NCONSTS) - 1 || !l->semtab_size) &&
	       budget && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, die;
		if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_child(&cu, &die) == 0) {
			do {
				int tag = dwarf_tag(&die);
				if (tag != DW_TAG_structure_type && tag != DW_TAG_constant)
					continue;
				const char *name = dwarf_diename(&die);
				if (!name || strncmp(name, "runtime.", 8) != 0)
					continue;
				if (tag == DW_TAG_structure_type) {
					for (size_t i = 0; i < NSTRUCTS; i++)
						if (!have[i] &&
						    strcmp(name, struct_names[i]) == 0 &&
						    dwarf_haschildren(&die)) {
							structs[i] = die;
							have[i] = true;
							nhave++;
						}
					continue;
				}
				Dwarf_Attribute sa;
				Dwarf_Sword sv;
				if (strcmp(name, "runtime.semTabSize") == 0 &&
				    dwarf_attr(&die, DW_AT_const_value, &sa) &&
				    dwarf_formsdata(&sa, &sv) == 0 && sv > 0 && sv < 65536)
					l->semtab_size = (uint64_t)sv;
				for (size_t i = 0; i < NCONSTS; i++) {
					Dwarf_Attribute a;
					Dwarf_Sword v;
					if (strcmp(name, const_names[i]) != 0 ||
					    !dwarf_attr(&die, DW_AT_const_value, &a) ||
					    dwarf_formsdata(&a, &v) != 0)
						continue;
					*const_slot(l, i) = v;
					l->found_consts |= 1u << i;
				}
			} while (--budget && dwarf_siblingof(&die, &die) == 0);
		}
		off = next;
	}
	if (!have[ST_G] || !have[ST_GOBUF] || !have[ST_M] || !have[ST_STACK] ||
	    l->found_consts != (1u << NCONSTS) - 1)
		return false;
	uint64_t size, base;
	/* runtime.stack {lo, hi} */
	uint64_t lo, hi;
	if (!member(&structs[ST_STACK], "lo", &lo, NULL, NULL) ||
	    !member(&structs[ST_STACK], "hi", &hi, NULL, NULL))
		return false;
	Dwarf_Die *g = &structs[ST_G];
	if (!member(g, "stack", &base, NULL, NULL))
		return false;
	l->g_stack_lo = base + lo;
	l->g_stack_hi = base + hi;
	if (!member(g, "sched", &l->g_sched, NULL, NULL) ||
	    !member(g, "atomicstatus", &l->g_atomicstatus, NULL, &size) || size == 0 || size > 8)
		return false;
	l->status_size = size;
	if (!member(g, "goid", &l->g_goid, NULL, &size) || size == 0 || size > 8)
		return false;
	l->goid_size = size;
	if (!member(g, "waitreason", &l->g_waitreason, NULL, &size) || size == 0 || size > 8)
		return false;
	l->reason_size = size;
	if (!member(g, "waitsince", &l->g_waitsince, NULL, NULL) ||
	    !member(g, "waiting", &l->g_waiting, NULL, NULL) ||
	    !member(g, "gopc", &l->g_gopc, NULL, NULL) || !member(g, "m", &l->g_m, NULL, NULL) ||
	    !member(g, "syscallsp", &l->g_syscallsp, NULL, NULL) ||
	    !member(g, "syscallpc", &l->g_syscallpc, NULL, NULL))
		return false;
	l->g_size = cq_dwt_size(g);
	if (!member(&structs[ST_GOBUF], "sp", &l->gobuf_sp, NULL, NULL) ||
	    !member(&structs[ST_GOBUF], "pc", &l->gobuf_pc, NULL, NULL) ||
	    !member(&structs[ST_GOBUF], "bp", &l->gobuf_bp, NULL, NULL))
		return false;
	Dwarf_Die *m = &structs[ST_M];
	if (!member(m, "procid", &l->m_procid, NULL, NULL) ||
	    !member(m, "curg", &l->m_curg, NULL, NULL) || !member(m, "g0", &l->m_g0, NULL, NULL) ||
	    !member(m, "gsignal", &l->m_gsignal, NULL, NULL) ||
	    !member(m, "alllink", &l->m_alllink, NULL, NULL))
		return false;
	l->m_size = cq_dwt_size(m);
	if (have[ST_SUDOG]) {
		Dwarf_Die *s = &structs[ST_SUDOG];
		bool chan = member(s, "g", &l->sudog_g, NULL, NULL) &&
		            member(s, "elem", &l->sudog_elem, NULL, NULL) &&
		            member(s, "c", &l->sudog_c, NULL, NULL) &&
		            member(s, "waitlink", &l->sudog_waitlink, NULL, NULL);
		if (!chan)
			l->sudog_c = l->sudog_waitlink = 0;
		if (chan && member(s, "prev", &l->sudog_prev, NULL, NULL) &&
		    member(s, "next", &l->sudog_next, NULL, NULL) &&
		    member(s, "parent", &l->sudog_parent, NULL, NULL))
			l->flags |= LAYOUT_SUDOG_TREE;
		if ((l->flags & LAYOUT_SUDOG_TREE) && have[ST_SEMAROOT] &&
		    member(&structs[ST_SEMAROOT], "treap", &l->semroot_treap, NULL, NULL))
			l->flags |= LAYOUT_SEMTABLE;
	}
	if (have[ST_PANIC] && have[ST_TYPE] && have[ST_MODULEDATA] && have[ST_BOUNDS] &&
	    member(g, "_panic", &l->g_panic, NULL, NULL) &&
	    member(&structs[ST_PANIC], "arg", &l->panic_arg, NULL, NULL) &&
	    member(&structs[ST_TYPE], "tflag", &l->type_tflag, NULL, NULL) &&
	    member(&structs[ST_TYPE], "str", &l->type_str, NULL, NULL) &&
	    member(&structs[ST_MODULEDATA], "types", &l->md_types, NULL, NULL) &&
	    member(&structs[ST_BOUNDS], "x", &l->be_x, NULL, NULL) &&
	    member(&structs[ST_BOUNDS], "y", &l->be_y, NULL, NULL) &&
	    member(&structs[ST_BOUNDS], "signed", &l->be_signed, NULL, NULL) &&
	    member(&structs[ST_BOUNDS], "code", &l->be_code, NULL, NULL))
		l->flags |= LAYOUT_PANIC;
	return l->g_size > 0 && l->g_size <= MAX_G_SIZE && l->m_size > 0;
}

/* The layout blob: "coreqgol", the number of fields, then each field (u64 LE, in order). */
#define LAYOUT_MAGIC 0x6c6f677165726f63ull /* "coreqgol" */
static const struct cq_target_blob go_layout_blob = {"go", "layout", 2};
static const struct cq_target_blob *const go_blobs[] = {&go_layout_blob, NULL};

/* Every field of a layout, in the blob's order: n of them into out (pointers into l). */
#define LAYOUT_FIELDS 51
static size_t layout_fields(struct go_layout *l, uint64_t *out[LAYOUT_FIELDS])
{
	uint64_t *f[] = {
	    &l->g_size,
	    &l->g_stack_lo,
	    &l->g_stack_hi,
	    &l->g_sched,
	    &l->g_atomicstatus,
	    &l->g_goid,
	    &l->g_waitsince,
	    &l->g_waitreason,
	    &l->g_waiting,
	    &l->g_gopc,
	    &l->g_m,
	    &l->g_syscallsp,
	    &l->g_syscallpc,
	    &l->gobuf_sp,
	    &l->gobuf_pc,
	    &l->gobuf_bp,
	    &l->m_size,
	    &l->m_procid,
	    &l->m_curg,
	    &l->m_g0,
	    &l->m_gsignal,
	    &l->m_alllink,
	    &l->sudog_g,
	    &l->sudog_next,
	    &l->sudog_prev,
	    &l->sudog_elem,
	    &l->sudog_c,
	    &l->sudog_waitlink,
	    &l->sudog_parent,
	    &l->semroot_treap,
	    &l->semtab_size,
	    &l->status_size,
	    &l->goid_size,
	    &l->reason_size,
	    &l->flags,
	    (uint64_t *)&l->st_idle,
	    (uint64_t *)&l->st_running,
	    (uint64_t *)&l->st_syscall,
	    (uint64_t *)&l->st_waiting,
	    (uint64_t *)&l->st_dead,
	    (uint64_t *)&l->st_scan,
	    &l->found_consts,
	    &l->g_panic,
	    &l->panic_arg,
	    &l->type_tflag,
	    &l->type_str,
	    &l->md_types,
	    &l->be_x,
	    &l->be_y,
	    &l->be_signed,
	    &l->be_code,
	};
	_Static_assert(sizeof(f) / sizeof(f[0]) == LAYOUT_FIELDS, "layout fields");
	memcpy(out, f, sizeof(f));
	return LAYOUT_FIELDS;
}

/* A layout that a reader may use: sizes in range (a cached blob is untrusted). */
static bool layout_sane(const struct go_layout *l)
{
	return l->g_size > 0 && l->g_size <= MAX_G_SIZE && l->m_size > 0 && l->status_size >= 1 &&
	       l->status_size <= 8 && l->goid_size >= 1 && l->goid_size <= 8 &&
	       l->reason_size >= 1 && l->reason_size <= 8 && l->semtab_size < 65536 &&
	       l->g_sched + l->gobuf_bp + 8 <= l->g_size &&
	       l->g_sched + l->gobuf_pc + 8 <= l->g_size &&
	       l->g_sched + l->gobuf_sp + 8 <= l->g_size;
}

static bool layout_decode(const uint8_t *blob, size_t len, struct go_layout *l)
{
	uint64_t *f[LAYOUT_FIELDS];
	size_t n = layout_fields(l, f);
	if (len != 8 * (n + 2))
		return false;
	uint64_t magic = field(blob, len, 0, 8), count = field(blob, len, 8, 8);
	if (magic != LAYOUT_MAGIC || count != n)
		return false;
	for (size_t i = 0; i < n; i++)
		*f[i] = field(blob, len, 16 + 8 * i, 8);
	return layout_sane(l);
}

static void layout_encode(struct go_layout *l, uint8_t blob[8 * (LAYOUT_FIELDS + 2)])
{
	uint64_t *f[LAYOUT_FIELDS];
	size_t n = layout_fields(l, f);
	uint64_t words[LAYOUT_FIELDS + 2] = {LAYOUT_MAGIC, n};
	for (size_t i = 0; i < n; i++)
		words[2 + i] = *f[i];
	for (size_t i = 0; i < n + 2; i++)
		for (unsigned b = 0; b < 8; b++)
			blob[8 * i + b] = (uint8_t)(words[i] >> (8 * b));
}

/*
 * Module m's layouts: from the target's cache (per module), else from its
 * DWARF (then cached).  false: no DWARF, or DWARF without what we need.
 */
static bool read_layout(const struct cq_unwind_target *t, size_t m, struct go_layout *l,
                        bool *cached)
{
	*cached = false;
	size_t len = 0;
	uint8_t *blob =
	    t->ops->cache_get ? t->ops->cache_get(t->ctx, m, &go_layout_blob, &len) : NULL;
	if (blob) {
		bool ok = layout_decode(blob, len, l);
		free(blob);
		if (ok)
			return *cached = true;
		*l = (struct go_layout){0};
		if (t->ops->cache_reject)
			t->ops->cache_reject(t->ctx); /* damaged: read again and replaced */
	}
	Dwarf *dw = t->ops->dwarf ? t->ops->dwarf(t->ctx, m) : NULL;
	if (!dw || !layout_from_dwarf(dw, l) || !layout_sane(l))
		return false;
	uint8_t out[8 * (LAYOUT_FIELDS + 2)];
	layout_encode(l, out);
	if (t->ops->cache_put)
		t->ops->cache_put(t->ctx, m, &go_layout_blob, out, sizeof(out));
	return true;
}

/* ---- detect ---- */

/* True when module m's file is a Go program (its .gopclntab or Go build-id note). */
static bool is_go_file(const struct cq_target_module *mod)
{
	GElf_Shdr sh;
	return mod->elf && (cq_elf_section(mod->elf, ".gopclntab", &sh) ||
	                    cq_elf_section(mod->elf, ".note.go.buildid", &sh) ||
	                    cq_elf_section(mod->elf, ".go.buildinfo", &sh));
}

/* A string of the core: the Go string header {ptr, len} at addr, malloc'd; NULL if unreadable. */
static char *go_string(const struct cq_async_ctx *ctx, uint64_t addr)
{
	uint64_t hdr[2];
	if (!rd(ctx, addr, hdr, sizeof(hdr)) || hdr[1] >= MAX_STRING)
		return NULL;
	char *s = calloc(1, hdr[1] + 1);
	if (s && hdr[1] && !rd(ctx, hdr[0], s, hdr[1])) {
		free(s);
		return NULL;
	}
	for (size_t i = 0; s && i < hdr[1]; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			s[i] = '?';
	return s;
}

/* ---- a program without DWARF ---- */

/* A release's layout (go_layouts.def). */
struct known_layout {
	const char *release, *arch;
	uint64_t reasons, statuses, bounds; /* entries of the runtime's string tables */
	uint64_t semtable;                  /* bytes of runtime.semtable */
	uint64_t fields[LAYOUT_FIELDS];
};

static const struct known_layout known_layouts[] = {
#define GO_LAYOUT(release, arch, reasons, statuses, bounds, semtable, ...)                         \
	{release, arch, reasons, statuses, bounds, semtable, {__VA_ARGS__}},
#include "unwind/async/go_layouts.def"
#undef GO_LAYOUT
};

/* The bytes of a section of mod's file (not copied), or NULL. */
static const uint8_t *section(const struct cq_target_module *mod, const char *name, GElf_Shdr *sh,
                              size_t *len)
{
	Elf_Scn *scn = mod->elf ? cq_elf_section(mod->elf, name, sh) : NULL;
	Elf_Data *d = scn && sh->sh_type != SHT_NOBITS ? elf_getdata(scn, NULL) : NULL;
	if (!d || !d->d_buf || d->d_size == 0)
		return NULL;
	*len = d->d_size;
	return d->d_buf;
}

/* The Go release that built mod (.go.buildinfo, Go 1.18 on: "go1.19.8"), into out. */
static bool go_release(const struct cq_target_module *mod, char *out, size_t cap)
{
	GElf_Shdr sh;
	size_t len = 0;
	const uint8_t *b = section(mod, ".go.buildinfo", &sh, &len);
	/* "\xff Go buildinf:", pointer size, flags (2: the strings follow inline), pad to 32 */
	if (!b || len < 34 || memcmp(b, "\xff Go buildinf:", 14) != 0 || !(b[15] & 2))
		return false;
	uint64_t n = 0;
	size_t at = 32;
	for (unsigned shift = 0; at < len && shift < 28; shift += 7) {
		n |= (uint64_t)(b[at] & 0x7f) << shift;
		if (!(b[at++] & 0x80))
			break;
	}
	if (n < 3 || n >= cap || n > len - at || memcmp(b + at, "go", 2) != 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (b[at + i] <= ' ' || b[at + i] >= 0x7f)
			return false;
	memcpy(out, b + at, n);
	out[n] = 0;
	return true;
}

/* The layout of release ("go1.19.8" is go1.19's) on arch, or NULL. */
static const struct known_layout *known_layout(const char *release, const char *arch)
{
	for (size_t i = 0; i < sizeof(known_layouts) / sizeof(known_layouts[0]); i++) {
		const struct known_layout *k = &known_layouts[i];
		size_t n = strlen(k->release);
		if (strncmp(release, k->release, n) == 0 && (!release[n] || release[n] == '.') &&
		    strcmp(arch, k->arch) == 0)
			return k;
	}
	return NULL;
}

/*
 * The addresses fn's x86-64 code loads, stores or takes RIP-relative that
 * lie in [lo, hi), from the file's .text.  Every byte offset is tried as an
 * instruction (an optional REX prefix, a one- or two-byte opcode, a ModRM of
 * RIP + disp32): what does not hold what the caller looks for is dropped
 * by its checks.  Unique, at most cap of them.
 */
static size_t code_refs(const struct cq_target_module *mod, const struct cq_target_symbol *fn,
                        uint64_t lo, uint64_t hi, uint64_t *out, size_t cap)
{
	GElf_Shdr sh;
	size_t len = 0, n = 0;
	const uint8_t *text = section(mod, ".text", &sh, &len);
	if (!text || !fn->found || fn->addr < mod->bias + sh.sh_addr)
		return 0;
	uint64_t off = fn->addr - mod->bias - sh.sh_addr;
	if (off >= len)
		return 0;
	size_t size = fn->size && fn->size < MAX_FN_CODE ? (size_t)fn->size : MAX_FN_CODE;
	const uint8_t *code = text + off;
	size_t end = len - off < size ? (size_t)(len - off) : size;
	for (size_t i = 0; i + 8 <= end && n < cap; i++) {
		size_t p = i + ((code[i] & 0xf0) == 0x40); /* REX */
		size_t op = code[p] == 0x0f ? 2 : 1;
		if (p + op + 5 > end || (code[p + op] & 0xc7) != 0x05)
			continue;
		int32_t disp =
		    (int32_t)((uint32_t)code[p + op + 1] | (uint32_t)code[p + op + 2] << 8 |
		              (uint32_t)code[p + op + 3] << 16 | (uint32_t)code[p + op + 4] << 24);
		uint64_t target = fn->addr + p + op + 5 + (uint64_t)(int64_t)disp;
		if (target < lo || target >= hi || (target & 7))
			continue;
		size_t k = 0;
		while (k < n && out[k] != target)
			k++;
		if (k == n)
			out[n++] = target;
	}
	return n;
}

/* [lo, hi): the runtime addresses of mod's writable data (its writable PT_LOAD segments). */
static bool data_range(const struct cq_target_module *mod, uint64_t *lo, uint64_t *hi)
{
	size_t n = 0;
	*lo = UINT64_MAX;
	*hi = 0;
	if (!mod->elf || elf_getphdrnum(mod->elf, &n) != 0)
		return false;
	for (size_t i = 0; i < n && i < 256; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(mod->elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_W) || ph.p_vaddr > UINT64_MAX - ph.p_memsz - mod->bias)
			continue;
		if (ph.p_vaddr + mod->bias < *lo)
			*lo = ph.p_vaddr + mod->bias;
		if (ph.p_vaddr + ph.p_memsz + mod->bias > *hi)
			*hi = ph.p_vaddr + ph.p_memsz + mod->bias;
	}
	return *lo < *hi;
}

/* Whether the Go string header at addr holds want. */
static bool string_is(const struct cq_async_ctx *ctx, uint64_t addr, const char *want)
{
	char *s = go_string(ctx, addr);
	bool same = s && strcmp(s, want) == 0;
	free(s);
	return same;
}

/*
 * runtime.allgs among the references of runtime.allgadd: a slice {ptr, len,
 * cap} with 0 < len <= cap, whose first g is goroutine 1 (main's, the
 * first made) or whose pointer or length another reference holds too
 * (runtime.allgptr, allglen).
 */
static uint64_t find_allgs(const struct go_rt *g, const struct cq_async_ctx *ctx,
                           const uint64_t *refs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t sl[3], first, goid = 0, other;
		if (!rd(ctx, refs[i], sl, sizeof(sl)) || !sl[0] || (sl[0] & 7) || !sl[1] ||
		    sl[1] > sl[2] || sl[2] > MAX_GS)
			continue;
		bool main_first = rd_u64(ctx, sl[0], &first) &&
		                  rd(ctx, first + g->l.g_goid, &goid, g->l.goid_size) && goid == 1;
		bool echoed = false;
		for (size_t k = 0; k < n && !echoed; k++)
			echoed = k != i && rd_u64(ctx, refs[k], &other) &&
			         (other == sl[0] || other == sl[1]);
		if (main_first || echoed)
			return refs[i];
	}
	return 0;
}

/* runtime.allm among the references of runtime.mcommoninit: an M that runs one of the threads. */
static uint64_t find_allm(const struct go_rt *g, const struct cq_async_ctx *ctx,
                          const uint64_t *refs, size_t n)
{
	const struct cq_unwind_target *t = ctx->target;
	for (size_t i = 0; i < n; i++) {
		uint64_t m, procid;
		if (!rd_u64(ctx, refs[i], &m) || !m || !rd_u64(ctx, m + g->l.m_procid, &procid))
			continue;
		for (size_t k = 0; k < t->nthreads; k++)
			if (procid && (uint64_t)t->threads[k].tid == procid)
				return refs[i];
	}
	return 0;
}

/* The string table among refs whose entry index reads want. */
static uint64_t find_table(const struct cq_async_ctx *ctx, const uint64_t *refs, size_t n,
                           unsigned index, const char *want)
{
	for (size_t i = 0; i < n; i++)
		if (string_is(ctx, refs[i] + 16u * index, want))
			return refs[i];
	return 0;
}

/*
 * runtime.semtable among the references of runtime.semacquire1: bytes of
 * semaRoots inside the data, each treap empty or a sudog with a g and an
 * element (the semaphore); of those, the one with the most waiters.
 */
static uint64_t find_semtable(const struct go_rt *g, const struct cq_async_ctx *ctx,
                              const uint64_t *refs, size_t n, uint64_t bytes, uint64_t hi)
{
	const struct go_layout *l = &g->l;
	uint64_t best = 0, elem = l->semtab_size ? bytes / l->semtab_size : 0;
	size_t most = 0;
	for (size_t i = 0; i < n && elem >= 16; i++) {
		if (refs[i] > hi || hi - refs[i] < bytes)
			continue;
		size_t waiters = 0;
		bool valid = true;
		for (uint64_t off = 0; valid && off + elem <= bytes; off += elem) {
			uint64_t treap, gp, el;
			if (!rd_u64(ctx, refs[i] + off + l->semroot_treap, &treap))
				valid = false;
			else if (treap)
				valid = !(treap & 7) && rd_u64(ctx, treap + l->sudog_g, &gp) &&
				        gp && !(gp & 7) &&
				        rd_u64(ctx, treap + l->sudog_elem, &el) && el && ++waiters;
		}
		if (valid && (!best || waiters > most)) {
			best = refs[i];
			most = waiters;
		}
	}
	return best;
}

/* runtime.firstmoduledata: the word of .noptrdata that points at .gopclntab (its pcHeader). */
static uint64_t find_moduledata(const struct cq_target_module *mod)
{
	GElf_Shdr pcl;
	uint64_t addr;
	return mod->elf && cq_elf_section(mod->elf, ".gopclntab", &pcl) &&
	               cq_elf_section_word(mod->elf, ".noptrdata", pcl.sh_addr, 8, &addr)
	           ? addr + mod->bias
	           : 0;
}

/* A runtime function's symbol (the target answers from .gopclntab where .symtab is gone). */
static struct cq_target_symbol function(const struct cq_unwind_target *t, size_t m,
                                        const char *name)
{
	struct cq_target_symbol q = {.name = name};
	t->ops->find_symbols(t->ctx, m, &q, 1);
	return q;
}

/*
 * A Go program without its symbol table or DWARF: the layouts of the release
 * that built it (go_layouts.def), and the runtime's variables found through
 * the code that uses them (x86-64), each checked by what it holds.  NULL, or
 * why the goroutines cannot be listed.
 */
/* g's layouts from the row of the release that built its module (go_layouts.def), or NULL. */
static const struct known_layout *table_layout(struct go_rt *g, const struct cq_unwind_target *t)
{
	const struct cq_target_module *mod = &t->modules[g->module];
	const struct known_layout *k = go_release(mod, g->release, sizeof(g->release)) && t->arch
	                                   ? known_layout(g->release, t->arch->name)
	                                   : NULL;
	uint64_t *f[LAYOUT_FIELDS];
	layout_fields(&g->l, f);
	for (size_t i = 0; k && i < LAYOUT_FIELDS; i++)
		*f[i] = k->fields[i];
	g->stats.table = k != NULL;
	return k;
}

static const char *without_dwarf(struct go_rt *g, const struct cq_async_ctx *ctx)
{
	const struct cq_unwind_target *t = ctx->target;
	const struct cq_target_module *mod = &t->modules[g->module];
	const struct known_layout *k = table_layout(g, t);
	if (!k)
		return "a Go program without DWARF, of a release or architecture whose runtime "
		       "layout coreq does not know: goroutines not listed, only its threads";
	uint64_t lo, hi, refs[MAX_CANDIDATES];
	if (!data_range(mod, &lo, &hi))
		return "a Go program without DWARF or its data sections: goroutines not listed";
	struct cq_target_symbol fn = function(t, g->module, "runtime.allgadd");
	g->allgs = find_allgs(g, ctx, refs, code_refs(mod, &fn, lo, hi, refs, MAX_CANDIDATES));
	if (!g->allgs)
		return "a Go program without DWARF whose runtime.allgs was not found: goroutines "
		       "not listed, only its threads";
	fn = function(t, g->module, "runtime.mcommoninit");
	g->allm = find_allm(g, ctx, refs, code_refs(mod, &fn, lo, hi, refs, MAX_CANDIDATES));
	fn = function(t, g->module, "runtime.goroutineheader");
	size_t n = code_refs(mod, &fn, lo, hi, refs, MAX_CANDIDATES);
	if ((g->waitreasons = find_table(ctx, refs, n, 1, "GC assist marking")))
		g->nwaitreasons = k->reasons;
	if ((g->gstatuses = find_table(ctx, refs, n, 2, "running")))
		g->nstatuses = k->statuses;
	fn = function(t, g->module, "runtime.semacquire1");
	n = code_refs(mod, &fn, lo, hi, refs, MAX_CANDIDATES);
	if ((g->semtable = find_semtable(g, ctx, refs, n, k->semtable, hi))) {
		g->nsemtable = k->semtable;
		g->semtable_elem = k->semtable / g->l.semtab_size;
	}
	fn = function(t, g->module, "runtime.boundsError.Error");
	n = code_refs(mod, &fn, lo, hi, refs, MAX_CANDIDATES);
	g->bounds_fmts = find_table(ctx, refs, n, 0, "index out of range [%x] with length %y");
	g->moduledata = g->bounds_fmts ? find_moduledata(mod) : 0;
	g->nbounds_fmts = g->moduledata ? k->bounds : 0;
	if (!g->moduledata)
		g->bounds_fmts = 0;
	return NULL;
}

static struct cq_error *go_detect(const struct cq_async_ctx *ctx, void **state,
                                  struct cq_async_needs *needs)
{
	(void)needs; /* no scan, no native frames: the threads hook reads the named ones */
	const struct cq_unwind_target *t = ctx->target;
	*state = NULL;
	if (!t->ops->find_symbols || !t->ops->read)
		return NULL;
	struct cq_target_symbol q[] = {
	    {.name = "runtime.allgs"},
	    {.name = "runtime.allm"},
	    {.name = "runtime.waitReasonStrings"},
	    {.name = "runtime.gStatusStrings"},
	    {.name = "runtime.semtable"},
	    {.name = "runtime.firstmoduledata"},
	    {.name = "runtime.boundsErrorFmts"},
	    {.name = "runtime.throw.func1"},
	    {.name = "runtime.fatal.func1"},
	};
	size_t nq = sizeof(q) / sizeof(q[0]);
	ptrdiff_t mod = -1;
	for (size_t m = 0; m < t->nmodules && mod < 0; m++) {
		if (t->modules[m].is_vdso || !t->modules[m].found)
			continue;
		t->ops->find_symbols(t->ctx, m, q, nq);
		if (q[0].found)
			mod = (ptrdiff_t)m;
		else if (is_go_file(&t->modules[m]))
			mod = -2 - (ptrdiff_t)m; /* a Go program without its symbols */
	}
	if (mod == -1)
		return NULL;
	struct go_rt *g = calloc(1, sizeof(*g));
	if (!g)
		return &cq_error_nomem;
	*state = g;
	for (size_t i = 0; i < 2; i++)
		g->fatal_fns[i] = q[7 + i].found ? q[7 + i].addr : 0;
	if (mod < -1) {
		g->module = (size_t)(-2 - mod);
		g->missing = without_dwarf(g, ctx);
		g->stats.table = g->stats.table && !g->missing;
		return NULL;
	}
	g->module = (size_t)mod;
	/* Its symbols but no DWARF (-ldflags=-w): the release's layouts, if known. */
	if (!read_layout(t, g->module, &g->l, &g->stats.cached) && !table_layout(g, t)) {
		g->missing = "a Go program without DWARF, of a release or architecture whose "
		             "runtime layout coreq does not know: goroutines not listed, only its "
		             "threads";
		return NULL;
	}
	g->stats.dwarf = !g->stats.table;
	g->allgs = q[0].addr;
	g->allm = q[1].found ? q[1].addr : 0;
	if (q[2].found) {
		g->waitreasons = q[2].addr;
		g->nwaitreasons = q[2].size / 16;
	}
	if (q[3].found) {
		g->gstatuses = q[3].addr;
		g->nstatuses = q[3].size / 16;
	}
	if (q[5].found && q[6].found && (g->l.flags & LAYOUT_PANIC)) {
		g->moduledata = q[5].addr;
		g->bounds_fmts = q[6].addr;
		g->nbounds_fmts = q[6].size / 16;
	}
	if (q[4].found && (g->l.flags & LAYOUT_SEMTABLE) && g->l.semtab_size &&
	    q[4].size % g->l.semtab_size == 0) {
		g->semtable = q[4].addr;
		g->nsemtable = q[4].size;
		g->semtable_elem = q[4].size / g->l.semtab_size;
	}
	return NULL;
}

/* ---- reading the scheduler ---- */

static bool read_g(const struct cq_async_ctx *ctx, const struct go_layout *l, uint64_t addr,
                   struct go_g *out)
{
	uint8_t buf[MAX_G_SIZE];
	size_t len = l->g_size;
	if (!rd(ctx, addr, buf, len))
		return false;
	*out = (struct go_g){.addr = addr};
	out->status = (uint32_t)field(buf, len, l->g_atomicstatus, l->status_size);
	out->goid = field(buf, len, l->g_goid, l->goid_size);
	out->reason = (uint8_t)field(buf, len, l->g_waitreason, l->reason_size);
	out->waitsince = (int64_t)field(buf, len, l->g_waitsince, 8);
	out->waiting = field(buf, len, l->g_waiting, 8);
	out->gopc = field(buf, len, l->g_gopc, 8);
	out->m = field(buf, len, l->g_m, 8);
	out->sp = field(buf, len, l->g_sched + l->gobuf_sp, 8);
	out->pc = field(buf, len, l->g_sched + l->gobuf_pc, 8);
	out->bp = field(buf, len, l->g_sched + l->gobuf_bp, 8);
	out->syscallsp = field(buf, len, l->g_syscallsp, 8);
	out->syscallpc = field(buf, len, l->g_syscallpc, 8);
	out->panic = (l->flags & LAYOUT_PANIC) ? field(buf, len, l->g_panic, 8) : 0;
	return true;
}

/* g's stack bounds [lo, hi). */
static bool g_stack(const struct cq_async_ctx *ctx, const struct go_layout *l, uint64_t g,
                    uint64_t *lo, uint64_t *hi)
{
	return g && rd_u64(ctx, g + l->g_stack_lo, lo) && rd_u64(ctx, g + l->g_stack_hi, hi) &&
	       *lo < *hi;
}

static struct cq_error *read_ms(struct go_rt *g, const struct cq_async_ctx *ctx)
{
	const struct cq_unwind_target *t = ctx->target;
	const struct go_layout *l = &g->l;
	uint64_t m = 0;
	if (!g->allm || !rd_u64(ctx, g->allm, &m))
		return NULL;
	size_t cap = 0;
	while (m && g->nms < MAX_MS) {
		for (size_t i = 0; i < g->nms; i++)
			if (g->ms[i].addr == m)
				return NULL; /* a loop */
		if (g->nms == cap) {
			cap = cap ? 2 * cap : 16;
			struct go_m *p = realloc(g->ms, cap * sizeof(*p));
			if (!p)
				return &cq_error_nomem;
			g->ms = p;
		}
		struct go_m *gm = &g->ms[g->nms];
		*gm = (struct go_m){.addr = m, .thread = -1};
		if (!rd_u64(ctx, m + l->m_procid, &gm->procid) ||
		    !rd_u64(ctx, m + l->m_curg, &gm->curg) || !rd_u64(ctx, m + l->m_g0, &gm->g0) ||
		    !rd_u64(ctx, m + l->m_gsignal, &gm->gsignal))
			break;
		g_stack(ctx, l, gm->g0, &gm->g0_lo, &gm->g0_hi);
		g_stack(ctx, l, gm->gsignal, &gm->gs_lo, &gm->gs_hi);
		for (size_t i = 0; i < t->nthreads; i++)
			if (gm->procid && (uint64_t)t->threads[i].tid == gm->procid)
				gm->thread = (ptrdiff_t)i;
		g->nms++;
		if (!rd_u64(ctx, m + l->m_alllink, &m))
			break;
	}
	g->stats.ms = g->nms;
	return NULL;
}

static const struct go_m *m_of_thread(const struct go_rt *g, size_t thread)
{
	for (size_t i = 0; i < g->nms; i++)
		if (g->ms[i].thread == (ptrdiff_t)thread)
			return &g->ms[i];
	return NULL;
}

static const struct go_m *m_at(const struct go_rt *g, uint64_t addr)
{
	for (size_t i = 0; addr && i < g->nms; i++)
		if (g->ms[i].addr == addr)
			return &g->ms[i];
	return NULL;
}

static int cmp_goid(const void *a, const void *b)
{
	const struct go_g *x = a, *y = b;
	if (x->goid != y->goid)
		return (x->goid > y->goid) - (x->goid < y->goid);
	return (x->addr > y->addr) - (x->addr < y->addr);
}

static int cmp_pair(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Every sudog of one semaRoot's treap (and their waitlinks): g -> elem, appended. */
static bool sema_walk(struct go_rt *g, const struct cq_async_ctx *ctx, uint64_t node,
                      unsigned depth, size_t *budget, size_t *cap)
{
	const struct go_layout *l = &g->l;
	if (!node || depth > MAX_TREAP)
		return true;
	for (uint64_t s = node; s && *budget; (*budget)--) {
		uint64_t gp, elem;
		if (!rd_u64(ctx, s + l->sudog_g, &gp) || !rd_u64(ctx, s + l->sudog_elem, &elem))
			break;
		if (g->nsema == *cap) {
			*cap = *cap ? 2 * *cap : 64;
			void *p = realloc(g->sema, *cap * sizeof(*g->sema));
			if (!p)
				return false;
			g->sema = p;
		}
		g->sema[g->nsema][0] = gp;
		g->sema[g->nsema][1] = elem;
		g->nsema++;
		if (!rd_u64(ctx, s + l->sudog_waitlink, &s))
			break;
	}
	uint64_t prev, next;
	if (*budget && rd_u64(ctx, node + l->sudog_prev, &prev) &&
	    !sema_walk(g, ctx, prev, depth + 1, budget, cap))
		return false;
	if (*budget && rd_u64(ctx, node + l->sudog_next, &next) &&
	    !sema_walk(g, ctx, next, depth + 1, budget, cap))
		return false;
	return true;
}

static struct cq_error *read_sema(struct go_rt *g, const struct cq_async_ctx *ctx)
{
	if (!g->semtable || !g->semtable_elem)
		return NULL;
	size_t budget = MAX_SEMA_NODES, cap = 0;
	for (uint64_t off = 0; off + g->semtable_elem <= g->nsemtable; off += g->semtable_elem) {
		uint64_t treap;
		if (!rd_u64(ctx, g->semtable + off + g->l.semroot_treap, &treap))
			continue;
		if (!sema_walk(g, ctx, treap, 0, &budget, &cap))
			return &cq_error_nomem;
	}
	if (g->nsema)
		qsort(g->sema, g->nsema, sizeof(*g->sema), cmp_pair);
	return NULL;
}

static uint64_t sema_of(const struct go_rt *g, uint64_t gaddr)
{
	uint64_t key[2] = {gaddr, 0};
	if (!g->nsema)
		return 0;
	const uint64_t(*p)[2] = bsearch(key, g->sema, g->nsema, sizeof(*g->sema), cmp_pair);
	return p ? (*p)[1] : 0;
}

static bool dead(const struct go_layout *l, uint32_t status)
{
	int64_t s = (int64_t)(status & ~(uint32_t)l->st_scan);
	return s == l->st_dead || s == l->st_idle;
}

/*
 * Every g of runtime.allgs that is not dead or idle, in id order.  The
 * slice's pointers are read a chunk at a time, and the reading stops at the
 * first unreadable one: a damaged length costs what the core holds, not
 * what it claims.
 */
static struct cq_error *read_gs(struct go_rt *g, const struct cq_async_ctx *ctx)
{
	uint64_t slice[2];
	if (!rd(ctx, g->allgs, slice, sizeof(slice)))
		return NULL;
	size_t n = slice[1] < MAX_GS ? (size_t)slice[1] : MAX_GS;
	g->stats.allgs = slice[1];
	uint64_t ptrs[512];
	size_t cap = 0;
	for (size_t i = 0; i < n;) {
		size_t k = n - i < 512 ? n - i : 512;
		if (!rd(ctx, slice[0] + 8 * (uint64_t)i, ptrs, k * 8)) {
			size_t ok = 0;
			while (ok < k && rd_u64(ctx, slice[0] + 8 * (uint64_t)(i + ok), &ptrs[ok]))
				ok++;
			g->stats.unreadable += n - i - ok;
			n = i + ok; /* the rest of the array is not in the core */
			k = ok;
		}
		for (size_t j = 0; j < k; j++) {
			struct go_g gg;
			if (!ptrs[j] || !read_g(ctx, &g->l, ptrs[j], &gg)) {
				g->stats.unreadable++;
				continue;
			}
			if (dead(&g->l, gg.status)) {
				g->stats.dead++;
				continue;
			}
			if (g->ngs == cap) {
				cap = cap ? 2 * cap : 64;
				struct go_g *p = realloc(g->gs, cap * sizeof(*p));
				if (!p)
					return &cq_error_nomem;
				g->gs = p;
			}
			g->gs[g->ngs++] = gg;
		}
		i += k;
	}
	if (g->ngs)
		qsort(g->gs, g->ngs, sizeof(*g->gs), cmp_goid);
	return NULL;
}

/* ---- threads ---- */

/* name without the ".abi0" the symbol table gives an assembly function. */
static bool is_function(const char *name, const char *want)
{
	size_t n = strlen(want);
	return name && strncmp(name, want, n) == 0 && (!name[n] || strcmp(name + n, ".abi0") == 0);
}

/*
 * The first of fs that is runtime.goexit, every goroutine's first frame, or
 * -1.  With DWARF its CFI ends a walk there; without (a stripped program,
 * walked by frame pointers) nothing would.  A system stack's runtime.mstart
 * is not one: a cgo thread's stack goes on into C (crosscall_amd64).
 */
static ptrdiff_t outermost(const struct cq_stack_frame *fs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fs[i].kind != CQ_FRAME_INLINE && is_function(fs[i].function, "runtime.goexit"))
			return (ptrdiff_t)i;
	return -1;
}

/*
 * The frames a walk from (pc, sp, bp) finds, named, appended to fl: by the
 * CFI, or where a stripped program has none by the frame sizes of its
 * .gopclntab (the unwinder asks the target's frame_size), as Go's own
 * traceback walks; out to runtime.goexit.
 */
static struct cq_error *walk(const struct cq_async_ctx *ctx, uint64_t pc, uint64_t sp, uint64_t bp,
                             struct cq_frame_list *fl, enum cq_unwind_end *end)
{
	const struct cq_unwind_target *t = ctx->target;
	const struct cq_arch *a = t->arch;
	struct cq_regs regs = {0};
	cq_regs_set(&regs, a->pc_reg, pc);
	cq_regs_set(&regs, a->sp_reg, sp);
	cq_regs_set(&regs, a->fp_reg, bp);
	unsigned max = ctx->unwind->max_frames ? ctx->unwind->max_frames : 1;
	struct cq_unwind_frame *uf = malloc(max * sizeof(*uf));
	if (!uf)
		return &cq_error_nomem;
	size_t n = 0, first = fl->n;
	cq_unwind_thread(t, &regs, ctx->unwind, uf, &n, end);
	struct cq_error *err = NULL;
	for (size_t i = 0; i < n && !err; i++)
		err = t->ops->add_frames(t->ctx, fl, &uf[i], CQ_FRAME_NATIVE);
	free(uf);
	ptrdiff_t top = err ? -1 : outermost(fl->frames + first, fl->n - first);
	if (top >= 0) {
		fl->n = first + (size_t)top + 1;
		*end = CQ_END_OUTERMOST;
	}
	return err;
}

static bool in(uint64_t v, uint64_t lo, uint64_t hi)
{
	return lo < hi && v >= lo && v < hi;
}

/*
 * The first frame of fs that switches stacks (runtime.mcall, systemstack,
 * morestack: what is past it is another stack, the CFI does not say so);
 * -1 when none.
 */
static ptrdiff_t stack_switch(const struct cq_stack_frame *fs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fs[i].kind != CQ_FRAME_INLINE &&
		    (is_function(fs[i].function, "runtime.mcall") ||
		     is_function(fs[i].function, "runtime.systemstack") ||
		     is_function(fs[i].function, "runtime.morestack")))
			return (ptrdiff_t)i;
	return -1;
}

static const struct go_g *g_at(const struct go_rt *g, uint64_t addr)
{
	for (size_t i = 0; addr && i < g->ngs; i++)
		if (g->gs[i].addr == addr)
			return &g->gs[i];
	return NULL;
}

static struct cq_error *go_threads(void *state, const struct cq_async_ctx *ctx)
{
	struct go_rt *g = state;
	struct cq_error *err = NULL;
	if (!g->missing) {
		err = read_ms(g, ctx);
		if (!err)
			err = read_gs(g, ctx);
		if (!err)
			err = read_sema(g, ctx);
	}
	/* Without the layouts (g->missing) no M is known: a stack still ends at its switch. */
	struct cq_stacks *st = ctx->stacks;
	for (size_t t = 0; t < st->nthreads && !err && ctx->named; t++) {
		struct cq_thread_stack *ts = &st->threads[t];
		const struct go_m *m = m_of_thread(g, t);
		ptrdiff_t sw = stack_switch(ts->frames, ts->nframes);
		ptrdiff_t top = sw < 0 ? outermost(ts->frames, ts->nframes) : -1;
		if (top >= 0) { /* a stack of its own to its first frame: ended there */
			ts->nframes = (size_t)top + 1;
			ts->end = CQ_END_OUTERMOST;
		}
		if (sw < 0 || (!m && !g->missing))
			continue;
		/* The goroutine this M runs, on its own stack past the switch. */
		const struct go_g *cur = m ? g_at(g, m->curg) : NULL;
		/* whatever its status says at this instant (decode binds the same way) */
		bool go_on = cur && cur->pc && !in(cur->sp, m->g0_lo, m->g0_hi) &&
		             !in(cur->sp, m->gs_lo, m->gs_hi);
		struct cq_frame_list fl = {.n = (size_t)sw + 1, .cap = (size_t)sw + 1};
		if (!(fl.frames = malloc(fl.cap * sizeof(*fl.frames))))
			return &cq_error_nomem;
		memcpy(fl.frames, ts->frames, fl.n * sizeof(*fl.frames));
		enum cq_unwind_end end = CQ_END_OUTERMOST;
		if (go_on && (err = walk(ctx, cur->pc, cur->sp, cur->bp, &fl, &end))) {
			free(fl.frames);
			break;
		}
		if (ts->owns_frames)
			free(ts->frames);
		ts->frames = fl.frames;
		ts->nframes = fl.n;
		ts->owns_frames = true;
		ts->end = end;
		if (go_on)
			g->stats.merged++;
		else
			g->stats.system_stacks++;
	}
	return err;
}

/* ---- the panic value ---- */

/* The name of the Go type at type (its _type's str, from moduledata.types), into out. */
static bool type_name(const struct go_rt *g, const struct cq_async_ctx *ctx, uint64_t type,
                      char *out, size_t cap)
{
	const struct go_layout *l = &g->l;
	uint64_t types;
	uint32_t str;
	uint8_t tflag, hdr[12];
	if (!type || !rd_u64(ctx, g->moduledata + l->md_types, &types) ||
	    !rd(ctx, type + l->type_str, &str, 4) || !rd(ctx, type + l->type_tflag, &tflag, 1) ||
	    !rd(ctx, types + (int32_t)str, hdr, sizeof(hdr)))
		return false;
	/* a name: a flags byte, its length as a varint, its bytes (Go 1.17 on) */
	uint64_t len = 0;
	size_t at = 1;
	for (unsigned shift = 0; at < sizeof(hdr); at++, shift += 7) {
		len |= (uint64_t)(hdr[at] & 0x7f) << shift;
		if (!(hdr[at] & 0x80))
			break;
	}
	at++;
	if (at > sizeof(hdr) || len == 0 || len >= cap)
		return false;
	if (!rd(ctx, types + (int32_t)str + at, out, len))
		return false;
	out[len] = 0;
	if (tflag & 2) /* tflagExtraStar: the name is stored with a '*' to drop */
		memmove(out, out + 1, len);
	for (size_t i = 0; out[i]; i++)
		if ((unsigned char)out[i] < 0x20)
			return false;
	return true;
}

/* fmt (the runtime's boundsErrorFmts entry) with %x and %y as the runtime prints them. */
static void bounds_text(const char *fmt, int64_t x, bool sign, int64_t y, char *out, size_t cap)
{
	size_t n = 0;
	for (const char *p = fmt; *p && n + 24 < cap; p++) {
		if (p[0] == '%' && (p[1] == 'x' || p[1] == 'y')) {
			if (p[1] == 'x' && !sign)
				n += (size_t)snprintf(out + n, cap - n, "%llu",
				                      (unsigned long long)x);
			else
				n += (size_t)snprintf(out + n, cap - n, "%lld",
				                      (long long)(p[1] == 'x' ? x : y));
			p++;
			continue;
		}
		out[n++] = *p;
	}
	out[n] = 0;
}

/*
 * The panic value of goroutine gg (g._panic.arg) as the runtime prints it
 * ("panic: " then a string, a runtime error's text, an error's message, or
 * the value's type); NULL when it has none or it cannot be read.
 */
static char *panic_text(const struct go_rt *g, const struct cq_async_ctx *ctx,
                        const struct go_g *gg)
{
	uint64_t eface[2];
	char name[128], msg[256] = "";
	if (!gg->panic || !g->moduledata || !rd(ctx, gg->panic + g->l.panic_arg, eface, 16) ||
	    !eface[0] || !type_name(g, ctx, eface[0], name, sizeof(name)))
		return NULL;
	const char *prefix = "";
	char *s = NULL;
	if (!strcmp(name, "string") || !strcmp(name, "runtime.plainError") ||
	    !strcmp(name, "*errors.errorString") || !strcmp(name, "*fmt.wrapError")) {
		s = go_string(ctx, eface[1]); /* the value's first word(s): a string header */
	} else if (!strcmp(name, "runtime.errorString") ||
	           !strcmp(name, "runtime.errorAddressString")) {
		prefix = "runtime error: ";
		s = go_string(ctx, eface[1]);
	} else if (!strcmp(name, "runtime.boundsError")) {
		const struct go_layout *l = &g->l;
		uint64_t x, y;
		uint8_t sign, code;
		char *fmt;
		if (rd_u64(ctx, eface[1] + l->be_x, &x) && rd_u64(ctx, eface[1] + l->be_y, &y) &&
		    rd(ctx, eface[1] + l->be_signed, &sign, 1) &&
		    rd(ctx, eface[1] + l->be_code, &code, 1) && code < g->nbounds_fmts &&
		    (fmt = go_string(ctx, g->bounds_fmts + 16u * code))) {
			prefix = "runtime error: ";
			bounds_text(fmt, (int64_t)x, sign != 0, (int64_t)y, msg, sizeof(msg));
			free(fmt);
		}
	}
	if (s) {
		snprintf(msg, sizeof(msg), "%s", s);
		free(s);
	}
	char *out = malloc(512);
	if (!out)
		return NULL;
	if (msg[0])
		snprintf(out, 512, "panic: %s%s", prefix, msg);
	else
		snprintf(out, 512, "panic: a value of type %s", name);
	return out;
}

/* ---- a fatal error's message ---- */

/* A closure's string, if the 16 bytes at at are a plausible one: "fatal error: " and it. */
static char *fatal_text(const struct cq_async_ctx *ctx, uint64_t at)
{
	uint64_t hdr[2];
	char text[FATAL_TEXT];
	if (!rd(ctx, at, hdr, sizeof(hdr)) || hdr[1] == 0 || hdr[1] >= sizeof(text) ||
	    !rd(ctx, hdr[0], text, hdr[1]))
		return NULL;
	for (size_t i = 0; i < hdr[1]; i++)
		if ((unsigned char)text[i] < 0x20 || (unsigned char)text[i] >= 0x7f)
			return NULL;
	char *out = malloc(hdr[1] + 16);
	if (out)
		snprintf(out, hdr[1] + 16, "fatal error: %.*s", (int)hdr[1], text);
	return out;
}

/*
 * The closure runtime.throw or runtime.fatal built in its frame on a stack in
 * [lo, hi) (at most FATAL_WINDOW bytes of it, from lo): the word holding the
 * closure's code address, then the string it captured; NULL when none.
 */
static char *fatal_in(const struct go_rt *g, const struct cq_async_ctx *ctx, uint64_t lo,
                      uint64_t hi)
{
	if (lo >= hi)
		return NULL;
	if (hi - lo > FATAL_WINDOW)
		hi = lo + FATAL_WINDOW;
	uint64_t page[512];
	for (uint64_t at = lo & ~7ull; at < hi; at += sizeof(page)) {
		size_t n = hi - at < sizeof(page) ? (size_t)(hi - at) & ~7u : sizeof(page);
		if (!n || !rd(ctx, at, page, n))
			continue;
		for (size_t i = 0; i < n / 8; i++) {
			char *text;
			if (page[i] && (page[i] == g->fatal_fns[0] || page[i] == g->fatal_fns[1]) &&
			    (text = fatal_text(ctx, at + 8 * i + 8)))
				return text;
		}
	}
	return NULL;
}

/*
 * The message of a fatal error ("fatal error: all goroutines are asleep -
 * deadlock!", "fatal error: concurrent map writes"): runtime.throw and
 * runtime.fatal print their string on the system stack through a closure
 * that captures it (throw.func1, fatal.func1), built in their own frame: the
 * word holding the closure's code address is followed by the string's
 * pointer and length, and nothing else in a stack holds that address.  Looked
 * for on the crashed thread's M: its system stack (g0), its signal stack
 * and the stack of the goroutine it runs, from where that one stopped.
 */
static char *read_fatal(const struct go_rt *g, const struct cq_async_ctx *ctx)
{
	const struct go_m *m = m_of_thread(g, 0);
	if (!m || (!g->fatal_fns[0] && !g->fatal_fns[1]))
		return NULL;
	/* A system stack is used from its top; a cgo program's is the thread's, megabytes. */
	uint64_t top = m->g0_hi - m->g0_lo > FATAL_WINDOW ? m->g0_hi - FATAL_WINDOW : m->g0_lo;
	char *text = fatal_in(g, ctx, top, m->g0_hi);
	if (!text)
		text = fatal_in(g, ctx, m->gs_lo, m->gs_hi);
	const struct go_g *cur = g_at(g, m->curg);
	uint64_t lo, hi;
	if (!text && cur && g_stack(ctx, &g->l, cur->addr, &lo, &hi))
		text = fatal_in(g, ctx, cur->sp > lo && cur->sp < hi ? cur->sp : lo, hi);
	return text;
}

/*
 * The panic of the goroutine running on the crashed thread (thread 0), else
 * of any that panics; else the crashed thread's fatal error.
 */
static void read_panic(struct go_rt *g, const struct cq_async_ctx *ctx)
{
	const struct go_g *pick = NULL;
	for (size_t i = 0; i < g->nms && !pick; i++)
		if (g->ms[i].thread == 0)
			pick = g_at(g, g->ms[i].curg);
	if (!pick || !pick->panic)
		for (size_t i = 0; i < g->ngs && (!pick || !pick->panic); i++)
			if (g->gs[i].panic)
				pick = &g->gs[i];
	if (pick && pick->panic)
		g->panic = panic_text(g, ctx, pick);
	if (!g->panic)
		g->panic = read_fatal(g, ctx);
	if (g->panic)
		ctx->stacks->crash_message = g->panic;
}

/* ---- decode ---- */

static const char *status_name(struct go_rt *g, const struct cq_async_ctx *ctx,
                               const struct go_g *gg)
{
	const struct go_layout *l = &g->l;
	uint32_t s = gg->status & ~(uint32_t)l->st_scan;
	if ((int64_t)s == l->st_waiting && gg->reason != 0 && gg->reason < g->nwaitreasons) {
		if (!g->reasons[gg->reason])
			g->reasons[gg->reason] = go_string(ctx, g->waitreasons + 16u * gg->reason);
		if (g->reasons[gg->reason])
			return g->reasons[gg->reason];
	}
	if (s < g->nstatuses && s < MAX_STATUSES) {
		if (!g->statuses[s])
			g->statuses[s] = go_string(ctx, g->gstatuses + 16u * s);
		if (g->statuses[s])
			return g->statuses[s];
	}
	return "?";
}

/* What gg waits on: its first sudog's channel, or its semaphore. */
static uint64_t wait_object(const struct go_rt *g, const struct cq_async_ctx *ctx,
                            const struct go_g *gg)
{
	uint64_t c;
	if (gg->waiting && g->l.sudog_c && rd_u64(ctx, gg->waiting + g->l.sudog_c, &c) && c)
		return c;
	return sema_of(g, gg->addr);
}

/* The frame of the go statement that created gg, or NULL. */
static struct cq_error *created_by(struct go_rt *g, const struct cq_async_ctx *ctx,
                                   const struct go_g *gg, const struct cq_stack_frame **out)
{
	*out = NULL;
	if (!gg->gopc || gg->goid == 1) /* main's: the runtime names none (printcreatedby) */
		return NULL;
	const struct cq_unwind_target *t = ctx->target;
	struct cq_frame_list fl = {0};
	struct cq_unwind_frame uf = {
	    .pc = gg->gopc, .is_return_address = true, .trust = CQ_TRUST_ASYNC};
	struct cq_error *err = t->ops->add_frames(t->ctx, &fl, &uf, CQ_FRAME_NATIVE);
	if (err || fl.n == 0) {
		free(fl.frames);
		return err;
	}
	struct cq_stack_frame **p = realloc(g->created, (g->ncreated + 1) * sizeof(*p));
	if (!p) {
		free(fl.frames);
		return &cq_error_nomem;
	}
	g->created = p;
	/* Go names the function the pc is in and the line of the innermost call. */
	struct cq_stack_frame *f = fl.frames;
	f[0].function = f[fl.n - 1].function;
	f[0].symbol = f[fl.n - 1].symbol;
	f[0].kind = CQ_FRAME_NATIVE;
	g->created[g->ncreated++] = f;
	*out = f;
	return NULL;
}

static struct cq_error *go_decode(void *state, const struct cq_async_ctx *ctx)
{
	struct go_rt *g = state;
	if (g->missing)
		return NULL;
	read_panic(g, ctx);
	const struct cq_unwind_target *t = ctx->target;
	struct cq_stacks *st = ctx->stacks;
	struct cq_error *err = NULL;
	for (size_t i = 0; i < g->ngs && !err; i++) {
		const struct go_g *gg = &g->gs[i];
		if (ctx->max_suspended && st->nsuspended >= ctx->max_suspended) {
			g->stats.over_limit +=
			    g->ngs - i; /* not unwound: they would not be listed */
			break;
		}
		const struct go_m *m = m_at(g, gg->m);
		/*
		 * The goroutine an M runs (m.curg) is on that M's thread whatever its
		 * status says at the instant of the core (dlv binds them the same way):
		 * a goroutine caught between states (preempted, parking) is still
		 * the thread's, and its saved context is stale.
		 */
		bool on_thread =
		    m && m->curg == gg->addr && m->thread >= 0 && (size_t)m->thread < st->nthreads;
		struct cq_frame_list fl = {0};
		enum cq_unwind_end end = CQ_END_OUTERMOST;
		int64_t tid = 0;
		if (on_thread) {
			const struct cq_thread_stack *ts = &st->threads[m->thread];
			tid = t->threads[m->thread].tid;
			if (ts->nframes) {
				fl.frames = malloc(ts->nframes * sizeof(*fl.frames));
				if (!fl.frames)
					return &cq_error_nomem;
				memcpy(fl.frames, ts->frames, ts->nframes * sizeof(*fl.frames));
				fl.n = fl.cap = ts->nframes;
			}
			end = ts->end;
			g->stats.running++;
		} else {
			/*
			 * From where it entered its system call while the runtime still
			 * says so (g.syscallsp: in one, or out of one and waiting for a P
			 * in exitsyscall), as Go's own traceback starts.
			 */
			uint64_t pc = gg->pc, sp = gg->sp;
			if (gg->syscallsp && gg->syscallpc)
				pc = gg->syscallpc, sp = gg->syscallsp;
			if ((err = walk(ctx, pc, sp, gg->bp, &fl, &end)))
				break;
			g->stats.unwound++;
		}
		if (fl.n == 0) {
			/* A g without a readable context: its creation site stands in. */
			struct cq_unwind_frame uf = {.pc = gg->pc ? gg->pc : gg->gopc,
			                             .trust = CQ_TRUST_ASYNC};
			if ((err = t->ops->add_frames(t->ctx, &fl, &uf, CQ_FRAME_NATIVE)))
				break;
			end = CQ_END_BAD_MEMORY;
		}
		const struct cq_stack_frame *creator;
		if ((err = created_by(g, ctx, gg, &creator))) {
			free(fl.frames);
			break;
		}
		uint64_t obj = on_thread ? 0 : wait_object(g, ctx, gg);
		g->stats.sema_waiters += obj && !gg->waiting;
		struct cq_suspended_stack ss = {.kind = "go",
		                                .leaf = gg->addr,
		                                .frames = fl.frames,
		                                .nframes = fl.n,
		                                .end = end,
		                                .has_task = true,
		                                .task_id = gg->goid,
		                                .task_state = status_name(g, ctx, gg),
		                                .thread = tid,
		                                .wait_object = obj,
		                                .wait_since = gg->waitsince,
		                                .created_by = creator};
		/* runtime.goexit, the frame every goroutine returns to, is the runtime's: the
		 * task list names the goroutine by the function under it */
		if (fl.n > 1 && is_function(fl.frames[fl.n - 1].function, "runtime.goexit"))
			ss.executor_frames = 1;
		bool added;
		if ((err = cq_async_add_suspended(ctx, &ss, &added)))
			break;
		if (added)
			g->stats.goroutines++;
		else
			g->stats.over_limit++;
	}
	return err;
}

static void go_report(const void *state, const struct cq_async_ctx *ctx, struct cq_stats *out,
                      struct cq_stats *warnings)
{
	(void)ctx;
	const struct go_rt *g = state;
	const struct go_stats *st = g ? &g->stats : &(const struct go_stats){0};
	cq_stats_bool(out, "go", g != NULL);
	cq_stats_bool(out, "go_dwarf", st->dwarf);
	cq_stats_bool(out, "go_layout_cached", st->cached);
	cq_stats_bool(out, "go_layout_table", st->table);
	cq_stats_uint(out, "go_allgs", st->allgs);
	cq_stats_uint(out, "go_goroutines", st->goroutines);
	cq_stats_uint(out, "go_dead", st->dead);
	cq_stats_uint(out, "go_running", st->running);
	cq_stats_uint(out, "go_m_count", st->ms);
	cq_stats_uint(out, "go_merged", st->merged);
	cq_stats_uint(out, "go_system_stacks", st->system_stacks);
	cq_stats_uint(out, "go_sema_waiters", st->sema_waiters);
	cq_stats_uint(out, "go_unreadable", st->unreadable);
	cq_stats_uint(out, "go_over_limit", st->over_limit);
	if (g && g->missing)
		cq_stats_string(warnings, NULL, g->missing);
	if (st->over_limit) {
		char text[160];
		snprintf(text, sizeof(text),
		         "%zu goroutines over the bound of %zu suspended stacks were counted, not "
		         "listed (stack --max-tasks N, or --group, lists more)",
		         st->over_limit, ctx->max_suspended);
		cq_stats_string(warnings, NULL, text);
	}
}

static void go_destroy(void *state)
{
	struct go_rt *g = state;
	if (!g)
		return;
	for (size_t i = 0; i < MAX_REASONS; i++)
		free(g->reasons[i]);
	for (size_t i = 0; i < MAX_STATUSES; i++)
		free(g->statuses[i]);
	for (size_t i = 0; i < g->ncreated; i++)
		free(g->created[i]);
	free(g->created);
	free(g->panic);
	free(g->gs);
	free(g->ms);
	free(g->sema);
	free(g);
}

/* `coreq cache warm`: the module's layouts into the cache ("go_layout", "go_layout_cached"). */
static struct cq_error *go_warm(struct cq_async_warm *w)
{
	const struct cq_unwind_target *t = w->target;
	struct cq_target_symbol q = {.name = "runtime.allgs"};
	bool go = t->ops->find_symbols && t->ops->find_symbols(t->ctx, w->module, &q, 1) == 1;
	struct go_layout l = {0};
	bool cached = false, layout = go && read_layout(t, w->module, &l, &cached);
	cq_stats_bool(w->figures, "go_layout", layout);
	cq_stats_bool(w->figures, "go_layout_cached", cached);
	if (layout)
		snprintf(w->text, sizeof(w->text), "Go runtime layouts%s",
		         cached ? " (cached already)" : "");
	return NULL;
}

static const char *const go_kinds[] = {"go", NULL};

const struct cq_async_runtime cq_async_go = {
    .name = "go",
    .kinds = go_kinds,
    .listing = CQ_ASYNC_LIST_TASKS,
    .heading = "Goroutines",
    .noun = "Goroutine", /* "Goroutine 21 (chan receive on 0xc00008c0c0):" */
    .detect = go_detect,
    .threads = go_threads,
    .decode = go_decode,
    .report = go_report,
    .destroy = go_destroy,
    .blobs = go_blobs,
    .warm = go_warm,
};
