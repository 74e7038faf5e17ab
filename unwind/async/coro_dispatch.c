/*
 * coro_dispatch.c - where gcc's coroutine actor resumes, read from its
 * x86-64 machine code: the target of its dispatch on _Coro_resume_index and
 * the store of an index on the way to suspend; and clang's store of its
 * __coro_index (for the cxx runtime's await lines, issue 33).  Only the bytes given are read.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "unwind/async/coro_dispatch.h"

/* movzwl index_off(%reg), %reg (0f b7 modrm [sib] disp8/disp32) at code + i. */
static bool index_load(const uint8_t *code, size_t n, size_t i, uint64_t index_off)
{
	if (i + 4 > n || code[i] != 0x0f || code[i + 1] != 0xb7)
		return false;
	uint8_t modrm = code[i + 2], mod = modrm >> 6;
	size_t d = i + 3 + ((modrm & 7) == 4); /* a SIB byte */
	if (mod == 1 && d < n)
		return code[d] == index_off;
	if (mod == 2 && d + 4 <= n) {
		uint32_t v;
		memcpy(&v, code + d, 4);
		return v == index_off;
	}
	return false;
}

/* `cmp $imm, %reg` (16 or 32 bits) at code + i: its immediate and length, or false. */
static bool cmp_imm(const uint8_t *code, size_t n, size_t i, uint64_t *imm, size_t *len)
{
	size_t p = i;
	bool word = p < n && code[p] == 0x66;
	p += word;
	if (p + 3 <= n && code[p] == 0x83 && (code[p + 1] & 0xf8) == 0xf8) {
		*imm = code[p + 2] < 0x80 ? code[p + 2] : UINT64_MAX;
		*len = p + 3 - i;
		return true;
	}
	size_t op = 0;
	if (p < n && code[p] == 0x3d)
		op = 1;
	else if (p + 2 <= n && code[p] == 0x81 && (code[p + 1] & 0xf8) == 0xf8)
		op = 2;
	if (!op || p + op + (word ? 2 : 4) > n)
		return false;
	uint16_t v16 = 0;
	uint32_t v32 = 0;
	if (word)
		memcpy(&v16, code + p + op, 2);
	else
		memcpy(&v32, code + p + op, 4);
	*imm = word ? v16 : v32;
	*len = p + op + (word ? 2 : 4) - i;
	return true;
}

/*
 * A `je` (74 rel8, or 0f 84 rel32) wholly inside code[0, n) at offset p:
 * its target, base + the offset after it + rel, in *target; false for any
 * other bytes or one that runs past n.
 */
static bool je_target(const uint8_t *code, size_t n, size_t p, uint64_t base, uint64_t *target)
{
	int64_t rel;
	size_t len;
	if (p < n && n - p >= 2 && code[p] == 0x74) {
		rel = (int8_t)code[p + 1];
		len = 2;
	} else if (p < n && n - p >= 6 && code[p] == 0x0f && code[p + 1] == 0x84) {
		int32_t r;
		memcpy(&r, code + p + 2, 4);
		rel = r;
		len = 6;
	} else {
		return false;
	}
	*target = base + p + len + (uint64_t)rel;
	return true;
}

/*
 * Where gcc's actor continues when resumed at index (x86-64), or 0.  The
 * actor opens with its dispatch: it loads _Coro_resume_index (movzwl
 * index_off(%reg)) and compares it with each suspend point's index, each
 * compare followed by a je to that point's resume label (gcc 12 at -O0 and
 * -O2 with a few suspend points; many compile to a jump table, read by
 * cq_coro_jump_table_target).  The first `cmp $index, %reg; je target`
 * within CQ_CORO_WINDOW bytes after a load, with the target inside the
 * actor, is taken.  The code at the target is the awaiter's await_resume,
 * on the co_await's source line.
 */
uint64_t cq_coro_branch_target(const uint8_t *code, size_t n, uint64_t base, uint64_t actor,
                               uint64_t end, uint64_t index_off, size_t from, unsigned index)
{
	for (size_t i = from, last = from; i < n && i <= last + CQ_CORO_WINDOW; i++) {
		if (index_load(code, n, i, index_off))
			last = i; /* -O0 loads it again on each branch */
		uint64_t imm;
		size_t len;
		if (!cmp_imm(code, n, i, &imm, &len) || imm != index)
			continue;
		uint64_t t;
		if (je_target(code, n, i + len, base, &t) && t > actor && t < end)
			return t;
	}
	return 0;
}

uint64_t cq_coro_dispatch_target(const uint8_t *code, size_t n, uint64_t base, uint64_t end,
                                 uint64_t index_off, unsigned index, size_t *load)
{
	size_t i = 0;
	while (i < n && !index_load(code, n, i, index_off))
		i++;
	*load = i;
	return i < n ? cq_coro_branch_target(code, n, base, base, end, index_off, i, index) : 0;
}

uint64_t cq_coro_even_branch(const uint8_t *code, size_t n, uint64_t base, uint64_t end,
                             size_t load)
{
	for (size_t i = load; i + 4 <= n && i <= load + CQ_CORO_WINDOW; i++) {
		if (code[i] != 0xa8 || code[i + 1] != 0x01) /* test $1, %al */
			continue;
		uint64_t t;
		if (!je_target(code, n, i + 2, base, &t))
			continue;
		return t > base && t < end ? t : 0;
	}
	return 0;
}

