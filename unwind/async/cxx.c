/*
 * cxx.c - the "cxx" async runtime: C++20 coroutines of any library (Asio's
 * awaitables, cppcoro- and libunifex-style tasks, in-house task types), from
 * the coroutine frames themselves, without an async-stack ABI (issue 33).
 *
 * What the data offers (gcc 12, checked on the corpus's cxx_task.cc and
 * asio_coro.cc):
 *   - a coroutine frame starts with two code pointers, resume then destroy:
 *     the coroutine's actor (symbol NAME.actor) and its destroy function
 *     (NAME.destroy), where NAME ends in the frame type's mangled name;
 *   - the actor's first parameter is a pointer to the frame's DWARF type
 *     `_Z....Frame`, with members _Coro_resume_fn (0), _Coro_destroy_fn (8),
 *     _Coro_promise, _Coro_resume_index (a u16: 2 is the initial suspend,
 *     2k + 4 the k-th co_await in source order, odd values destroy paths)
 *     and the suspend points' awaiters Is_*, Aw<k>_*, Fs_*;
 *   - a finished coroutine's resume pointer is null (gcc clears it at final
 *     suspend), so it is never a candidate.
 *
 * Frames: the one scan of writable memory looks for a word that is a known
 * actor's address followed by the same coroutine's destroy address.  Each
 * candidate is confirmed: 8-byte aligned, its resume index at most
 * 2 * (suspend points) + 1, and, where glibc's heap can be walked, at the
 * start of an in-use chunk that holds the frame's DWARF size.  What fails
 * is counted by reason and never reported.
 *
 * Links, the one rule: frame A points at frame B when a word of A, at an
 * 8-byte offset past its two code pointers, equals B's address or B's
 * promise's address.  A pointer from inside A's promise means B is A's
 * continuation (B awaits A: a coroutine_handle continuation, Asio's
 * caller_); a pointer from elsewhere in A (an awaiter temporary, a local)
 * means A awaits B.  Each pointer is one vote for "X is awaited by Y"; each
 * frame keeps the awaiter with the most votes (both kinds agreeing is two),
 * and a cycle loses its weakest link (Asio's bottom frame points at the top
 * of its stack from its promise: one vote against the chain's two per link).
 * A frame at its initial suspend (it never ran) awaits nothing: a pointer
 * that would make it an awaiter, or make it awaited through an awaiter
 * temporary, is no vote, and such a frame that another frame points at is
 * held by it and listed in no chain (libunifex's per-task done coroutine,
 * pointed at from every promise; corpus/cxx_done.cc).  A running coroutine
 * that has not suspended yet still shows its initial index; its awaiter
 * is found through its own promise.
 * Chains read leaf first: a frame, the frame that awaits it, and so on, each
 * frame once.
 *
 * Running chains: a frame is running on a thread when the thread's native
 * stack holds its coroutine's actor and the frame's address is in the
 * thread's live stack words or registers.  The innermost such frame's
 * awaiting chain is merged into the thread's stack after the actor's native
 * frame as async frames, skipping the coroutines already on the native
 * stack (at -O0 g++ calls the awaiting actors instead of tail-calling
 * them), so each coroutine appears once; the native frames that resumed it
 * (sync_wait, Asio's pump) follow.  Every other chain whose frames run on
 * no thread is a suspended chain of kind "cxx".
 *
 * Await lines: a frame parked at co_await #k (resume index 2k + 4) is
 * shown at that co_await's source line, read from the actor's code and
 * line table (x86-64, coro_dispatch.h): the actor's dispatch (`cmp
 * $index; je target`, or a jump table when there are many suspend points,
 * maybe behind a split on the index's low bit) gives the resume target,
 * whose line is the awaiter's await_resume on the co_await's line, and the
 * index's store on the way to suspend gives a second line, used when gcc
 * did not give it the coroutine's artificial location (see await_pc).
 * Where neither is found (another dispatch shape, another architecture)
 * the frame keeps its coroutine's first line; its state "await #k" says
 * where it is parked either way.
 *
 * A process with folly's async-stack ABI in use (its cookie, or a thread
 * whose AsyncStackRoot has a frame: folly_in_use) is left to the folly
 * runtime, which sees the same coroutines through its own records; a
 * libunifex release build links folly's key and sets empty roots, and is
 * read here.  Without
 * DWARF for a module its gcc coroutines are not looked for (an -g0 build).
 *
 * clang (checked with Debian's clang 14.0.6 at -O0, -O2 -g and -O2 -g0 on
 * cxx_task.cc): a coroutine's functions are NAME.resume, NAME.destroy and
 * NAME.cleanup (the destroy of a frame whose allocation was elided; at -O2
 * one of the two may be the only symbol), and a frame starts with the
 * .resume address, then the .destroy or the .cleanup address: the same
 * scan takes either.  clang 14 already describes the frame (issue 33
 * expected it from clang 17 only): a structure `__coro_frame_ty`
 * (__resume_fn, __destroy_fn, __promise, __coro_index, a bit-field: 0 the
 * initial suspend, k + 1 the k-th co_await) as the type of the artificial
 * variable __coro_frame of the ramp function NAME, or of its abstract
 * instance at -O2, at the top of the compile unit whose ranges hold
 * NAME.resume (clang writes no .debug_aranges, so units are searched by
 * their ranges).  With it a clang frame is confirmed and linked as a gcc
 * one (size, promise, index), and shown "await #k" at the line of
 * NAME.resume's `movb $k+1, __coro_index` on the way to that suspend
 * (clang_await_pc; a one-byte index only), which clang 14 puts on the
 * co_await's line at -O0 and -O2.  Without it (-g0) the frame comes from
 * the symbol pair alone:
 *   - the size: the frame's heap chunk's usable bytes; off glibc's heap
 *     (a frame in a caller's stack frame) CLANG_FRAME_GUESS bytes are read;
 *   - no resume index: no bad_index check, state "suspended";
 *   - the promise: taken at offset 16 (its place when aligned to at most
 *     16), and only its first word counts as inside it for the link rule,
 *     so a continuation further into the promise votes the other way (a
 *     tie with the awaiter's pointer, then a cycle broken arbitrarily).
 * At -O2 clang's CoroElide puts an awaited coroutine's frame inside its
 * awaiter's frame: a clang frame inside a heap chunk is kept when it lies
 * inside another confirmed frame (its size, without the type, the rest
 * of that frame).
 *
 * Bounds: at most MAX_TYPES coroutine types, MAX_CANDIDATES scan hits,
 * MAX_LINK_WORDS words read for links in all, chains of max_frames and
 * MAX_SUSPENDED_FRAMES frames in all; a frame is listed in one chain only.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcore/base/clock.h"
#include "libcore/base/memory.h"
#include "unwind/async/coro_dispatch.h"
#include "unwind/async/cxx_types_blob.h"
#include "unwind/async/dwarf_type.h"
#include "unwind/async/heap_chunks.h"
#include "unwind/async/runtime.h"

#define MAX_TYPES            (1u << 16)
#define MAX_CANDIDATES       (1u << 18)
#define MAX_LINK_WORDS       (1u << 23)
#define MAX_FRAME_WORDS      4096u /* words of one frame read for links */
#define MAX_SYMBOLS          (1u << 24)
#define MAX_NAME             (1u << 16) /* a symbol name's length */
#define MAX_SUSPENDED_FRAMES (1u << 16) /* frames of all suspended chains */
#define DISPATCH_BYTES       1024u      /* an actor's code read for its dispatch */
#define CLANG_FRAME_GUESS    256u       /* a clang frame's size off glibc's heap */
#define CLANG_CU_DIES        (1u << 20) /* a compile unit's top DIEs read for a ramp */
#define CLANG_CUS            (1u << 16) /* compile units looked through for a pc */
#define CLANG_CODE_BYTES     4096u      /* a .resume's code read for its index stores */

