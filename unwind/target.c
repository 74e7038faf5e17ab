/*
 * target.c - lookups over what a target offers (see target.h).
 */
#include "unwind/target.h"

ptrdiff_t cq_target_module_at(const struct cq_unwind_target *t, uint64_t addr)
{
	size_t lo = 0, hi = t->nmodules;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->modules[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= t->modules[lo - 1].end)
		return -1;
	return (ptrdiff_t)(lo - 1);
}
