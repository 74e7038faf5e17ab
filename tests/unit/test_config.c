/*
 * test_config.c - the configuration file's parser (cq_config_parse in
 * libcore/base/config.h): lines of `key = value  # comment` with the keys
 * db, cache, store and rules, blanks around key and value dropped, the last
 * line for a key winning, and every other non-blank line counted as bad.
 * Only the parser is tested here: how the file is found and read is being
 * reworked (issue 30) and is left to that work's tests.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/base/config.h"

static void parse(const char *text, size_t len, struct cq_config *c)
{
	cq_config_parse(text, len, c);
}

static void test_keys_values_and_comments(void **state)
{
	(void)state;
	static const char text[] = "# coreq configuration\n"
	                           "\n"
	                           "db = /var/lib/coreq/crashes.db\n"
	                           "\tcache=/var/cache/coreq/cache.db   # shared\r\n"
	                           "store =  /srv/cores \n"
	                           "rules = /etc/coreq/rules";
	struct cq_config c;
	parse(text, sizeof(text) - 1, &c);
	assert_string_equal(c.db, "/var/lib/coreq/crashes.db");
	assert_string_equal(c.cache, "/var/cache/coreq/cache.db");
	assert_string_equal(c.store, "/srv/cores");
	assert_string_equal(c.rules, "/etc/coreq/rules");
	assert_int_equal(c.bad_lines, 0);
	cq_config_free(&c);
	assert_null(c.db);
	assert_null(c.rules);
}

static void test_last_line_wins_and_spaces_inside_stay(void **state)
{
	(void)state;
	static const char text[] = "db = /first.db\ndb = /a dir/second.db\n";
	struct cq_config c;
	parse(text, sizeof(text) - 1, &c);
	assert_string_equal(c.db, "/a dir/second.db");
	assert_null(c.cache);
	assert_int_equal(c.bad_lines, 0);
	cq_config_free(&c);
}

static void test_bad_lines_are_counted_and_ignored(void **state)
{
	(void)state;
	static const char text[] = "colour = blue\n"     /* unknown key */
	                           "db\n"                /* no '=' */
	                           "cache =\n"           /* no value */
	                           "store = # nothing\n" /* only a comment after '=' */
	                           "= /x\n"              /* no key */
	                           "DB = /upper\n"       /* keys are lower case */
	                           "rules = /ok\n";
	struct cq_config c;
	parse(text, sizeof(text) - 1, &c);
	assert_null(c.db);
	assert_null(c.cache);
	assert_null(c.store);
	assert_string_equal(c.rules, "/ok");
	assert_int_equal(c.bad_lines, 6);
	cq_config_free(&c);
}

static void test_only_len_bytes_and_no_nul_in_values(void **state)
{
	(void)state;
	/* A NUL would cut a value short: the line is refused. */
	static const char nul[] = "db = /a\0b\ncache = /c\n";
	struct cq_config c;
	parse(nul, sizeof(nul) - 1, &c);
	assert_null(c.db);
	assert_string_equal(c.cache, "/c");
	assert_int_equal(c.bad_lines, 1);
	cq_config_free(&c);
	/* Bytes past len are not looked at. */
	static const char text[] = "db = /abc\ncache = /d";
	parse(text, 8, &c); /* "db = /ab" */
	assert_string_equal(c.db, "/ab");
	assert_null(c.cache);
	cq_config_free(&c);
	parse("", 0, &c);
	assert_null(c.db);
	assert_int_equal(c.bad_lines, 0);
	cq_config_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_keys_values_and_comments),
	    cmocka_unit_test(test_last_line_wins_and_spaces_inside_stay),
	    cmocka_unit_test(test_bad_lines_are_counted_and_ignored),
	    cmocka_unit_test(test_only_len_bytes_and_no_nul_in_values),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
