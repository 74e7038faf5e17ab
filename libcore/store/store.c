/*
 * store.c - open the analysis database and write one core into it
 * (see store.h).
 *
 * Stacks are deduplicated by their hash (stack_hash.h).  Within one core the
 * hash -> stack id map is kept in memory, so 3000 threads parked in the same
 * place cost one lookup.
 *
 * Invariants (asserted): every write of an ingest runs inside its one
 * transaction (a row written outside it would survive a rollback); the
 * long INSERTs bind exactly the parameters their statement has; the
 * in-memory stack map never holds more than the stacks it was sized for.
 */
#include "libcore/store/store.h"
#include "libcore/store/store_db.h"
#include "libcore/store/stack_hash.h"
#include "libcore/store/crash_message.h"

#include <assert.h>
#include <elf.h>
#include <errno.h>
#include <gelf.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "libcore/triage/bucket.h"
#include "libcore/analysis/waits.h"
#include "libcore/triage/frame_names.h"
#include "libcore/capture/capture.h"
#include "libcore/model/core.h"
#include "libcore/model/module.h"
#include "libcore/base/paths.h"
#include "libcore/base/hash.h"
#include "libcore/db/bind.h"
#include "libcore/db/db_error.h"
#include "libcore/db/schema.h"
#include "libcore/formats/stack_blob.h"
#include "libcore/analysis/stacktrace.h"
#include "libcore/model/stream_image.h"

#define BUSY_TIMEOUT_MS 60000

struct cq_store {
	sqlite3 *db;
};

char *cq_store_default_path(void)
{
	return cq_path_default("COREQ_DB", "db", "XDG_STATE_HOME", ".local/state", "coreq.db");
}

static struct cq_error *db_error(sqlite3 *db, const char *what)
{
	return cq_db_error(db, what);
}

struct cq_error *cq_store_open(const char *path, struct cq_store **out)
{
	return cq_store_open_mode(path, CQ_STORE_CREATE, out);
}

struct cq_error *cq_store_open_mode(const char *path, enum cq_store_open_how how,
                                    struct cq_store **out)
{
	*out = NULL;
	struct cq_store *s = calloc(1, sizeof(*s));
	if (!s)
		return &cq_error_nomem;
	struct cq_error *err =
	    how == CQ_STORE_READ_ONLY  ? cq_db_open_read_only(path, "db", BUSY_TIMEOUT_MS, &s->db)
	    : how == CQ_STORE_EXISTING ? cq_db_open_existing(path, "db", BUSY_TIMEOUT_MS, &s->db)
	                               : cq_db_open(path, "db", BUSY_TIMEOUT_MS, &s->db);
	if (err) {
		free(s);
		return err;
	}
	*out = s;
	return NULL;
}

void cq_store_close(struct cq_store *s)
{
	if (!s)
		return;
	sqlite3_close(s->db);
	free(s);
}

sqlite3 *cq_store_db(struct cq_store *s)
{
	return s->db;
}

/*
 * A 64-bit hash of a byte run, 8 bytes a step (multiply, xor-shift), so
 * hashing the ~10 MiB of notes of a 3000-thread core is cheap.
 */
static uint64_t hash_bytes(uint64_t h, const uint8_t *p, size_t len)
{
	const uint64_t k = 0x9e3779b97f4a7c15ull;
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		h = (h ^ w) * k;
		h ^= h >> 29;
	}
	for (; i < len; i++)
		h = (h ^ p[i]) * k;
	h ^= len;
	return h ^ (h >> 32);
}

void cq_store_identity(const struct cq_core *core, char out[CQ_STORE_IDENTITY_MAX])
{
	uint64_t h = CQ_FNV_OFFSET;
	size_t prefix = core->image_size < CQ_STREAM_KEEP_PREFIX ? (size_t)core->image_size
	                                                         : CQ_STREAM_KEEP_PREFIX;
	h = hash_bytes(h, core->image, prefix);
	size_t phnum;
	if (elf_getphdrnum(core->elf, &phnum) == 0) {
		for (size_t i = 0; i < phnum; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(core->elf, (int)i, &ph) || ph.p_type != PT_NOTE ||
			    ph.p_offset >= core->image_size ||
			    ph.p_filesz > core->image_size - ph.p_offset)
				continue;
			h = hash_bytes(h, core->image + ph.p_offset, (size_t)ph.p_filesz);
		}
	}
	snprintf(out, CQ_STORE_IDENTITY_MAX, "%llu-%016llx", (unsigned long long)core->image_size,
	         (unsigned long long)h);
}

/* ---- statements ------------------------------------------------------------ */

enum stmt {
	ST_FIND_CORE,
	ST_INSERT_CORE,
	ST_FIND_PLACEHOLDER,
	ST_DELETE_CORE,
	ST_SET_STORED_PATH,
	ST_INSERT_MODULE,
	ST_FIND_MODULE,
	ST_INSERT_CORE_MODULE,
	ST_FIND_STACK,
	ST_INSERT_STACK,
	ST_INSERT_FRAME,
	ST_INSERT_THREAD,
	ST_FIND_BUCKET,
	ST_INSERT_BUCKET,
	ST_COUNT_BUCKET,
	ST_SET_CORE_BUCKET,
	ST_INSERT_SUSPENDED,
	ST_INSERT_WAIT,
	ST_COUNT,
};

