/*
 * store_output.h - shared printers for rows read from the analysis database.
 */
#ifndef CQ_CMD_STORE_OUTPUT_H
#define CQ_CMD_STORE_OUTPUT_H

#include "cmd/cmd.h"
#include "libcore/store_query.h"

/* Writes a "frames" member. */
void cmd_json_stored_frames(struct cq_json *j, const struct cq_store_frame_row *f, size_t n);

/* gdb-style lines, each prefixed by indent. */
void cmd_print_stored_frames(const struct cq_store_frame_row *f, size_t n, const char *indent);

/* One core as a JSON object. */
void cmd_json_stored_core(struct cq_json *j, const struct cq_store_core_row *c);

#endif
