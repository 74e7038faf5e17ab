/*
 * test_ingest_paths.c - `coreq ingest`'s flow in the library
 * (libcore/pipeline/ingest_paths.h), on a directory tree of hand-written
 * cores (core_writer.h) and a fresh database: the walk (core-looking files
 * by content, hidden names and symbolic links to directories passed by,
 * --max-depth, path order), and the seen-files protocol (unchanged files
 * skipped, a changed file looked at again, a file whose analysis never
 * finished reported failed once, named files never recorded), a core that
 * arrives during the run taken in it, each outcome seen through the callback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "libcore/analysis/stacktrace.h"
#include "libcore/model/core.h"
#include "libcore/pipeline/ingest_paths.h"
#include "libcore/store/capture_rows.h"
#include "libcore/store/store.h"
#include "libcore/triage/rules.h"
#include "tests/unit/core_writer.h"

struct fixture {
	char dir[64];
	char tree[96];
	struct cq_store *store;
	struct cq_bucket_rules *rules;
	struct cq_core_options co;
	struct cq_stack_options so;
};

/* What the callback saw. */
struct seen {
	char paths[32][160]; /* DONE events: tree-relative path */
	enum cq_ingest_status status[32];
	char messages[32][200];
	size_t ndone, nnext, nwarnings, nempty, nbad;
	size_t last_total;
	const char *tree;
};

static void on_event(void *arg, const struct cq_ingest_event *ev)
{
	struct seen *s = arg;
	size_t len = strlen(s->tree);
	const char *rel = strncmp(ev->path, s->tree, len) == 0 ? ev->path + len + 1 : ev->path;
	switch (ev->kind) {
	case CQ_INGEST_EV_NEXT:
		assert_int_equal(ev->index, s->nnext);
		s->nnext++;
		s->last_total = ev->total;
		break;
	case CQ_INGEST_EV_DONE:
		assert_true(s->ndone < 32);
		assert_int_equal(ev->index, s->ndone);
		snprintf(s->paths[s->ndone], sizeof(s->paths[0]), "%s", rel);
		s->status[s->ndone] = ev->status;
		snprintf(s->messages[s->ndone], sizeof(s->messages[0]), "%s",
		         ev->error ? ev->error->message : "");
		if (ev->status == CQ_INGEST_INGESTED || ev->status == CQ_INGEST_DUPLICATE)
			assert_true(ev->result && ev->result->store.core_id > 0);
		s->ndone++;
		break;
	case CQ_INGEST_EV_WARNING:
		s->nwarnings++;
		break;
	case CQ_INGEST_EV_EMPTY_DIR:
		s->nempty++;
		break;
	case CQ_INGEST_EV_BAD_PATH:
		s->nbad++;
		break;
	}
}

static void write_core(const char *path, int32_t tid)
{
	static struct core_writer w;
	memset(&w, 0, sizeof(w));
	cw_prstatus(&w, tid, 11, 0x401000, 0x7ffc0000, 0);
	assert_int_equal(cw_write(&w, path, 0), 0);
}