static const char *const sql[ST_COUNT] = {
    [ST_FIND_CORE] = "SELECT id FROM cores WHERE identity = ?",
    [ST_INSERT_CORE] =
        "INSERT INTO cores (identity, path, size, pid, exe, cmdline, uid, gid, signal, "
        "signal_name, si_code, fault_address, crashed_tid, nthreads, timestamp, hostname, "
        "ingested_at, status, message, comm, boot_id, rlimit, source, stored_path, "
        "meta_conflicts, sender_pid, sender_uid, time_source, snapshot, sender_claimed, "
        "crash_message, id) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_FIND_PLACEHOLDER] = "SELECT id, source FROM cores WHERE identity = 'stored:' || ?",
    [ST_DELETE_CORE] = "DELETE FROM cores WHERE id = ?",
    [ST_SET_STORED_PATH] = "UPDATE cores SET stored_path = ? WHERE id = ? AND stored_path IS NULL",
    [ST_INSERT_MODULE] = "INSERT OR IGNORE INTO modules (build_id, path) VALUES (?, ?)",
    [ST_FIND_MODULE] = "SELECT id FROM modules WHERE build_id = ?",
    [ST_INSERT_CORE_MODULE] = "INSERT OR IGNORE INTO core_modules (core_id, module_id, path, "
                              "start, end, status, deleted) VALUES (?,?,?,?,?,?,?)",
    [ST_FIND_STACK] = "SELECT id FROM stacks WHERE hash = ?",
    [ST_INSERT_STACK] = "INSERT INTO stacks (hash, nframes, frames_blob) VALUES (?, ?, ?)",
    [ST_INSERT_FRAME] = "INSERT INTO frames (stack_id, idx, module_id, offset, kind, trust, "
                        "function, file, line, state, sig_name) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
    [ST_INSERT_THREAD] = "INSERT INTO threads (core_id, tid, idx, name, crashed, stack_id, end) "
                         "VALUES (?,?,?,?,?,?,?)",
    [ST_FIND_BUCKET] = "SELECT id FROM buckets WHERE hash = ?",
    [ST_INSERT_BUCKET] = "INSERT INTO buckets (hash, signature, count, first_seen, last_seen, "
                         "example_core, rules_version) VALUES (?, ?, 0, ?3, ?3, ?4, ?5)",
    [ST_COUNT_BUCKET] = "UPDATE buckets SET count = count + 1, first_seen = min(first_seen, ?2), "
                        "last_seen = max(last_seen, ?2) WHERE id = ?1",
    [ST_SET_CORE_BUCKET] = "UPDATE cores SET bucket_id = ? WHERE id = ?",
    [ST_INSERT_SUSPENDED] = "INSERT INTO suspended (core_id, idx, kind, stack_id, end) "
                            "VALUES (?,?,?,?,?)",
    [ST_INSERT_WAIT] = "INSERT INTO waits (core_id, idx, tid, kind, write, object, futex, "
                       "function, owner, owner_tid, count, deadlock, verdict, "
                       "owner_confirmed_by) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
};

/* Everything one ingest needs; freed by ingest_end. */
struct ingest {
	struct cq_store *store;
	sqlite3_stmt *st[ST_COUNT];
	const struct cq_core *core;
	const struct cq_module *modules; /* the core's, or an lws log's ELF */
	int64_t *module_ids;             /* by index in modules */
	struct cq_bucket_namer *namer;   /* names frames' sig_name; NULL: none */
	struct {
		uint64_t hash;
		int64_t id;
	} * seen; /* stack hashes met in this core */
	size_t nseen, seen_cap;
};

/* Resets a statement for reuse after it has been stepped. */
static int step_reset(sqlite3_stmt *st)
{
	assert(
	    !sqlite3_get_autocommit(sqlite3_db_handle(st))); /* inside the ingest's transaction */
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc;
}

static struct cq_error *lookup_id(struct ingest *in, enum stmt which, const char *key, int64_t *id)
{
	sqlite3_stmt *st = in->st[which];
	sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
	int rc = sqlite3_step(st);
	*id = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return db_error(in->store->db, "lookup");
	return NULL;
}

/* The hook's placeholder row for meta->stored_path, if any: its id and source. */
static struct cq_error *find_placeholder(struct ingest *in, const struct cq_store_meta *meta,
                                         int64_t *id, char *source, size_t cap)
{
	*id = 0;
	if (!meta || !meta->stored_path)
		return NULL;
	sqlite3_stmt *st = in->st[ST_FIND_PLACEHOLDER];
	sqlite3_bind_text(st, 1, meta->stored_path, -1, SQLITE_TRANSIENT);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(st, 0);
		const unsigned char *s = sqlite3_column_text(st, 1);
		snprintf(source, cap, "%s", s ? (const char *)s : "");
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return db_error(in->store->db, "lookup");
	if (*id) {
		st = in->st[ST_DELETE_CORE];
		sqlite3_bind_int64(st, 1, *id);
		if (step_reset(st) != SQLITE_DONE)
			return db_error(in->store->db, "delete placeholder");
	}
	return NULL;
}

