/*
 * lws_decode.c - the records of a text decoded and named, one callback per
 * non-blank line (lws_decode.h).
 */
#include "libcore/pipeline/lws_decode.h"

#include <string.h>

#include "libcore/formats/lws_log.h"

/* Reports line rd's record, or why it has none; a blank line reports nothing. */
static void decode_line(const struct cq_lws_log_reader *rd, struct cq_lws_elf *elf,
                        cq_lws_decoded_fn fn, void *ctx)
{
	size_t start = 0, end = rd->len;
	while (start < rd->len && strchr(" \t\v\f", rd->line[start]))
		start++;
	if (start == rd->len)
		return;
	size_t rec_start, rec_end;
	if (cq_lws_log_find_record(rd->line, rd->len, start, &rec_start, &rec_end)) {
		start = rec_start;
		end = rec_end;
	}
	struct cq_lws_decoded d = {.line = rd->lineno};
	struct cq_lws_stack s;
	char text[CQ_LWS_MAX_LINE];
	struct cq_error *err =
	    rd->truncated
	        ? cq_error_create(CQ_ERR_FORMAT, "line longer than %d bytes", CQ_LWS_LOG_MAX_LINE)
	        : cq_lws_decode_text(rd->line + start, end - start, &s);
	if (!err)
		err = cq_lws_format_decoded(&s, text, sizeof(text));
	if (err) {
		d.error = err;
		fn(ctx, &d);
		cq_error_free(err);
		return;
	}
	struct cq_stack_frame frames[CQ_LWS_MAX_FRAMES];
	d.stack = &s;
	d.text = text;
	d.frames = frames;
	d.nframes = cq_lws_elf_frames(elf, &s, frames, CQ_LWS_MAX_FRAMES);
	fn(ctx, &d);
}

struct cq_error *cq_lws_decode_lines(FILE *in, struct cq_lws_elf *elf, cq_lws_decoded_fn fn,
                                     void *ctx)
{
	struct cq_lws_log_reader rd;
	struct cq_error *err = cq_lws_log_reader_init(&rd, in);
	while (!err && cq_lws_log_next_line(&rd, &err))
		decode_line(&rd, elf, fn, ctx);
	cq_lws_log_reader_free(&rd);
	return err;
}
