/*
 * analyse_core.c - open a core and make its stacks in one call (see
 * analyse_core.h).
 */
#include "libcore/analysis/analyse_core.h"

#include <assert.h>
#include <string.h>

#include "libcore/analysis/stacktrace.h"
#include "libcore/model/core.h"

struct cq_error *cq_analyse_core(const char *path, const struct cq_analyse_options *o,
                                 struct cq_analysed_core *out)
{
	assert(o->stacks);
	memset(out, 0, sizeof(*out));
	struct cq_error *err = cq_core_open(path, o->core, &out->core);
	if (err)
		return err;
	if (o->opened)
		o->opened(o->opened_arg, path, out->core, o->stacks);
	return cq_core_stacks(out->core, o->stacks, &out->stacks);
}

void cq_analysed_core_free(struct cq_analysed_core *a)
{
	cq_stacks_free(a->stacks);
	cq_core_close(a->core);
	a->stacks = NULL;
	a->core = NULL;
}