/* Binds v if cap knows the field, else NULL. */
static void bind_known(sqlite3_stmt *st, int i, const struct cq_capture *cap, unsigned bit,
                       int64_t v)
{
	cq_db_bind_int_if(st, i, cap && (cap->known & bit), v);
}

/*
 * The core's time as cores.timestamp holds it (schema/012_time_source.sql):
 * the captured crash time, else the file's modification time.  Returns the
 * time_source ("capture", "file"), or NULL when neither is known.
 */
static const char *core_time(const struct cq_capture *cap, int64_t *when)
{
	if (cap && (cap->known & CQ_CAPTURE_TIMESTAMP)) {
		*when = cap->timestamp_us / 1000000;
		return "capture";
	}
	if (cap && cap->file_mtime > 0) {
		*when = cap->file_mtime;
		return "file";
	}
	*when = 0;
	return NULL;
}

static struct cq_error *insert_core(struct ingest *in, const char *identity,
                                    const struct cq_stacks *stacks,
                                    const struct cq_store_meta *meta, int64_t *id)
{
	const struct cq_core *c = in->core;
	const struct cq_core_thread *crashed = cq_core_crashed_thread(c);
	const struct cq_capture *cap = meta ? meta->capture : NULL;
	int sig = cq_core_signal(c);
	char placeholder_source[16];
	int64_t reuse_id;
	struct cq_error *err =
	    find_placeholder(in, meta, &reuse_id, placeholder_source, sizeof(placeholder_source));
	if (err)
		return err;
	sqlite3_stmt *st = in->st[ST_INSERT_CORE];
	char message[128];
	snprintf(message, sizeof(message), "%llu of %llu bytes of memory missing",
	         (unsigned long long)c->memory_missing, (unsigned long long)c->memory_dumped);
	int i = 1;
	sqlite3_bind_text(st, i++, identity, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, i++, c->path, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, i++, (sqlite3_int64)c->image_size);
	struct cq_capture_ids ids;
	cq_capture_ids(c, cap, &ids);
	sqlite3_bind_int64(st, i++, ids.pid);
	cq_db_bind_text(st, i++, cq_core_exe(c, cap ? cap->exe : NULL));
	cq_db_bind_text(st, i++, c->has_psinfo ? c->psargs : NULL);
	if (ids.has_uid)
		sqlite3_bind_int64(st, i++, ids.uid);
	else
		sqlite3_bind_null(st, i++);
	if (ids.has_gid)
		sqlite3_bind_int64(st, i++, ids.gid);
	else
		sqlite3_bind_null(st, i++);
	sqlite3_bind_int(st, i++, sig);
	cq_db_bind_text(st, i++, cq_core_signal_name(sig));
	if (c->siginfo.present)
		sqlite3_bind_int(st, i++, c->siginfo.code);
	else
		sqlite3_bind_null(st, i++);
	if (c->siginfo.has_addr)
		sqlite3_bind_int64(st, i++, (sqlite3_int64)c->siginfo.addr);
	else
		sqlite3_bind_null(st, i++);
	sqlite3_bind_int64(st, i++, crashed ? crashed->tid : 0); /* a snapshot: none */
	sqlite3_bind_int64(st, i++, (sqlite3_int64)c->nthreads);
	int64_t when;
	const char *time_source = core_time(cap, &when);
	if (time_source)
		sqlite3_bind_int64(st, i++, when);
	else
		sqlite3_bind_null(st, i++);
	cq_db_bind_text(st, i++, cap && cap->hostname[0] ? cap->hostname : NULL);
	sqlite3_bind_int64(st, i++, (sqlite3_int64)time(NULL));
	sqlite3_bind_text(st, i++, c->memory_missing ? "partial" : "ok", -1, SQLITE_STATIC);
	cq_db_bind_text(st, i++, c->memory_missing ? message : NULL);
	/* The notes win: the outside comm only when the core has none. */
	cq_db_bind_text(st, i++, c->fname[0] ? c->fname : (cap && cap->comm[0] ? cap->comm : NULL));
	cq_db_bind_text(st, i++, cap && cap->boot_id[0] ? cap->boot_id : NULL);
	bind_known(st, i++, cap, CQ_CAPTURE_RLIMIT, cap ? cap->rlimit : 0);
	cq_db_bind_text(st, i++,
	                reuse_id && placeholder_source[0] ? placeholder_source
	                                                  : (cap ? cap->source : "file"));
	cq_db_bind_text(st, i++, reuse_id ? meta->stored_path : NULL);
	cq_db_bind_text(st, i++, cap && cap->conflicts[0] ? cap->conflicts : NULL);
	cq_db_bind_int_if(st, i++, c->siginfo.has_sender, c->siginfo.sender_pid);
	cq_db_bind_int_if(st, i++, c->siginfo.has_sender, c->siginfo.sender_uid);
	cq_db_bind_text(st, i++, time_source);
	cq_db_bind_text(st, i++, cq_core_snapshot_name(c->snapshot));
	cq_db_bind_int_if(st, i++, c->siginfo.has_sender, cq_core_sender_claimed(c));
	/* What the runtime said the crash was (schema 016), bounded: untrusted core data. */
	char crash_message[CQ_CRASH_MESSAGE_MAX + 1];
	cq_db_bind_text(
	    st, i++,
	    cq_crash_message_bound(stacks->crash_message, crash_message, sizeof(crash_message)));
	if (reuse_id)
		sqlite3_bind_int64(st, i++, reuse_id);
	else
		sqlite3_bind_null(st, i++);
	assert(i - 1 == sqlite3_bind_parameter_count(st));
	if (step_reset(st) != SQLITE_DONE)
		return db_error(in->store->db, "insert core");
	*id = sqlite3_last_insert_rowid(in->store->db);
	return NULL;
}

