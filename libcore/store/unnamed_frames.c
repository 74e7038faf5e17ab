/*
 * unnamed_frames.c - finding and naming stored frames without a name (see
 * unnamed_frames.h).  A frame whose trust is "context" holds a pc from the
 * notes (the crashing instruction); every other frame of a thread holds a
 * return address.
 *
 * Invariants (asserted): naming is its own transaction, and a name given
 * fills only frames that had none.
 */
#include "libcore/store/unnamed_frames.h"

#include <assert.h>
#include <sqlite3.h>

#include "libcore/db/bind.h"
#include "libcore/db/db_error.h"
#include "libcore/store/store_db.h"

struct cq_error *
cq_store_unnamed_modules(struct cq_store *store,
                         void (*fn)(void *ctx, int64_t module_id, const char *build_id), void *ctx)
{
	sqlite3 *db = cq_store_db(store);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db,
	                       "SELECT m.id, m.build_id FROM modules m WHERE m.build_id NOT LIKE "
	                       "'path:%' AND EXISTS (SELECT 1 FROM frames f WHERE f.module_id = "
	                       "m.id AND f.function IS NULL AND f.kind != 'async') ORDER BY m.id",
	                       -1, &st, NULL) != SQLITE_OK)
		return cq_db_error(db, "unnamed frames");
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		fn(ctx, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1));
	struct cq_error *err = rc == SQLITE_DONE ? NULL : cq_db_error(db, "unnamed frames");
	sqlite3_finalize(st);
	return err;
}

struct cq_error *cq_store_name_frames(struct cq_store *store, int64_t module_id,
                                      cq_frame_namer namer, void *ctx, int64_t *named)
{
	assert(store && namer && named);
	*named = 0;
	sqlite3 *db = cq_store_db(store);
	assert(sqlite3_get_autocommit(db));
	sqlite3_stmt *sel = NULL, *upd = NULL;
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return cq_db_error(db, "name frames");
	struct cq_error *err = NULL;
	if (sqlite3_prepare_v2(db,
	                       "SELECT DISTINCT offset, trust = 'context' FROM frames WHERE "
	                       "module_id = ? AND function IS NULL AND kind != 'async'",
	                       -1, &sel, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db,
	                       "UPDATE frames SET function = ?, file = ?, line = ? WHERE "
	                       "module_id = ? AND offset = ? AND (trust = 'context') = ? AND "
	                       "function IS NULL AND kind != 'async'",
	                       -1, &upd, NULL) != SQLITE_OK)
		err = cq_db_error(db, "name frames");
	int rc = SQLITE_DONE;
	sqlite3_bind_int64(sel, 1, module_id);
	while (!err && (rc = sqlite3_step(sel)) == SQLITE_ROW) {
		int64_t offset = sqlite3_column_int64(sel, 0);
		bool context = sqlite3_column_int(sel, 1) != 0;
		const char *function = NULL, *file = NULL;
		int line = 0;
		if (!namer(ctx, (uint64_t)offset, !context, &function, &file, &line) || !function)
			continue;
		sqlite3_bind_text(upd, 1, function, -1, SQLITE_TRANSIENT);
		cq_db_bind_text(upd, 2, file);
		cq_db_bind_int_if(upd, 3, file && line > 0, line);
		sqlite3_bind_int64(upd, 4, module_id);
		sqlite3_bind_int64(upd, 5, offset);
		sqlite3_bind_int(upd, 6, context);
		if (sqlite3_step(upd) != SQLITE_DONE)
			err = cq_db_error(db, "name frames");
		else
			*named += sqlite3_changes(db);
		sqlite3_reset(upd);
	}
	if (!err && rc != SQLITE_DONE)
		err = cq_db_error(db, "name frames");
	sqlite3_finalize(sel);
	sqlite3_finalize(upd);
	if (!err && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		err = cq_db_error(db, "name frames");
	if (err)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return err;
}
