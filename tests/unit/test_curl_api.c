/*
 * test_curl_api.c - libcurl loaded when first needed (libcore/base/curl_api.h).
 *
 * The oracle is the dynamic linker: this test is not linked against
 * libcurl, so libcurl.so.4 is absent until the first cq_curl_api call (the
 * header's point), and afterwards dlsym on the loaded library says what
 * each name resolves to.  Every slot must be that function.  The first
 * load is raced by several threads (each gets the one table), later calls
 * hand out the same table without loading again, and the table works:
 * libcurl's documented answers come back through it.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "libcore/base/curl_api.h"

#define THREADS 8

static bool curl_is_loaded(void)
{
	void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_NOLOAD);
	if (h)
		dlclose(h);
	return h != NULL;
}

struct racer {
	pthread_barrier_t *start;
	const struct cq_curl_api *api;
	struct cq_error *err;
};

static void *race(void *p)
{
	struct racer *r = p;
	pthread_barrier_wait(r->start);
	r->err = cq_curl_api(&r->api);
	return NULL;
}

/* Runs first: the library is not loaded before, and one table is made for every thread. */
static void test_first_load_from_many_threads(void **state)
{
	(void)state;
	assert_false(curl_is_loaded());
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, THREADS);
	struct racer r[THREADS];
	pthread_t t[THREADS];
	for (size_t i = 0; i < THREADS; i++) {
		r[i] = (struct racer){.start = &start};
		assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
	}
	for (size_t i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	pthread_barrier_destroy(&start);
	for (size_t i = 0; i < THREADS; i++) {
		assert_null(r[i].err);
		assert_non_null(r[i].api);
		assert_ptr_equal(r[i].api, r[0].api);
	}
	assert_true(curl_is_loaded());
}

/* Each field is the function of its name in the loaded libcurl. */
static void test_every_slot_is_its_function(void **state)
{
	(void)state;
	const struct cq_curl_api *api = NULL;
	assert_null(cq_curl_api(&api));
	assert_non_null(api);
	void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(h);
	const struct {
		const char *name;
		void *slot;
	} want[] = {
	    {"curl_global_init", (void *)api->global_init},
	    {"curl_global_cleanup", (void *)api->global_cleanup},
	    {"curl_easy_init", (void *)api->easy_init},
	    {"curl_easy_cleanup", (void *)api->easy_cleanup},
	    {"curl_easy_setopt", (void *)api->easy_setopt},
	    {"curl_easy_perform", (void *)api->easy_perform},
	    {"curl_easy_getinfo", (void *)api->easy_getinfo},
	    {"curl_easy_strerror", (void *)api->easy_strerror},
	    {"curl_easy_escape", (void *)api->easy_escape},
	    {"curl_free", (void *)api->free},
	};
	/* The list above names every field: the struct is nothing but function pointers. */
	assert_int_equal(sizeof(want) / sizeof(want[0]), sizeof(*api) / sizeof(void (*)(void)));
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		void *sym = dlsym(h, want[i].name);
		assert_non_null(sym);
		if (want[i].slot != sym)
			fail_msg("%s: slot %p, libcurl's %p", want[i].name, want[i].slot, sym);
	}
	/* And every slot is set, counted over the raw struct. */
	void (*const *fields)(void) = (void (*const *)(void))(const void *)api;
	for (size_t i = 0; i < sizeof(*api) / sizeof(fields[0]); i++)
		assert_non_null((void *)fields[i]);
	dlclose(h);
}

/* Later calls: the same table, at the cost of an atomic load (no dlopen). */
static void test_later_calls_are_cheap_and_the_same(void **state)
{
	(void)state;
	const struct cq_curl_api *first = NULL;
	assert_null(cq_curl_api(&first));
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < 100000; i++) {
		const struct cq_curl_api *again = (const void *)1;
		assert_null(cq_curl_api(&again));
		if (again != first)
			fail_msg("call %d handed out another table", i);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	/* A dlopen each time would take seconds; the loaded check is nanoseconds. */
	assert_true(s < 1.0);
}

/* The table works: libcurl's documented answers come back through it. */
static void test_the_table_calls_libcurl(void **state)
{
	(void)state;
	const struct cq_curl_api *api = NULL;
	assert_null(cq_curl_api(&api));
	assert_int_equal(api->global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
	CURL *c = api->easy_init();
	assert_non_null(c);
	assert_string_equal(api->easy_strerror(CURLE_OK), "No error");
	char *esc = api->easy_escape(c, "a b/c", 0);
	assert_non_null(esc);
	assert_string_equal(esc, "a%20b%2Fc");
	api->free(esc);
	assert_int_equal(api->easy_setopt(c, CURLOPT_URL, "http://127.0.0.1:1/"), CURLE_OK);
	long code = -1;
	assert_int_equal(api->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code), CURLE_OK);
	assert_int_equal(code, 0); /* nothing performed yet */
	api->easy_cleanup(c);
	api->global_cleanup();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_first_load_from_many_threads),
	    cmocka_unit_test(test_every_slot_is_its_function),
	    cmocka_unit_test(test_later_calls_are_cheap_and_the_same),
	    cmocka_unit_test(test_the_table_calls_libcurl),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