/* The key a module is stored under: its build-id, else "path:<path>". */
static void module_key(const struct cq_module *m, char *buf, size_t cap)
{
	cq_module_build_id_hex(m, buf, cap);
	if (!buf[0])
		snprintf(buf, cap, "path:%s", m->name);
}

static struct cq_error *insert_modules(struct ingest *in, int64_t core_id)
{
	const struct cq_core *c = in->core;
	if (c->nmodules && !(in->module_ids = calloc(c->nmodules, sizeof(*in->module_ids))))
		return &cq_error_nomem;
	for (size_t m = 0; m < c->nmodules; m++) {
		const struct cq_module *mod = &c->modules[m];
		char key[4096];
		module_key(mod, key, sizeof(key));
		sqlite3_stmt *st = in->st[ST_INSERT_MODULE];
		sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 2, mod->name, -1, SQLITE_TRANSIENT);
		struct cq_error *err = NULL;
		if (step_reset(st) != SQLITE_DONE ||
		    (err = lookup_id(in, ST_FIND_MODULE, key, &in->module_ids[m])))
			return err ? err : db_error(in->store->db, "insert module");
		st = in->st[ST_INSERT_CORE_MODULE];
		sqlite3_bind_int64(st, 1, core_id);
		sqlite3_bind_int64(st, 2, in->module_ids[m]);
		sqlite3_bind_text(st, 3, mod->name, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 4, (sqlite3_int64)mod->start);
		sqlite3_bind_int64(st, 5, (sqlite3_int64)mod->end);
		sqlite3_bind_text(st, 6, cq_module_status_name(mod->status), -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 7, mod->deleted);
		if (step_reset(st) != SQLITE_DONE)
			return db_error(in->store->db, "insert core module");
	}
	return NULL;
}

/* The hash that identifies a merged stack (stack_hash.h). */
static uint64_t stack_hash(const struct cq_stack_frame *frames, size_t nframes)
{
	uint64_t h = CQ_STACK_HASH_INIT;
	for (size_t i = 0; i < nframes; i++) {
		const struct cq_stack_frame *f = &frames[i];
		struct cq_stack_hash_frame hf = {
		    .build_id = f->module ? f->module->build_id : NULL,
		    .build_id_len = f->module ? f->module->build_id_len : 0,
		    .where = f->module ? f->offset : f->pc,
		    .kind = (uint8_t)f->kind,
		    .future = f->object != 0,
		    .function = f->function,
		    .state = f->state,
		    .line = f->line,
		};
		h = cq_stack_hash_add(h, &hf);
	}
	return h;
}

static int64_t module_id_of(const struct ingest *in, const struct cq_module *m)
{
	return m ? in->module_ids[m - in->modules] : 0;
}

static struct cq_error *insert_frames(struct ingest *in, int64_t stack_id,
                                      const struct cq_stack_frame *frames, size_t nframes)
{
	sqlite3_stmt *st = in->st[ST_INSERT_FRAME];
	for (size_t i = 0; i < nframes; i++) {
		const struct cq_stack_frame *f = &frames[i];
		int64_t module_id = module_id_of(in, f->module);
		sqlite3_bind_int64(st, 1, stack_id);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)i);
		if (module_id)
			sqlite3_bind_int64(st, 3, module_id);
		else
			sqlite3_bind_null(st, 3);
		sqlite3_bind_int64(st, 4, (sqlite3_int64)(f->module ? f->offset : f->pc));
		sqlite3_bind_text(st, 5, cq_frame_kind_name(f->kind), -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 6, cq_unwind_trust_name(f->trust), -1, SQLITE_STATIC);
		cq_db_bind_text(st, 7, f->function);
		cq_db_bind_text(st, 8, f->file);
		if (f->line > 0)
			sqlite3_bind_int(st, 9, f->line);
		else
			sqlite3_bind_null(st, 9);
		cq_db_bind_text(st, 10, f->state);
		char alt[512];
		cq_db_bind_text(st, 11, cq_bucket_alt_name(in->namer, f, alt, sizeof(alt)));
		if (step_reset(st) != SQLITE_DONE)
			return db_error(in->store->db, "insert frame");
	}
	return NULL;
}

