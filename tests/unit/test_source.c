/*
 * test_source.c - where a core's bytes come from (libcore/model/source.h).
 *
 * A raw file, the same bytes compressed at test time by the zstd, xz,
 * gzip, bzip2 and lz4 command-line tools, and the same fed through a pipe
 * on standard input: each must come back byte for byte, with the
 * compression named after the tool that made it.  Then the cap (a stream
 * longer than max_spool is cut and says so), empty input, a truncated
 * compressed stream, a directory and a missing file; and the sniffing of
 * a file's first bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "libcore/model/source.h"

#define RAW_LEN (1u << 20)

static char dir[64];
static uint8_t *raw; /* the uncompressed bytes: an ELF magic, then a compressible pattern */

static const struct {
	const char *ext, *command, *compression;
} tools[] = {
    {"zst", "zstd -q -c", "zstd"}, {"xz", "xz -c", "xz"},       {"gz", "gzip -c", "gzip"},
    {"bz2", "bzip2 -c", "bzip2"},  {"lz4", "lz4 -q -c", "lz4"},
};
#define NTOOLS (sizeof(tools) / sizeof(tools[0]))

static const char *in_dir(const char *name)
{
	static char p[4][128];
	static unsigned k;
	char *out = p[k++ % 4];
	snprintf(out, sizeof(p[0]), "%s/%s", dir, name);
	return out;
}

/* The one call of the function under test, so a change of its signature is one line here. */
static struct cq_error *source_open(const char *path, uint64_t max_spool, struct cq_source *out)
{
	return cq_source_open(path, max_spool, false, false, NULL, out);
}

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/cq_test_source.XXXXXX");
	if (!mkdtemp(dir) || !(raw = malloc(RAW_LEN)))
		return -1;
	memcpy(raw, "\177ELF", 4);
	for (size_t i = 4; i < RAW_LEN; i++)
		raw[i] = (uint8_t)((i / 7) ^ (i >> 12));
	FILE *f = fopen(in_dir("core"), "wb");
	if (!f || fwrite(raw, 1, RAW_LEN, f) != RAW_LEN || fclose(f) != 0)
		return -1;
	for (size_t i = 0; i < NTOOLS; i++) {
		char cmd[512];
		snprintf(cmd, sizeof(cmd), "%s '%s' > '%s/core.%s'", tools[i].command,
		         in_dir("core"), dir, tools[i].ext);
		if (system(cmd) != 0)
			return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	free(raw);
	return system(cmd) == 0 ? 0 : -1;
}

/* Asserts src holds exactly want[0..len). */
static void holds(const struct cq_source *src, const uint8_t *want, size_t len)
{
	assert_true(src->fd >= 0);
	assert_int_equal(src->size, len);
	uint8_t *got = malloc(len + 1);
	assert_non_null(got);
	assert_int_equal(pread(src->fd, got, len + 1, 0), (ssize_t)len);
	assert_memory_equal(got, want, len);
	free(got);
}

static void test_raw_file_is_used_in_place(void **state)
{
	(void)state;
	struct cq_source src;
	assert_null(source_open(in_dir("core"), 0, &src));
	assert_string_equal(src.compression, "none");
	assert_false(src.spooled);
	assert_int_equal(src.cut_at, 0);
	holds(&src, raw, RAW_LEN);
	/* The very file, not a copy. */
	struct stat a, b;
	assert_int_equal(fstat(src.fd, &a), 0);
	assert_int_equal(stat(in_dir("core"), &b), 0);
	assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	cq_source_close(&src);
	assert_int_equal(src.fd, -1);
}

static void test_compressed_files_are_decompressed(void **state)
{
	(void)state;
	for (size_t i = 0; i < NTOOLS; i++) {
		char name[32];
		snprintf(name, sizeof(name), "core.%s", tools[i].ext);
		struct cq_source src;
		struct cq_error *err = source_open(in_dir(name), 0, &src);
		if (err)
			fail_msg("%s: %s", name, err->message);
		assert_string_equal(src.compression, tools[i].compression);
		assert_true(src.spooled);
		assert_int_equal(src.cut_at, 0);
		holds(&src, raw, RAW_LEN);
		cq_source_close(&src);
	}
}

static void test_cap_cuts_a_long_stream(void **state)
{
	(void)state;
	struct cq_source src;
	assert_null(source_open(in_dir("core.zst"), 100000, &src));
	assert_int_equal(src.cut_at, 100000);
	holds(&src, raw, 100000);
	cq_source_close(&src);
	/* A cap the stream fits in exactly is no cut. */
	assert_null(source_open(in_dir("core.xz"), RAW_LEN, &src));
	assert_int_equal(src.cut_at, 0);
	holds(&src, raw, RAW_LEN);
	cq_source_close(&src);
}

static void fails(const char *path, enum cq_error_code code, const char *says)
{
	struct cq_source src;
	struct cq_error *err = source_open(path, 0, &src);
	if (!err)
		fail_msg("%s opened (%s, %llu bytes)", path, src.compression,
		         (unsigned long long)src.size);
	assert_int_equal(err->code, code);
	if (says && !strstr(err->message, says))
		fail_msg("%s: \"%s\" does not say \"%s\"", path, err->message, says);
	assert_int_equal(src.fd, -1);
	cq_error_free(err);
}

