/*
 * test_capture.c - crash metadata from outside the core (libcore/capture/capture.h):
 * systemd-coredump file names, valid and hostile, and the names the hook
 * gives its own stored cores, which must parse back to the same facts; and
 * cq_spool_store with the raw copy in memory, given up at every kind of
 * point (never, at the last byte, midway, at the size limit), checked by
 * libarchive reading the stored file back and by the memfd's own bytes.
 *
 * Files tested: libcore/capture/capture.c, libcore/capture/spool.c.
 */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
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

#include "libcore/capture/capture.h"
#include "libcore/capture/spool.h"

#define BOOT "0123456789abcdef0123456789abcdef"

static void test_systemd_names(void **state)
{
	(void)state;
	struct cq_capture c;
	cq_capture_init(&c);
	assert_true(cq_capture_parse_systemd_name(
	    "/var/lib/systemd/coredump/core.my\\x2eapp.1000." BOOT ".4242.1763600000123456.zst",
	    &c));
	assert_string_equal(c.comm, "my.app");
	assert_int_equal(c.uid, 1000);
	assert_int_equal(c.pid, 4242);
	assert_int_equal(c.timestamp_us, 1763600000123456);
	assert_string_equal(c.boot_id, BOOT);
	assert_string_equal(c.source, "systemd");

	cq_capture_init(&c);
	assert_true(
	    cq_capture_parse_systemd_name("core.sleep.0." BOOT ".7.1", &c)); /* no extension */
	assert_string_equal(c.comm, "sleep");
}

static void test_hostile_names_are_refused(void **state)
{
	(void)state;
	static const char *const bad[] = {
	    "",
	    "core",
	    "core.",
	    "core....",
	    "core.a.0." BOOT ".7",                           /* a field short */
	    "core.a.0." BOOT ".7.1.zst.extra",               /* one too many */
	    "core.a.0." BOOT ".7.1.5",                       /* numeric "extension" */
	    "core.a.x." BOOT ".7.1",                         /* uid not a number */
	    "core.a.-1." BOOT ".7.1",                        /* negative uid */
	    "core.a.0." BOOT ".0.1",                         /* pid 0 */
	    "core.a.0.0123456789abcdef0123456789abcdeX.7.1", /* boot id not hex */
	    "core.a.0.0123.7.1",                             /* boot id too short */
	    "core.a.0." BOOT ".99999999999999999999999.1",   /* pid overflows */
	    "core..0." BOOT ".7.1",                          /* empty comm */
	    "core.\\x00.0." BOOT ".7.1",                     /* escaped NUL */
	    "notcore.a.0." BOOT ".7.1",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cq_capture c;
		cq_capture_init(&c);
		c.pid = 99;
		assert_false(cq_capture_parse_systemd_name(bad[i], &c));
		assert_int_equal(c.pid, 99); /* untouched */
		assert_int_equal(c.known, 0);
	}
}

static void test_hook_names_round_trip(void **state)
{
	(void)state;
	struct cq_capture c;
	cq_capture_init(&c);
	snprintf(c.comm, sizeof(c.comm), "we ird/na.me\\");
	memcpy(c.boot_id, BOOT, 33);
	c.pid = 31337;
	c.uid = 65534;
	c.timestamp_us = 1763700000000000;
	c.known = CQ_CAPTURE_PID | CQ_CAPTURE_UID | CQ_CAPTURE_TIMESTAMP;
	char name[512];
	struct cq_error *err = cq_capture_systemd_name(&c, 3, name, sizeof(name), ".zst");
	assert_null(err);
	assert_null(strchr(name, '/'));
	struct cq_capture back;
	cq_capture_init(&back);
	assert_true(cq_capture_parse_systemd_name(name, &back));
	assert_string_equal(back.comm, c.comm);
	assert_int_equal(back.pid, c.pid);
	assert_int_equal(back.uid, c.uid);
	assert_int_equal(back.timestamp_us, c.timestamp_us + 3);

	/* Too small a buffer is an error, not a cut name. */
	err = cq_capture_systemd_name(&c, 0, name, 16, ".zst");
	assert_non_null(err);
	cq_error_free(err);
	/* Without pid, uid and time there is no name. */
	c.known = CQ_CAPTURE_PID;
	err = cq_capture_systemd_name(&c, 0, name, sizeof(name), ".zst");
	assert_non_null(err);
	cq_error_free(err);
}

struct feeder {
	int fd;
	const unsigned char *data;
	size_t len;
};

/* Writes the input into the pipe in odd-sized pieces, as a kernel pipe might. */
static void *feed(void *arg)
{
	struct feeder *f = arg;
	for (size_t at = 0; at < f->len;) {
		size_t n = f->len - at < 77777 ? f->len - at : 77777;
		ssize_t w = write(f->fd, f->data + at, n);
		if (w <= 0)
			break;
		at += (size_t)w;
	}
	close(f->fd);
	return NULL;
}