/*
 * The stack's frames_blob (stack_blob.h), malloc'd in *blob.  A stack the
 * format cannot represent (too many frames for its records) gets no blob,
 * NULL in the column: the frames table still holds it.  Only running out of
 * memory is an error.
 */
static struct cq_error *frames_blob(const struct ingest *in, const struct cq_stack_frame *frames,
                                    size_t nframes, uint8_t **blob, size_t *len)
{
	*blob = NULL;
	struct cq_stack_blob_frame *f = nframes ? calloc(nframes, sizeof(*f)) : NULL;
	if (nframes && !f)
		return &cq_error_nomem;
	for (size_t i = 0; i < nframes; i++) {
		const struct cq_stack_frame *sf = &frames[i];
		f[i] = (struct cq_stack_blob_frame){.module_id = module_id_of(in, sf->module),
		                                    .offset = sf->module ? sf->offset : sf->pc,
		                                    .kind = (uint8_t)sf->kind};
	}
	struct cq_error *err = cq_stack_blob_encode(f, nframes, blob, len);
	free(f);
	if (err == &cq_error_nomem)
		return err;
	cq_error_free(err);
	return NULL;
}

/* The stack id for a list of frames, storing the stack if it is new. */
static struct cq_error *stack_id_for(struct ingest *in, const struct cq_stack_frame *frames,
                                     size_t nframes, int64_t *id, struct cq_store_result *r)
{
	uint64_t h = stack_hash(frames, nframes);
	for (size_t i = 0; i < in->nseen; i++) {
		if (in->seen[i].hash == h) {
			*id = in->seen[i].id;
			return NULL;
		}
	}
	char key[CQ_STACK_HASH_TEXT_LEN + 1];
	cq_stack_hash_text(h, key);
	struct cq_error *err = lookup_id(in, ST_FIND_STACK, key, id);
	if (err)
		return err;
	if (!*id) {
		sqlite3_stmt *st = in->st[ST_INSERT_STACK];
		sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)nframes);
		size_t blob_len;
		uint8_t *blob;
		if ((err = frames_blob(in, frames, nframes, &blob, &blob_len)))
			return err;
		if (blob)
			sqlite3_bind_blob(st, 3, blob, (int)blob_len, free);
		else
			sqlite3_bind_null(st, 3);
		if (step_reset(st) != SQLITE_DONE)
			return db_error(in->store->db, "insert stack");
		*id = sqlite3_last_insert_rowid(in->store->db);
		if ((err = insert_frames(in, *id, frames, nframes)))
			return err;
		r->new_stacks++;
	}
	r->stacks++;
	assert(in->nseen < in->seen_cap);
	in->seen[in->nseen].hash = h;
	in->seen[in->nseen++].id = *id;
	return NULL;
}

static struct cq_error *insert_threads(struct ingest *in, int64_t core_id,
                                       const struct cq_stacks *stacks, struct cq_store_result *r)
{
	size_t nstacks = stacks->nthreads + stacks->nsuspended;
	assert(!in->seen && in->nseen == 0);
	if (nstacks && !(in->seen = calloc(nstacks, sizeof(*in->seen))))
		return &cq_error_nomem;
	in->seen_cap = nstacks;
	for (size_t t = 0; t < stacks->nthreads; t++) {
		const struct cq_thread_stack *ts = &stacks->threads[t];
		int64_t stack_id;
		struct cq_error *err = stack_id_for(in, ts->frames, ts->nframes, &stack_id, r);
		if (err)
			return err;
		sqlite3_stmt *st = in->st[ST_INSERT_THREAD];
		sqlite3_bind_int64(st, 1, core_id);
		sqlite3_bind_int64(st, 2, ts->thread->tid);
		sqlite3_bind_int64(st, 3, (sqlite3_int64)t);
		cq_db_bind_text(st, 4, ts->thread->name);
		sqlite3_bind_int(st, 5, ts->thread->crashed);
		sqlite3_bind_int64(st, 6, stack_id);
		sqlite3_bind_text(st, 7, cq_unwind_end_name(ts->end), -1, SQLITE_STATIC);
		if (step_reset(st) != SQLITE_DONE)
			return db_error(in->store->db, "insert thread");
		r->threads++;
	}
	return NULL;
}