static void test_empty_damaged_and_wrong_inputs(void **state)
{
	(void)state;
	write_file(in_dir("empty"), "", 0);
	fails(in_dir("empty"), CQ_ERR_FORMAT, "empty");
	/* A valid compressed stream of nothing. */
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "gzip -c < /dev/null > '%s'", in_dir("empty.gz"));
	assert_int_equal(system(cmd), 0);
	fails(in_dir("empty.gz"), CQ_ERR_FORMAT, "empty");
	/* Each compressed file cut in half. */
	for (size_t i = 0; i < NTOOLS; i++) {
		char name[32], cut[32];
		snprintf(name, sizeof(name), "core.%s", tools[i].ext);
		snprintf(cut, sizeof(cut), "cut.%s", tools[i].ext);
		struct stat st;
		assert_int_equal(stat(in_dir(name), &st), 0);
		snprintf(cmd, sizeof(cmd), "head -c %lld '%s' > '%s'", (long long)st.st_size / 2,
		         in_dir(name), in_dir(cut));
		assert_int_equal(system(cmd), 0);
		fails(in_dir(cut), CQ_ERR_FORMAT, "corrupt");
	}
	fails(dir, CQ_ERR_USAGE, "directory");
	fails(in_dir("absent"), CQ_ERR_IO, "cannot open");
}

static void test_short_uncompressed_input_passes_through(void **state)
{
	(void)state;
	/* Not an ELF file and no compressor's magic: handed on as it is
	 * (the core parser then refuses it). */
	write_file(in_dir("text"), "hello, world\n", 13);
	struct cq_source src;
	assert_null(source_open(in_dir("text"), 0, &src));
	assert_string_equal(src.compression, "none");
	holds(&src, (const uint8_t *)"hello, world\n", 13);
	cq_source_close(&src);
}

struct feeder {
	int fd;
	const uint8_t *p;
	size_t len;
};

static void *feed(void *arg)
{
	struct feeder *f = arg;
	for (size_t at = 0; at < f->len;) {
		ssize_t n = write(f->fd, f->p + at, f->len - at);
		if (n <= 0)
			break;
		at += (size_t)n;
	}
	close(f->fd);
	return NULL;
}

/* Opens "-" with bytes[0..len) arriving on standard input through a pipe. */
static struct cq_error *open_from_pipe(const uint8_t *bytes, size_t len, struct cq_source *src)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	int saved = dup(STDIN_FILENO);
	assert_true(saved >= 0);
	assert_int_equal(dup2(p[0], STDIN_FILENO), STDIN_FILENO);
	close(p[0]);
	struct feeder f = {.fd = p[1], .p = bytes, .len = len};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, feed, &f), 0);
	struct cq_error *err = source_open("-", 0, src);
	dup2(saved, STDIN_FILENO); /* closes the pipe's read end: the feeder stops */
	close(saved);
	pthread_join(t, NULL);
	return err;
}

static void test_standard_input_is_spooled(void **state)
{
	(void)state;
	struct cq_source src;
	assert_null(open_from_pipe(raw, RAW_LEN, &src));
	assert_string_equal(src.compression, "none");
	assert_true(src.spooled);
	holds(&src, raw, RAW_LEN);
	cq_source_close(&src);
	/* A compressed stream on a pipe. */
	int fd = open(in_dir("core.zst"), O_RDONLY);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	uint8_t *z = malloc((size_t)st.st_size);
	assert_non_null(z);
	assert_int_equal(read(fd, z, (size_t)st.st_size), st.st_size);
	close(fd);
	assert_null(open_from_pipe(z, (size_t)st.st_size, &src));
	assert_string_equal(src.compression, "zstd");
	holds(&src, raw, RAW_LEN);
	cq_source_close(&src);
	free(z);
	/* Nothing at all on the pipe. */
	struct cq_error *err = open_from_pipe(raw, 0, &src);
	assert_non_null(err);
	assert_int_equal(err->code, CQ_ERR_FORMAT);
	cq_error_free(err);
}

static void test_sniffing_first_bytes(void **state)
{
	(void)state;
	uint8_t h[CQ_SOURCE_SNIFF_BYTES] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
	h[16] = 4; /* e_type ET_CORE, little-endian */
	assert_true(cq_source_looks_like_core(h, sizeof(h)));
	assert_false(cq_source_looks_like_core(h, sizeof(h) - 1)); /* e_type not there */
	h[16] = 2;                                                 /* ET_EXEC */
	assert_false(cq_source_looks_like_core(h, sizeof(h)));
	h[16] = 3; /* ET_DYN */
	assert_false(cq_source_looks_like_core(h, sizeof(h)));
	h[16] = 0;
	h[17] = 4; /* a big-endian ET_CORE */
	assert_false(cq_source_looks_like_core(h, sizeof(h)));
	/* The first bytes of what each tool wrote. */
	for (size_t i = 0; i < NTOOLS; i++) {
		char name[32];
		snprintf(name, sizeof(name), "core.%s", tools[i].ext);
		uint8_t head[CQ_SOURCE_SNIFF_BYTES];
		FILE *f = fopen(in_dir(name), "rb");
		assert_non_null(f);
		assert_int_equal(fread(head, 1, sizeof(head), f), sizeof(head));
		fclose(f);
		if (!cq_source_looks_like_core(head, sizeof(head)))
			fail_msg("%s not taken for a core", name);
	}
	assert_false(cq_source_looks_like_core((const uint8_t *)"hello, world, hi!!", 18));
	assert_false(cq_source_looks_like_core((const uint8_t *)"\x1f", 1));
	assert_true(cq_source_looks_like_core((const uint8_t *)"\x1f\x8b", 2));
	assert_false(cq_source_looks_like_core((const uint8_t *)"", 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_raw_file_is_used_in_place),
	    cmocka_unit_test(test_compressed_files_are_decompressed),
	    cmocka_unit_test(test_cap_cuts_a_long_stream),
	    cmocka_unit_test(test_empty_damaged_and_wrong_inputs),
	    cmocka_unit_test(test_short_uncompressed_input_passes_through),
	    cmocka_unit_test(test_standard_input_is_spooled),
	    cmocka_unit_test(test_sniffing_first_bytes),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
