/*
 * test_capture.c - crash metadata from outside the core (libcore/capture/capture.h):
 * systemd-coredump file names, valid and hostile, and the names the hook
 * gives its own stored cores, which must parse back to the same facts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/capture/capture.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_systemd_names),
	    cmocka_unit_test(test_hostile_names_are_refused),
	    cmocka_unit_test(test_hook_names_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
