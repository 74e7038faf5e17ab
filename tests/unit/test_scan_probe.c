/*
 * test_scan_probe.c - what a core's heap scan will look for, from the
 * core's head alone (libcore/analysis/scan_probe.h), on corpus cores:
 * - tokio_tasks.O2 (a tokio program): its head as scan_probe.h describes it
 *   (headers, notes and the first MiB) gives the same words as the whole
 *   core does, the promise the stream's scan keep relies on; its headers
 *   and notes alone give no range the whole core lacks; each word range
 *   lies in the executable, in the section where rustc puts the vtables
 *   (.data.rel.ro), read from the executable with libelf;
 * - segv_null.O0 (a C program, no async runtime): no words;
 * - async stacks turned off, a head cut inside the ELF header, and bytes
 *   that are no core: no words, and nothing read past the head (ASan).
 */
#include <fcntl.h>
#include <gelf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "libcore/analysis/scan_probe.h"
#include "libcore/analysis/stacktrace.h"
#include "libcore/model/core.h"
#include "libcore/model/module.h"
#include "libcore/model/stream_image.h"
#include "tests/unit/corpus.h"

#define MAX_WORDS 8

struct file {
	uint8_t *bytes;
	uint64_t len;
};

static void file_read(const char *path, struct file *f)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	f->len = (uint64_t)st.st_size;
	f->bytes = malloc(f->len);
	assert_non_null(f->bytes);
	assert_int_equal(pread(fd, f->bytes, f->len, 0), (ssize_t)f->len);
	close(fd);
}

/* A copy of the first len bytes in a buffer of exactly len bytes (ASan sees any read past). */
static uint8_t *head_copy(const struct file *f, uint64_t len)
{
	uint8_t *h = malloc(len ? len : 1);
	assert_non_null(h);
	memcpy(h, f->bytes, len);
	return h;
}

/* The name of the section of the ELF file at path holding link-time address addr, or "". */
static void section_of(const char *path, uint64_t addr, char *out, size_t cap)
{
	out[0] = '\0';
	elf_version(EV_CURRENT);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	size_t shstrndx;
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		assert_non_null(gelf_getshdr(scn, &sh));
		if (!(sh.sh_flags & SHF_ALLOC) || addr < sh.sh_addr ||
		    addr >= sh.sh_addr + sh.sh_size)
			continue;
		const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
		snprintf(out, cap, "%s", name ? name : "");
		break;
	}
	elf_end(elf);
	close(fd);
}

static void options(struct cq_core_options *co, struct cq_stack_options *so)
{
	memset(co, 0, sizeof(*co));
	cq_stack_options_default(so);
}

/* True when range w is one of the n ranges of in. */
static bool one_of(const struct cq_feed_words *w, const struct cq_feed_words *in, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (in[i].lo == w->lo && in[i].hi == w->hi)
			return true;
	return false;
}