/*
 * Where the actor stores index into _Coro_resume_index on its way to
 * suspend (x86-64): `mov $index, %reg32` then, within 96 bytes, `mov %reg16,
 * index_off(...)`, or `movw $index, index_off(...)`; the offset in code, or
 * SIZE_MAX.
 */
size_t cq_coro_index_store(const uint8_t *code, size_t n, size_t from, uint64_t index_off,
                           unsigned index)
{
	for (size_t i = from; i + 6 <= n; i++) {
		uint32_t imm;
		if (code[i] >= 0xb8 && code[i] <= 0xbf &&
		    (memcpy(&imm, code + i + 1, 4), imm == index)) {
			unsigned reg = code[i] & 7;
			for (size_t j = i + 5; j + 4 <= n && j < i + 96; j++) {
				size_t p =
				    j + (code[j + 1] >= 0x40 && code[j + 1] <= 0x4f); /* REX */
				if (code[j] != 0x66 || p + 3 >= n || code[p + 1] != 0x89)
					continue;
				uint8_t modrm = code[p + 2];
				if (((modrm >> 3) & 7) != reg || (modrm & 7) == 4)
					continue;
				if ((modrm >> 6 == 1 && code[p + 3] == index_off) ||
				    (modrm >> 6 == 2 && p + 7 <= n &&
				     code[p + 3] == (index_off & 0xff) &&
				     code[p + 4] == ((index_off >> 8) & 0xff) && code[p + 5] == 0 &&
				     code[p + 6] == 0))
					return i;
			}
		}
		if (code[i] == 0x66 && code[i + 1] == 0xc7 && ((code[i + 2] >> 3) & 7) == 0 &&
		    (code[i + 2] & 7) != 4 && code[i + 2] >> 6 == 1 && code[i + 3] == index_off &&
		    code[i + 4] == (index & 0xff) && code[i + 5] == (index >> 8))
			return i;
	}
	return SIZE_MAX;
}

size_t cq_coro_byte_store(const uint8_t *code, size_t n, uint64_t index_off, unsigned index)
{
	if (index > 0xff || index_off > INT32_MAX)
		return SIZE_MAX;
	for (size_t i = 0; i + 4 <= n; i++) {
		size_t p = i + (code[i] >= 0x40 && code[i] <= 0x4f); /* REX */
		if (p + 3 > n || code[p] != 0xc6)
			continue;
		uint8_t modrm = code[p + 1], mod = modrm >> 6;
		if (((modrm >> 3) & 7) != 0 || mod == 0 || mod == 3)
			continue;
		size_t d = p + 2 + ((modrm & 7) == 4); /* a SIB byte */
		if (mod == 1 && d + 2 <= n && code[d] == index_off && code[d + 1] == index)
			return i;
		uint32_t v;
		if (mod == 2 && d + 5 <= n && (memcpy(&v, code + d, 4), v == index_off) &&
		    code[d + 4] == index)
			return i;
	}
	return SIZE_MAX;
}

uint64_t cq_coro_jump_table_target(const uint8_t *code, size_t n, uint64_t base, uint64_t actor,
                                   uint64_t end, uint64_t index_off, size_t load, unsigned index,
                                   cq_coro_read_fn read, void *ctx)
{
	for (size_t i = load, last = load; i < n && i <= last + CQ_CORO_WINDOW; i++) {
		if (index_load(code, n, i, index_off))
			last = i;
		uint64_t bound;
		size_t len;
		if (!cmp_imm(code, n, i, &bound, &len) || bound > CQ_CORO_MAX_TABLE ||
		    index > bound || bound < 4)
			continue;
		size_t p = i + len;
		if (p + 2 <= n && code[p] == 0x77)
			p += 2;
		else if (p + 6 <= n && code[p] == 0x0f && code[p + 1] == 0x87)
			p += 6;
		else
			continue;
		/* lea disp32(%rip), %reg within 48 bytes, then jmp *%reg within 32. */
		uint64_t table = 0;
		size_t after = 0;
		for (size_t j = p; j + 7 <= n && j < p + 48 && !table; j++) {
			if ((code[j] != 0x48 && code[j] != 0x4c) || code[j + 1] != 0x8d ||
			    (code[j + 2] & 0xc7) != 0x05)
				continue;
			int32_t disp;
			memcpy(&disp, code + j + 3, 4);
			table = base + j + 7 + (uint64_t)(int64_t)disp;
			after = j + 7;
		}
		bool jumps = false;
		for (size_t j = after; table && j + 2 <= n && j < after + 32 && !jumps; j++)
			jumps = code[j] == 0xff && code[j + 1] >= 0xe0 && code[j + 1] <= 0xe7;
		if (!jumps)
			continue;
		int32_t entry[CQ_CORO_MAX_TABLE + 1];
		size_t want = (size_t)(bound + 1) * 4;
		if (read(ctx, table, (uint8_t *)entry, want) != want)
			continue;
		/*
		 * The resume table: its even entries from 2 on are distinct resume
		 * labels (the destroy table sends every even index to its default).
		 */
		bool distinct = true;
		for (uint64_t a = 2; a <= bound && distinct; a += 2)
			for (uint64_t b = a + 2; b <= bound && distinct; b += 2)
				distinct = entry[a] != entry[b];
		if (!distinct)
			continue;
		uint64_t t = table + (uint64_t)(int64_t)entry[index];
		if (t > actor && t < end)
			return t;
	}
	return 0;
}
