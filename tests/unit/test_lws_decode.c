/*
 * test_lws_decode.c - `lws decode`'s flow in the library
 * (libcore/pipeline/lws_decode.h), fed text through fmemopen: one callback
 * per non-blank line in order, with its line number; a record found by
 * lws_log.h's rule (the line of issue 31 whose record text follows
 * decodes), a bare base64 line, a malformed record and an overlong line
 * reported with their errors and the lines after them still decoded; the
 * rendering lws's decoder prints; one unnamed frame per address without an
 * ELF, and with this test's own executable as the ELF, an address inside
 * one of its functions named; a stream that cannot be read is an error.
 * Expected stacks are the vectors worked out by hand in test_lws_log.c
 * (FACTS.md section 5).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <link.h>
#include <unistd.h>

#include <cmocka.h>

#include "libcore/formats/lws_codec.h"
#include "libcore/formats/lws_log.h"
#include "libcore/pipeline/lws_decode.h"
#include "libcore/pipeline/lws_ingest.h"

#define MAX_SEEN 16

/* What the callback saw, copied out (the report is valid during the call only). */
struct seen {
	size_t n;
	uint64_t line[MAX_SEEN];
	char error[MAX_SEEN][128]; /* "" for a record */
	char text[MAX_SEEN][CQ_LWS_MAX_LINE];
	struct cq_lws_stack stack[MAX_SEEN];
	size_t nframes[MAX_SEEN];
	uint64_t pc0[MAX_SEEN];
	char function[MAX_SEEN][64]; /* of the last (real) frame of the first address */
};

static void on_line(void *ctx, const struct cq_lws_decoded *d)
{
	struct seen *s = ctx;
	assert_true(s->n < MAX_SEEN);
	size_t i = s->n++;
	s->line[i] = d->line;
	if (d->error) {
		snprintf(s->error[i], sizeof(s->error[i]), "%s", d->error->message);
		assert_null(d->stack);
		assert_null(d->text);
		return;
	}
	assert_non_null(d->stack);
	s->stack[i] = *d->stack;
	snprintf(s->text[i], sizeof(s->text[i]), "%s", d->text);
	s->nframes[i] = d->nframes;
	s->pc0[i] = d->nframes ? d->frames[0].pc : 0;
	for (size_t k = 0; k < d->nframes && d->frames[k].pc == d->frames[0].pc; k++)
		if (d->frames[k].kind == CQ_FRAME_NATIVE)
			snprintf(s->function[i], sizeof(s->function[i]), "%s",
			         d->frames[k].function ? d->frames[k].function : "");
}

static struct cq_error *decode(const char *text, size_t len, struct cq_lws_elf *elf, struct seen *s)
{
	memset(s, 0, sizeof(*s));
	FILE *in = fmemopen((void *)text, len, "r");
	assert_non_null(in);
	struct cq_error *err = cq_lws_decode_lines(in, elf, on_line, s);
	fclose(in);
	return err;
}