/* The core's suspended async stacks (schema 005). */
static struct cq_error *insert_suspended(struct ingest *in, int64_t core_id,
                                         const struct cq_stacks *stacks, struct cq_store_result *r)
{
	for (size_t i = 0; i < stacks->nsuspended; i++) {
		const struct cq_suspended_stack *ss = &stacks->suspended[i];
		int64_t stack_id;
		struct cq_error *err = stack_id_for(in, ss->frames, ss->nframes, &stack_id, r);
		if (err)
			return err;
		sqlite3_stmt *st = in->st[ST_INSERT_SUSPENDED];
		sqlite3_bind_int64(st, 1, core_id);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)i);
		sqlite3_bind_text(st, 3, ss->kind, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 4, stack_id);
		sqlite3_bind_text(st, 5, cq_unwind_end_name(ss->end), -1, SQLITE_STATIC);
		if (step_reset(st) != SQLITE_DONE)
			return db_error(in->store->db, "insert suspended stack");
		r->suspended++;
	}
	return NULL;
}

static const char *owner_name(enum cq_wait_owner o)
{
	switch (o) {
	case CQ_OWNER_THREAD:
		return "thread";
	case CQ_OWNER_NOT_IN_CORE:
		return "not-in-core";
	case CQ_OWNER_READERS:
		return "readers";
	case CQ_OWNER_NONE:
		return "none";
	case CQ_OWNER_UNREADABLE:
		return "unreadable";
	case CQ_OWNER_UNKNOWN:
		break;
	}
	return "unknown";
}

/* The wait-for graph: one row per waiting thread. */
static struct cq_error *insert_waits(struct ingest *in, int64_t core_id, const struct cq_waits *w)
{
	for (size_t i = 0; w && i < w->nwaits; i++) {
		const struct cq_wait *wt = &w->waits[i];
		sqlite3_stmt *st = in->st[ST_INSERT_WAIT];
		bool has_owner = wt->owner == CQ_OWNER_THREAD || wt->owner == CQ_OWNER_NOT_IN_CORE;
		sqlite3_bind_int64(st, 1, core_id);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)wt->thread);
		sqlite3_bind_int64(st, 3, wt->tid);
		sqlite3_bind_text(st, 4, cq_wait_kind_name(wt->kind), -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 5, wt->write);
		sqlite3_bind_int64(st, 6, (sqlite3_int64)wt->object);
		sqlite3_bind_int64(st, 7, (sqlite3_int64)wt->futex);
		cq_db_bind_text(st, 8, wt->function);
		/* An owner inferred from references (waits.h), not recorded: "inferred". */
		sqlite3_bind_text(st, 9, wt->owner_inferred ? "inferred" : owner_name(wt->owner),
		                  -1, SQLITE_STATIC);
		cq_db_bind_int_if(st, 10, has_owner, wt->owner_tid);
		sqlite3_bind_int64(st, 11, wt->count);
		cq_db_bind_int_if(st, 12, wt->deadlock != 0, (int64_t)wt->deadlock);
		/* A cycle through an inferred owner says what it rests on (013_wait_verdict.sql).
		 */
		cq_db_bind_text(
		    st, 13,
		    wt->deadlock ? cq_deadlock_verdict_name(w->deadlocks[wt->deadlock - 1].verdict)
		                 : NULL);
		cq_db_bind_text(st, 14, wt->owner_inferred ? wt->owner_confirmed_by : NULL);
		if (step_reset(st) != SQLITE_DONE)
			return db_error(in->store->db, "insert wait");
	}
	return NULL;
}

/* Files the core in its signature's bucket, creating the bucket if new. */
static struct cq_error *insert_bucket(struct ingest *in, int64_t core_id,
                                      const struct cq_store_meta *meta, struct cq_store_result *r)
{
	const struct cq_bucket_signature *sig = meta ? meta->signature : NULL;
	if (!sig)
		return NULL;
	const struct cq_capture *cap = meta->capture;
	int64_t when;
	if (!core_time(cap, &when))
		when = (int64_t)time(NULL);
	struct cq_error *err = lookup_id(in, ST_FIND_BUCKET, sig->hash, &r->bucket_id);
	if (err)
		return err;
	sqlite3_stmt *st;
	if (!r->bucket_id) {
		st = in->st[ST_INSERT_BUCKET];
		sqlite3_bind_text(st, 1, sig->hash, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 2, sig->text, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 3, when);
		sqlite3_bind_int64(st, 4, core_id);
		cq_db_bind_text(st, 5, sig->rules_version[0] ? sig->rules_version : NULL);
		if (step_reset(st) != SQLITE_DONE)
			return db_error(in->store->db, "insert bucket");
		r->bucket_id = sqlite3_last_insert_rowid(in->store->db);
		r->new_bucket = true;
	}
	st = in->st[ST_COUNT_BUCKET];
	sqlite3_bind_int64(st, 1, r->bucket_id);
	sqlite3_bind_int64(st, 2, when);
	if (step_reset(st) != SQLITE_DONE)
		return db_error(in->store->db, "count bucket");
	st = in->st[ST_SET_CORE_BUCKET];
	sqlite3_bind_int64(st, 1, r->bucket_id);
	sqlite3_bind_int64(st, 2, core_id);
	if (step_reset(st) != SQLITE_DONE)
		return db_error(in->store->db, "file core in bucket");
	return NULL;
}

