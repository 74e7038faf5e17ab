/*
 * ingest.h - one ingest run (a database, options, and counters), shared by
 * `coreq ingest` and `coreq hook`, which ingests the core it has stored
 * exactly as `coreq ingest` would.
 */
#ifndef CQ_CMD_INGEST_H
#define CQ_CMD_INGEST_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "cmd/cmd.h"
#include "libcore/triage/bucket.h"
#include "libcore/base/json.h"
#include "libcore/analysis/stacktrace.h"

struct cq_capture;

/* One file to ingest; a file found in a directory carries its stat. */
struct input {
	char *path;
	bool from_dir;
	int64_t size, mtime_ns;
};

struct progress {
	bool shown;
	size_t done, total;
	struct timespec start;
};

struct ingest_run {
	struct cmd_core_opts o;
	struct cq_stack_options so;
	struct cq_store *store;
	struct cq_json json;
	struct progress progress;
	unsigned signature_frames;
	/* Metadata to use instead of what the file's name and xattrs say. */
	const struct cq_capture *capture_override;
	size_t ingested, duplicates, failed, unchanged;
	/* What became of the last input. */
	int64_t last_core_id;
	char last_bucket[CQ_BUCKET_HASH_LEN + 1];
	bool last_new_bucket;
	char last_error[256];
};

/* Analyses and stores one input, reporting it (text or JSON) and counting it. */
void cmd_ingest_one(struct ingest_run *run, const struct input *in);

#endif