/* One coroutine, from its actor and destroy symbols and its frame type. */
struct coro_type {
	uint64_t actor, actor_end, destroy; /* runtime addresses */
	uint64_t destroy2;                  /* clang: .cleanup, the other destroy word */
	bool clang;                         /* clang's NAME.resume / .destroy / .cleanup */
	bool layout;                        /* clang: __coro_frame_ty was read */
	uint8_t index_bytes, index_shift, index_bits; /* clang's __coro_index bit-field */
	uint64_t size, promise_off, promise_size, index_off;
	unsigned max_index; /* highest valid _Coro_resume_index */
	uint32_t module;    /* index in the target's modules */
	/* The last resume target looked up (resume_target), for last_index. */
	uint64_t last_target;
	uint16_t last_index;
	bool looked_up;
};

enum reject_reason {
	REJECT_MISALIGNED,
	REJECT_BAD_INDEX,
	REJECT_INSIDE_CHUNK,
	REJECT_FREE_CHUNK,
	REJECT_CHUNK_TOO_SMALL,
	REJECT_UNREADABLE,
	REJECT_REASONS
};

static const char *const reject_names[REJECT_REASONS] = {
    "misaligned", "bad_index", "inside_chunk", "free_chunk", "chunk_too_small", "unreadable"};

struct frame {
	uint64_t addr;
	uint32_t type;
	uint16_t index;
	uint32_t size;     /* bytes read for links */
	int64_t parent;    /* index of the frame awaiting this one, or -1 */
	unsigned votes;    /* for parent */
	bool has_child;    /* some frame's parent is this one */
	bool on_thread;    /* running, or awaiting a running frame */
	bool listed;       /* in a suspended chain already */
	bool held;         /* never started, and another frame points at it */
	const char *state; /* "initial", "await #k", ... (names) */
};

struct cxx {
	struct coro_type *types; /* sorted by actor */
	size_t ntypes;
	uint64_t lo, hi; /* [lowest, highest] actor address */
	uint64_t *cand;
	size_t ncand, cap_cand;
	bool truncated, nomem;
	struct frame *frames; /* confirmed, sorted by address */
	size_t nframes;
	char **names; /* strings the frames point to */
	size_t nnames;
	/* statistics */
	size_t modules;
	uint64_t scanned_bytes;
	size_t rejected[REJECT_REASONS];
	size_t links, cycles, running, merged, reported, over_limit, link_words;
	size_t held; /* frames never started that another frame holds (not listed) */
	size_t suspended_frames;
	double scan_seconds, decode_seconds;
	double index_seconds;  /* coroutine types of every module: cache or DWARF */
	size_t modules_cached; /* modules whose types came from the cache */
};

static void cxx_destroy(void *p)
{
	struct cxx *x = p;
	for (size_t i = 0; i < x->nnames; i++)
		free(x->names[i]);
	free(x->names);
	free(x->types);
	free(x->cand);
	free(x->frames);
	free(x);
}

static const char *keep_name(struct cxx *x, const char *s)
{
	char **p = realloc(x->names, (x->nnames + 1) * sizeof(*p));
	if (!p)
		return NULL;
	x->names = p;
	char *c = strdup(s);
	if (c)
		x->names[x->nnames++] = c;
	return c;
}

/*
 * An actor or destroy symbol: its name without the suffix (len bytes of the
 * symbol table's string, which lives as long as the Elf), and address.
 * Names are long: Boost.Asio's, with any_executor's template arguments,
 * pass 1,000 bytes.
 */
enum sym_kind { SYM_ACTOR, SYM_DESTROY, SYM_CLEANUP };

struct coro_sym {
	const char *name;
	size_t len;
	uint64_t addr, size;
	enum sym_kind kind;
	bool clang; /* NAME.resume / NAME.destroy / NAME.cleanup */
};

static bool same_name(const struct coro_sym *x, const struct coro_sym *y)
{
	return x->len == y->len && memcmp(x->name, y->name, x->len) == 0;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct coro_sym *x = a, *y = b;
	int c = memcmp(x->name, y->name, x->len < y->len ? x->len : y->len);
	if (c)
		return c;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	if (x->clang != y->clang)
		return (int)x->clang - (int)y->clang;
	return (int)x->kind - (int)y->kind; /* the actor first */
}

/* s's length without suffix, or 0 when s does not end in it. */
static size_t strip_suffix(const char *s, const char *suffix)
{
	size_t n = strnlen(s, MAX_NAME + 1), k = strlen(suffix);
	if (n <= k || n > MAX_NAME || strcmp(s + n - k, suffix) != 0)
		return 0;
	return n - k;
}

/* The .actor and .destroy symbols of an ELF file's symbol table, appended to *syms. */
static bool module_symbols(Elf *elf, uint64_t bias, struct coro_sym **syms, size_t *n, size_t *cap)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || sh.sh_entsize == 0)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		size_t count = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; data && i < count && i < MAX_SYMBOLS; i++) {
			GElf_Sym sym;
			const char *name;
			if (!gelf_getsym(data, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value == 0 ||
			    !(name = elf_strptr(elf, sh.sh_link, sym.st_name)))
				continue;
			struct coro_sym s = {
			    .name = name, .addr = sym.st_value + bias, .size = sym.st_size};
			if ((s.len = strip_suffix(name, ".Frame.actor")))
				s.kind = SYM_ACTOR;
			else if ((s.len = strip_suffix(name, ".Frame.destroy")))
				s.kind = SYM_DESTROY;
			else if ((s.len = strip_suffix(name, ".resume")))
				s.clang = true, s.kind = SYM_ACTOR;
			else if ((s.len = strip_suffix(name, ".destroy")))
				s.clang = true, s.kind = SYM_DESTROY;
			else if ((s.len = strip_suffix(name, ".cleanup")))
				s.clang = true, s.kind = SYM_CLEANUP;
			else
				continue;
			if (*n == *cap) {
				size_t c = *cap ? *cap * 2 : 64;
				struct coro_sym *p = realloc(*syms, c * sizeof(*p));
				if (!p)
					return false;
				*syms = p;
				*cap = c;
			}
			(*syms)[(*n)++] = s;
		}
	}
	return true;
}

/* The frame type of the actor at link-time address pc: its first parameter's pointee. */
static bool actor_frame_type(Dwarf *dw, uint64_t pc, Dwarf_Die *out)
{
	Dwarf_Die cu, *scopes = NULL;
	if (!dwarf_addrdie(dw, pc, &cu))
		return false;
	int n = dwarf_getscopes(&cu, pc, &scopes);
	bool ok = false;
	for (int i = n - 1; i >= 0 && !ok; i--) {
		if (dwarf_tag(&scopes[i]) != DW_TAG_subprogram)
			continue;
		Dwarf_Die child, ptr;
		if (dwarf_child(&scopes[i], &child) != 0)
			break;
		do {
			if (dwarf_tag(&child) != DW_TAG_formal_parameter)
				continue;
			Dwarf_Attribute a;
			if (dwarf_formref_die(dwarf_attr_integrate(&child, DW_AT_type, &a), &ptr) &&
			    cq_dwt_peel(&ptr) && dwarf_tag(&ptr) == DW_TAG_pointer_type &&
			    cq_dwt_type(&ptr, out) && cq_dwt_peel(out) &&
			    dwarf_tag(out) == DW_TAG_structure_type)
				ok = true;
			break;
		} while (dwarf_siblingof(&child, &child) == 0);
		break;
	}
	free(scopes);
	return ok;
}

/*
 * The names a compiler gives its coroutine frame type and the members the
 * walk reads (the frame layout of the top comment): gcc's NAME.Frame, with
 * its suspend points' members counted for the index's bound; clang's
 * __coro_frame_ty, whose index is a bit-field.
 */
struct frame_names {
	const char *type; /* the type's name (gcc: its suffix) */
	bool suffix;
	const char *resume, *destroy, *promise, *index;
	bool index_bitfield; /* clang: the index is a bit-field, its bits bound it */
};

static const struct frame_names gcc_frame = {
    ".Frame", true, "_Coro_resume_fn", "_Coro_destroy_fn", "_Coro_promise", "_Coro_resume_index",
    false};
