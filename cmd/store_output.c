/*
 * store_output.c - printing stored frames and cores, shared by
 * `list-stacks`, `cores` and `show`, in text and JSON.
 */
#include "cmd/store_output.h"

#include <stdlib.h>

#include <inttypes.h>
#include <string.h>

#include "libcore/base/json.h"
#include "libcore/model/si_code.h"
#include "libcore/store/store.h"

void cmd_json_stored_frames(struct cq_json *j, const struct cq_store_frame_row *f, size_t n)
{
	cq_json_key(j, "frames");
	cq_json_array_begin(j);
	for (size_t i = 0; i < n; i++) {
		cq_json_object_begin(j);
		cq_json_key(j, "index");
		cq_json_uint(j, f[i].index);
		cq_json_key(j, "kind");
		cq_json_string(j, f[i].kind);
		cq_json_key(j, "trust");
		cq_json_string(j, f[i].trust);
		cq_json_key(j, "module");
		cq_json_string(j, f[i].module);
		cq_json_key(j, "build_id");
		cq_json_string(j, f[i].build_id);
		cq_json_key(j, "offset");
		cq_json_hex(j, f[i].offset);
		cq_json_key(j, "function");
		cq_json_string(j, f[i].function);
		cq_json_key(j, "file");
		cq_json_string(j, f[i].file);
		cq_json_key(j, "line");
		if (f[i].line > 0)
			cq_json_int(j, f[i].line);
		else
			cq_json_null(j);
		cq_json_key(j, "state");
		cq_json_string(j, f[i].state);
		cq_json_object_end(j);
	}
	cq_json_array_end(j);
}

const char *cmd_stored_text(const char *s)
{
	return s ? cmd_safe(s) : "-";
}

void cmd_print_stored_frames(const struct cq_store_frame_row *f, size_t n, const char *indent)
{
	for (size_t i = 0; i < n; i++) {
		const char *base = f[i].module ? strrchr(f[i].module, '/') : NULL;
		base = base ? base + 1 : f[i].module;
		printf("%s#%-3zu %s", indent, f[i].index,
		       f[i].function ? cmd_safe(f[i].function) : "??");
		/* A suspended future: no code address (offset 0), its state instead. */
		bool future = cq_store_text_is(f[i].kind, "async") && f[i].offset == 0 && base;
		if (f[i].state)
			printf(" [%s]", cmd_safe(f[i].state));
		if (future)
			printf(" (%s)", cmd_safe(base));
		else if (base)
			printf(" (%s+0x%" PRIx64 ")", cmd_safe(base), f[i].offset);
		else
			printf(" (0x%" PRIx64 ")", f[i].offset);
		if (f[i].file)
			printf(" at %s:%d", cmd_safe(f[i].file), f[i].line);
		if (cq_store_text_is(f[i].kind, "inline"))
			printf(" [inline]");
		else if (cq_store_text_is(f[i].kind, "async"))
			printf(" [async]");
		else if (cq_store_text_is(f[i].trust, "fp") || cq_store_text_is(f[i].trust, "scan"))
			printf(" [%s]", cmd_stored_text(f[i].trust));
		putchar('\n');
	}
}

/* A stored core's signal, sender, fault address and crashed thread. */
static void json_stored_signal(struct cq_json *j, const struct cq_store_core_row *c)
{
	cq_json_key(j, "signal");
	cq_json_int(j, c->signal);
	cq_json_key(j, "signal_name");
	cq_json_string(j, c->signal_name);
	cq_json_key(j, "si_code");
	if (c->has_si_code)
		cq_json_int(j, c->si_code);
	else
		cq_json_null(j);
	cmd_json_sender(j, c->has_si_code ? cq_si_code_find(c->signal, c->si_code) : NULL,
	                c->has_sender ? &(struct cmd_sender){c->sender_pid, c->sender_uid, false,
	                                                     c->sender_claimed}
	                              : NULL);
	cq_json_key(j, "fault_address");
	if (c->has_fault_address)
		cq_json_hex(j, c->fault_address);
	else
		cq_json_null(j);
	cq_json_key(j, "snapshot");
	cq_json_string(j, c->snapshot);
	cq_json_key(j, "crashed_tid");
	if (c->snapshot)
		cq_json_null(j);
	else
		cq_json_int(j, c->crashed_tid);
	/* What the runtime said the crash was (schema 016); null: nothing. */
	cq_json_key(j, "crash_message");
	cq_json_string(j, c->crash_message);
}