static void test_lines_in_order(void **state)
{
	(void)state;
	static const char text[] = "app: leak ~m#EDUAAHIAAOgAAAs= (from pool)\n"      /* 1 */
	                           "\n"                                               /* 2 */
	                           " \t \n"                                           /* 3 */
	                           "~m#!!!!\n"                                        /* 4 */
	                           "IF0BmUQugNCkgCnkhdAYpQa6wAAV\n"                   /* 5 */
	                           "[2024/01/01] N: ~m#IF0BmUQugNCkgCnkhdAYpQa6wAAV"; /* 6 */
	struct seen *s = malloc(sizeof(*s));
	assert_null(decode(text, sizeof(text) - 1, NULL, s));
	assert_int_equal(s->n, 4); /* blank lines 2 and 3 report nothing */
	assert_int_equal(s->line[0], 1);
	assert_int_equal(s->line[1], 4);
	assert_int_equal(s->line[2], 5);
	assert_int_equal(s->line[3], 6);
	/* The record stops where base64 stops: "(from pool)" is no part of it. */
	assert_string_equal(s->error[0], "");
	assert_int_equal(s->stack[0].depth, 2);
	assert_int_equal(s->stack[0].addr[0], 0x1000);
	assert_int_equal(s->stack[0].addr[1], 0x2000);
	assert_int_equal(s->stack[0].size, 64);
	assert_string_equal(s->text[0], "~b#size: 64, 0x1000 0x2000 ");
	/* Without an ELF: one unnamed frame per address, at the address itself. */
	assert_int_equal(s->nframes[0], 2);
	assert_int_equal(s->pc0[0], 0x1000);
	assert_string_equal(s->function[0], "");
	/* A malformed record is reported, and the lines after it still decode. */
	assert_true(s->error[1][0] != '\0');
	/* A bare base64 line and the same record behind a log prefix agree. */
	assert_string_equal(s->error[2], "");
	assert_string_equal(s->error[3], "");
	assert_string_equal(s->text[2], s->text[3]);
	assert_int_equal(s->stack[2].depth, s->stack[3].depth);
	assert_int_equal(s->nframes[2], s->stack[2].depth);
	free(s);
}

static void test_overlong_line(void **state)
{
	(void)state;
	size_t len = CQ_LWS_LOG_MAX_LINE + 10;
	char *text = malloc(len + 64);
	memset(text, 'A', len);
	snprintf(text + len, 64, "\n~m#EDUAAHIAAOgAAAs=\n");
	struct seen *s = malloc(sizeof(*s));
	assert_null(decode(text, strlen(text), NULL, s));
	assert_int_equal(s->n, 2);
	char want[64];
	snprintf(want, sizeof(want), "line longer than %d bytes", CQ_LWS_LOG_MAX_LINE);
	assert_string_equal(s->error[0], want);
	assert_int_equal(s->line[1], 2);
	assert_string_equal(s->text[1], "~b#size: 64, 0x1000 0x2000 ");
	free(s);
	free(text);
}

__attribute__((noinline)) int lws_decode_marker(int x);
__attribute__((noinline)) int lws_decode_marker(int x)
{
	return x * 3 + 1;
}

static int main_bias(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(uint64_t *)arg = info->dlpi_addr; /* the first object is the executable */
	return 1;
}

static void test_named_with_elf(void **state)
{
	(void)state;
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	uint64_t bias = 0;
	dl_iterate_phdr(main_bias, &bias);
	/* A return address inside the marker, at the ELF's link-time addresses. */
	struct cq_lws_stack st = {
	    .depth = 1, .addr = {(uint64_t)(uintptr_t)lws_decode_marker - bias + 4}, .size = 48};
	char line[CQ_LWS_MAX_TEXT + 1];
	assert_null(cq_lws_encode_text(&st, line, sizeof(line) - 1));
	strcat(line, "\n");
	struct cq_lws_elf *elf;
	assert_null(cq_lws_elf_open(exe, NULL, NULL, &elf));
	struct seen *s = malloc(sizeof(*s));
	assert_null(decode(line, strlen(line), elf, s));
	assert_int_equal(s->n, 1);
	assert_string_equal(s->error[0], "");
	assert_int_equal(s->pc0[0], st.addr[0]);
	assert_string_equal(s->function[0], "lws_decode_marker");
	cq_lws_elf_close(elf);
	free(s);
	assert_int_equal(lws_decode_marker(1), 4);
}

static void test_unreadable_stream(void **state)
{
	(void)state;
	FILE *in = fopen("/", "r"); /* a directory: opens, but reading fails */
	assert_non_null(in);
	struct seen *s = calloc(1, sizeof(*s));
	struct cq_error *err = cq_lws_decode_lines(in, NULL, on_line, s);
	assert_non_null(err);
	assert_int_equal(s->n, 0);
	cq_error_free(err);
	fclose(in);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lines_in_order),
	    cmocka_unit_test(test_overlong_line),
	    cmocka_unit_test(test_named_with_elf),
	    cmocka_unit_test(test_unreadable_stream),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