static void write_bytes(const char *path, const void *bytes, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(bytes, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

static void at(const struct fixture *f, const char *rel, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%s", f->tree, rel);
}

/*
 *   tree/a.core           a core
 *   tree/b.txt            text: not a core
 *   tree/.hidden.core     a core, hidden: passed by
 *   tree/m.zst            zstd magic, garbage after: looks like a core, fails
 *   tree/prog             an ELF executable: not a core
 *   tree/sub/c.core       a core, one level down
 *   tree/sub/deep/e.core  a core, two levels down
 *   tree/link -> sub      a symbolic link to a directory: passed by
 *   tree/empty/           no files
 */
static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/coreq-test-ingest-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->tree, sizeof(f->tree), "%s/tree", f->dir);
	char p[256], db[128];
	mkdir(f->tree, 0700);
	at(f, "sub", p, sizeof(p));
	mkdir(p, 0700);
	at(f, "sub/deep", p, sizeof(p));
	mkdir(p, 0700);
	at(f, "empty", p, sizeof(p));
	mkdir(p, 0700);
	at(f, "a.core", p, sizeof(p));
	write_core(p, 201);
	at(f, ".hidden.core", p, sizeof(p));
	write_core(p, 202);
	at(f, "sub/c.core", p, sizeof(p));
	write_core(p, 203);
	at(f, "sub/deep/e.core", p, sizeof(p));
	write_core(p, 204);
	at(f, "b.txt", p, sizeof(p));
	write_bytes(p, "not a core at all, just words\n", 30);
	static const unsigned char zstd[32] = {0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3, 4, 5, 6, 7};
	at(f, "m.zst", p, sizeof(p));
	write_bytes(p, zstd, sizeof(zstd));
	Elf64_Ehdr exe = {.e_type = ET_EXEC, .e_machine = EM_X86_64};
	memcpy(exe.e_ident, ELFMAG, SELFMAG);
	exe.e_ident[EI_CLASS] = ELFCLASS64;
	exe.e_ident[EI_DATA] = ELFDATA2LSB;
	at(f, "prog", p, sizeof(p));
	write_bytes(p, &exe, sizeof(exe));
	at(f, "link", p, sizeof(p));
	if (symlink("sub", p) != 0)
		return -1;
	snprintf(db, sizeof(db), "%s/t.db", f->dir);
	if (cq_store_open(db, &f->store) || cq_bucket_rules_load(NULL, &f->rules))
		return -1;
	cq_stack_options_default(&f->so);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	cq_store_close(f->store);
	cq_bucket_rules_free(f->rules);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static void run(struct fixture *f, const char *const *paths, size_t n, unsigned depth,
                struct seen *s, struct cq_ingest_totals *t)
{
	memset(s, 0, sizeof(*s));
	s->tree = f->tree;
	struct cq_ingest_paths_options o = {
	    .ingest = {.core = &f->co, .stacks = &f->so, .signature_frames = 5, .rules = f->rules},
	    .max_depth = depth,
	    .report = on_event,
	    .report_arg = s};
	cq_ingest_paths(f->store, paths, n, &o, t);
	assert_int_equal(s->nnext, t->inputs);
	assert_int_equal(s->ndone, t->inputs);
}

static void test_walk_finds_core_files_in_order(void **state)
{
	struct fixture *f = *state;
	struct seen s;
	struct cq_ingest_totals t;
	const char *paths[] = {f->tree};
	run(f, paths, 1, 1, &s, &t);
	assert_int_equal(t.inputs, 3);
	assert_int_equal(s.last_total, 3);
	assert_string_equal(s.paths[0], "a.core");
	assert_string_equal(s.paths[1], "m.zst");
	assert_string_equal(s.paths[2], "sub/c.core");
	assert_int_equal(s.status[0], CQ_INGEST_INGESTED);
	assert_int_equal(s.status[1], CQ_INGEST_FAILED);
	assert_true(s.messages[1][0] != '\0');
	assert_int_equal(s.status[2], CQ_INGEST_INGESTED);
	assert_int_equal(t.ingested, 2);
	assert_int_equal(t.failed, 1);
	assert_int_equal(s.nwarnings + s.nbad + s.nempty, 0);

	/* Depth 0: the directory itself only; depth 2 reaches sub/deep. */
	run(f, paths, 1, 0, &s, &t);
	assert_int_equal(t.inputs, 2);
	run(f, paths, 1, 2, &s, &t);
	assert_int_equal(t.inputs, 4);
	assert_string_equal(s.paths[3], "sub/deep/e.core");

	/* A directory with no core file says so; the run goes on. */
	char empty[160];
	at(f, "empty", empty, sizeof(empty));
	const char *two[] = {empty, f->tree};
	run(f, two, 2, 0, &s, &t);
	assert_int_equal(s.nempty, 1);
	assert_int_equal(t.inputs, 2);
}

static void test_seen_files(void **state)
{
	struct fixture *f = *state;
	struct seen s;
	struct cq_ingest_totals t;
	const char *paths[] = {f->tree};
	run(f, paths, 1, 1, &s, &t);
	assert_int_equal(t.ingested + t.failed, 3);

	/* Again: every file is unchanged, the failed one included (it is not retried). */
	run(f, paths, 1, 1, &s, &t);
	assert_int_equal(t.unchanged, 3);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(s.status[i], CQ_INGEST_UNCHANGED);

	/* A file whose mtime changed is looked at again: the same core, a duplicate. */
	char a[160];
	at(f, "a.core", a, sizeof(a));
	struct timeval later[2] = {{.tv_sec = 2000000000}, {.tv_sec = 2000000000}};
	assert_int_equal(utimes(a, later), 0);
	run(f, paths, 1, 1, &s, &t);
	assert_int_equal(t.duplicates, 1);
	assert_int_equal(t.unchanged, 2);
	assert_string_equal(s.paths[0], "a.core");
	assert_int_equal(s.status[0], CQ_INGEST_DUPLICATE);

	/* An analysis that started and never recorded an outcome: failed once, then left alone. */
	char e[160];
	at(f, "sub/deep/e.core", e, sizeof(e));
	struct stat st;
	assert_int_equal(stat(e, &st), 0);
	int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	assert_null(
	    cq_store_file_record(f->store, e, (int64_t)st.st_size, mtime, 0, "started", NULL));
	run(f, paths, 1, 2, &s, &t);
	assert_string_equal(s.paths[3], "sub/deep/e.core");
	assert_int_equal(s.status[3], CQ_INGEST_FAILED);
	assert_non_null(strstr(s.messages[3], "did not finish"));
	run(f, paths, 1, 2, &s, &t);
	assert_int_equal(s.status[3], CQ_INGEST_UNCHANGED);
	assert_int_equal(t.unchanged, 4);

	/* A file named on its own is always analysed and never recorded. */
	char c[160];
	at(f, "sub/c.core", c, sizeof(c));
	const char *named[] = {c, c};
	run(f, named, 2, 0, &s, &t);
	assert_int_equal(t.duplicates, 2);
	assert_int_equal(t.unchanged, 0);
}

/* What the callback saw, and a core it writes into the tree after the first file is done. */
struct arriving {
	struct seen seen;
	char late[200];
	bool written;
};

static void on_event_then_write(void *arg, const struct cq_ingest_event *ev)
{
	struct arriving *a = arg;
	on_event(&a->seen, ev);
	if (ev->kind == CQ_INGEST_EV_DONE && !a->written) {
		write_core(a->late, 205);
		a->written = true;
	}
}

/*
 * A core that lands in the directory while the run looks at the others
 * (systemd-coredump storing the next core of a storm) is taken in the same
 * run: coreq-ingest.path does not see it, since systemd stops watching
 * while the service runs.
 */
static void test_arrivals_during_the_run(void **state)
{
	struct fixture *f = *state;
	struct arriving a;
	memset(&a, 0, sizeof(a));
	a.seen.tree = f->tree;
	at(f, "late.core", a.late, sizeof(a.late));
	struct cq_ingest_paths_options o = {
	    .ingest = {.core = &f->co, .stacks = &f->so, .signature_frames = 5, .rules = f->rules},
	    .max_depth = 0,
	    .report = on_event_then_write,
	    .report_arg = &a};
	struct cq_ingest_totals t;
	const char *paths[] = {f->tree};
	cq_ingest_paths(f->store, paths, 1, &o, &t);
	assert_true(a.written);
	assert_int_equal(t.inputs, 3);
	assert_int_equal(a.seen.ndone, 3);
	assert_string_equal(a.seen.paths[0], "a.core");
	assert_string_equal(a.seen.paths[1], "m.zst");
	assert_string_equal(a.seen.paths[2], "late.core");
	assert_int_equal(a.seen.status[2], CQ_INGEST_INGESTED);
	assert_int_equal(a.seen.last_total, 3);
	assert_int_equal(t.ingested, 2);
	assert_int_equal(t.failed, 1);

	/* The next run finds the late core seen, like the others. */
	struct seen s;
	run(f, paths, 1, 0, &s, &t);
	assert_int_equal(t.unchanged, 3);
}

/* A named path that does not exist fails as an input; the others go on. */
static void test_missing_path(void **state)
{
	struct fixture *f = *state;
	struct seen s;
	struct cq_ingest_totals t;
	char missing[160], a[160];
	at(f, "no-such-file", missing, sizeof(missing));
	at(f, "a.core", a, sizeof(a));
	const char *paths[] = {missing, a};
	run(f, paths, 2, 0, &s, &t);
	assert_int_equal(t.failed, 1);
	assert_int_equal(t.ingested, 1);
	assert_int_equal(s.status[0], CQ_INGEST_FAILED);
	assert_int_equal(s.status[1], CQ_INGEST_INGESTED);
}

int main(void)
{
	/* No configuration file names other rules. */
	unsetenv("COREQ_RULES");
	setenv("COREQ_CONFIG", "/nonexistent/coreq.conf", 1);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_walk_finds_core_files_in_order, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_seen_files, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_arrivals_during_the_run, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_missing_path, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