struct completion {
	unsigned calls;
	uint64_t size;
};

static void on_complete(void *arg, uint64_t size)
{
	struct completion *c = arg;
	c->calls++;
	c->size = size;
}

/* The stored file decompressed by libarchive (malloc'd), its size in *len. */
static unsigned char *read_back(const char *path, size_t *len)
{
	struct archive *a = archive_read_new();
	archive_read_support_filter_all(a);
	archive_read_support_format_raw(a);
	struct archive_entry *e;
	assert_int_equal(archive_read_open_filename(a, path, 1 << 16), ARCHIVE_OK);
	assert_int_equal(archive_read_next_header(a, &e), ARCHIVE_OK);
	size_t cap = 1 << 20, n = 0;
	unsigned char *buf = malloc(cap);
	for (;;) {
		if (n == cap)
			buf = realloc(buf, cap *= 2);
		la_ssize_t got = archive_read_data(a, buf + n, cap - n);
		assert_true(got >= 0);
		if (got == 0)
			break;
		n += (size_t)got;
	}
	archive_read_free(a);
	*len = n;
	return buf;
}

/* One store of len bytes of data with a raw-copy budget and a size limit. */
static void store_once(const unsigned char *data, size_t len, uint64_t budget, uint64_t limit)
{
	char dir[] = "/tmp/coreq-test-capture-XXXXXX";
	assert_non_null(mkdtemp(dir));
	int p[2];
	assert_int_equal(pipe(p), 0);
	struct feeder f = {.fd = p[1], .data = data, .len = len};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, feed, &f), 0);
	struct cq_capture c;
	cq_capture_init(&c);
	c.pid = 4242;
	c.uid = 1000;
	c.timestamp_us = 1763700000000000;
	c.known = CQ_CAPTURE_PID | CQ_CAPTURE_UID | CQ_CAPTURE_TIMESTAMP;
	struct completion done = {0};
	struct cq_spool_raw raw = {.fd = memfd_create("test-raw", MFD_CLOEXEC),
	                           .budget = budget,
	                           .complete = on_complete,
	                           .arg = &done};
	assert_true(raw.fd >= 0);
	struct cq_spool_result out;
	struct cq_error *err = cq_spool_store(p[0], dir, &c, limit, &raw, &out);
	close(p[0]); /* the feeder may still be writing past the limit */
	pthread_join(t, NULL);
	assert_null(err);
	size_t want = limit && limit < len ? (size_t)limit : len;
	assert_int_equal(out.raw_bytes, want);
	assert_int_equal(out.truncated, want < len);
	bool kept = budget >= want;
	assert_int_equal(raw.kept, kept);
	assert_int_equal(done.calls, kept ? 1 : 0);
	struct stat st;
	assert_int_equal(fstat(raw.fd, &st), 0);
	if (kept) {
		assert_int_equal(done.size, want);
		assert_int_equal((uint64_t)st.st_size, want);
		unsigned char *copy = malloc(want + 1);
		assert_int_equal(pread(raw.fd, copy, want, 0), (ssize_t)want);
		assert_memory_equal(copy, data, want);
		free(copy);
	} else {
		assert_int_equal(st.st_size, 0); /* given up: the memory went back */
	}
	close(raw.fd);
	size_t n;
	unsigned char *back = read_back(out.path, &n);
	assert_int_equal(n, want);
	assert_memory_equal(back, data, want);
	free(back);
	unlink(out.path);
	free(out.path);
	DIR *d = opendir(dir);
	struct dirent *de;
	unsigned left = 0;
	while (d && (de = readdir(d)))
		left += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	if (d)
		closedir(d);
	assert_int_equal(left, 0);
	assert_int_equal(rmdir(dir), 0);
}

static void test_store_with_raw_copy(void **state)
{
	(void)state;
	signal(SIGPIPE, SIG_IGN); /* the feeder writes on past the size limit */
	/* Three windows and a bit: the copy crosses window boundaries. */
	size_t len = (48u << 20) + 12345;
	unsigned char *data = malloc(len);
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		/* half random, half runs: both zstd paths */
		data[i] = (i >> 16) & 1 ? (unsigned char)x : (unsigned char)(i >> 20);
	}
	store_once(data, len, UINT64_MAX, 0);       /* room for all: kept */
	store_once(data, len, len, 0);              /* exactly the core: kept */
	store_once(data, len, len - 1, 0);          /* one byte short: given up at the end */
	store_once(data, len, (20u << 20) + 7, 0);  /* given up midway, in a window */
	store_once(data, len, 16u << 20, 0);        /* given up at a window's edge */
	store_once(data, len, UINT64_MAX, len / 2); /* cut at the limit: the copy too */
	free(data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_systemd_names),
	    cmocka_unit_test(test_hostile_names_are_refused),
	    cmocka_unit_test(test_hook_names_round_trip),
	    cmocka_unit_test(test_store_with_raw_copy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