/* When it crashed (and by whose clock), on which host, as which uid. */
static void json_stored_time(struct cq_json *j, const struct cq_store_core_row *c)
{
	char when[32];
	cq_json_key(j, "timestamp");
	if (c->has_timestamp) {
		cmd_iso_time(c->timestamp, when);
		cq_json_string(j, when);
	} else {
		cq_json_null(j);
	}
	/* The crash time is the capture's when it has one, else the core file's, else none. */
	cq_json_key(j, "time_source");
	cq_json_string(j, !c->has_timestamp ? "ingest"
	                  : c->time_source  ? c->time_source
	                                    : "capture");
	cq_json_key(j, "hostname");
	cq_json_string(j, c->hostname);
	cq_json_key(j, "uid");
	if (c->has_uid)
		cq_json_int(j, c->uid);
	else
		cq_json_null(j);
}

void cmd_json_stored_core(struct cq_json *j, const struct cq_store_core_row *c)
{
	char when[32];
	cq_json_object_begin(j);
	cq_json_key(j, "id");
	cq_json_int(j, c->id);
	cq_json_key(j, "path");
	cq_json_string(j, c->path);
	cq_json_key(j, "pid");
	cq_json_int(j, c->pid);
	cq_json_key(j, "exe");
	cq_json_string(j, c->exe);
	cq_json_key(j, "cmdline");
	cq_json_string(j, c->cmdline);
	json_stored_signal(j, c);
	cq_json_key(j, "threads");
	cq_json_int(j, c->nthreads);
	json_stored_time(j, c);
	cmd_iso_time(c->ingested_at, when);
	cq_json_key(j, "ingested_at");
	cq_json_string(j, when);
	cq_json_key(j, "status");
	cq_json_string(j, c->status);
	cq_json_key(j, "message");
	cq_json_string(j, c->message);
	cq_json_key(j, "bucket_id");
	if (c->bucket_id)
		cq_json_int(j, c->bucket_id);
	else
		cq_json_null(j);
	cq_json_key(j, "bucket");
	cq_json_string(j, c->bucket_hash);
	const char *keys[] = {"comm", "source", "stored_path"};
	const char *vals[] = {c->comm, c->source, c->stored_path};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		cq_json_key(j, keys[i]);
		cq_json_string(j, vals[i]);
	}
	cmd_json_conflicts(j, c->meta_conflicts);
	cq_json_object_end(j);
}

int cmd_run_listing(const char *db, struct cmd_listing *l, const char *key, const char *empty,
                    cmd_listing_query query, void *ctx)
{
	struct cq_store *store;
	int rc = cmd_open_store_query(db, &store);
	if (rc != EXIT_OK)
		return rc;
	struct cq_error *err;
	if (l->format == CMD_FORMAT_JSON) {
		cq_json_init(&l->j, stdout);
		cq_json_object_begin(&l->j);
		cq_json_key(&l->j, key);
		cq_json_array_begin(&l->j);
	}
	err = query(store, ctx);
	if (l->format == CMD_FORMAT_JSON) {
		cq_json_array_end(&l->j);
		cq_json_object_end(&l->j);
		cq_json_finish(&l->j);
	} else if (!err && l->count == 0) {
		char *def = db ? NULL : cq_store_default_path();
		printf("%s (database %s)\n", empty, cmd_safe(db ? db : def ? def : "?"));
		free(def);
	}
	cq_store_close(store);
	return err ? cmd_fail(db ? db : "database", err) : EXIT_OK;
}
