/*
 * coro_dispatch.c - where gcc's coroutine actor resumes, read from its
 * x86-64 machine code: the target of its dispatch on _Coro_resume_index and
 * the store of an index on the way to suspend (for the cxx runtime's await
 * lines, issue 33).  Only the bytes given are read.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "unwind/async/coro_dispatch.h"

/*
 * Where gcc's actor continues when resumed at index (x86-64), or 0.  The
 * actor opens with its dispatch: it loads _Coro_resume_index (movzwl
 * index_off(%reg)) and compares it with each suspend point's index, each
 * compare followed by a je to that point's resume label (gcc 12 at -O0 and
 * -O2 with a few suspend points; many compile to a jump table, not read).
 * The first `cmp $index, %reg; je target` after the load, with the target
 * inside the actor, is taken.  The code at the target is the awaiter's
 * await_resume, on the co_await's source line.
 */
uint64_t cq_coro_dispatch_target(const uint8_t *code, size_t n, uint64_t base, uint64_t end,
                                 uint64_t index_off, unsigned index, size_t *load)
{
	size_t i = 0;
	for (; i + 4 <= n; i++) { /* movzwl disp(%reg), %reg: 0f b7 modrm [sib] disp */
		if (code[i] != 0x0f || code[i + 1] != 0xb7)
			continue;
		uint8_t modrm = code[i + 2], mod = modrm >> 6;
		size_t d = i + 3 + ((modrm & 7) == 4); /* a SIB byte */
		uint64_t disp = UINT64_MAX;
		if (mod == 1 && d < n)
			disp = code[d];
		else if (mod == 2 && d + 4 <= n) {
			uint32_t v;
			memcpy(&v, code + d, 4);
			disp = v;
		}
		if (disp == index_off)
			break;
	}
	if (i + 4 > n)
		i = n; /* no load: no dispatch */
	*load = i;
	for (; i + 4 <= n; i++) {
		size_t p = i;
		bool word = code[p] == 0x66;
		p += word;
		uint64_t imm;
		if (p + 3 <= n && code[p] == 0x83 && (code[p + 1] & 0xf8) == 0xf8) {
			imm = code[p + 2] < 0x80 ? code[p + 2] : UINT64_MAX;
			p += 3;
		} else if (p + 1 < n && (code[p] == 0x3d || (code[p] == 0x81 && p + 2 < n &&
		                                             (code[p + 1] & 0xf8) == 0xf8))) {
			p += code[p] == 0x81 ? 2 : 1;
			if (p + (word ? 2 : 4) > n)
				continue;
			uint16_t v16 = 0;
			uint32_t v32 = 0;
			if (word)
				memcpy(&v16, code + p, 2);
			else
				memcpy(&v32, code + p, 4);
			imm = word ? v16 : v32;
			p += word ? 2 : 4;
		} else
			continue;
		if (imm != index)
			continue;
		int64_t rel;
		if (p + 2 <= n && code[p] == 0x74) {
			rel = (int8_t)code[p + 1];
			p += 2;
		} else if (p + 6 <= n && code[p] == 0x0f && code[p + 1] == 0x84) {
			int32_t r;
			memcpy(&r, code + p + 2, 4);
			rel = r;
			p += 6;
		} else
			continue;
		uint64_t t = base + p + (uint64_t)rel;
		if (t > base && t < end)
			return t;
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