static const struct frame_names clang_frame = {
    "__coro_frame_ty", false, "__resume_fn", "__destroy_fn", "__promise", "__coro_index", true};

/*
 * clang's resume index, the bit-field member m at off: byte_size bytes,
 * bit_size bits; DWARF 2's bit_offset counts from the storage's most
 * significant bit.  False (t untouched) when it is not one coreq reads.
 */
static bool index_bitfield(Dwarf_Die *m, uint64_t off, struct coro_type *t)
{
	Dwarf_Attribute a;
	Dwarf_Word bytes = 0, bits = 0, boff = 0, dboff = 0;
	if (dwarf_formudata(dwarf_attr(m, DW_AT_byte_size, &a), &bytes) != 0) {
		Dwarf_Die it;
		bytes = cq_dwt_type(m, &it) ? cq_dwt_size(&it) : 0;
	}
	if (dwarf_formudata(dwarf_attr(m, DW_AT_bit_size, &a), &bits) != 0)
		bits = bytes * 8;
	if (dwarf_attr(m, DW_AT_data_bit_offset, &a)) {
		if (dwarf_formudata(&a, &dboff) != 0)
			return false;
		off += dboff / 8;
		boff = dboff % 8;
	} else if (dwarf_formudata(dwarf_attr(m, DW_AT_bit_offset, &a), &boff) == 0) {
		if (boff + bits > bytes * 8)
			return false;
		boff = bytes * 8 - boff - bits;
	}
	if (bytes == 0 || bytes > 2 || bits == 0 || bits > 16 || boff + bits > bytes * 8)
		return false;
	t->index_off = off;
	t->index_bytes = (uint8_t)bytes;
	t->index_shift = (uint8_t)boff;
	t->index_bits = (uint8_t)bits;
	t->max_index = (1u << bits) - 1;
	return true;
}

/* A gcc member that holds a suspend point's awaiter (Is_, Fs_, AwN). */
static bool suspend_point(const char *mn)
{
	return strncmp(mn, "Is_", 3) == 0 || strncmp(mn, "Fs_", 3) == 0 ||
	       (mn[0] == 'A' && mn[1] == 'w' && mn[2] >= '0' && mn[2] <= '9');
}

/* Fills t's layout from frame type st as compiler fn names it; false if it is not one. */
static bool frame_layout(Dwarf_Die *st, const struct frame_names *fn, struct coro_type *t)
{
	const char *name = dwarf_diename(st);
	size_t len = name ? strlen(name) : 0, tlen = strlen(fn->type);
	if (!name || len < tlen || strcmp(fn->suffix ? name + len - tlen : name, fn->type) != 0)
		return false;
	uint64_t size = cq_dwt_size(st);
	Dwarf_Die m;
	bool resume = false, destroy = false, promise = false, index = false;
	unsigned points = 0, members = 0;
	if (dwarf_child(st, &m) != 0)
		return false;
	do {
		if (dwarf_tag(&m) != DW_TAG_member || ++members > 4096)
			continue;
		const char *mn = dwarf_diename(&m);
		uint64_t off;
		if (!mn || !cq_dwt_member_offset(&m, &off))
			continue;
		if (strcmp(mn, fn->resume) == 0)
			resume = off == 0;
		else if (strcmp(mn, fn->destroy) == 0)
			destroy = off == 8;
		else if (strcmp(mn, fn->promise) == 0) {
			Dwarf_Die pt;
			promise = true;
			t->promise_off = off;
			t->promise_size = cq_dwt_type(&m, &pt) ? cq_dwt_size(&pt) : 0;
		} else if (strcmp(mn, fn->index) == 0) {
			if (!fn->index_bitfield) {
				index = true;
				t->index_off = off;
			} else if (index_bitfield(&m, off, t)) {
				index = true;
			}
		} else if (!fn->index_bitfield && suspend_point(mn)) {
			points++;
		}
	} while (dwarf_siblingof(&m, &m) == 0);
	if (!(resume && destroy && promise && index && size >= 16 && t->index_off + 2 <= size &&
	      t->promise_off + t->promise_size <= size))
		return false;
	t->size = size;
	/* gcc: a co_await whose awaiter needs no storage has no member: allow one per member. */
	if (!fn->index_bitfield)
		t->max_index = 2 * (points + members) + 1;
	return true;
}

/* sub's variable `__coro_frame`'s type, if it is clang's frame type: into *t. */
static bool clang_frame_var(Dwarf_Die *sub, struct coro_type *t)
{
	Dwarf_Die c, st;
	if (dwarf_child(sub, &c) != 0)
		return false;
	unsigned n = 0;
	do {
		const char *name;
		Dwarf_Attribute a;
		if (dwarf_tag(&c) == DW_TAG_variable && (name = dwarf_diename(&c)) &&
		    strcmp(name, "__coro_frame") == 0)
			return dwarf_formref_die(dwarf_attr_integrate(&c, DW_AT_type, &a), &st) &&
			       cq_dwt_peel(&st) && dwarf_tag(&st) == DW_TAG_structure_type &&
			       frame_layout(&st, &clang_frame, t);
	} while (++n < 4096 && dwarf_siblingof(&c, &c) == 0);
	return false;
}

/*
 * The compile unit whose ranges hold pc, read unit by unit: clang emits no
 * .debug_aranges, which dwarf_addrdie needs.  At most CLANG_CUS units.
 */
static bool cu_of_pc(Dwarf *dw, uint64_t pc, Dwarf_Die *out)
{
	Dwarf_Off off = 0, next;
	size_t hsize;
	for (unsigned k = 0;
	     k < CLANG_CUS && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0;
	     k++, off = next)
		if (dwarf_offdie(dw, off + hsize, out) && dwarf_haspc(out, pc) > 0)
			return true;
	return false;
}

/*
 * The frame type of the subprogram starting at pc (NAME.resume), looked for
 * in die's children and, through namespaces and classes, their children:
 * dwarf_getscopes finds no scope for a .resume inside a namespace (Asio's
 * co_spawn_entry_point, clang 14).  At most *budget DIEs, 8 levels deep.
 */
static bool clang_frame_at(Dwarf_Die *die, uint64_t pc, struct coro_type *t, unsigned depth,
                           unsigned *budget)
{
	Dwarf_Die c;
	if (depth > 8 || dwarf_child(die, &c) != 0)
		return false;
	do {
		if (*budget == 0)
			return false;
		--*budget;
		Dwarf_Addr lo;
		switch (dwarf_tag(&c)) {
		case DW_TAG_subprogram:
			if (dwarf_lowpc(&c, &lo) == 0 && lo == pc)
				return clang_frame_var(&c, t);
			break;
		case DW_TAG_namespace:
		case DW_TAG_structure_type:
		case DW_TAG_class_type:
		case DW_TAG_union_type:
			if (clang_frame_at(&c, pc, t, depth + 1, budget))
				return true;
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&c, &c) == 0);
	return false;
}

/*
 * clang's frame type for the coroutine whose NAME.resume is at link-time
 * address pc: clang gives .resume its coroutine's subprogram (linkage name
 * NAME), and describes the frame as the artificial variable __coro_frame
 * of the ramp's (or its abstract instance's) subprogram NAME, at the top
 * of the same compile unit (clang 14 here).
 */
