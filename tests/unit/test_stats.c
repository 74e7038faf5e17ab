/*
 * test_stats.c - named values in order (libcore/base/stats.h): every value
 * type as JSON, nested objects and lists, keys and strings copied, lookups
 * at the top level only, unbalanced levels (an END too many never closes the
 * caller's object; levels left open are closed), and nesting deeper than the
 * JSON writer tracks still comes out as JSON that parses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "libcore/base/json.h"
#include "libcore/base/stats.h"

/* s as the members of one JSON object, as a string the caller frees. */
static char *as_json(const struct cq_stats *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	struct cq_json *j = malloc(sizeof(*j));
	assert_non_null(j);
	cq_json_init(j, f);
	cq_json_object_begin(j);
	cq_stats_json(s, j);
	cq_json_object_end(j);
	cq_json_flush(j);
	free(j);
	fclose(f);
	return buf;
}

static void expect_json(const struct cq_stats *s, const char *want)
{
	char *got = as_json(s);
	assert_string_equal(got, want);
	free(got);
}

static void test_every_type(void **state)
{
	(void)state;
	struct cq_stats s = {0};
	cq_stats_uint(&s, "u", 18446744073709551615ull);
	cq_stats_bool(&s, "yes", true);
	cq_stats_bool(&s, "no", false);
	cq_stats_string(&s, "str", "a\"b");
	cq_stats_string(&s, "none", NULL); /* a NULL string is null */
	cq_stats_hex(&s, "hex", 0x1f);
	cq_stats_null(&s, "nothing");
	assert_false(s.nomem);
	assert_int_equal(s.n, 7);
	expect_json(&s, "{\"u\":18446744073709551615,\"yes\":true,\"no\":false,\"str\":\"a\\\"b\","
	                "\"none\":null,\"hex\":\"0x1f\",\"nothing\":null}");
	cq_stats_free(&s);
	assert_int_equal(s.n, 0);
	assert_null(s.v);
}

static void test_nested_objects_and_lists(void **state)
{
	(void)state;
	struct cq_stats s = {0};
	cq_stats_uint(&s, "before", 1);
	cq_stats_object(&s, "counts");
	cq_stats_uint(&s, "a", 2);
	cq_stats_object(&s, "inner");
	cq_stats_end(&s);
	cq_stats_end(&s);
	cq_stats_array(&s, "list");
	cq_stats_object(&s, NULL);
	cq_stats_hex(&s, "address", 0x10);
	cq_stats_string(&s, "type", "T");
	cq_stats_end(&s);
	cq_stats_uint(&s, NULL, 7);
	cq_stats_array(&s, NULL);
	cq_stats_end(&s);
	cq_stats_end(&s);
	cq_stats_array(&s, "empty");
	cq_stats_end(&s);
	cq_stats_bool(&s, "after", true);
	expect_json(&s, "{\"before\":1,\"counts\":{\"a\":2,\"inner\":{}},"
	                "\"list\":[{\"address\":\"0x10\",\"type\":\"T\"},7,[]],\"empty\":[],"
	                "\"after\":true}");
	cq_stats_free(&s);
}

static void test_keys_and_strings_are_copied(void **state)
{
	(void)state;
	struct cq_stats s = {0};
	char key[8] = "k", val[8] = "v";
	cq_stats_string(&s, key, val);
	strcpy(key, "X");
	strcpy(val, "Y");
	const struct cq_stat *e = cq_stats_find(&s, "k");
	assert_non_null(e);
	assert_int_equal(e->type, CQ_STAT_STRING);
	assert_string_equal(e->s, "v");
	assert_null(cq_stats_find(&s, "X"));
	cq_stats_free(&s);
}