struct cq_error *cq_store_find_core(struct cq_store *store, const char *identity, int64_t *id)
{
	struct ingest in = {.store = store};
	if (sqlite3_prepare_v2(store->db, sql[ST_FIND_CORE], -1, &in.st[ST_FIND_CORE], NULL) !=
	    SQLITE_OK)
		return db_error(store->db, "prepare");
	struct cq_error *err = lookup_id(&in, ST_FIND_CORE, identity, id);
	sqlite3_finalize(in.st[ST_FIND_CORE]);
	return err;
}

static struct cq_error *ingest_body(struct ingest *in, const char *identity,
                                    const struct cq_stacks *stacks,
                                    const struct cq_store_meta *meta, struct cq_store_result *r)
{
	struct cq_error *err = lookup_id(in, ST_FIND_CORE, identity, &r->core_id);
	if (err || r->core_id) {
		r->duplicate = r->core_id != 0;
		if (err)
			return err;
		/*
		 * A stored copy of a core already in the database needs no
		 * placeholder; the core's row names the copy if it names none.
		 */
		int64_t placeholder;
		char source[16];
		err = find_placeholder(in, meta, &placeholder, source, sizeof(source));
		if (!err && placeholder) {
			sqlite3_stmt *st = in->st[ST_SET_STORED_PATH];
			sqlite3_bind_text(st, 1, meta->stored_path, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int64(st, 2, r->core_id);
			if (step_reset(st) != SQLITE_DONE)
				err = db_error(in->store->db, "name the stored copy");
		}
		return err;
	}
	if (!stacks) /* only a duplicate may come without its stacks */
		return cq_error_create(CQ_ERR_USAGE, "core %s has no stacks to store", identity);
	if ((err = insert_core(in, identity, stacks, meta, &r->core_id)) ||
	    (err = insert_modules(in, r->core_id)) ||
	    (err = insert_threads(in, r->core_id, stacks, r)) ||
	    (err = insert_suspended(in, r->core_id, stacks, r)) ||
	    (err = insert_waits(in, r->core_id, meta ? meta->waits : NULL)) ||
	    (err = insert_bucket(in, r->core_id, meta, r)))
		return err;
	return NULL;
}

struct cq_error *cq_store_ingest(struct cq_store *store, const struct cq_core *core,
                                 const char *identity, const struct cq_stacks *stacks,
                                 const struct cq_store_meta *meta, struct cq_store_result *result)
{
	assert(store && store->db && core && identity && result);
	memset(result, 0, sizeof(*result));
	struct ingest in = {.store = store,
	                    .core = core,
	                    .modules = core->modules,
	                    .namer = meta ? meta->namer : NULL};
	struct cq_error *err = NULL;
	for (int i = 0; i < ST_COUNT && !err; i++)
		if (sqlite3_prepare_v2(store->db, sql[i], -1, &in.st[i], NULL) != SQLITE_OK)
			err = db_error(store->db, "prepare");
	if (!err && sqlite3_exec(store->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		err = db_error(store->db, "begin");
	else if (!err) {
		err = ingest_body(&in, identity, stacks, meta, result);
		const char *end = err ? "ROLLBACK" : "COMMIT";
		if (sqlite3_exec(store->db, end, NULL, NULL, NULL) != SQLITE_OK && !err) {
			err = db_error(store->db, "commit");
			sqlite3_exec(store->db, "ROLLBACK", NULL, NULL, NULL);
		}
	}
	for (int i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(in.st[i]);
	free(in.module_ids);
	free(in.seen);
	if (err)
		memset(result, 0, sizeof(*result));
	return err;
}

/* ---- libwebsockets allocation logs ------------------------------------------ */

enum lws_stmt {
	LWS_FIND_LOG,
	LWS_INSERT_LOG,
	LWS_INSERT_ALLOCATION,
	LWS_COUNT,
};

static const char *const lws_sql[LWS_COUNT] = {
    [LWS_FIND_LOG] = "SELECT id FROM lws_logs WHERE identity = ?",
    [LWS_INSERT_LOG] = "INSERT INTO lws_logs (identity, path, module_id, bytes, lines, records, "
                       "malformed, ingested_at) VALUES (?,?,?,?,?,?,?,?)",
    [LWS_INSERT_ALLOCATION] =
        "INSERT INTO lws_allocations (log_id, stack_id, size, count) VALUES (?,?,?,?) "
        "ON CONFLICT (log_id, stack_id, size) DO UPDATE SET count = count + excluded.count",
};

/* Stores the ELF's modules row and sets *id. */
static struct cq_error *insert_elf_module(struct ingest *in, const struct cq_module *elf,
                                          int64_t *id)
{
	char key[4096];
	module_key(elf, key, sizeof(key));
	sqlite3_stmt *st = in->st[ST_INSERT_MODULE];
	sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, elf->name, -1, SQLITE_TRANSIENT);
	if (step_reset(st) != SQLITE_DONE)
		return db_error(in->store->db, "insert module");
	return lookup_id(in, ST_FIND_MODULE, key, id);
}

static struct cq_error *insert_lws_log(struct ingest *in, sqlite3_stmt *st,
                                       const struct cq_store_lws_log *log, int64_t module_id,
                                       int64_t *id)
{
	int i = 1;
	sqlite3_bind_text(st, i++, log->identity, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, i++, log->path, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, i++, module_id);
	sqlite3_bind_int64(st, i++, (sqlite3_int64)log->bytes);
	sqlite3_bind_int64(st, i++, (sqlite3_int64)log->lines);
	sqlite3_bind_int64(st, i++, (sqlite3_int64)log->records);
	sqlite3_bind_int64(st, i++, (sqlite3_int64)log->malformed);
	sqlite3_bind_int64(st, i++, (sqlite3_int64)time(NULL));
	assert(i - 1 == sqlite3_bind_parameter_count(st));
	if (step_reset(st) != SQLITE_DONE)
		return db_error(in->store->db, "insert lws log");
	*id = sqlite3_last_insert_rowid(in->store->db);
	return NULL;
}

static struct cq_error *lws_body(struct ingest *in, sqlite3_stmt *const *st,
                                 const struct cq_store_lws_log *log,
                                 const struct cq_store_lws_site *sites, size_t nsites,
                                 struct cq_store_lws_result *r)
{
	sqlite3_bind_text(st[LWS_FIND_LOG], 1, log->identity, -1, SQLITE_TRANSIENT);
	int rc = sqlite3_step(st[LWS_FIND_LOG]);
	if (rc == SQLITE_ROW) {
		r->log_id = sqlite3_column_int64(st[LWS_FIND_LOG], 0);
		r->duplicate = true;
	}
	sqlite3_reset(st[LWS_FIND_LOG]);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return db_error(in->store->db, "find lws log");
	if (r->duplicate)
		return NULL;
	int64_t module_id;
	struct cq_error *err = insert_elf_module(in, log->elf, &module_id);
	if (!err)
		err = insert_lws_log(in, st[LWS_INSERT_LOG], log, module_id, &r->log_id);
	in->modules = log->elf;
	in->module_ids = &module_id;
	struct cq_store_result counts = {0};
	for (size_t i = 0; i < nsites && !err; i++) {
		int64_t stack_id;
		if ((err = stack_id_for(in, sites[i].frames, sites[i].nframes, &stack_id, &counts)))
			break;
		sqlite3_stmt *a = st[LWS_INSERT_ALLOCATION];
		sqlite3_bind_int64(a, 1, r->log_id);
		sqlite3_bind_int64(a, 2, stack_id);
		sqlite3_bind_int64(a, 3, (sqlite3_int64)sites[i].size);
		sqlite3_bind_int64(a, 4, (sqlite3_int64)sites[i].count);
		if (step_reset(a) != SQLITE_DONE)
			err = db_error(in->store->db, "insert lws allocation");
	}
	in->module_ids = NULL;
	r->new_stacks = counts.new_stacks;
	return err;
}

struct cq_error *cq_store_ingest_lws(struct cq_store *store, const struct cq_store_lws_log *log,
                                     const struct cq_store_lws_site *sites, size_t nsites,
                                     struct cq_store_lws_result *result)
{
	assert(store && store->db && log && (sites || nsites == 0) && result);
	memset(result, 0, sizeof(*result));
	struct ingest in = {.store = store, .seen_cap = nsites};
	sqlite3_stmt *lws_st[LWS_COUNT] = {0};
	struct cq_error *err = NULL;
	if (nsites && !(in.seen = calloc(nsites, sizeof(*in.seen))))
		return &cq_error_nomem;
	for (int i = 0; i < ST_COUNT && !err; i++)
		if (sqlite3_prepare_v2(store->db, sql[i], -1, &in.st[i], NULL) != SQLITE_OK)
			err = db_error(store->db, "prepare");
	for (int i = 0; i < LWS_COUNT && !err; i++)
		if (sqlite3_prepare_v2(store->db, lws_sql[i], -1, &lws_st[i], NULL) != SQLITE_OK)
			err = db_error(store->db, "prepare");
	if (!err && sqlite3_exec(store->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		err = db_error(store->db, "begin");
	else if (!err) {
		err = lws_body(&in, lws_st, log, sites, nsites, result);
		const char *end = err ? "ROLLBACK" : "COMMIT";
		if (sqlite3_exec(store->db, end, NULL, NULL, NULL) != SQLITE_OK && !err) {
			err = db_error(store->db, "commit");
			sqlite3_exec(store->db, "ROLLBACK", NULL, NULL, NULL);
		}
	}
	for (int i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(in.st[i]);
	for (int i = 0; i < LWS_COUNT; i++)
		sqlite3_finalize(lws_st[i]);
	free(in.seen);
	result->stacks = in.nseen;
	if (err)
		memset(result, 0, sizeof(*result));
	return err;
}