static bool clang_frame_type(Dwarf *dw, uint64_t pc, struct coro_type *t, Dwarf_Die *last_cu,
                             bool *have_last)
{
	Dwarf_Die cu, *scopes = NULL, sub;
	if (*have_last && dwarf_haspc(last_cu, pc) > 0)
		cu = *last_cu;
	else if (!dwarf_addrdie(dw, pc, &cu) && !cu_of_pc(dw, pc, &cu))
		return false;
	*last_cu = cu;
	*have_last = true;
	int n = dwarf_getscopes(&cu, pc, &scopes);
	bool found = false;
	for (int i = n - 1; i >= 0 && !found; i--)
		if (dwarf_tag(&scopes[i]) == DW_TAG_subprogram) {
			sub = scopes[i];
			found = true;
		}
	free(scopes);
	if (!found) {
		unsigned budget = CLANG_CU_DIES;
		return clang_frame_at(&cu, pc, t, 0, &budget);
	}
	Dwarf_Attribute a;
	const char *link = dwarf_formstring(dwarf_attr_integrate(&sub, DW_AT_linkage_name, &a));
	if (!link)
		return false;
	if (clang_frame_var(&sub, t))
		return true;
	Dwarf_Die c;
	if (dwarf_child(&cu, &c) != 0)
		return false;
	unsigned k = 0;
	do {
		const char *l;
		if (dwarf_tag(&c) == DW_TAG_subprogram &&
		    (l = dwarf_formstring(dwarf_attr_integrate(&c, DW_AT_linkage_name, &a))) &&
		    strcmp(l, link) == 0 && clang_frame_var(&c, t))
			return true;
	} while (++k < CLANG_CU_DIES && dwarf_siblingof(&c, &c) == 0);
	return false;
}

static int cmp_type(const void *a, const void *b)
{
	const struct coro_type *x = a, *y = b;
	return (x->actor > y->actor) - (x->actor < y->actor);
}

/* Appends ct to x->types; false when out of memory (MAX_TYPES: dropped). */
static bool add_type(struct cxx *x, const struct coro_type *ct, size_t *cap)
{
	if (x->ntypes == MAX_TYPES)
		return true;
	if (x->ntypes == *cap) {
		size_t c = *cap ? *cap * 2 : 32;
		struct coro_type *p = realloc(x->types, c * sizeof(*p));
		if (!p)
			return false;
		x->types = p;
		*cap = c;
	}
	x->types[x->ntypes++] = *ct;
	return true;
}

/* Module m's coroutine types read from its symbols and DWARF, appended to x->types. */
static struct cq_error *read_module(const struct cq_unwind_target *t, size_t m, struct cxx *x,
                                    size_t *cap, bool *dwarf)
{
	const struct cq_target_module *mod = &t->modules[m];
	struct coro_sym *syms = NULL;
	size_t n = 0, scap = 0;
	*dwarf = false;
	if (!module_symbols(mod->elf, mod->bias, &syms, &n, &scap)) {
		free(syms);
		return &cq_error_nomem;
	}
	if (n == 0)
		return NULL;
	qsort(syms, n, sizeof(*syms), cmp_sym);
	Dwarf *dw = t->ops->dwarf ? t->ops->dwarf(t->ctx, m) : NULL; /* the target's */
	struct cq_error *err = NULL;
	Dwarf_Die last_cu; /* the compile unit of the last clang coroutine */
	bool have_last = false;
	for (size_t i = 0; i + 1 < n && !err; i++) {
		if (syms[i].kind != SYM_ACTOR || syms[i + 1].kind == SYM_ACTOR ||
		    syms[i].clang != syms[i + 1].clang || !same_name(&syms[i], &syms[i + 1]))
			continue;
		struct coro_type ct = {.actor = syms[i].addr,
		                       .actor_end =
		                           syms[i].addr + (syms[i].size ? syms[i].size : 1),
		                       .destroy = syms[i + 1].addr,
		                       .clang = syms[i].clang,
		                       .module = (uint32_t)m};
		if (ct.clang) {
			/* .destroy then .cleanup, either alone: clang stores either. */
			if (syms[i + 1].kind == SYM_CLEANUP)
				ct.destroy2 = ct.destroy;
			else if (i + 2 < n && syms[i + 2].kind == SYM_CLEANUP &&
			         syms[i + 2].clang && same_name(&syms[i], &syms[i + 2]))
				ct.destroy2 = syms[i + 2].addr;
			/* Without __coro_frame_ty, see the top comment. */
			ct.promise_off = 16;
			ct.promise_size = 8;
			ct.size = 16;
			ct.max_index = UINT16_MAX;
			if (dw && clang_frame_type(dw, syms[i].addr - mod->bias, &ct, &last_cu,
			                           &have_last))
				ct.layout = true;
		} else {
			Dwarf_Die st;
			if (!dw || !actor_frame_type(dw, syms[i].addr - mod->bias, &st) ||
			    !frame_layout(&st, &gcc_frame, &ct))
				continue;
		}
		if (!add_type(x, &ct, cap))
			err = &cq_error_nomem;
	}
	*dwarf = dw != NULL;
	free(syms);
	return err;
}

/* What it caches per module: its coroutine types (cxx_types_blob.h). */
static const struct cq_target_blob cxx_types_blob = {"cxx", "types", CQ_CXX_TYPES_BLOB_FORMAT};
static const struct cq_target_blob *const cxx_blobs[] = {&cxx_types_blob, NULL};

/*
 * Module m's coroutine types, appended to x->types: from the target's cache
 * when it holds them for the same files (cxx_types_blob.h), else read from
 * the module (then cached, a module without coroutines too).
 */
static struct cq_error *index_module(const struct cq_unwind_target *t, size_t m, struct cxx *x,
                                     size_t *cap)
{
	const struct cq_target_module *mod = &t->modules[m];
	if (!mod->elf)
		return NULL;
	size_t len, n;
	bool dwarf;
	struct cq_cxx_type_row *rows;
	uint8_t *blob =
	    t->ops->cache_get ? t->ops->cache_get(t->ctx, m, &cxx_types_blob, &len) : NULL;
	if (blob) {
		struct cq_error *err = cq_cxx_types_blob_decode(blob, len, &rows, &n, &dwarf);
		free(blob);
		if (err == &cq_error_nomem)
			return err;
		if (!err) {
			for (size_t i = 0; i < n && !err; i++) {
				const struct cq_cxx_type_row *r = &rows[i];
				struct coro_type ct = {
				    .actor = r->actor + mod->bias,
				    .actor_end = r->actor_end + mod->bias,
				    .destroy = r->destroy + mod->bias,
				    .destroy2 = r->destroy2 ? r->destroy2 + mod->bias : 0,
				    .clang = r->clang,
				    .layout = r->layout,
				    .index_bytes = r->index_bytes,
				    .index_shift = r->index_shift,
				    .index_bits = r->index_bits,
				    .size = r->size,
				    .promise_off = r->promise_off,
				    .promise_size = r->promise_size,
				    .index_off = r->index_off,
				    .max_index = r->max_index,
				    .module = (uint32_t)m};
				if (!add_type(x, &ct, cap))
					err = &cq_error_nomem;
			}
			free(rows);
			x->modules += dwarf;
			x->modules_cached += !err;
			return err;
		}
		cq_error_free(err);
		if (t->ops->cache_reject)
			t->ops->cache_reject(t->ctx); /* damaged: rebuilt below and replaced */
	}
	size_t first = x->ntypes;
	struct cq_error *err = read_module(t, m, x, cap, &dwarf);
	x->modules += dwarf;
	if (err || !t->ops->cache_put)
		return err;
	n = x->ntypes - first;
	if (n && !(rows = calloc(n, sizeof(*rows))))
		return NULL; /* not cached */
	for (size_t i = 0; i < n; i++) {
		const struct coro_type *ct = &x->types[first + i];
		rows[i] = (struct cq_cxx_type_row){.actor = ct->actor - mod->bias,
		                                   .actor_end = ct->actor_end - mod->bias,
		                                   .destroy = ct->destroy - mod->bias,
		                                   .destroy2 =
		                                       ct->destroy2 ? ct->destroy2 - mod->bias : 0,
		                                   .clang = ct->clang,
		                                   .layout = ct->layout,
		                                   .index_bytes = ct->index_bytes,
		                                   .index_shift = ct->index_shift,
		                                   .index_bits = ct->index_bits,
		                                   .size = ct->size,
		                                   .promise_off = ct->promise_off,
		                                   .promise_size = ct->promise_size,
		                                   .index_off = ct->index_off,
		                                   .max_index = ct->max_index};
	}
	blob = cq_cxx_types_blob_encode(n ? rows : NULL, n, dwarf, &len);
	if (n)
		free(rows);
	if (blob)
		t->ops->cache_put(t->ctx, m, &cxx_types_blob, blob, len);
	free(blob);
	return NULL;
}

