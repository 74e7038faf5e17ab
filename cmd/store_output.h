/*
 * store_output.h - shared printers for rows read from the analysis database.
 */
#ifndef CQ_CMD_STORE_OUTPUT_H
#define CQ_CMD_STORE_OUTPUT_H

#include "cmd/cmd.h"
#include "libcore/base/json.h"
#include "libcore/store/store_query.h"

/* A listing command's output state; its row printers count rows here. */
struct cmd_listing {
	enum cmd_format format;
	struct cq_json j;
	size_t count;
};

typedef struct cq_error *(*cmd_listing_query)(struct cq_store *store, void *ctx);

/*
 * Opens the database at db (NULL: the default), runs query, and closes it.
 * In JSON the rows are wrapped as {"key": [...]}; in text, a query that
 * printed no row prints empty instead.  Returns the exit status.
 */
int cmd_run_listing(const char *db, struct cmd_listing *l, const char *key, const char *empty,
                    cmd_listing_query query, void *ctx);

/*
 * Stored text for a line of text output: escaped (cmd_safe), "-" when
 * NULL.  Any column of a database from elsewhere may hold NULL or control
 * characters.
 */
const char *cmd_stored_text(const char *s);

/* Writes a "frames" member. */
void cmd_json_stored_frames(struct cq_json *j, const struct cq_store_frame_row *f, size_t n);

/* gdb-style lines, each prefixed by indent. */
void cmd_print_stored_frames(const struct cq_store_frame_row *f, size_t n, const char *indent);

/* One core as a JSON object. */
void cmd_json_stored_core(struct cq_json *j, const struct cq_store_core_row *c);

#endif
