/*
 * fuzz_config.c - libFuzzer target for libcore/base/config.c, the parser of
 * /etc/coreq/coreq.conf: any bytes must parse without a crash or a leak,
 * every value found must be a non-empty string without blanks around it,
 * and parsing what was found, written back, must find the same.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcore/base/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_value(const char *v)
{
	if (!v)
		return;
	size_t n = strlen(v);
	if (n == 0 || v[0] == ' ' || v[0] == '\t' || v[n - 1] == ' ' || v[n - 1] == '\t' ||
	    strchr(v, '\n') || strchr(v, '#'))
		abort();
}

static int same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cq_config c, again;
	cq_config_parse((const char *)data, size, &c);
	const char *v[4] = {c.db, c.cache, c.store, c.rules};
	const char *k[4] = {"db", "cache", "store", "rules"};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	for (int i = 0; i < 4 && f; i++) {
		check_value(v[i]);
		if (v[i])
			fprintf(f, "%s = %s\n", k[i], v[i]);
	}
	if (f)
		fclose(f);
	cq_config_parse(text ? text : "", len, &again);
	if (!same(c.db, again.db) || !same(c.cache, again.cache) || !same(c.store, again.store) ||
	    !same(c.rules, again.rules) || again.bad_lines)
		abort();
	free(text);
	cq_config_free(&again);
	cq_config_free(&c);
	return 0;
}
