/*
 * store_db.h - the SQLite handle of an open store, for the store layer's
 * own files (store.c, store_query.c, capture_rows.c) only.  Everything
 * above the store reaches the database through the functions of store.h,
 * store_query.h and capture_rows.h, never through raw SQL.
 */
#ifndef CQ_STORE_DB_H
#define CQ_STORE_DB_H

struct cq_store;
struct sqlite3;

struct sqlite3 *cq_store_db(struct cq_store *store);

#endif