/*
 * Whether folly's runtime sees this program's coroutines: folly's cookie is
 * linked in, or a thread's AsyncStackRoot (under folly's key) has a top
 * frame with a parent or an instruction pointer (AsyncStackFrame
 * { parentFrame; instructionPointer; ... }).  libunifex links the key, and
 * its sync_wait sets a root with an empty frame of its own, in release
 * builds too, where NDEBUG turns its async stacks off and no coroutine
 * pushes a frame: those coroutines are read here.
 */
static bool folly_in_use(const struct cq_unwind_target *t)
{
	struct cq_target_symbol q[] = {{.name = "folly_async_stack_root_tls_key"},
	                               {.name = "__folly_suspended_frame_cookie"}};
	for (size_t m = 0; t->ops->find_symbols && m < t->nmodules; m++)
		if (t->ops->find_symbols(t->ctx, m, q, 2) == 2)
			break;
	if (q[1].found)
		return true;
	uint32_t key;
	if (!q[0].found || !cq_mem_read_u32(t->mem, q[0].addr, &key) || key >= 1024 ||
	    !t->ops->tls_prepare || !t->ops->tls_get)
		return false;
	t->ops->tls_prepare(t->ctx);
	for (size_t th = 0; th < t->nthreads; th++) {
		uint64_t holder, root, top, frame[2];
		if (t->ops->tls_get(t->ctx, th, key, &holder) == CQ_TARGET_TLS_VALUE && holder &&
		    cq_mem_read_u64(t->mem, holder, &root) && root &&
		    cq_mem_read_u64(t->mem, root, &top) && top &&
		    cq_mem_read(t->mem, top, frame, sizeof(frame)) && (frame[0] || frame[1]))
			return true;
	}
	return false;
}

static struct cq_error *cxx_detect(const struct cq_async_ctx *ctx, void **state,
                                   struct cq_async_needs *needs)
{
	const struct cq_unwind_target *t = ctx->target;
	*state = NULL;
	if (folly_in_use(t))
		return NULL; /* folly's runtime sees these coroutines */
	struct cxx *x = calloc(1, sizeof(*x));
	if (!x)
		return &cq_error_nomem;
	size_t cap = 0;
	double start = cq_clock_seconds();
	for (size_t m = 0; m < t->nmodules; m++) {
		struct cq_error *err = index_module(t, m, x, &cap);
		if (err) {
			cxx_destroy(x);
			return err;
		}
	}
	x->index_seconds = cq_clock_seconds() - start;
	if (x->ntypes == 0) {
		cxx_destroy(x);
		return NULL;
	}
	qsort(x->types, x->ntypes, sizeof(*x->types), cmp_type);
	x->lo = x->types[0].actor;
	x->hi = x->types[x->ntypes - 1].actor;
	*needs = (struct cq_async_needs){
	    .native_frames = true, .scan = true, .scan_lo = x->lo, .scan_hi = x->hi};
	*state = x;
	return NULL;
}

static const struct coro_type *type_of_actor(const struct cxx *x, uint64_t actor)
{
	struct coro_type key = {.actor = actor};
	return bsearch(&key, x->types, x->ntypes, sizeof(key), cmp_type);
}

