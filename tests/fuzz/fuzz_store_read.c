/*
 * fuzz_store_read.c - libFuzzer target for the crash database's read paths
 * (libcore/store/store_query.c and the stack blob behind it): what `show`,
 * `cores`, `buckets` and `list-stacks` run, over a mutated database file.
 *
 * The input is a whole SQLite database image (the seeds are real databases
 * of ingested corpus cores, vacuumed to 512-byte pages).  It is written to a
 * private file and opened as the query commands open it (an existing file,
 * migrated if old); then every query runs over every core.  Any answer is
 * fine: an error value, or rows; a crash, an overread or a leak is not.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcore/store/store.h"
#include "libcore/store/store_query.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t rows_seen;

static void on_stack(void *ctx, const struct cq_store_stack_row *r)
{
	(void)ctx;
	for (size_t i = 0; i < r->nframes; i++)
		rows_seen += r->frames[i].function ? strlen(r->frames[i].function) : 0;
}

static void on_core(void *ctx, const struct cq_store_core_row *r)
{
	int64_t *ids = ctx;
	if (ids[0] < 8)
		ids[1 + ids[0]++] = r->id;
	rows_seen += r->path ? strlen(r->path) : 0;
}

static void on_bucket(void *ctx, const struct cq_store_bucket_row *r)
{
	(void)ctx;
	for (size_t i = 0; r->exes && r->exes[i]; i++)
		rows_seen += strlen(r->exes[i]);
}

static void on_module(void *ctx, const struct cq_store_module_row *r)
{
	(void)ctx;
	rows_seen += r->path ? strlen(r->path) : 0;
}

static void on_thread(void *ctx, const struct cq_store_thread_row *r)
{
	(void)ctx;
	for (size_t i = 0; i < r->nframes; i++)
		rows_seen += r->frames[i].file ? strlen(r->frames[i].file) : 0;
}

static void on_site(void *ctx, const struct cq_store_lws_site_row *r)
{
	(void)ctx;
	rows_seen += r->nframes;
}

static void remove_db(const char *path)
{
	char side[256];
	unlink(path);
	snprintf(side, sizeof(side), "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[128];
	const char *dir = getenv("TMPDIR");
	snprintf(path, sizeof(path), "%s/fuzz_store_read.%d.db", dir && *dir ? dir : "/tmp",
	         (int)getpid());
	remove_db(path);
	FILE *f = fopen(path, "wb");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	struct cq_store *store;
	struct cq_error *err = cq_store_open_mode(path, CQ_STORE_READ_ONLY, &store);
	if (err) {
		cq_error_free(err);
		remove_db(path);
		return 0;
	}
	int64_t ids[9] = {0};
	struct cq_store_core_filter all = {0};
	cq_error_free(cq_store_each_core(store, &all, on_core, ids));
	struct cq_store_stack_filter stacks = {0};
	cq_error_free(cq_store_each_stack(store, &stacks, on_stack, NULL));
	cq_error_free(cq_store_each_lws_site(store, &stacks, on_site, NULL));
	struct cq_store_bucket_filter buckets = {0};
	cq_error_free(cq_store_each_bucket(store, &buckets, on_bucket, NULL));
	for (int64_t i = 0; i < ids[0]; i++) {
		struct cq_store_core_filter one = {.id = ids[1 + i]};
		cq_error_free(cq_store_each_core(store, &one, on_core, (int64_t[9]){0}));
		cq_error_free(cq_store_each_module(store, ids[1 + i], on_module, NULL));
		cq_error_free(cq_store_each_thread(store, ids[1 + i], on_thread, NULL));
		struct cq_store_stack_filter of_core = {.core_id = ids[1 + i]};
		cq_error_free(cq_store_each_stack(store, &of_core, on_stack, NULL));
	}
	struct cq_store_stack_filter by_bucket = {.bucket = "1"};
	cq_error_free(cq_store_each_stack(store, &by_bucket, on_stack, NULL));
	cq_store_close(store);
	remove_db(path);
	return 0;
}