static void test_tokio_head_gives_the_whole_cores_words(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("tokio_tasks.O2", &c);
	struct file f;
	file_read(c.core, &f);
	struct cq_stream_plan plan;
	assert_true(cq_stream_plan_make(f.bytes, f.len, 0, &plan));
	uint64_t notes_len = plan.head_len;
	cq_stream_plan_free(&plan);
	assert_true(notes_len > 0 && notes_len < CQ_STREAM_KEEP_PREFIX &&
	            CQ_STREAM_KEEP_PREFIX < f.len);

	struct cq_core_options co;
	struct cq_stack_options so;
	options(&co, &so);
	struct cq_feed_words whole[MAX_WORDS], head[MAX_WORDS];
	size_t nwhole = cq_scan_probe(f.bytes, f.len, &co, &so, whole, MAX_WORDS);
	assert_true(nwhole >= 1);
	for (size_t i = 0; i < nwhole; i++)
		assert_true(whole[i].lo <= whole[i].hi);

	/* The head scan_probe.h describes: headers, notes and the first MiB. */
	uint8_t *h = head_copy(&f, CQ_STREAM_KEEP_PREFIX);
	size_t nhead = cq_scan_probe(h, CQ_STREAM_KEEP_PREFIX, &co, &so, head, MAX_WORDS);
	free(h);
	assert_int_equal(nhead, nwhole);
	for (size_t i = 0; i < nhead; i++)
		assert_true(one_of(&head[i], whole, nwhole));

	/*
	 * Headers and notes alone (what a stream's first core hands the probe
	 * today): never a range the whole core does not scan for.  Here the
	 * executable's first page is not in them, and tokio's range is missed.
	 */
	h = head_copy(&f, notes_len);
	nhead = cq_scan_probe(h, notes_len, &co, &so, head, MAX_WORDS);
	free(h);
	fprintf(stderr, "# headers and notes (%llu bytes): %zu of %zu ranges\n",
	        (unsigned long long)notes_len, nhead, nwhole);
	assert_true(nhead <= nwhole);
	for (size_t i = 0; i < nhead; i++)
		assert_true(one_of(&head[i], whole, nwhole));

	/* Room for fewer words than the runtimes scan for: none (never a part). */
	assert_int_equal(cq_scan_probe(f.bytes, f.len, &co, &so, whole, 0), 0);

	/* Each range is in the executable's task vtables, as its own sections say. */
	struct cq_core *core = NULL;
	assert_null(cq_core_open(c.core, &co, &core));
	size_t n = cq_scan_probe(f.bytes, f.len, &co, &so, whole, MAX_WORDS);
	for (size_t i = 0; i < n; i++) {
		struct cq_module *m = cq_module_find(core->modules, core->nmodules, whole[i].lo);
		assert_non_null(m);
		assert_true(m->is_main);
		assert_ptr_equal(cq_module_find(core->modules, core->nmodules, whole[i].hi), m);
		char lo_sec[64], hi_sec[64];
		section_of(c.exe, whole[i].lo - m->bias, lo_sec, sizeof(lo_sec));
		section_of(c.exe, whole[i].hi - m->bias, hi_sec, sizeof(hi_sec));
		assert_string_equal(lo_sec, ".data.rel.ro");
		assert_string_equal(hi_sec, ".data.rel.ro");
	}
	cq_core_close(core);
	free(f.bytes);
}

static void test_no_runtime_no_words(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("segv_null.O0", &c);
	struct file f;
	file_read(c.core, &f);
	struct cq_core_options co;
	struct cq_stack_options so;
	options(&co, &so);
	struct cq_feed_words w[MAX_WORDS];
	assert_int_equal(cq_scan_probe(f.bytes, f.len, &co, &so, w, MAX_WORDS), 0);
	free(f.bytes);
}

static void test_async_off_short_head_and_junk(void **state)
{
	(void)state;
	struct corpus_case c;
	CORPUS_CASE("tokio_tasks.O2", &c);
	struct file f;
	file_read(c.core, &f);
	struct cq_core_options co;
	struct cq_stack_options so;
	options(&co, &so);
	struct cq_feed_words w[MAX_WORDS];
	so.async = false;
	assert_int_equal(cq_scan_probe(f.bytes, f.len, &co, &so, w, MAX_WORDS), 0);
	so.async = true;
	for (uint64_t len = 0; len < 64; len += 7) { /* cut inside the ELF header */
		uint8_t *h = head_copy(&f, len);
		assert_int_equal(cq_scan_probe(h, len, &co, &so, w, MAX_WORDS), 0);
		free(h);
	}
	static const uint8_t junk[4096] = "this is no core at all";
	assert_int_equal(cq_scan_probe(junk, sizeof(junk), &co, &so, w, MAX_WORDS), 0);
	free(f.bytes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tokio_head_gives_the_whole_cores_words),
	    cmocka_unit_test(test_no_runtime_no_words),
	    cmocka_unit_test(test_async_off_short_head_and_junk),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