/* The scan hook: a resume word that is an actor, followed by its destroy word. */
static void cxx_scan(void *state, const struct cq_async_ctx *ctx, const struct cq_async_chunk *c)
{
	struct cxx *x = state;
	x->scanned_bytes += c->len - c->overlap;
	if (x->truncated || c->len < 16 || !c->data)
		return;
	uint64_t lo = x->lo, span = x->hi - x->lo;
	/* The dead part of a thread's stack holds stale copies: not looked at. */
	uint64_t from = cq_async_live_start(ctx->target, c->segment), first = 0;
	if (from > c->addr)
		first = (from - c->addr + 7) & ~(uint64_t)7;
	for (uint64_t off = first; off + 16 <= c->len; off += 8) {
		uint64_t w;
		memcpy(&w, c->data + off, 8);
		if (w - lo > span)
			continue;
		const struct coro_type *ty = type_of_actor(x, w);
		uint64_t d;
		memcpy(&d, c->data + off + 8, 8);
		if (!ty || (d != ty->destroy && (d != ty->destroy2 || !d)))
			continue;
		if (x->ncand == x->cap_cand) {
			size_t cap = x->cap_cand ? x->cap_cand * 2 : 64;
			uint64_t *p =
			    cap <= MAX_CANDIDATES ? realloc(x->cand, cap * sizeof(*p)) : NULL;
			if (!p) {
				x->truncated = true;
				x->nomem = cap <= MAX_CANDIDATES;
				return;
			}
			x->cand = p;
			x->cap_cand = cap;
		}
		x->cand[x->ncand++] = c->addr + off;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/*
 * A clang frame's size, which no DWARF gives here: its heap chunk's usable
 * bytes (the chunk's size word, less the next chunk's prev_size word), else
 * CLANG_FRAME_GUESS bytes.
 */
static uint32_t clang_frame_size(struct cq_mem *mem, uint64_t addr, enum cq_heap_verdict v)
{
	uint64_t w;
	if (v != CQ_HEAP_OBJECT || !cq_mem_read_u64(mem, addr - 8, &w) || (w & ~7ull) < 32)
		return CLANG_FRAME_GUESS;
	w = (w & ~7ull) - 8;
	return w > MAX_FRAME_WORDS * 8 ? MAX_FRAME_WORDS * 8 : (uint32_t)w;
}

/*
 * Whether clang frame f lies inside one of the first n confirmed frames
 * (sorted by address): clang's CoroElide puts an awaited coroutine's frame
 * inside its awaiter's frame.  f's size becomes what is left of that frame.
 */
static bool elided(const struct cxx *x, size_t n, struct frame *f)
{
	for (size_t k = n, tries = 0; k > 0 && tries < 64; k--, tries++) {
		const struct frame *o = &x->frames[k - 1];
		if (o->addr < f->addr && f->addr + 16 <= o->addr + o->size) {
			uint64_t left = o->addr + o->size - f->addr;
			if (left < f->size || f->size <= 16)
				f->size = (uint32_t)left;
			return true;
		}
	}
	return false;
}

/* Confirms the candidates into x->frames (sorted by address). */
static struct cq_error *confirm(struct cxx *x, struct cq_mem *mem)
{
	if (x->ncand > 1)
		qsort(x->cand, x->ncand, sizeof(*x->cand), cmp_u64);
	x->frames = calloc(x->ncand ? x->ncand : 1, sizeof(*x->frames));
	struct cq_heap_query *q = calloc(x->ncand ? x->ncand : 1, sizeof(*q));
	if (!x->frames || !q) {
		free(q);
		return &cq_error_nomem;
	}
	size_t k = 0;
	for (size_t i = 0; i < x->ncand; i++) {
		uint64_t a = x->cand[i], resume;
		uint16_t index;
		if (i > 0 && a == x->cand[i - 1])
			continue;
		const struct coro_type *ty;
		index = 0;
		if (!cq_mem_read_u64(mem, a, &resume) || !(ty = type_of_actor(x, resume)) ||
		    ((!ty->clang || ty->layout) && !cq_mem_read(mem, a + ty->index_off, &index,
		                                                ty->clang ? ty->index_bytes : 2))) {
			x->rejected[REJECT_UNREADABLE]++;
			continue;
		}
		if (a & 7) {
			x->rejected[REJECT_MISALIGNED]++;
			continue;
		}
		if (index > ty->max_index) {
			x->rejected[REJECT_BAD_INDEX]++;
			continue;
		}
		if (ty->clang)
			index =
			    (uint16_t)((index >> ty->index_shift) & ((1u << ty->index_bits) - 1));
		x->frames[k] = (struct frame){.addr = a,
		                              .type = (uint32_t)(ty - x->types),
		                              .index = index,
		                              .size = (uint32_t)ty->size,
		                              .parent = -1};
		q[k] = (struct cq_heap_query){.addr = a, .size = ty->size};
		k++;
	}
	cq_heap_classify(mem, q, k);
	size_t kept = 0;
	for (size_t i = 0; i < k; i++) {
		switch (q[i].verdict) {
		case CQ_HEAP_INSIDE:
			if (x->types[x->frames[i].type].clang && elided(x, kept, &x->frames[i]))
				x->frames[kept++] = x->frames[i];
			else
				x->rejected[REJECT_INSIDE_CHUNK]++;
			break;
		case CQ_HEAP_FREE:
			x->rejected[REJECT_FREE_CHUNK]++;
			break;
		case CQ_HEAP_TOO_SMALL:
			x->rejected[REJECT_CHUNK_TOO_SMALL]++;
			break;
		case CQ_HEAP_OBJECT:
		case CQ_HEAP_UNKNOWN:
			if (x->types[x->frames[i].type].clang &&
			    !x->types[x->frames[i].type].layout)
				x->frames[i].size = clang_frame_size(mem, q[i].addr, q[i].verdict);
			x->frames[kept++] = x->frames[i];
			break;
		}
	}
	free(q);
	x->nframes = kept;
	return NULL;
}

/* The confirmed frame at addr, or at its promise; -1 if none. */
static int64_t frame_at(const struct cxx *x, uint64_t v)
{
	size_t lo = 0, hi = x->nframes;
	while (lo < hi) { /* the last frame starting at or below v */
		size_t mid = lo + (hi - lo) / 2;
		if (x->frames[mid].addr <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -1;
	const struct frame *f = &x->frames[lo - 1];
	const struct coro_type *ty = &x->types[f->type];
	if (v == f->addr || v == f->addr + ty->promise_off)
		return (int64_t)(lo - 1);
	return -1;
}

/*
 * Frame f is at its initial suspend: it never ran, so it awaits nothing
 * (libunifex keeps such a coroutine per task for its done path and points
 * at it from the promise).  Unknown without clang's layout.
 */
static bool never_started(const struct cxx *x, const struct frame *f)
{
	const struct coro_type *ty = &x->types[f->type];
	if (ty->clang)
		return ty->layout && f->index == 0;
	return f->index == 2 || f->index == 0;
}

/* One vote edge: child is awaited by parent. */
struct vote {
	uint32_t child, parent;
};

static int cmp_vote(const void *a, const void *b)
{
	const struct vote *x = a, *y = b;
	if (x->child != y->child)
		return (x->child > y->child) - (x->child < y->child);
	return (x->parent > y->parent) - (x->parent < y->parent);
}

/* Links every frame to the frame that awaits it (see the top comment). */
static struct cq_error *link_frames(struct cxx *x, struct cq_mem *mem)
{
	struct vote *v = NULL;
	size_t nv = 0, cap = 0;
	uint64_t words[MAX_FRAME_WORDS];
	for (size_t i = 0; i < x->nframes; i++) {
		const struct coro_type *ty = &x->types[x->frames[i].type];
		uint64_t n = x->frames[i].size / 8;
		if (n > MAX_FRAME_WORDS)
			n = MAX_FRAME_WORDS;
		if (x->link_words + n > MAX_LINK_WORDS)
			break;
		x->link_words += n;
		if (n < 3 || !cq_mem_read(mem, x->frames[i].addr, words, n * 8))
			continue;
		for (uint64_t w = 2; w < n; w++) {
			int64_t j = frame_at(x, words[w]);
			if (j < 0 || (size_t)j == i)
				continue;
			bool in_promise =
			    w * 8 >= ty->promise_off && w * 8 < ty->promise_off + ty->promise_size;
			/*
			 * A frame at its initial suspend awaits nothing.  From the
			 * promise, j would be the awaiter: then i only holds j.  From
			 * an awaiter temporary, i would await j: j would have been
			 * started by the co_await, and i would have run to it.
			 */
			if (never_started(x, &x->frames[j]) ||
			    (!in_promise && never_started(x, &x->frames[i]))) {
				if (never_started(x, &x->frames[j]))
					x->frames[j].held = true;
				continue;
			}
			if (nv == cap) {
				size_t c = cap ? cap * 2 : 64;
				struct vote *p = realloc(v, c * sizeof(*p));
				if (!p) {
					free(v);
					return &cq_error_nomem;
				}
				v = p;
				cap = c;
			}
			v[nv++] = in_promise ? (struct vote){(uint32_t)i, (uint32_t)j}
			                     : (struct vote){(uint32_t)j, (uint32_t)i};
		}
	}
	if (nv > 1)
		qsort(v, nv, sizeof(*v), cmp_vote);
	for (size_t s = 0; s < nv;) {
		size_t e = s;
		while (e < nv && v[e].child == v[s].child && v[e].parent == v[s].parent)
			e++;
		struct frame *c = &x->frames[v[s].child];
		if (e - s > c->votes) {
			c->votes = (unsigned)(e - s);
			c->parent = v[s].parent;
		}
		s = e;
	}
	free(v);
	/* Cycles: follow parents from each frame; a frame met twice closes one. */
	uint32_t *seen = calloc(x->nframes ? x->nframes : 1, sizeof(*seen));
	if (!seen)
		return &cq_error_nomem;
	for (size_t i = 0; i < x->nframes; i++) {
		int64_t f = (int64_t)i;
		while (f >= 0 && seen[f] == 0) {
			seen[f] = (uint32_t)i + 1;
			f = x->frames[f].parent;
		}
		if (f < 0 || seen[f] != (uint32_t)i + 1)
			continue;
		/* f is on a cycle found from i: drop its weakest link. */
		int64_t weakest = f, g = x->frames[f].parent;
		while (g != f) {
			if (x->frames[g].votes < x->frames[weakest].votes)
				weakest = g;
			g = x->frames[g].parent;
		}
		x->frames[weakest].parent = -1;
		x->frames[weakest].votes = 0;
		x->cycles++;
	}
	free(seen);
	for (size_t i = 0; i < x->nframes; i++) {
		if (x->frames[i].parent >= 0) {
			x->frames[x->frames[i].parent].has_child = true;
			x->links++;
		}
	}
	return NULL;
}

/* "initial", "await #k", "final" or "index N": where a suspended frame is parked. */
static const char *state_name(struct cxx *x, const struct frame *f)
{
	char buf[32];
	const struct coro_type *ty = &x->types[f->type];
	if (ty->clang && !ty->layout)
		snprintf(buf, sizeof(buf), "suspended");
	else if (ty->clang && f->index == 0)
		snprintf(buf, sizeof(buf), "initial");
	else if (ty->clang)
		snprintf(buf, sizeof(buf), "await #%u", (unsigned)f->index - 1);
	else if (f->index == 2 || f->index == 0)
		snprintf(buf, sizeof(buf), "initial");
	else if (f->index % 2 == 0)
		snprintf(buf, sizeof(buf), "await #%u", (unsigned)(f->index - 4) / 2);
	else
		snprintf(buf, sizeof(buf), "index %u", (unsigned)f->index);
	for (size_t i = x->nnames; i > 0 && i + 8 > x->nnames; i--)
		if (strcmp(x->names[i - 1], buf) == 0)
			return x->names[i - 1];
	return keep_name(x, buf);
}

/*
 * Up to n bytes of mod's image at runtime address addr, from its file (an
 * allocated section with contents; code only when exec); how many.
 */
static size_t image_bytes(const struct cq_target_module *mod, uint64_t addr, uint8_t *buf, size_t n,
                          bool exec)
{
	Elf *elf = mod->elf;
	GElf_Ehdr eh;
	if (!elf || !gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 || addr < mod->bias)
		return 0;
	uint64_t a = addr - mod->bias;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_ALLOC) || (exec && !(sh.sh_flags & SHF_EXECINSTR)) ||
		    a < sh.sh_addr || a - sh.sh_addr >= sh.sh_size)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		uint64_t off = a - sh.sh_addr;
		if (!d || !d->d_buf || off >= d->d_size)
			return 0;
		size_t k = d->d_size - off < n ? (size_t)(d->d_size - off) : n;
		memcpy(buf, (const uint8_t *)d->d_buf + off, k);
		return k;
	}
	return 0;
}

/* cq_coro_read_fn over a module's file. */
static size_t read_image(void *ctx, uint64_t addr, uint8_t *buf, size_t n)
{
	return image_bytes(ctx, addr, buf, n, false);
}

/* The source line of the actor's own frame at pc (through inlined calls), or 0. */
static int actor_line(const struct cq_async_ctx *ctx, uint64_t pc)
{
	const struct cq_unwind_target *tg = ctx->target;
	struct cq_frame_list fl = {0};
	struct cq_unwind_frame uf = {.pc = pc, .trust = CQ_TRUST_ASYNC};
	int line = 0;
	if (!tg->ops->add_frames(tg->ctx, &fl, &uf, CQ_FRAME_ASYNC) && fl.n > 0)
		line = fl.frames[fl.n - 1].line;
	free(fl.frames);
	return line;
}

/*
 * For clang: the address of NAME.resume's store of frame f's index into
 * its one-byte __coro_index on the way to suspend (clang 14 gives it the
 * co_await's line at -O0 and -O2), or 0; cached per type.
 */
static uint64_t clang_await_pc(const struct cq_async_ctx *ctx, struct coro_type *ty,
                               const struct frame *f)
{
	if (!ty->layout || f->index == 0 || ty->index_bytes != 1 || ty->index_shift != 0)
		return 0;
	if (ty->looked_up && ty->last_index == f->index)
		return ty->last_target;
	uint8_t code[CLANG_CODE_BYTES];
	const struct cq_target_module *mod =
	    ty->module < ctx->target->nmodules ? &ctx->target->modules[ty->module] : NULL;
	uint64_t len =
	    ty->actor_end - ty->actor < sizeof(code) ? ty->actor_end - ty->actor : sizeof(code);
	size_t n = mod ? image_bytes(mod, ty->actor, code, len, true) : 0;
	size_t at = n ? cq_coro_byte_store(code, n, ty->index_off, f->index) : SIZE_MAX;
	ty->last_target = at != SIZE_MAX ? ty->actor + at : 0;
	ty->last_index = f->index;
	ty->looked_up = true;
	return ty->last_target;
}

/*
 * A code address of the actor on frame f's co_await's source line, or 0;
 * cached per type.  Two places carry that line (gcc 12, checked at -O0 and
 * -O2 on the corpus): the resume target (the awaiter's await_resume, on
 * the co_await's line, unless it is empty and optimised away, when the
 * target's line is the next statement's), and the store of the index on
 * the way to suspend (on the co_await's line at -O2, unless gcc gives it
 * the coroutine's artificial location, the line of the dispatch's load).
 * The store is taken when its line is not the dispatch's, else the target.
 */
static uint64_t await_pc(struct cxx *x, const struct cq_async_ctx *ctx, const struct frame *f)
{
	struct coro_type *ty = &x->types[f->type];
	if (ty->clang)
		return clang_await_pc(ctx, ty, f);
	if (f->index < 4 || f->index % 2 != 0)
		return 0; /* not parked at a co_await */
	if (ty->looked_up && ty->last_index == f->index)
		return ty->last_target;
	uint8_t code[DISPATCH_BYTES];
	size_t n = 0, load = 0;
	const struct cq_target_module *mod =
	    ty->module < ctx->target->nmodules ? &ctx->target->modules[ty->module] : NULL;
	if (mod)
		n = image_bytes(mod, ty->actor, code,
		                ty->actor_end - ty->actor < sizeof(code) ? ty->actor_end - ty->actor
		                                                         : sizeof(code),
		                true);
	uint64_t pc = 0;
	if (n)
		pc = cq_coro_dispatch_target(code, n, ty->actor, ty->actor_end, ty->index_off,
		                             f->index, &load);
	if (!pc && n)
		pc = cq_coro_jump_table_target(code, n, ty->actor, ty->actor, ty->actor_end,
		                               ty->index_off, load, f->index, read_image,
		                               (void *)mod);
	uint64_t even = pc || !n ? 0 : cq_coro_even_branch(code, n, ty->actor, ty->actor_end, load);
	if (even) { /* the resume half of the dispatch, maybe beyond the bytes read */
		uint8_t half[DISPATCH_BYTES];
		size_t k = image_bytes(mod, even, half,
		                       ty->actor_end - even < sizeof(half) ? ty->actor_end - even
		                                                           : sizeof(half),
		                       true);
		if (k)
			pc = cq_coro_branch_target(half, k, even, ty->actor, ty->actor_end,
			                           ty->index_off, 0, f->index);
		if (!pc && k)
			pc = cq_coro_jump_table_target(half, k, even, ty->actor, ty->actor_end,
			                               ty->index_off, 0, f->index, read_image,
			                               (void *)mod);
	}
	if (pc) {
		size_t st = cq_coro_index_store(code, n, load, ty->index_off, f->index);
		int ls = st != SIZE_MAX ? actor_line(ctx, ty->actor + st) : 0;
		if (ls > 0 && ls != actor_line(ctx, ty->actor + load))
			pc = ty->actor + st;
	}
	ty->last_target = pc;
	ty->last_index = f->index;
	ty->looked_up = true;
	return pc;
}

/* Appends frame f as an async frame named after its coroutine's actor. */
static struct cq_error *add_async(struct cxx *x, const struct cq_async_ctx *ctx,
                                  struct cq_frame_list *fl, const struct frame *f, bool with_state)
{
	const struct cq_unwind_target *tg = ctx->target;
	uint64_t resume = with_state ? await_pc(x, ctx, f) : 0;
	struct cq_unwind_frame uf = {.pc = resume ? resume : x->types[f->type].actor,
	                             .trust = CQ_TRUST_ASYNC};
	size_t start = fl->n;
	struct cq_error *err = tg->ops->add_frames(tg->ctx, fl, &uf, CQ_FRAME_ASYNC);
	if (err || fl->n == start)
		return err;
	if (resume && fl->n > start + 1) {
		/* Only the actor's frame, at the co_await's line: not the awaiter's inlined calls.
		 */
		fl->frames[start] = fl->frames[fl->n - 1];
		fl->n = start + 1;
	}
	struct cq_stack_frame *last = &fl->frames[fl->n - 1];
	last->object = f->addr;
	if (with_state && !(last->state = state_name(x, f)))
		return &cq_error_nomem;
	return NULL;
}

static bool frame_list_push(struct cq_frame_list *fl, const struct cq_stack_frame *f)
{
	if (fl->n == fl->cap) {
		size_t cap = fl->cap ? fl->cap * 2 : 32;
		struct cq_stack_frame *p = realloc(fl->frames, cap * sizeof(*p));
		if (!p)
			return false;
		fl->frames = p;
		fl->cap = cap;
	}
	fl->frames[fl->n++] = *f;
	return true;
}

/* The coroutine type whose actor holds native frame f's pc, or NULL. */
static const struct coro_type *actor_at(const struct cxx *x, const struct cq_stack_frame *f,
                                        bool innermost)
{
	if (f->kind != CQ_FRAME_NATIVE)
		return NULL;
	uint64_t pc = innermost ? f->pc : f->pc - 1;
	size_t lo = 0, hi = x->ntypes;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (x->types[mid].actor <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || pc >= x->types[lo - 1].actor_end)
		return NULL;
	return &x->types[lo - 1];
}

/* Merges thread t's running chain into its stack; marks its frames on_thread. */
static struct cq_error *merge_thread(struct cxx *x, const struct cq_async_ctx *ctx, size_t t)
{
	struct cq_thread_stack *ts = &ctx->stacks->threads[t];
	size_t at = SIZE_MAX; /* the innermost actor's native frame */
	const struct coro_type *ty = NULL;
	for (size_t i = 0; i < ts->nframes && !ty; i++)
		if ((ty = actor_at(x, &ts->frames[i], i == 0)))
			at = i;
	if (!ty)
		return NULL;
	uint64_t *words;
	size_t nwords;
	if (!cq_async_live_words(ctx->target, t, &words, &nwords))
		return &cq_error_nomem;
	int64_t running = -1;
	for (size_t i = 0; i < x->nframes; i++) {
		if (&x->types[x->frames[i].type] != ty ||
		    !cq_async_sorted_has(words, nwords, x->frames[i].addr))
			continue;
		/* Of several, the one no other candidate awaits (the innermost). */
		if (running < 0 || !x->frames[i].has_child)
			running = (int64_t)i;
	}
	free(words);
	if (running < 0)
		return NULL;
	x->running++;
	struct cq_frame_list fl = {0};
	for (size_t i = 0; i <= at; i++)
		if (!frame_list_push(&fl, &ts->frames[i]))
			goto nomem;
	size_t depth = 0, max = ctx->unwind->max_frames ? ctx->unwind->max_frames : 1;
	for (int64_t f = running; f >= 0 && depth < max; f = x->frames[f].parent, depth++) {
		struct frame *fr = &x->frames[f];
		if (fr->on_thread)
			break;
		fr->on_thread = true;
		if (f == running)
			continue;
		bool native = false; /* its actor is on the native stack already */
		for (size_t i = at + 1; i < ts->nframes && !native; i++)
			native = actor_at(x, &ts->frames[i], false) == &x->types[fr->type];
		if (native)
			continue;
		struct cq_error *err = add_async(x, ctx, &fl, fr, true);
		if (err) {
			free(fl.frames);
			return err;
		}
		x->merged++;
	}
	for (size_t i = at + 1; i < ts->nframes; i++)
		if (!frame_list_push(&fl, &ts->frames[i]))
			goto nomem;
	if (ts->owns_frames)
		free(ts->frames);
	ts->frames = fl.frames;
	ts->nframes = fl.n;
	ts->owns_frames = true;
	return NULL;
nomem:
	free(fl.frames);
	return &cq_error_nomem;
}

/* Each chain that runs on no thread, leaf first. */
static struct cq_error *add_suspended(struct cxx *x, const struct cq_async_ctx *ctx)
{
	size_t max = ctx->unwind->max_frames ? ctx->unwind->max_frames : 1;
	for (size_t i = 0; i < x->nframes; i++) {
		if (x->frames[i].has_child || x->frames[i].on_thread)
			continue;
		if (x->frames[i].held && x->frames[i].parent < 0) {
			x->held++;
			continue;
		}
		if (ctx->stacks->nsuspended >= ctx->max_suspended) {
			x->over_limit++;
			continue;
		}
		/* A chain whose outer part runs on a thread is that thread's. */
		bool running = false;
		size_t depth = 0;
		for (int64_t f = (int64_t)i; f >= 0 && depth < max;
		     f = x->frames[f].parent, depth++)
			running |= x->frames[f].on_thread;
		if (running)
			continue;
		struct cq_frame_list fl = {0};
		enum cq_unwind_end end = CQ_END_OUTERMOST;
		depth = 0;
		for (int64_t f = (int64_t)i; f >= 0; f = x->frames[f].parent, depth++) {
			if (depth == max || x->suspended_frames == MAX_SUSPENDED_FRAMES) {
				end = CQ_END_MAX_FRAMES;
				break;
			}
			if (x->frames[f].listed) {
				/*
				 * Another chain holds this frame: a coroutine has
				 * one awaiter, so the links are damaged.
				 */
				end = CQ_END_LOOP;
				break;
			}
			x->frames[f].listed = true;
			x->suspended_frames++;
			struct cq_error *err = add_async(x, ctx, &fl, &x->frames[f], true);
			if (err) {
				free(fl.frames);
				return err;
			}
		}
		struct cq_suspended_stack s = {.kind = "cxx",
		                               .leaf = x->frames[i].addr,
		                               .frames = fl.frames,
		                               .nframes = fl.n,
		                               .end = end};
		bool added;
		struct cq_error *err = cq_async_add_suspended(ctx, &s, &added);
		if (err)
			return err;
		if (added)
			x->reported++;
		else
			x->over_limit++;
	}
	return NULL;
}

static struct cq_error *cxx_decode(void *state, const struct cq_async_ctx *ctx)
{
	struct cxx *x = state;
	if (x->nomem)
		return &cq_error_nomem;
	double start = cq_clock_seconds();
	x->scan_seconds = ctx->scan_seconds;
	struct cq_error *err = confirm(x, ctx->target->mem);
	if (!err)
		err = link_frames(x, ctx->target->mem);
	for (size_t t = 0; t < ctx->stacks->nthreads && !err; t++)
		err = merge_thread(x, ctx, t);
	if (!err)
		err = add_suspended(x, ctx);
	x->decode_seconds = cq_clock_seconds() - start;
	return err;
}

/*
 * `coreq cache warm`: the module's coroutine types, read from the cache or
 * from the module (then cached): "cxx_types" of them (0 for a module
 * without coroutines), "cxx_cached" when the cache held them already.
 */
static struct cq_error *cxx_warm(struct cq_async_warm *w)
{
	struct cxx *x = calloc(1, sizeof(*x));
	if (!x)
		return &cq_error_nomem;
	size_t cap = 0;
	struct cq_error *err = index_module(w->target, w->module, x, &cap);
	size_t types = err ? 0 : x->ntypes;
	bool cached = !err && x->modules_cached > 0;
	cxx_destroy(x);
	cq_stats_uint(w->figures, "cxx_types", types);
	cq_stats_bool(w->figures, "cxx_cached", cached);
	if (types)
		snprintf(w->text, sizeof(w->text), "C++ coroutines %zu%s", types,
		         cached ? " (cached already)" : "");
	return err;
}

/* The "cxx_" keys of the async statistics. */
static void cxx_report(const void *state, const struct cq_async_ctx *ctx, struct cq_stats *out,
                       struct cq_stats *warnings)
{
	(void)ctx;
	(void)warnings;
	const struct cxx none = {0};
	const struct cxx *x = state ? state : &none;
	cq_stats_bool(out, "cxx", state != NULL);
	const char *keys[] = {"cxx_modules",    "cxx_coroutines", "cxx_scanned_bytes",
	                      "cxx_candidates", "cxx_frames",     "cxx_links",
	                      "cxx_cycles",     "cxx_running",    "cxx_merged",
	                      "cxx_reported",   "cxx_over_limit", "cxx_held"};
	uint64_t vals[] = {x->modules, x->ntypes,   x->scanned_bytes, x->ncand,
	                   x->nframes, x->links,    x->cycles,        x->running,
	                   x->merged,  x->reported, x->over_limit,    x->held};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		cq_stats_uint(out, keys[i], vals[i]);
	cq_stats_uint(out, "cxx_scan_us", (uint64_t)(x->scan_seconds * 1e6));
	cq_stats_uint(out, "cxx_decode_us", (uint64_t)(x->decode_seconds * 1e6));
	cq_stats_uint(out, "cxx_index_us", (uint64_t)(x->index_seconds * 1e6));
	cq_stats_uint(out, "cxx_modules_cached", x->modules_cached);
	cq_stats_bool(out, "cxx_scan_truncated", x->truncated);
	cq_stats_object(out, "cxx_rejected");
	for (unsigned i = 0; i < REJECT_REASONS; i++)
		cq_stats_uint(out, reject_names[i], x->rejected[i]);
	cq_stats_end(out);
}

static const char *const cxx_kinds[] = {"cxx", NULL};

const struct cq_async_runtime cq_async_cxx = {
    .name = "cxx",
    .kinds = cxx_kinds,
    .listing = CQ_ASYNC_LIST_CHAINS,
    .heading = "Suspended C++ coroutines",
    .noun = "chain",
    .leaf = "leaf frame",
    .detect = cxx_detect,
    .scan = cxx_scan,
    .decode = cxx_decode,
    .report = cxx_report,
    .destroy = cxx_destroy,
    .blobs = cxx_blobs,
    .warm = cxx_warm,
};