/* Only top-level entries are found, whatever a nested level holds. */
static void test_find_looks_at_the_top_level(void **state)
{
	(void)state;
	struct cq_stats s = {0};
	cq_stats_object(&s, "outer");
	cq_stats_uint(&s, "x", 1);
	cq_stats_array(&s, "deep");
	cq_stats_object(&s, NULL);
	cq_stats_uint(&s, "y", 2);
	cq_stats_end(&s);
	cq_stats_end(&s);
	cq_stats_end(&s);
	cq_stats_uint(&s, "x", 3);
	const struct cq_stat *x = cq_stats_find(&s, "x");
	assert_non_null(x);
	assert_int_equal(x->u, 3);
	assert_null(cq_stats_find(&s, "y"));
	assert_null(cq_stats_find(&s, "deep"));
	const struct cq_stat *o = cq_stats_find(&s, "outer");
	assert_non_null(o);
	assert_int_equal(o->type, CQ_STAT_OBJECT);
	assert_null(cq_stats_find(&s, "missing"));
	cq_stats_free(&s);
}

/* An END with no open level is ignored, before or after other ENDs. */
static void test_unmatched_end_never_closes_the_caller(void **state)
{
	(void)state;
	struct cq_stats s = {0};
	cq_stats_end(&s);
	cq_stats_uint(&s, "a", 1);
	cq_stats_object(&s, "o");
	cq_stats_end(&s);
	cq_stats_end(&s);
	cq_stats_uint(&s, "b", 2);
	expect_json(&s, "{\"a\":1,\"o\":{},\"b\":2}");
	/* An END too many must not hide a later top-level key either. */
	const struct cq_stat *b = cq_stats_find(&s, "b");
	assert_non_null(b);
	assert_int_equal(b->u, 2);
	cq_stats_free(&s);
}

static void test_open_levels_are_closed(void **state)
{
	(void)state;
	struct cq_stats s = {0};
	cq_stats_array(&s, "l");
	cq_stats_object(&s, NULL);
	cq_stats_uint(&s, "n", 1);
	expect_json(&s, "{\"l\":[{\"n\":1}]}");
	cq_stats_free(&s);
}

/*
 * Nesting deeper than the JSON writer tracks (CQ_JSON_MAX_DEPTH) still
 * gives valid JSON: every level that is shown is closed and separated
 * properly, and a key after the deep part is a member of the outer object.
 */
static void test_deep_nesting_stays_valid(void **state)
{
	(void)state;
	for (unsigned depth = 1; depth <= 80; depth++) {
		struct cq_stats s = {0};
		cq_stats_uint(&s, "first", 1);
		for (unsigned i = 0; i < depth; i++) {
			cq_stats_object(&s, "o");
			cq_stats_uint(&s, "a", i);
		}
		for (unsigned i = 0; i < depth; i++) {
			cq_stats_uint(&s, "b", i);
			cq_stats_end(&s);
		}
		cq_stats_uint(&s, "last", 2);
		char *got = as_json(&s);
		/* Balanced braces, the outer object closed last, a separator before every key. */
		int open = 0, min = 1;
		for (const char *p = got; *p; p++) {
			open += (*p == '{') - (*p == '}');
			if (p[1] && open < min)
				min = open;
		}
		assert_int_equal(open, 0);
		assert_true(min >= 1); /* nothing closed the outer object early */
		assert_true(strstr(got, "\"first\":1,") == got + 1);
		size_t len = strlen(got);
		assert_true(len > 10 && strcmp(got + len - 10, ",\"last\":2}") == 0);
		/* every key but the first follows a comma or an opening brace */
		for (const char *p = got + 1; (p = strchr(p, '"')); p++) {
			if (p[1] && p[2] == '"' && p[3] == ':')
				assert_true(p[-1] == ',' || p[-1] == '{');
			p = strchr(p + 1, '"');
			assert_non_null(p);
		}
		free(got);
		cq_stats_free(&s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_type),
	    cmocka_unit_test(test_nested_objects_and_lists),
	    cmocka_unit_test(test_keys_and_strings_are_copied),
	    cmocka_unit_test(test_find_looks_at_the_top_level),
	    cmocka_unit_test(test_unmatched_end_never_closes_the_caller),
	    cmocka_unit_test(test_open_levels_are_closed),
	    cmocka_unit_test(test_deep_nesting_stays_valid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
