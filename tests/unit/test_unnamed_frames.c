/*
 * test_unnamed_frames.c - stored frames without a name and naming them
 * later (libcore/store/unnamed_frames.h), on abort_deep.stripped ingested
 * without its debuginfo: the stripped program is listed (by the build-id
 * readelf reads from it) with the modules that have unnamed frames; a namer
 * is asked once per (offset, return address) and its names land on exactly
 * the frames that had none; stack hashes stay; a namer that knows nothing
 * leaves them; a named module is no longer listed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "libcore/store/store_query.h"
#include "libcore/store/unnamed_frames.h"
#include "tests/unit/corpus_db.h"

static int setup(void **state)
{
	return case_fixture_setup(state, "unnamed", "abort_deep.stripped");
}

struct modules {
	size_t n;
	int64_t ids[16];
	char build_ids[16][80];
};

static void on_module(void *arg, int64_t id, const char *build_id)
{
	struct modules *m = arg;
	assert_true(m->n < 16);
	m->ids[m->n] = id;
	snprintf(m->build_ids[m->n], sizeof(m->build_ids[0]), "%s", build_id);
	m->n++;
}

/* The crashed thread's frames in the stripped program: unnamed, and how. */
struct frames {
	const char *build_id;
	size_t unnamed, in_module, named_by_test;
	char hash[20];
	int64_t stack_id;
};

static void on_thread(void *arg, const struct cq_store_thread_row *row)
{
	struct frames *f = arg;
	f->stack_id = row->stack_id;
	for (size_t i = 0; i < row->nframes; i++) {
		if (!cq_store_text_is(row->frames[i].build_id, f->build_id))
			continue;
		f->in_module++;
		if (!row->frames[i].function)
			f->unnamed++;
		else if (strncmp(row->frames[i].function, "named_", 6) == 0)
			f->named_by_test++;
	}
}

static void on_stack(void *arg, const struct cq_store_stack_row *row)
{
	struct frames *f = arg;
	if (row->id == f->stack_id)
		snprintf(f->hash, sizeof(f->hash), "%s", row->hash);
}

static struct frames frames(struct case_fixture *x, const char *build_id)
{
	struct frames f = {.build_id = build_id};
	assert_null(cq_store_each_thread(x->d.store, x->id, on_thread, &f));
	assert_null(
	    cq_store_each_stack(x->d.store, &(struct cq_store_stack_filter){0}, on_stack, &f));
	return f;
}

struct namer {
	size_t calls, return_addresses;
	uint64_t offsets[64];
	bool knows;
	char name[64];
};

static bool namer(void *ctx, uint64_t offset, bool return_address, const char **function,
                  const char **file, int *line)
{
	struct namer *n = ctx;
	for (size_t i = 0; i < n->calls && i < 64; i++)
		assert_false(n->offsets[i] == offset); /* once per offset */
	if (n->calls < 64)
		n->offsets[n->calls] = offset;
	n->calls++;
	n->return_addresses += return_address;
	if (!n->knows)
		return false;
	snprintf(n->name, sizeof(n->name), "named_%llx", (unsigned long long)offset);
	*function = n->name;
	*file = "named.c";
	*line = 7;
	return true;
}

static void test_name_the_stripped_program(void **state)
{
	struct case_fixture *x = *state;
	if (!x->id)
		return;
	char exe_id[80];
	readelf_build_id(x->c.exe, exe_id, sizeof(exe_id));
	assert_true(exe_id[0]);
	struct modules m = {0};
	assert_null(cq_store_unnamed_modules(x->d.store, on_module, &m));
	size_t k = 0;
	while (k < m.n && strcmp(m.build_ids[k], exe_id) != 0)
		k++;
	if (k == m.n)
		fail_msg("the stripped program %s is not listed", exe_id);
	struct frames before = frames(x, exe_id);
	/* level3, level2, level1, main at least: none has a name in a stripped file. */
	assert_true(before.unnamed >= x->c.nchain);

	struct namer n = {.knows = false};
	int64_t named = -1;
	assert_null(cq_store_name_frames(x->d.store, m.ids[k], namer, &n, &named));
	assert_int_equal(named, 0);
	assert_int_equal(n.calls, before.unnamed); /* one thread, distinct offsets */
	/* The crashed frame is in libc: every frame of the program is a return address. */
	assert_int_equal(n.return_addresses, n.calls);
	assert_int_equal(frames(x, exe_id).unnamed, before.unnamed);

	memset(&n, 0, sizeof(n));
	n.knows = true;
	assert_null(cq_store_name_frames(x->d.store, m.ids[k], namer, &n, &named));
	assert_int_equal(named, before.unnamed);
	struct frames after = frames(x, exe_id);
	assert_int_equal(after.unnamed, 0);
	assert_int_equal(after.named_by_test, before.unnamed);
	assert_int_equal(after.in_module, before.in_module);
	assert_string_equal(after.hash, before.hash);

	struct modules again = {0};
	assert_null(cq_store_unnamed_modules(x->d.store, on_module, &again));
	for (size_t i = 0; i < again.n; i++)
		assert_true(again.ids[i] != m.ids[k]);
	assert_int_equal(again.n, m.n - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_name_the_stripped_program, setup,
	                                    corpus_fixture_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
